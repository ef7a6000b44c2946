#include "onnxproof/ops/opset_limits.h"

#include <fmt/format.h>
#include <onnx/defs/schema.h>

#include <algorithm>
#include <optional>
#include <set>

#include "build_config.h"
#include "onnxproof/ops/release_forecast.h"
#include "onnxproof/runtime/session.h"

namespace onnxproof {
namespace {

// Whether the table supports (fully or with restrictions) the default-domain operator's schema
// `version`; nullopt when no row covers it.
std::optional<bool> table_supports(const SupportTable& table, const std::string& op_type, int version) {
  std::optional<bool> supported;
  for (const auto& entry : table.entries) {
    if (entry.domain != "ai.onnx" || entry.op_type != op_type) continue;
    if ((entry.since_version == 0 || entry.since_version <= version) &&
        (entry.until_version == 0 || version <= entry.until_version)) {
      supported = entry.status != SupportStatus::unsupported;
    }
  }
  return supported;
}

// The newest opset under `ceiling` at which the table supports the schema `op_type` resolves to,
// when it does not support the one at `ceiling`; 0 when it does, or no older opset helps.
int newest_supported_for(const SupportTable& table, const std::string& op_type, int ceiling) {
  const auto* schema = onnx::OpSchemaRegistry::Schema(op_type, ceiling, "");
  if (!schema || table_supports(table, op_type, schema->SinceVersion()).value_or(true)) return 0;
  const int oldest = std::max(table.min_opset, 7);
  for (int opset = schema->SinceVersion() - 1; opset >= oldest; --opset) {
    const auto* older = onnx::OpSchemaRegistry::Schema(op_type, opset, "");
    if (!older) return 0;
    if (table_supports(table, op_type, older->SinceVersion()).value_or(false)) return opset;
    opset = older->SinceVersion();  // the loop's decrement moves to the schema before this one
  }
  return 0;
}

// Every table's limits below `ceiling`, the lowest per operator.
std::map<std::string, int> operator_limits(const std::vector<SupportTable>& targets, int ceiling) {
  std::map<std::string, int> limits;
  for (const auto& table : targets) {
    std::set<std::string> op_types;
    for (const auto& entry : table.entries) {
      if (entry.domain == "ai.onnx" && entry.status == SupportStatus::unsupported) op_types.insert(entry.op_type);
    }
    for (const auto& op_type : op_types) {
      const int limit = newest_supported_for(table, op_type, ceiling);
      if (limit == 0) continue;
      const auto [known, added] = limits.emplace(op_type, limit);
      if (!added) known->second = std::min(known->second, limit);
    }
  }
  return limits;
}

}  // namespace

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
                               ort_limit, ONNXPROOF_ONNX_VERSION, onnx_limit),
                   {}};
  for (const auto& table : targets) {
    if (table.max_opset <= 0) continue;
    limit.reason += fmt::format("; {} ({}) supports up to {}", table.target, table.runtime, table.max_opset);
    limit.opset = std::min(limit.opset, table.max_opset);
  }
  limit.op_limits = operator_limits(targets, limit.opset);
  const PortableOpset portable = portable_opset();
  limit.portable = portable.opset;
  limit.portable_reason = portable.reason;
  return limit;
}

}  // namespace onnxproof
