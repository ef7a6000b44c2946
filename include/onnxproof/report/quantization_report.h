#pragma once
// A quantized model in the report (docs/quantization.md): the rounding audit per provider, the
// step histogram of every quantized output (model.onnx's parity rows judged in steps, and
// model.quant.onnx's under --quantize static), and the quantization's own error.

#include <string>

#include "onnxproof/report/report.h"

namespace onnxproof {

/// The quantize step's result (--quantize static): model.quant.onnx's proof in quantization steps
/// against ONNX's reference evaluator, its QuantizeLinear/DequantizeLinear census, and the
/// quantization's own error against the source framework (reference-quant/quantization.json's
/// "outputs", the front end's document, kept as it wrote them). Its section is the Quantization
/// section below, shared with model.onnx's own quantized rows.
struct QuantizeFigures final : StepResult {
  ParityResult proof;
  int quantize_nodes = 0;
  int dequantize_nodes = 0;
  nlohmann::json quantization_error = nlohmann::json::array();
  [[nodiscard]] nlohmann::json to_json() const override;
};

/// The section under "## Quantization"; "" when the run proved no quantized output.
std::string quantization_to_markdown(const Report& report);
std::string quantization_to_html(const Report& report);

/// One line of the quantization's own error (the quantize step's quantization_error), for the
/// step's note: "output 'logits': top-1 agrees with PyTorch float on 62 of 64 rows, max
/// |difference| 0.031 (scale 4.2)"; a figure that was not finite is said so.
std::string quantization_error_summary(const nlohmann::json& outputs, const std::string& source);

}  // namespace onnxproof
