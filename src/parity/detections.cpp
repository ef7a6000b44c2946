#include "onnxproof/parity/detections.h"

#include <fmt/format.h>

#include <algorithm>
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

double iou(const DetectionSide& a, int64_t i, const DetectionSide& b, int64_t j) {
  const double x1 = std::max(coordinate(a, i, 0), coordinate(b, j, 0));
  const double y1 = std::max(coordinate(a, i, 1), coordinate(b, j, 1));
  const double x2 = std::min(coordinate(a, i, 2), coordinate(b, j, 2));
  const double y2 = std::min(coordinate(a, i, 3), coordinate(b, j, 3));
  const double inter = std::max(0.0, x2 - x1) * std::max(0.0, y2 - y1);
  const auto area = [](const DetectionSide& s, int64_t r) {
    return std::max(0.0, coordinate(s, r, 2) - coordinate(s, r, 0)) * std::max(0.0, coordinate(s, r, 3) - coordinate(s, r, 1));
  };
  const double uni = area(a, i) + area(b, j) - inter;
  // Two degenerate boxes at the same place are the same detection.
  if (uni <= 0.0) return inter == 0.0 && a.boxes->value_as_double(i * 4) == b.boxes->value_as_double(j * 4) ? 1.0 : 0.0;
  return inter / uni;
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
bool at_threshold(double score, double threshold, const DetectionSide& other, int64_t this_count,
                  double lowest_matched, double budget) {
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
  if (!boxes || !scores) return std::unexpected(Error(ErrorCode::invalid_input, "a detection set lacks boxes or scores"));
  if (boxes->rank() != 2 || boxes->shape()[1] != 4) {
    return std::unexpected(Error(ErrorCode::invalid_input,
                                 fmt::format("detection output '{}' is {}, not Nx4", set.boxes, format_shape(boxes->shape()))));
  }
  const int64_t count = boxes->shape()[0];
  const auto rows_ok = [&](const Tensor* t) { return !t || (t->rank() >= 1 && t->shape()[0] == count); };
  if (scores->rank() != 1 || !rows_ok(scores) || !rows_ok(labels) || !std::all_of(extra.begin(), extra.end(), rows_ok)) {
    return std::unexpected(Error(ErrorCode::invalid_input,
                                 fmt::format("the outputs of detection set '{}' do not have one row per box ({} boxes)",
                                             set.boxes, count)));
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
  for (const int64_t i : by_score(expected)) {
    int64_t best = -1;
    double best_iou = k_detection_match_iou;
    for (const int64_t j : actual_order) {
      if (used_actual[static_cast<std::size_t>(j)] || label_of(expected, i) != label_of(actual, j)) continue;
      const double overlap = iou(expected, i, actual, j);
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

DetectionBudget detection_budget(const DetectionSide& pytorch, const std::optional<DetectionSide>& exact,
                                 const Tolerance& tolerance, double score_threshold) {
  double box_scale = 0.0;
  double extra_scale = 0.0;
  for (int64_t i = 0; i < pytorch.boxes->size(); ++i) box_scale = std::max(box_scale, std::fabs(pytorch.boxes->value_as_double(i)));
  for (const Tensor* t : pytorch.extra) {
    for (int64_t i = 0; i < t->size(); ++i) extra_scale = std::max(extra_scale, std::fabs(t->value_as_double(i)));
  }
  const double score_scale = 1.0;  // scores are probabilities
  DetectionBudget budget{tolerance.atol + tolerance.rtol * box_scale, tolerance.atol + tolerance.rtol * score_scale,
                         tolerance.atol + tolerance.rtol * extra_scale, ToleranceRule::fixed};
  if (!exact) return budget;
  // PyTorch float32 against its own float64 run: the model's noise on these detections.
  const DetectionBudget any{INFINITY, INFINITY, INFINITY, ToleranceRule::calibrated};
  const DetectionMatch noise = match_detections(*exact, pytorch, any, score_threshold);
  const double epsilon = std::numeric_limits<float>::epsilon();
  budget.box = k_noise_multiple * noise.worst_box + k_floor_epsilons * epsilon * std::max(box_scale, 1.0);
  budget.score = k_noise_multiple * noise.worst_score + k_floor_epsilons * epsilon * score_scale;
  budget.extra = k_noise_multiple * noise.worst_extra + k_floor_epsilons * epsilon * std::max(extra_scale, 1.0);
  budget.rule = ToleranceRule::calibrated;
  return budget;
}

}  // namespace onnxproof
