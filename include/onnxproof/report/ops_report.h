#pragma once
// Writers for the operator audit: a terminal table (one column per target) and JSON.

#include <ostream>

#include <nlohmann/json.hpp>

#include "onnxproof/ops/audit.h"

namespace onnxproof {

/// targets (with the runtime each table describes) and operators with a verdict per target.
nlohmann::json ops_audit_to_json(const OpsAudit& audit);

/// operator, opset, schema version, count, then one status column per target.
void print_ops_audit(std::ostream& out, const OpsAudit& audit);

}  // namespace onnxproof
