#include "onnxproof/parity/detections.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <numeric>

namespace onnxproof {

namespace {

// Detection indices of one side, highest score first (ties kept in output order).
std::vector<int64_t> by_score(const DetectionSide& side) {
  std::vector<int64_t> order(static_cast<std::size_t>(side.scores->size()));
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
    return side.scores->value_as_double(a) > side.scores->value_as_double(b);
  });
  return order;
}

double coordinate(const DetectionSide& side, int64_t row, int k) { return side.boxes->value_as_double(row * 4 + k); }

// One box's [x1, x2] and [y1, y2], each at least `min_side` long about its centre.
std::array<double, 4> widened(const DetectionSide& side, int64_t row, double min_side) {
  std::array<double, 4> box{coordinate(side, row, 0), coordinate(side, row, 1), coordinate(side, row, 2),
                            coordinate(side, row, 3)};
  for (int axis = 0; axis < 2; ++axis) {
    double& low = box[static_cast<std::size_t>(axis)];
    double& high = box[static_cast<std::size_t>(axis + 2)];
    if (high - low < min_side) {
      const double centre = (low + high) / 2;
      low = centre - min_side / 2;
      high = centre + min_side / 2;
    }
  }
  return box;
}

// IoU with every box side at least `min_side` long: a box of zero width or height (random
// weights, or clipping at the image border, give them) has no area, so float rounding alone made
// its IoU with the same detection on the other side 0, and both one-sided. Boxes whose sides are
// all longer are compared exactly as before.
double iou(const DetectionSide& a, int64_t i, const DetectionSide& b, int64_t j, double min_side) {
  const auto p = widened(a, i, min_side);
  const auto q = widened(b, j, min_side);
  const double inter = std::max(0.0, std::min(p[2], q[2]) - std::max(p[0], q[0])) *
                       std::max(0.0, std::min(p[3], q[3]) - std::max(p[1], q[1]));
  const auto area = [](const std::array<double, 4>& box) { return (box[2] - box[0]) * (box[3] - box[1]); };
  const double uni = area(p) + area(q) - inter;
  // Every coordinate 0 (min_side 0): two empty boxes at the same place are the same detection.
  if (uni <= 0.0) return p == q ? 1.0 : 0.0;
  return inter / uni;
}

// The shortest box side matching counts with: a thousandth of the largest coordinate (0.3 px on a
// 320-pixel image), far above float32 rounding and far below a moved box.
double min_box_side(const DetectionSide& a, const DetectionSide& b) {
  double scale = 0.0;
  for (const DetectionSide* side : {&a, &b}) {
    for (int64_t k = 0; k < side->boxes->size(); ++k) {
      const double value = std::fabs(side->boxes->value_as_double(k));
      if (std::isfinite(value)) scale = std::max(scale, value);
    }
  }
  return k_min_box_side_fraction * scale;
}

int64_t label_of(const DetectionSide& side, int64_t row) {
  return side.labels ? static_cast<int64_t>(side.labels->value_as_double(row)) : 0;
}

// max |a row - b row| of an extra output (rows are the elements past axis 0).
double row_difference(const Tensor& a, int64_t i, const Tensor& b, int64_t j) {
  if (a.shape().size() != b.shape().size() || a.shape().empty()) return INFINITY;
  for (std::size_t axis = 1; axis < a.shape().size(); ++axis) {
    if (a.shape()[axis] != b.shape()[axis]) return INFINITY;
  }
  const int64_t width = a.shape()[0] ? a.size() / a.shape()[0] : 0;
  double worst = 0.0;
  for (int64_t k = 0; k < width; ++k) {
    const double d = std::fabs(a.value_as_double(i * width + k) - b.value_as_double(j * width + k));
    worst = std::max(worst, std::isnan(d) ? INFINITY : d);
  }
  return worst;
}

