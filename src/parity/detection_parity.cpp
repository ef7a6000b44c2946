#include "detection_parity.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <tuple>

#include "onnxproof/core/source_framework.h"
#include "onnxproof/runtime/session.h"

namespace onnxproof::detail {

namespace {

const Tensor* find_output(const std::vector<NamedTensor>& outputs, const std::string& name) {
  for (const auto& output : outputs) {
    if (output.name == name) return &output.tensor;
  }
  return nullptr;
}

const Tensor* find_actual(const std::vector<std::string>& names, const std::vector<Tensor>& outputs,
                          const std::string& name) {
  for (std::size_t k = 0; k < names.size() && k < outputs.size(); ++k) {
    if (names[k] == name) return &outputs[k];
  }
  return nullptr;
}

// One side of a set from a lookup of its outputs by name; nullopt (with `why`) when one is missing
// or misshapen.
template <typename Lookup>
std::optional<DetectionSide> side_of(const DetectionSet& set, Lookup lookup, std::string& why) {
  std::vector<const Tensor*> extra;
  for (const auto& name : set.extra) extra.push_back(lookup(name));
  if (std::find(extra.begin(), extra.end(), nullptr) != extra.end() || !lookup(set.boxes) || !lookup(set.scores) ||
      (!set.labels.empty() && !lookup(set.labels))) {
    why = "an output of the set is missing";
    return std::nullopt;
  }
  auto side = detection_side(set, lookup(set.boxes), lookup(set.scores),
                             set.labels.empty() ? nullptr : lookup(set.labels), std::move(extra));
  if (!side) {
    why = side.error().describe();
    return std::nullopt;
  }
  return *side;
}

// The case's float64 run of the set, when it has one for boxes and scores; labels from PyTorch's,
// and the extras (masks, keypoints) float64 when every one has its float64 output, else none
// (PyTorch's own float32 extras would measure a noise of 0).
std::optional<DetectionSide> exact_side_of(const DetectionSet& set, const ReferenceCase& c) {
  const bool extras_exact = std::all_of(set.extra.begin(), set.extra.end(),
                                        [&](const std::string& n) { return exact_output(c, n, 0) != nullptr; });
  DetectionSet exact_set = set;
  if (!extras_exact) exact_set.extra.clear();
  std::string ignored;
  return side_of(
      exact_set,
      [&](const std::string& n) -> const Tensor* {
        return n == set.labels ? find_output(c.outputs, n) : exact_output(c, n, 0);
      },
      ignored);
}

// The set's noise pooled over the cases that carry a float64 run: what a case without one is
// judged by (nullopt when no case has one: the fixed rule).
std::optional<DetectionNoise> pooled_noise(const Reference& reference, const DetectionSet& set) {
  std::vector<DetectionNoise> measured;
  for (const auto& c : reference.cases) {
    std::string ignored;
    const auto pytorch = side_of(set, [&](const std::string& n) { return find_output(c.outputs, n); }, ignored);
    const auto exact = exact_side_of(set, c);
    if (pytorch && exact) measured.push_back(detection_noise(*pytorch, *exact, set.score_threshold));
  }
  return pooled_detection_noise(measured);
}

}  // namespace

bool in_detection_set(const Reference& reference, const std::string& output) {
  return std::any_of(reference.detection_sets.begin(), reference.detection_sets.end(), [&](const DetectionSet& set) {
    return set.boxes == output || set.scores == output || set.labels == output ||
           std::find(set.extra.begin(), set.extra.end(), output) != set.extra.end();
  });
}

void compare_detection_sets(const Reference& reference, const ReferenceCase& c, const std::vector<std::string>& names,
                            const std::vector<Tensor>& outputs, const ParityRow& base, const ParityOptions& options,
                            std::vector<DetectionRow>& rows) {
  for (const auto& set : reference.detection_sets) {
    DetectionRow row{base.data_set, base.sizes, base.provider, base.optimization, set.boxes, set.score_threshold};
    std::string why;
    const auto expected = side_of(set, [&](const std::string& n) { return find_output(c.outputs, n); }, why);
    const auto actual = side_of(set, [&](const std::string& n) { return find_actual(names, outputs, n); }, why);
    if (!expected || !actual) {
      row.note = "not compared: " + why;
      rows.push_back(std::move(row));
      continue;
    }
    const Tolerance tolerance = options.tolerance.resolve(set.boxes, DType::float32);
    if (options.tolerance.overridden(set.boxes) || options.tolerance.overridden(set.scores)) {
      row.budget = detection_budget(*expected, std::nullopt, ToleranceRule::fixed, tolerance);
    } else if (const auto exact = exact_side_of(set, c)) {
      row.budget = detection_budget(*expected, detection_noise(*expected, *exact, set.score_threshold),
                                    ToleranceRule::calibrated, tolerance);
    } else {
      row.budget = detection_budget(*expected, pooled_noise(reference, set), ToleranceRule::pooled, tolerance);
    }
    if (options.tolerance.overridden(set.boxes)) row.budget.rule = ToleranceRule::user;
    row.match = match_detections(*expected, *actual, row.budget, set.score_threshold);
    row.passed = row.match.passed(row.budget);
    rows.push_back(std::move(row));
  }
}

namespace {

// `source`: what the reference's framework is called ("PyTorch").
std::string describe_row(const DetectionRow& row, const std::string& source) {
  const auto& m = row.match;
  const auto& b = row.budget;
  return fmt::format(
      "{} ({}): {} of {} {} / {} runtime detections matched, {} on one side only ({} of them at the score "
      "threshold {:g}{}), worst box error {:.3g} (budget {:.3g}), worst score error {:.3g} (budget {:.3g}){} "
      "[rule {}]",
      row.data_set, describe_sizes(row.sizes), m.matched, m.expected, source, m.actual, m.only_expected + m.only_actual,
      m.at_threshold, row.score_threshold,
      m.worst_unmatched_score > 0 ? fmt::format("; the highest other one scores {:.3g}", m.worst_unmatched_score) : "",
      m.worst_box, b.box, m.worst_score, b.score,
      row.match.worst_extra > 0
          ? fmt::format(", worst mask/keypoint error {:.3g} (budget {:.3g})", m.worst_extra, b.extra)
          : "",
      rule_name(b.rule));
}

}  // namespace

void add_detection_findings(const ParityResult& result, std::vector<Finding>& findings) {
  using Key = std::tuple<std::string, std::string, std::string>;  // provider, level, set
  std::map<Key, std::vector<const DetectionRow*>> failed;
  std::map<std::string, std::pair<int64_t, int64_t>> at_threshold;  // set -> (detections, cases)
  std::map<std::string, int64_t> detections_seen;
  const std::string source = source_title(result.framework);
  for (const auto& row : result.detections) {
    if (result.advisory(row.provider)) continue;  // RUNTIME_DEFAULT_PRECISION sums those up
    if (!row.passed)
      failed[{row.provider, std::string(optimization_name(row.optimization)), row.boxes}].push_back(&row);
    if (row.optimization != GraphOptimization::all || !row.note.empty()) continue;
    detections_seen[row.boxes] += row.match.expected;
    if (row.match.at_threshold > 0) {
      at_threshold[row.boxes].first += row.match.at_threshold;
      at_threshold[row.boxes].second += 1;
    }
  }
  for (const auto& [key, rows] : failed) {
    const auto& [provider, level, set] = key;
    const DetectionRow* worst = rows.front();
    for (const auto* row : rows) {
      const auto unmatched = [](const DetectionRow* r) {
        return r->match.only_expected + r->match.only_actual - r->match.at_threshold;
      };
      if (!row->note.empty() || unmatched(row) > unmatched(worst) ||
          (unmatched(row) == unmatched(worst) && row->match.worst_box / std::max(row->budget.box, 1e-30) >
                                                     worst->match.worst_box / std::max(worst->budget.box, 1e-30)))
        worst = row;
    }
    const std::string detail =
        worst->note.empty() ? describe_row(*worst, source) : worst->data_set + ": " + worst->note;
    findings.push_back(
        {FindingCode::parity_mismatch,
         Severity::error,
         "parity",
         fmt::format("detections '{}' on {} differ from {}'s in {} cases; worst {}", set,
                     is_openvino_provider(provider) ? provider : provider + " (" + level + " optimizations)", source,
                     rows.size(), detail),
         set,
         "matched detections moved beyond the budget, or a detection well above the score threshold "
         "exists on one side only: find the first diverging node (onnxproof localize)",
         {.sizes = worst->sizes}});
  }
  for (const auto& [set, counts] : at_threshold) {
    findings.push_back(
        {FindingCode::detection_at_threshold, Severity::info, "parity",
         fmt::format("detections '{}': {} detection(s) in {} case(s) exist on one side only, each with a "
                     "score within the budget of the score threshold (or of the other side's last kept "
                     "score): float noise decides whether they are kept, not a defect",
                     set, counts.first, counts.second),
         set, ""});
  }
  for (const auto& [set, seen] : detections_seen) {
    if (seen > 0) continue;
    findings.push_back({FindingCode::evidence_weak, Severity::warning, "parity",
                        fmt::format("detections '{}' passed on weak evidence: {} detected nothing in any case, so "
                                    "the comparison was of empty sets",
                                    set, source),
                        set, "prove on real images (--data) or trained weights, so the detector detects something"});
  }
}

}  // namespace onnxproof::detail
