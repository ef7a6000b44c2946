#pragma once
// A quantized model in the report (docs/quantization.md): the rounding audit per provider, the
// step histogram of every quantized output (model.onnx's parity rows judged in steps, and
// model.quant.onnx's under --quantize static), and the quantization's own error.

#include <string>

#include "onnxproof/report/report.h"

namespace onnxproof {

/// The section under "## Quantization"; "" when the run proved no quantized output.
std::string quantization_to_markdown(const Report& report);
std::string quantization_to_html(const Report& report);

}  // namespace onnxproof
