#pragma once
// Detections compared as sets. A detector's outputs (boxes, scores, labels, and per-detection
// extras such as masks) are not tensors to compare element by element: near-equal scores may
// come out in another order, and a detection whose score sits at the model's threshold may be
// kept on one side only. Both sides are sorted by score and matched greedily by label and IoU;
// matched boxes and scores must agree within a budget, and a detection on one side only is
// acceptable only when its score is within the score budget of the threshold.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "onnxproof/core/error.h"
#include "onnxproof/parity/calibrated.h"
#include "onnxproof/parity/tolerance.h"
#include "onnxproof/runtime/session.h"
#include "onnxproof/tensor/tensor.h"

namespace onnxproof {

/// Two detections are the same one when their IoU reaches this (COCO's usual match).
inline constexpr double k_detection_match_iou = 0.5;
/// Box sides shorter than this fraction of the largest coordinate count as that long when
/// matching (boxes of zero width or height have no IoU that survives float rounding).
inline constexpr double k_min_box_side_fraction = 1e-3;

/// The outputs of one set of detections (cases.json "detections", written by the front end).
struct DetectionSet {
  std::string boxes;               // Nx4, x1 y1 x2 y2
  std::string scores;              // N
  std::string labels;              // N integers; empty when the model has none
  std::vector<std::string> extra;  // N x ... (masks, keypoints), compared on matched rows
  double score_threshold = 0.0;
};

/// One side's detections: views of its output tensors.
struct DetectionSide {
  const Tensor* boxes = nullptr;
  const Tensor* scores = nullptr;
  const Tensor* labels = nullptr;    // may be null
  std::vector<const Tensor*> extra;  // aligned with DetectionSet::extra
};

/// How far matched detections may differ.
struct DetectionBudget {
  double box = 0.0;  // per coordinate
  double score = 0.0;
  double extra = 0.0;  // per element of an extra output
  ToleranceRule rule = ToleranceRule::fixed;
};

/// The result of matching one side against the other.
struct DetectionMatch {
  int64_t expected = 0;  // detections on the reference side (PyTorch)
  int64_t actual = 0;    // on ONNX Runtime's
  int64_t matched = 0;
  int64_t only_expected = 0;  // on PyTorch's side only
  int64_t only_actual = 0;    // on ONNX Runtime's side only
  /// Of the one-side-only detections, those whose score is within the score budget of the
  /// threshold (or of the other side's lowest kept score, when that side kept as many or more):
  /// acceptable, said as info.
  int64_t at_threshold = 0;
  double worst_box = 0.0;              // max |coordinate difference| over matched detections
  double worst_score = 0.0;            // max |score difference|
  double worst_extra = 0.0;            // max |difference| over the extras' matched rows
  double worst_unmatched_score = 0.0;  // the highest score of an unacceptable one-side-only detection
  /// Matched, within budget, and every one-side-only detection at the threshold.
  bool passed(const DetectionBudget& budget) const;
};

/// Reads one side; ErrorCode::invalid_input when boxes are not Nx4 or the others not N rows.
Expected<DetectionSide> detection_side(const DetectionSet& set, const Tensor* boxes, const Tensor* scores,
                                       const Tensor* labels, std::vector<const Tensor*> extra);

/// Matches `actual` to `expected`: both sorted by score (highest first); each expected detection
/// takes the unmatched actual one of the same label with the highest IoU at or above
/// k_detection_match_iou. `budget.score` decides which one-side-only detections are at the threshold.
DetectionMatch match_detections(const DetectionSide& expected, const DetectionSide& actual,
                                const DetectionBudget& budget, double score_threshold);

/// One set compared on one case x provider x optimization level, for the report.
struct DetectionRow {
  std::string data_set;
  std::map<std::string, int64_t> sizes;
  std::string provider;
  GraphOptimization optimization = GraphOptimization::all;
  std::string boxes;  // names the set
  double score_threshold = 0.0;
  DetectionBudget budget;
  DetectionMatch match;
  bool passed = false;
  std::string note;  // why it could not be compared (then passed is false)
};

/// PyTorch float32's distance from its float64 run on one case's detections (matched as sets),
/// relative to the case's scales: boxes to the largest coordinate, extras to their largest value
/// (each at least 1), scores as they are (probabilities). `extra` is nullopt when the float64 run
/// lacks the extras.
struct DetectionNoise {
  double box = 0.0;
  double score = 0.0;
  std::optional<double> extra;
};
DetectionNoise detection_noise(const DetectionSide& pytorch, const DetectionSide& exact, double score_threshold);

/// The median of each part over the cases that carry a float64 run (nullopt for none): the noise
/// a case without its own float64 run is judged by (ToleranceRule::pooled), as parity does for
/// plain outputs.
std::optional<DetectionNoise> pooled_detection_noise(const std::vector<DetectionNoise>& cases);

/// The budget for one set in one case: from `noise` when given (k_noise_multiple times it plus
/// k_floor_epsilons float32 epsilons, at this case's scales), tagged `rule`; else the fixed rule at
/// the values' scale (`tolerance`: rtol * scale + atol). Extras whose noise was not measured keep
/// the fixed rule's budget.
DetectionBudget detection_budget(const DetectionSide& pytorch, const std::optional<DetectionNoise>& noise,
                                 ToleranceRule rule, const Tolerance& tolerance);

/// The case's own budget: calibrated from `exact` (its float64 boxes and scores) when given, else fixed.
DetectionBudget detection_budget(const DetectionSide& pytorch, const std::optional<DetectionSide>& exact,
                                 const Tolerance& tolerance, double score_threshold);

}  // namespace onnxproof
