#include "onnxproof/parity/argmax.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <initializer_list>
#include <limits>

namespace onnxproof {

namespace {

// Where the classes lie: positions are (outer, inner) pairs, class c of a position at
// (outer * classes + c) * inner + inner_index.
struct ClassLayout {
  int64_t outer = 0;
  int64_t classes = 0;
  int64_t inner = 0;
};

std::optional<ClassLayout> class_layout(const std::vector<int64_t>& shape) {
  const std::size_t rank = shape.size();
  if (rank < 2 || rank > 5) return std::nullopt;
  const std::size_t axis = rank <= 3 ? rank - 1 : 1;
  ClassLayout layout{1, shape[axis], 1};
  for (std::size_t i = 0; i < axis; ++i) layout.outer *= shape[i];
  for (std::size_t i = axis + 1; i < rank; ++i) layout.inner *= shape[i];
  if (layout.classes < 2 || layout.outer * layout.inner == 0) return std::nullopt;
  return layout;
}

// The first largest class at one position (NaN never wins).
int64_t top_class(const Tensor& tensor, const ClassLayout& layout, int64_t outer, int64_t inner) {
  double best = -std::numeric_limits<double>::infinity();
  int64_t best_class = 0;
  for (int64_t c = 0; c < layout.classes; ++c) {
    const double value = tensor.value_as_double((outer * layout.classes + c) * layout.inner + inner);
    if (value > best) {
      best = value;
      best_class = c;
    }
  }
  return best_class;
}

bool finite_scores(const Tensor& tensor, const ClassLayout& layout, int64_t outer, int64_t inner) {
  for (int64_t c = 0; c < layout.classes; ++c) {
    if (!std::isfinite(tensor.value_as_double((outer * layout.classes + c) * layout.inner + inner))) return false;
  }
  return true;
}

}  // namespace

bool is_class_scores(const std::string& name, const std::vector<int64_t>& shape) {
  std::string lower;
  for (const char ch : name) lower += static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  const auto says = [&](std::initializer_list<const char*> words) {
    return std::any_of(words.begin(), words.end(),
                       [&](const char* word) { return lower.find(word) != std::string::npos; });
  };
  if (says(
          {"hidden", "embed", "feature", "state", "attention", "attn", "pooled", "pooler", "encoder", "past", "cache"}))
    return false;
  if (shape.size() < 2 || shape.size() > 5) return false;
  if (says({"logit", "score", "prob", "class", "cls", "pred", "label", "seg"})) return true;
  // torchvision's segmentation models name their maps "out" and "aux"; "output_0" is no name at all.
  if ((lower == "out" || lower == "aux") && shape.size() >= 4) return true;
  return shape.size() == 2;
}

std::vector<int64_t> argmax_rows(const Tensor& tensor) {
  if (!is_floating(tensor.dtype()) || tensor.rank() == 0 || tensor.shape().back() < 2) return {};
  const ClassLayout layout{tensor.size() / tensor.shape().back(), tensor.shape().back(), 1};
  std::vector<int64_t> result(static_cast<std::size_t>(layout.outer), 0);
  for (int64_t row = 0; row < layout.outer; ++row)
    result[static_cast<std::size_t>(row)] = top_class(tensor, layout, row, 0);
  return result;
}

std::optional<ArgmaxCheck> check_argmax(const Tensor& expected, const Tensor& actual,
                                        const std::optional<ArgmaxNoise>& noise) {
  if (expected.shape() != actual.shape() || expected.dtype() != actual.dtype() || !is_floating(expected.dtype()))
    return std::nullopt;
  const auto layout = class_layout(expected.shape());
  if (!layout) return std::nullopt;
  const Tensor& judge = noise ? noise->exact : expected;  // whose margin decides
  const double allowed = noise ? std::max(noise->pytorch, noise->onnx) : 0.0;
  ArgmaxCheck check;
  check.rows = layout->outer * layout->inner;
  check.min_margin = std::numeric_limits<double>::infinity();
  for (int64_t row = 0; row < check.rows; ++row) {
    const int64_t outer = row / layout->inner;
    const int64_t inner = row % layout->inner;
    // A position where ONNX Runtime's scores hold NaN/Inf has no class to compare: NAN_OR_INF
    // reports it, and an argmax over NaN would only repeat it as a flip.
    if (!finite_scores(actual, *layout, outer, inner)) continue;
    const int64_t mine = top_class(expected, *layout, outer, inner);
    const int64_t theirs = top_class(actual, *layout, outer, inner);
    if (mine == theirs) continue;
    const auto at = [&](int64_t c) {
      return judge.value_as_double((outer * layout->classes + c) * layout->inner + inner);
    };
    const double margin = std::fabs(at(mine) - at(theirs));
    // PyTorch's own tie (margin 0) or a margin inside both sides' float noise: a tie, no flip.
    if (!(margin > allowed)) {
      ++check.ties;
      continue;
    }
    if (check.flips++ == 0) check.first_flip_row = row;
    check.min_margin = std::min(check.min_margin, margin);
  }
  if (check.flips == 0) check.min_margin = 0.0;
  return check;
}

}  // namespace onnxproof
