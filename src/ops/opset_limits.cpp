#include "onnxproof/ops/opset_limits.h"

#include <fmt/format.h>
#include <onnx/defs/schema.h>

#include <algorithm>

#include "build_config.h"
#include "onnxproof/runtime/session.h"

namespace onnxproof {

int onnx_last_released_opset() {
  const auto& released = onnx::OpSchemaRegistry::DomainToVersionRange::Instance().LastReleaseVersionMap();
  const auto found = released.find("");
  return found == released.end() ? 0 : found->second;
}

OpsetLimit newest_supported_opset(const std::vector<SupportTable>& targets) {
  const int onnx_limit = onnx_last_released_opset();
  const int ort_limit = onnxruntime_newest_opset();
  OpsetLimit limit{std::min(onnx_limit, ort_limit),
                   fmt::format("ONNX Runtime {} runs up to {}; ONNX {} knows up to {}", onnxruntime_version(),
                               ort_limit, ONNXPROOF_ONNX_VERSION, onnx_limit)};
  for (const auto& table : targets) {
    if (table.max_opset <= 0) continue;
    limit.reason += fmt::format("; {} ({}) supports up to {}", table.target, table.runtime, table.max_opset);
    limit.opset = std::min(limit.opset, table.max_opset);
  }
  return limit;
}

}  // namespace onnxproof
