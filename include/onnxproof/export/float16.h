#pragma once
// The float16 variant of the proof: the exported model converted to float16 by the front end
// (python/onnxproof/core/float16.py, ONNX Runtime's maintained converter onnxruntime.transformers.float16
// from the pinned onnxruntime package), inputs and outputs kept float32 so the same reference data
// feeds it and the same float64 reference judges it.

#include <filesystem>
#include <string>
#include <vector>

#include "onnxproof/core/error.h"

namespace onnxproof {

/// What the conversion kept in float32 ("none", or the operator types of the converter's block
/// list the model has), as the front end printed it.
struct Float16Conversion {
  std::filesystem::path model;  // the converted model, `out`
  std::string kept_in_float32;
};

/// Writes the float16 copy of `model` to `out` (atomically, by the front end) with the interpreter
/// `python` (front_end_interpreter's rule); the nodes named in `keep_float32` stay float32 beside
/// the converter's own block list (a block that overflows float16, --keep-float32). Never modifies `model`.
/// ErrorCode::not_found when the interpreter cannot start, ErrorCode::invalid_input with the front end's reason when
/// the conversion fails (onnxruntime's converter missing, a model it cannot convert), ErrorCode::limit_exceeded past
/// `timeout_seconds`.
Expected<Float16Conversion> convert_to_float16(const std::filesystem::path& model, const std::filesystem::path& out,
                                               const std::string& python, double timeout_seconds,
                                               const std::vector<std::string>& keep_float32 = {});

}  // namespace onnxproof