// Within the budget of the threshold, or at a top-k cut: the other side kept at least as many, the
// detection is at the tail of its own side (no higher than its lowest matched detection) and its
// score is within the budget of the other side's lowest kept score (a detector that cuts at a
// count keeps no more, and its last kept score is then the threshold that mattered).
bool at_threshold(double score, double threshold, const DetectionSide& other, int64_t this_count, double lowest_matched,
                  double budget) {
  if (std::fabs(score - threshold) <= budget) return true;
  const int64_t other_count = other.scores->size();
  if (other_count == 0 || other_count < this_count || !std::isfinite(lowest_matched)) return false;
  if (score > lowest_matched + budget) return false;
  double lowest = INFINITY;
  for (int64_t i = 0; i < other_count; ++i) lowest = std::min(lowest, other.scores->value_as_double(i));
  return std::fabs(score - lowest) <= budget;
}

// Counts the one-side-only detections of `side` (unmatched rows) and those at the threshold.
void count_unmatched(const DetectionSide& side, const std::vector<bool>& used, const DetectionSide& other,
                     const DetectionBudget& budget, double threshold, int64_t& only, DetectionMatch& match) {
  double lowest_matched = INFINITY;
  for (int64_t i = 0; i < side.scores->size(); ++i) {
    if (used[static_cast<std::size_t>(i)]) lowest_matched = std::min(lowest_matched, side.scores->value_as_double(i));
  }
  for (int64_t i = 0; i < side.scores->size(); ++i) {
    if (used[static_cast<std::size_t>(i)]) continue;
    ++only;
    const double score = side.scores->value_as_double(i);
    if (at_threshold(score, threshold, other, side.scores->size(), lowest_matched, budget.score)) {
      ++match.at_threshold;
    } else {
      match.worst_unmatched_score = std::max(match.worst_unmatched_score, score);
    }
  }
}

}  // namespace

bool DetectionMatch::passed(const DetectionBudget& budget) const {
  return worst_box <= budget.box && worst_score <= budget.score && worst_extra <= budget.extra &&
         only_expected + only_actual == at_threshold;
}

Expected<DetectionSide> detection_side(const DetectionSet& set, const Tensor* boxes, const Tensor* scores,
                                       const Tensor* labels, std::vector<const Tensor*> extra) {
  if (!boxes || !scores)
    return std::unexpected(Error(ErrorCode::invalid_input, "a detection set lacks boxes or scores"));
  if (boxes->rank() != 2 || boxes->shape()[1] != 4) {
    return std::unexpected(Error(ErrorCode::invalid_input, fmt::format("detection output '{}' is {}, not Nx4",
                                                                       set.boxes, format_shape(boxes->shape()))));
  }
  const int64_t count = boxes->shape()[0];
  const auto rows_ok = [&](const Tensor* t) { return !t || (t->rank() >= 1 && t->shape()[0] == count); };
  if (scores->rank() != 1 || !rows_ok(scores) || !rows_ok(labels) ||
      !std::all_of(extra.begin(), extra.end(), rows_ok)) {
    return std::unexpected(Error(
        ErrorCode::invalid_input,
        fmt::format("the outputs of detection set '{}' do not have one row per box ({} boxes)", set.boxes, count)));
  }
  return DetectionSide{boxes, scores, labels, std::move(extra)};
}

DetectionMatch match_detections(const DetectionSide& expected, const DetectionSide& actual,
                                const DetectionBudget& budget, double score_threshold) {
  DetectionMatch match;
  match.expected = expected.scores->size();
  match.actual = actual.scores->size();
  std::vector<bool> used_expected(static_cast<std::size_t>(match.expected), false);
  std::vector<bool> used_actual(static_cast<std::size_t>(match.actual), false);
  const auto actual_order = by_score(actual);
  const double min_side = min_box_side(expected, actual);
  for (const int64_t i : by_score(expected)) {
    int64_t best = -1;
    double best_iou = k_detection_match_iou;
    for (const int64_t j : actual_order) {
      if (used_actual[static_cast<std::size_t>(j)] || label_of(expected, i) != label_of(actual, j)) continue;
      const double overlap = iou(expected, i, actual, j, min_side);
      if (overlap >= best_iou && (best < 0 || overlap > best_iou)) {
        best = j;
        best_iou = overlap;
      }
    }
    if (best < 0) continue;
    used_expected[static_cast<std::size_t>(i)] = used_actual[static_cast<std::size_t>(best)] = true;
    ++match.matched;
    for (int k = 0; k < 4; ++k) {
      const double d = std::fabs(coordinate(expected, i, k) - coordinate(actual, best, k));
      match.worst_box = std::max(match.worst_box, std::isnan(d) ? INFINITY : d);
    }
    const double ds = std::fabs(expected.scores->value_as_double(i) - actual.scores->value_as_double(best));
    match.worst_score = std::max(match.worst_score, std::isnan(ds) ? INFINITY : ds);
    for (std::size_t e = 0; e < expected.extra.size() && e < actual.extra.size(); ++e) {
      match.worst_extra = std::max(match.worst_extra, row_difference(*expected.extra[e], i, *actual.extra[e], best));
    }
  }
  count_unmatched(expected, used_expected, actual, budget, score_threshold, match.only_expected, match);
  count_unmatched(actual, used_actual, expected, budget, score_threshold, match.only_actual, match);
  return match;
}

