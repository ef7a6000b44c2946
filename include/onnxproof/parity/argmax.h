#pragma once
// The task metric that closeness can hide: the predicted class. Class scores are the floating
// outputs of rank 2 or 3 (classes on the last axis: image classes, token logits) and of rank 4 or
// 5 (classes on axis 1, compared per pixel: segmentation maps). A feature map of rank 4 is
// compared the same way; that is harmless because, with a float64 reference, only a flip whose
// exact margin exceeds both sides' float noise counts.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "onnxproof/tensor/tensor.h"

namespace onnxproof {

struct ArgmaxCheck {
  int64_t rows = 0;   // rows (positions) compared
  int64_t flips = 0;  // rows whose argmax differs for real
  int64_t ties = 0;   // rows whose argmax differs inside the float noise (exact margin within it)
  int64_t first_flip_row = -1;
  double min_margin = 0.0;  // over flipped rows: the margin between the two classes (exact when known)
};

/// The float noise an argmax difference is judged against: the exact (float64) output and the
/// largest distance of PyTorch's and ONNX Runtime's outputs from it.
struct ArgmaxNoise {
  const Tensor& exact;
  double pytorch = 0.0;
  double onnx = 0.0;
};

/// nullopt when the check does not apply (not floating point, shapes differ, rank 0, 1 or over 5,
/// or fewer than 2 classes). Without `noise` every difference with a positive margin in PyTorch's
/// row is a flip; with it, only one whose exact margin exceeds both deviations (the rest are ties).
std::optional<ArgmaxCheck> check_argmax(const Tensor& expected, const Tensor& actual,
                                        const std::optional<ArgmaxNoise>& noise = std::nullopt);

/// Whether an output holds class scores, by its name and rank: names that say scores (logits,
/// scores, probabilities, class, pred, out/aux as torchvision's segmentation models name theirs)
/// of rank 2 to 5, and any output of rank 2 whose name does not say otherwise; never names that
/// say features (hidden, embedding, feature, state, attention, pooled, encoder). A feature map
/// compared by argmax would count ties of meaningless channels.
bool is_class_scores(const std::string& name, const std::vector<int64_t>& shape);

/// Argmax along the last axis per row (first maximum wins, NaN never wins); empty when not applicable.
std::vector<int64_t> argmax_rows(const Tensor& tensor);

}  // namespace onnxproof
