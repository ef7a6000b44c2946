#pragma once
// Parity rows of quantized outputs: judged in quantization steps (quantize/steps.h) instead of the
// calibrated rule, whose float budget a single legitimate rounding tie would exceed.

#include <map>
#include <string>

#include "onnxproof/parity/parity.h"
#include "onnxproof/quantize/grid.h"

namespace onnxproof::detail {

/// Judges output `index` of case `c` in steps when `grids` puts it on a grid and it is a floating
/// tensor of PyTorch's shape; false (the row untouched) otherwise.
bool compare_in_steps(const ReferenceCase& c, std::size_t index, const Tensor& actual,
                      const std::map<std::string, QuantGrid>& grids, ParityRow& row);

}  // namespace onnxproof::detail
