#pragma once
// Which runs a provider list stands for, and the precision each run's rows are judged in:
// "openvino" is OpenVINO in float32 with its default configuration's advisory rows beside it
// (docs/providers.md, "OpenVINO").

#include <string>
#include <utility>
#include <vector>

#include "onnxproof/runtime/session.h"
#include "onnxproof/tensor/dtype.h"

namespace onnxproof::detail {

/// (provider, advisory) per run, each provider once, in the order asked: "openvino" adds
/// "openvino:default" as advisory unless that is asked for itself; "openvino:f32" is "openvino".
std::vector<std::pair<std::string, bool>> providers_to_run(const std::vector<std::string>& asked);

/// The precision rows are judged in: what OpenVINO computed in where it is coarser than the
/// proof's own (`asked`: float32's undefined, or float16 under --precision fp16), else `asked`.
DType judged_precision(const Session& session, DType asked);

}  // namespace onnxproof::detail
