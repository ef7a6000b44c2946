#pragma once
// The operator audit: every operator of a model (subgraphs included), at the schema version its
// opset resolves to, checked against each target runtime's support table.

#include <string>
#include <string_view>
#include <vector>

#include <onnx/onnx_pb.h>

#include "onnxproof/core/error.h"
#include "onnxproof/core/finding.h"
#include "onnxproof/ops/support_table.h"

namespace onnxproof {

/// A target's answer for one operator: needs_opset when only a later version of it is supported.
enum class OperatorStatus { supported, restricted, unsupported, needs_opset };

/// "supported", "restricted", "unsupported", "needs-opset": report.json's names.
std::string_view operator_status_name(OperatorStatus status);

struct TargetVerdict {
  std::string target;
  OperatorStatus status = OperatorStatus::unsupported;
  std::string detail;   // restriction text, or why unsupported
  int needs_opset = 0;  // for needs-opset: the opset to re-export with
};

struct AuditedOperator {
  std::string domain;  // "ai.onnx" for the default domain
  std::string op_type;
  int64_t opset = 0;       // the model's import for the domain
  int schema_version = 0;  // the schema version that opset resolves to (0: unknown schema)
  int count = 0;
  int in_subgraphs = 0;
  std::vector<std::string> nodes;       // node names (op type where unnamed)
  std::vector<TargetVerdict> verdicts;  // one per table, in table order
};

struct OpsAudit {
  std::vector<SupportTable> tables;
  std::vector<AuditedOperator> operators;
  std::vector<Finding> findings;  // OP_UNSUPPORTED_BY_TARGET, OP_RESTRICTED_BY_TARGET
};

/// Audits the model against the tables. Never fails: problems are findings (one per target and
/// operator, naming its nodes, with the ways out).
OpsAudit audit_operators(const onnx::ModelProto& model, std::vector<SupportTable> tables);

}  // namespace onnxproof