namespace {

struct DetectionScales {
  double box = 0.0;    // the largest |coordinate|
  double extra = 0.0;  // the largest |value| of the extras
};

DetectionScales scales_of(const DetectionSide& side) {
  DetectionScales scales;
  for (int64_t i = 0; i < side.boxes->size(); ++i)
    scales.box = std::max(scales.box, std::fabs(side.boxes->value_as_double(i)));
  for (const Tensor* t : side.extra) {
    for (int64_t i = 0; i < t->size(); ++i) scales.extra = std::max(scales.extra, std::fabs(t->value_as_double(i)));
  }
  return scales;
}

double median(std::vector<double> values) {
  std::nth_element(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(values.size() / 2), values.end());
  return values[values.size() / 2];
}

}  // namespace

DetectionNoise detection_noise(const DetectionSide& pytorch, const DetectionSide& exact, double score_threshold) {
  const DetectionBudget any{INFINITY, INFINITY, INFINITY, ToleranceRule::calibrated};
  const DetectionMatch match = match_detections(exact, pytorch, any, score_threshold);
  const DetectionScales scales = scales_of(pytorch);
  DetectionNoise noise{match.worst_box / std::max(scales.box, 1.0), match.worst_score, std::nullopt};
  // Extras without their float64 run: the match saw none of them, and 0 would be no measurement.
  if (exact.extra.size() == pytorch.extra.size()) noise.extra = match.worst_extra / std::max(scales.extra, 1.0);
  return noise;
}

std::optional<DetectionNoise> pooled_detection_noise(const std::vector<DetectionNoise>& cases) {
  if (cases.empty()) return std::nullopt;
  std::vector<double> box, score, extra;
  for (const auto& noise : cases) {
    box.push_back(noise.box);
    score.push_back(noise.score);
    if (noise.extra) extra.push_back(*noise.extra);
  }
  return DetectionNoise{median(box), median(score), extra.empty() ? std::nullopt : std::optional(median(extra))};
}

DetectionBudget detection_budget(const DetectionSide& pytorch, const std::optional<DetectionNoise>& noise,
                                 ToleranceRule rule, const Tolerance& tolerance) {
  const DetectionScales scales = scales_of(pytorch);
  const double score_scale = 1.0;  // scores are probabilities
  DetectionBudget budget{tolerance.atol + tolerance.rtol * scales.box, tolerance.atol + tolerance.rtol * score_scale,
                         tolerance.atol + tolerance.rtol * scales.extra, ToleranceRule::fixed};
  if (!noise) return budget;
  const double epsilon = std::numeric_limits<float>::epsilon();
  const auto noisy = [&](double relative, double scale) {
    return (k_noise_multiple * relative + k_floor_epsilons * epsilon) * std::max(scale, 1.0);
  };
  budget.box = noisy(noise->box, scales.box);
  budget.score = noisy(noise->score, score_scale);
  if (noise->extra) budget.extra = noisy(*noise->extra, scales.extra);  // else the fixed rule's
  budget.rule = rule;
  return budget;
}

DetectionBudget detection_budget(const DetectionSide& pytorch, const std::optional<DetectionSide>& exact,
                                 const Tolerance& tolerance, double score_threshold) {
  if (!exact) return detection_budget(pytorch, std::nullopt, ToleranceRule::fixed, tolerance);
  return detection_budget(pytorch, detection_noise(pytorch, *exact, score_threshold), ToleranceRule::calibrated,
                          tolerance);
}

}  // namespace onnxproof
