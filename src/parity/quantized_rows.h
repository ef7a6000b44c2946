#pragma once
// Parity rows of quantized outputs: judged in quantization steps (quantize/steps.h) instead of the
// calibrated rule, whose float budget a single legitimate rounding tie would exceed.

#include <filesystem>
#include <map>
#include <string>

#include "onnxproof/parity/parity.h"
#include "onnxproof/quantize/grid.h"

namespace onnxproof::detail {

/// The model's quantized outputs: their grids and, per output, PyTorch's own steps against its
/// float64 twin over the cases that have one (the largest share and steps): every case is allowed that.
struct QuantizedOutputs {
  std::map<std::string, QuantGrid> grids;
  std::map<std::string, StepCount> pooled;
  std::vector<QuantizePair> pairs;  // the QuantizeLinear type pairs the rounding audit tries
  int opset = 0;
  std::map<std::string, std::string> no_grid;  // quantized outputs judged by the other rules, and why
};

/// The rounding audit of every pair on `provider`, a warning naming it when it rounds otherwise.
void audit_provider_rounding(const std::string& provider, const QuantizedOutputs& quantized, ParityResult& result);
/// Outputs a DequantizeLinear makes that cannot be judged in steps get STEPS_NOT_APPLIED in `result`.
QuantizedOutputs quantized_outputs(const std::filesystem::path& model, const Reference& reference,
                                   ParityResult& result);

/// Judges output `index` of case `c` in steps when it is on a grid and a floating tensor; false
/// (the row untouched) otherwise.
bool compare_in_steps(const ReferenceCase& c, std::size_t index, const Tensor& actual,
                      const QuantizedOutputs& quantized, ParityRow& row);

}  // namespace onnxproof::detail
