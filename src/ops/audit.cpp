#include "onnxproof/ops/audit.h"

#include <onnx/defs/schema.h>

#include <fmt/format.h>

#include <map>

#include "onnxproof/core/name_table.h"
#include "onnxproof/model/model_io.h"

namespace onnxproof {

constexpr NameTable<OperatorStatus, 4> k_operator_status_names = {
    {OperatorStatus::supported, "supported"},
    {OperatorStatus::restricted, "restricted"},
    {OperatorStatus::unsupported, "unsupported"},
    {OperatorStatus::needs_opset, "needs-opset"},
};

std::string_view operator_status_name(OperatorStatus status) { return name_in(k_operator_status_names, status); }

namespace {

std::string display(const std::string& domain) { return domain.empty() ? "ai.onnx" : domain; }

int resolve_schema_version(const std::string& op_type, int64_t opset, const std::string& domain) {
  const auto* schema =
      onnx::OpSchemaRegistry::Schema(op_type, static_cast<int>(opset), domain == "ai.onnx" ? "" : domain);
  return schema ? schema->SinceVersion() : 0;
}

TargetVerdict judge(const SupportTable& table, const AuditedOperator& op) {
  TargetVerdict verdict{table.target, OperatorStatus::unsupported, "", 0};
  std::vector<const SupportEntry*> rows;
  for (const auto& entry : table.entries) {
    if (entry.domain == op.domain && entry.op_type == op.op_type) rows.push_back(&entry);
  }
  if (rows.empty()) {
    verdict.detail = "not in " + table.runtime + "'s table";
    return verdict;
  }
  const int version = op.schema_version > 0 ? op.schema_version : static_cast<int>(op.opset);
  int next_since = 0;
  int last_until = 0;
  const SupportEntry* covering = nullptr;
  for (const auto* row : rows) {
    const bool covers = (row->since_version == 0 || row->since_version <= version) &&
                        (row->until_version == 0 || version <= row->until_version);
    if (covers) covering = row;
    if (row->status != SupportStatus::unsupported && row->since_version > version &&
        (next_since == 0 || row->since_version < next_since)) {
      next_since = row->since_version;
    }
    last_until = std::max(last_until, row->until_version);
  }
  if (covering && covering->status != SupportStatus::unsupported) {
    verdict.status =
        covering->status == SupportStatus::supported ? OperatorStatus::supported : OperatorStatus::restricted;
    verdict.detail = covering->status == SupportStatus::supported ? "" : covering->restrictions;
    return verdict;
  }
  if (next_since > 0) {  // a later version of the operator is supported: a newer opset is the way out
    verdict.status = OperatorStatus::needs_opset;
    verdict.needs_opset = next_since;
    verdict.detail =
        fmt::format("supported only from version {} of the operator (opset {} or newer)", next_since, next_since);
  } else if (covering) {
    verdict.detail = covering->restrictions.empty() ? "marked unsupported" : covering->restrictions;
  } else {
    verdict.detail = fmt::format("supported only up to version {}", last_until);
  }
  return verdict;
}

std::string node_list(const std::vector<std::string>& nodes) {
  std::string text;
  for (std::size_t i = 0; i < nodes.size() && i < 5; ++i) text += (i ? ", " : "") + nodes[i];
  if (nodes.size() > 5) text += fmt::format(", ... ({} nodes)", nodes.size());
  return text;
}

}  // namespace

OpsAudit audit_operators(const onnx::ModelProto& model, std::vector<SupportTable> tables) {
  OpsAudit audit;
  audit.tables = std::move(tables);
  std::map<std::string, int64_t> opsets;
  for (const auto& opset : model.opset_import()) opsets[display(opset.domain())] = opset.version();

  std::map<std::pair<std::string, std::string>, AuditedOperator> by_key;
  for_each_graph(model.graph(), [&](const onnx::GraphProto& graph) {
    const bool subgraph = &graph != &model.graph();
    for (const auto& node : graph.node()) {
      auto& op = by_key[{display(node.domain()), node.op_type()}];
      if (op.count == 0) {
        op.domain = display(node.domain());
        op.op_type = node.op_type();
        op.opset = opsets.contains(op.domain) ? opsets[op.domain] : 0;
        op.schema_version = resolve_schema_version(op.op_type, op.opset, op.domain);
      }
      ++op.count;
      if (subgraph) ++op.in_subgraphs;
      op.nodes.push_back(node.name().empty() ? node.op_type() : node.name());
    }
  });

  const int64_t default_opset = opsets.contains("ai.onnx") ? opsets["ai.onnx"] : 0;
  for (const auto& table : audit.tables) {
    if (table.min_opset > 0 && (default_opset < table.min_opset || default_opset > table.max_opset)) {
      audit.findings.push_back({FindingCode::op_unsupported_by_target, Severity::error, "ops",
                                fmt::format("{}: the model's opset {} is outside the documented range {}-{}",
                                            table.runtime, default_opset, table.min_opset, table.max_opset),
                                "opset_import", fmt::format("re-export with --opset {}", table.max_opset)});
    }
  }
  for (auto& [key, op] : by_key) {
    for (const auto& table : audit.tables) {
      TargetVerdict verdict = judge(table, op);
      const std::string name = op.domain + "::" + op.op_type;
      if (verdict.status == OperatorStatus::restricted) {
        audit.findings.push_back(
            {FindingCode::op_restricted_by_target, Severity::warning, "ops",
             fmt::format("{} supports {} with restrictions: {}", table.runtime, name, verdict.detail),
             node_list(op.nodes), "check that these nodes meet the restrictions before you ship"});
      } else if (verdict.status == OperatorStatus::needs_opset) {
        audit.findings.push_back({FindingCode::op_unsupported_by_target, Severity::error, "ops",
                                  fmt::format("{} does not support {}-{} (the model's opset {}): {}", table.runtime,
                                              name, op.schema_version, op.opset, verdict.detail),
                                  node_list(op.nodes), fmt::format("re-export with --opset {}", verdict.needs_opset)});
      } else if (verdict.status == OperatorStatus::unsupported) {
        audit.findings.push_back(
            {FindingCode::op_unsupported_by_target, Severity::error, "ops",
             fmt::format("{} does not support {} ({} node(s)): {}", table.runtime, name, op.count, verdict.detail),
             node_list(op.nodes),
             "ways out: decompose it into supported operators, export at a newer opset if a later version is "
             "supported, add a plugin or custom op to the runtime, or change the model"});
      }
      op.verdicts.push_back(std::move(verdict));
    }
    audit.operators.push_back(std::move(op));
  }
  return audit;
}

}  // namespace onnxproof
