#pragma once
// --quantize static (docs/quantization.md): the proved float export quantized afterwards by ONNX
// Runtime's quantize_static (QDQ, int8, per-channel weights) in the front end
// (python/onnxproof/core/quantize_static.py), calibrated on the reference's inputs (the --data
// samples when given), with the reference the quantized model is proved against: ONNX's own
// reference evaluator on the same inputs, and its float64 twin.

#include <filesystem>
#include <string>

#include "onnxproof/core/error.h"

namespace onnxproof {

struct StaticQuantization {
  std::filesystem::path model;      // model.quant.onnx
  std::filesystem::path reference;  // its reference folder, with quantization.json
};

/// Writes the quantized copy of `model` to `out` and its reference to `reference_out` (both
/// atomically, by the front end), calibrating on the cases of `reference`. Never modifies `model`.
/// ErrorCode::not_found when the interpreter cannot start, ErrorCode::invalid_input with the front
/// end's reason when quantization fails, ErrorCode::limit_exceeded past `timeout_seconds`.
Expected<StaticQuantization> quantize_static(const std::filesystem::path& model, const std::filesystem::path& out,
                                             const std::filesystem::path& reference,
                                             const std::filesystem::path& reference_out, const std::string& python,
                                             double timeout_seconds);

}  // namespace onnxproof
