#include "onnxproof/report/ops_report.h"

#include <fmt/format.h>

#include <map>

#include "onnxproof/runtime/session.h"

namespace onnxproof {

nlohmann::json ops_audit_to_json(const OpsAudit& audit) {
  nlohmann::json targets = nlohmann::json::array();
  for (const auto& table : audit.tables) {
    targets.push_back({{"target", table.target}, {"runtime", table.runtime}, {"source", table.source}});
  }
  nlohmann::json operators = nlohmann::json::array();
  for (const auto& op : audit.operators) {
    nlohmann::json verdicts = nlohmann::json::object();
    for (const auto& v : op.verdicts) {
      verdicts[v.target] = {{"status", operator_status_name(v.status)}, {"detail", v.detail}};
      if (v.needs_opset) verdicts[v.target]["needs_opset"] = v.needs_opset;
    }
    operators.push_back({{"domain", op.domain},
                         {"op_type", op.op_type},
                         {"opset", op.opset},
                         {"schema_version", op.schema_version},
                         {"count", op.count},
                         {"in_subgraphs", op.in_subgraphs},
                         {"nodes", op.nodes},
                         {"targets", verdicts}});
  }
  return {{"targets", targets}, {"operators", operators}};
}

void print_ops_audit(std::ostream& out, const OpsAudit& audit) {
  for (const auto& table : audit.tables) out << fmt::format("target {:<10} {}\n", table.target, table.runtime);
  std::size_t width = 8;
  for (const auto& op : audit.operators) width = std::max(width, op.domain.size() + 2 + op.op_type.size());
  out << fmt::format("{:<{}} {:>5} {:>7} {:>5}", "operator", width, "opset", "version", "count");
  for (const auto& table : audit.tables) out << fmt::format("  {:<12}", table.target);
  out << '\n';
  for (const auto& op : audit.operators) {
    out << fmt::format("{:<{}} {:>5} {:>7} {:>5}", op.domain + "::" + op.op_type, width, op.opset, op.schema_version,
                       op.count);
    for (const auto& v : op.verdicts) out << fmt::format("  {:<12}", operator_status_name(v.status));
    out << '\n';
  }
}

void print_probe_result(std::ostream& out, const std::vector<ProbeRow>& rows,
                        const std::vector<ProbeDifference>& differences, const std::string& provider) {
  std::map<ProbeStatus, int> counts;
  for (const auto& row : rows) {
    ++counts[row.status];
    if (row.status != ProbeStatus::supported) {
      out << fmt::format("{:<16} {}::{}-{}: {}\n", probe_status_name(row.status), row.domain, row.op_type,
                         row.since_version, row.message);
    }
  }
  for (const auto& [row, documented] : differences) {
    out << fmt::format("differs          {}::{}-{}: documented {}, probed {}\n", row.domain, row.op_type,
                       row.since_version, documented ? "supported" : "absent", probe_status_name(row.status));
  }
  out << fmt::format(
      "probed {} schemas on {} (ONNX Runtime {}): {} supported, {} not implemented, {} errors; "
      "{} differences from the documented table\n",
      rows.size(), provider, onnxruntime_version(), counts[ProbeStatus::supported],
      counts[ProbeStatus::not_implemented], counts[ProbeStatus::error], differences.size());
}

}  // namespace onnxproof
