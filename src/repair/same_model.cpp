// A candidate exported again must prove the run's model: its reference, captured anew, is checked
// against the run's own before its verdict counts (a model or weights file changed since the run,
// or a command.json pointed at another model, would otherwise "repair" a different model).
#include "same_model.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "onnxproof/parity/parity.h"
#include "onnxproof/tensor/dtype.h"

namespace onnxproof {
namespace fs = std::filesystem;

namespace {

bool same_bytes(const Tensor& a, const Tensor& b) {
  return a.dtype() == b.dtype() && a.shape() == b.shape() && std::ranges::equal(a.bytes(), b.bytes());
}

// The largest difference between two outputs relative to the run's scale; nullopt when their
// dtypes or shapes differ.
std::optional<double> relative_difference(const Tensor& run, const Tensor& again) {
  if (run.dtype() != again.dtype() || run.shape() != again.shape()) return std::nullopt;
  if (!is_floating(run.dtype())) return same_bytes(run, again) ? 0.0 : 1.0;
  double scale = 0.0;
  double largest = 0.0;
  for (int64_t i = 0; i < run.size(); ++i) {
    const double a = run.value_as_double(i);
    const double b = again.value_as_double(i);
    if (std::isnan(a) && std::isnan(b)) continue;
    if (std::isfinite(a)) scale = std::max(scale, std::abs(a));
    largest = std::max(largest, std::isfinite(a - b) ? std::abs(a - b) : INFINITY);
  }
  return largest / std::max(scale, 1e-30);
}

}  // namespace

Expected<std::optional<std::string>> another_model_than_the_run(const fs::path& run_reference,
                                                                const fs::path& candidate_reference) {
  ONNXPROOF_TRY_ASSIGN(const Reference run, read_reference(run_reference));
  ONNXPROOF_TRY_ASSIGN(const Reference again, read_reference(candidate_reference));
  std::map<std::string, const ReferenceCase*> by_name;
  for (const auto& c : run.cases) by_name[c.data_set] = &c;
  int compared = 0;
  for (const auto& c : again.cases) {
    const auto found = by_name.find(c.data_set);
    if (found == by_name.end()) continue;
    const ReferenceCase& original = *found->second;
    const bool same_inputs =
        original.inputs.size() == c.inputs.size() &&
        std::ranges::equal(original.inputs, c.inputs, [](const NamedTensor& a, const NamedTensor& b) {
          return a.name == b.name && same_bytes(a.tensor, b.tensor);
        });
    if (!same_inputs || original.outputs.size() != c.outputs.size()) continue;
    ++compared;
    for (std::size_t i = 0; i < c.outputs.size(); ++i) {
      if (run.random_outputs.contains(c.outputs[i].name)) continue;  // two forwards differ anyway
      const auto difference = relative_difference(original.outputs[i].tensor, c.outputs[i].tensor);
      // Float32 outputs of one model on one machine agree to its rounding; 1e-4 of the scale
      // leaves room for a thread count that changed, and none for other weights.
      if (!difference || *difference > 1e-4)
        return fmt::format(
            "the model exported again is not the run's: on {} (the same inputs) its output '{}' "
            "differs from the run's reference{}; the model, its weights or command.json changed "
            "since the run",
            c.data_set, c.outputs[i].name,
            difference ? fmt::format(" by {:.3g} of its scale", *difference) : " in dtype or shape");
    }
  }
  if (compared == 0)
    return std::optional<std::string>(
        "the model exported again could not be compared with the run's: no data set of its reference has the run's "
        "inputs");
  return std::optional<std::string>();
}

}  // namespace onnxproof
