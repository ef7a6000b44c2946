#pragma once
// Writers for the operator audit: a terminal table (one column per target) and JSON.

#include <ostream>

#include <nlohmann/json.hpp>

#include "onnxproof/ops/audit.h"
#include "onnxproof/ops/probe.h"

namespace onnxproof {

/// targets (with the runtime each table describes) and operators with a verdict per target.
nlohmann::json ops_audit_to_json(const OpsAudit& audit);

/// operator, opset, schema version, count, then one status column per target.
void print_ops_audit(std::ostream& out, const OpsAudit& audit);

/// `ops probe`'s terminal output: every row that is not supported, every difference from the
/// documented table, and a count line.
void print_probe_result(std::ostream& out, const std::vector<ProbeRow>& rows,
                        const std::vector<ProbeDifference>& differences, const std::string& provider);

}  // namespace onnxproof
