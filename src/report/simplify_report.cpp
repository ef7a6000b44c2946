#include "onnxproof/report/simplify_report.h"

#include <fmt/format.h>

#include <map>
#include <utility>

#include "onnxproof/report/check_report.h"
#include "onnxproof/report/log_bar_chart.h"
#include "onnxproof/report/markdown.h"

namespace onnxproof {

std::map<std::string, int> changed_rules(const SimplifyResult& result) {
  std::map<std::string, int> rules;
  for (const auto& rule : result.rules)
    if (rule.changes > 0) rules[rule.name] = rule.changes;
  return rules;
}

nlohmann::json simplify_outcome_to_json(const SimplifyOutcome& outcome) {
  const auto& result = outcome.result;
  nlohmann::json passes = nlohmann::json::object();
  nlohmann::json notes = nlohmann::json::object();
  for (const auto& pass : result.passes) {
    passes[pass.name] = pass.changes;
    if (!pass.notes.empty()) notes[pass.name] = pass.notes;
  }
  const nlohmann::json rules = changed_rules(result);
  nlohmann::json details = {{"nodes_before", result.nodes_before()},
                            {"nodes_after", result.nodes_after()},
                            {"ops_before", result.ops_before},
                            {"ops_after", result.ops_after},
                            {"bytes_before", result.bytes_before},
                            {"bytes_after", result.bytes_after},
                            {"passes", passes},
                            {"rules", rules},
                            {"rounds", result.rounds},
                            {"proof", {{"cases", outcome.proof.cases}, {"max_abs", outcome.proof.max_abs}}}};
  if (!notes.empty()) details["notes"] = notes;
  if (!outcome.shared_data.empty()) details["shared_data"] = outcome.shared_data;
  return details;
}

void print_simplify_outcome(std::ostream& out, const SimplifyOutcome& outcome, const std::filesystem::path& output) {
  const auto& result = outcome.result;
  for (const auto& pass : result.passes) {
    out << fmt::format("pass {:<22} {:>5} changes\n", pass.name, pass.changes);
    for (const auto& rule : result.rules) {
      if (rule.pass == pass.name && rule.changes > 0)
        out << fmt::format("  rule {:<34} {:>5}\n", rule.name, rule.changes);
    }
    for (const auto& note : pass.notes) out << fmt::format("  note: {}\n", note);
  }
  std::map<std::string, std::pair<int, int>> ops;
  for (const auto& [op, n] : result.ops_before) ops[op].first = n;
  for (const auto& [op, n] : result.ops_after) ops[op].second = n;
  out << fmt::format("nodes            {} -> {} in {} rounds, {:.2f} s\n", result.nodes_before(), result.nodes_after(),
                     result.rounds, result.seconds);
  for (const auto& [op, counts] : ops) {
    if (counts.first != counts.second) out << fmt::format("  {:<24} {:>5} -> {}\n", op, counts.first, counts.second);
  }
  out << fmt::format("bytes            {} -> {}\n", format_bytes(result.bytes_before),
                     format_bytes(result.bytes_after));
  if (!result.changed() && has_errors(outcome.proof.findings)) {  // refused: the passes wrote an invalid model
    print_findings(out, outcome.proof.findings);
    return;
  }
  if (!result.changed()) {
    out << fmt::format("simplified       nothing to simplify; {} is a copy\n", output.string());
    return;
  }
  out << fmt::format("proof            {} cases, max abs difference {:.3g}\n", outcome.proof.cases,
                     outcome.proof.max_abs);
  print_findings(out, outcome.proof.findings);
  if (outcome.written) out << fmt::format("simplified       {}\n", output.string());
}

}  // namespace onnxproof
