// What a repair writes: repair.json, repair.md, session-options.md, and the run's report pointed at it.
#include "outputs.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <map>

#include "onnxproof/core/atomic_file.h"
#include "onnxproof/core/json_file.h"
#include "onnxproof/model/model_io.h"
#include "onnxproof/report/log_bar_chart.h"  // markup_escape
#include "onnxproof/report/markdown.h"
#include "onnxproof/report/published_report.h"

namespace onnxproof {
namespace fs = std::filesystem;

namespace {

constexpr std::string_view k_repair_schema = "onnxproof.repair/1";

// The model a run folder ships, by its report (published_report.h's shipped_model_of).
std::string shipped_model(const fs::path& folder) {
  const auto report = read_published_report(folder, ErrorCode::invalid_input);
  return report ? shipped_model_of(*report) : "model.onnx";
}

// Operator type -> count in a model; empty when it cannot be read.
std::map<std::string, int> operator_counts(const fs::path& model) {
  std::map<std::string, int> counts;
  if (auto loaded = load_model(model)) {
    for (const auto& node : loaded->proto.graph().node()) ++counts[node.op_type()];
  }
  return counts;
}

// The operator types whose counts differ, as {type: [before, after]}.
nlohmann::json node_diff(const fs::path& before, const fs::path& after) {
  const auto a = operator_counts(before);
  const auto b = operator_counts(after);
  nlohmann::json changed = nlohmann::json::object();
  int total_a = 0, total_b = 0;
  std::map<std::string, std::pair<int, int>> both;
  for (const auto& [type, n] : a) both[type].first = n, total_a += n;
  for (const auto& [type, n] : b) both[type].second = n, total_b += n;
  for (const auto& [type, counts] : both)
    if (counts.first != counts.second) changed[type] = {counts.first, counts.second};
  return {{"before", total_a}, {"after", total_b}, {"op_types", changed}};
}

nlohmann::json attempt_to_json(const RepairAttempt& attempt) {
  const RepairCandidate& c = attempt.candidate;
  nlohmann::json out = {{"name", c.name},
                        {"kind", c.kind},
                        {"change", c.change},
                        {"reason", c.reason},
                        {"status", attempt.status},
                        {"why", attempt.why},
                        {"seconds", attempt.seconds},
                        {"folder", attempt.folder.generic_string()},
                        {"reexport", c.reexport}};
  if (!attempt.kept_in_float32.empty()) out["kept_in_float32"] = attempt.kept_in_float32;
  for (const auto& rewrite : attempt.rewrites)
    out["rewrites"].push_back({{"node", rewrite.node}, {"before", rewrite.before}, {"after", rewrite.after}});
  return out;
}

// The session option of an optimizer fix, in the APIs a deployment sets it with.
std::string session_options_markdown(const std::vector<std::string>& optimizers) {
  const std::string names = fmt::format("{}", fmt::join(optimizers, ","));
  const std::string list = fmt::format("{}", fmt::join(optimizers, "\", \""));
  return fmt::format(
      "# Session options the deployment sets\n\n"
      "The model is proved with ONNX Runtime's optimizer {0} disabled; every session that runs it sets:\n\n"
      "```python\n"
      "import onnxruntime as ort\n"
      "options = ort.SessionOptions()\n"
      "options.add_session_config_entry(\"optimization.disable_specified_optimizers\", \"{0}\")\n"
      "session = ort.InferenceSession(\"model.onnx\", options)\n"
      "# or: ort.InferenceSession(\"model.onnx\", disabled_optimizers=[\"{1}\"])\n"
      "```\n\n"
      "```cpp\n"
      "Ort::SessionOptions options;\n"
      "options.AddConfigEntry(\"optimization.disable_specified_optimizers\", \"{0}\");\n"
      "Ort::Session session(env, \"model.onnx\", options);\n"
      "```\n\n"
      "To prove it again: `onnxproof pipeline ... --disable-optimizer {0}`.\n",
      names, list);
}

std::string repair_markdown(const fs::path& run, const RepairFacts& facts, const RepairResult& result,
                            const std::string& shipped) {
  std::string md =
      fmt::format("# Repair of {}\n\n", run.filename().string().empty() ? run.string() : run.filename().string());
  md += fmt::format(
      "The run failed. onnxproof tried {} of {} candidate changes in {:.1f} s{}. The {} model is not changed: every "
      "candidate is proved against the same reference outputs by the same rule, so a change that moves the numbers "
      "beyond it is no repair.\n\n",
      std::count_if(result.attempts.begin(), result.attempts.end(),
                    [](const auto& a) { return a.status != "not_tried"; }),
      result.attempts.size(), result.seconds, result.budget_spent ? " (the budget ran out)" : "",
      facts.framework == "tensorflow" ? "TensorFlow" : "PyTorch");
  if (result.repaired) {
    const auto& a = result.attempts[*result.repaired];
    md += fmt::format("**Repaired:** {}. Proved in `{}/` (its report.md); ship `{}/{}`.\n\n",
                      markdown_text(a.candidate.change), a.folder.generic_string(), a.folder.generic_string(), shipped);
    md += "What changed:\n\n```json\n" + result.diff.dump(2) + "\n```\n\n";
  } else if (result.attempts.empty()) {
    md +=
        "**Not repaired:** no exporter, opset, runtime, float16 or rewrite change applies to what failed; the fix is "
        "in "
        "the model (the report's findings say where).\n\n";
  } else {
    md += "**Not repaired:** no change tried passes the proof; the table says why each failed.\n\n";
  }
  if (result.attempts.empty()) return md;
  md += "| # | change | tried because | result | seconds | why |\n| ---: | --- | --- | --- | ---: | --- |\n";
  for (std::size_t i = 0; i < result.attempts.size(); ++i) {
    const auto& a = result.attempts[i];
    md += fmt::format("| {} | {} | {} | {} | {:.1f} | {} |\n", i + 1, markdown_text(a.candidate.change),
                      markdown_text(a.candidate.reason), a.status == "not_tried" ? "not tried" : a.status, a.seconds,
                      markdown_text(a.why));
  }
  return md;
}

}  // namespace

nlohmann::json repair_diff(const fs::path& run, const RepairFacts& facts, const RepairAttempt& repaired) {
  const fs::path folder = run / repaired.folder;
  nlohmann::json diff = nlohmann::json::object();
  if (auto report = read_published_report(folder, ErrorCode::invalid_input); report && report->signature) {
    const std::string& exporter = report->signature->exporter;
    const int64_t opset = default_opset_of(*report);
    if (exporter != facts.exporter) diff["exporter"] = {{"from", facts.exporter}, {"to", exporter}};
    if (opset != facts.opset) diff["opset"] = {{"from", facts.opset}, {"to", opset}};
  }
  const auto& candidate = repaired.candidate;
  if (!candidate.disabled_optimizers.empty())
    diff["session_options"] = {{"optimization.disable_specified_optimizers",
                                fmt::format("{}", fmt::join(candidate.disabled_optimizers, ","))}};
  if (!repaired.kept_in_float32.empty()) diff["kept_in_float32"] = repaired.kept_in_float32;
  for (const auto& rewrite : repaired.rewrites)
    diff["rewrites"].push_back(
        {{"node", rewrite.node}, {"shape_before", rewrite.before}, {"shape_after", rewrite.after}});
  const fs::path before = run / (facts.simplified ? "model.sim.onnx" : "model.onnx");
  diff["nodes"] = node_diff(
      before, fs::is_regular_file(folder / "model.sim.onnx") ? folder / "model.sim.onnx" : folder / "model.onnx");
  return diff;
}

Expected<void> write_repair(const fs::path& run, const fs::path& shown, const RepairFacts& facts,
                            const RepairResult& result) {
  nlohmann::json json = {{"schema", k_repair_schema},
                         {"run", shown.string()},
                         {"repaired", result.repaired.has_value()},
                         {"seconds", result.seconds},
                         {"budget_spent", result.budget_spent},
                         {"attempts", nlohmann::json::array()}};
  for (const auto& attempt : result.attempts) json["attempts"].push_back(attempt_to_json(attempt));
  std::string shipped;  // the repaired run's model to ship, read once from its report
  if (result.repaired) {
    const auto& a = result.attempts[*result.repaired];
    shipped = shipped_model(run / a.folder);
    json["repair"] = {{"folder", a.folder.generic_string()},
                      {"change", a.candidate.change},
                      {"model", (a.folder / shipped).generic_string()},
                      {"diff", result.diff}};
    if (!a.candidate.disabled_optimizers.empty())
      ONNXPROOF_TRY(write_file_atomically(run / a.folder / "session-options.md",
                                          session_options_markdown(a.candidate.disabled_optimizers)));
  }
  ONNXPROOF_TRY(write_file_atomically(run / "repair" / "repair.json", json.dump(2) + "\n"));
  return write_file_atomically(run / "repair" / "repair.md", repair_markdown(shown, facts, result, shipped));
}

std::string repair_what_to_do(const RepairResult& result, const std::string& before) {
  if (result.repaired) {
    const auto& a = result.attempts[*result.repaired];
    // A rewrite patches this export's graph; the next export traces the same line again.
    const std::string patched =
        a.candidate.kind.starts_with("rewrite") && !result.frozen_at.empty()
            ? fmt::format(
                  "; the shipped graph is patched, the code is not: change {} or the next export freezes "
                  "again",
                  result.frozen_at)
            : "";
    return fmt::format(
        "onnxproof repair found a proved fix: {}; ship the model proved in {}/{} (repair/repair.md "
        "says what changed){}",
        a.candidate.change, a.folder.generic_string(),
        a.candidate.disabled_optimizers.empty() ? "" : " with the session option of its session-options.md", patched);
  }
  const auto tried = std::count_if(result.attempts.begin(), result.attempts.end(),
                                   [](const auto& a) { return a.status != "not_tried"; });
  if (tried == 0 && !result.budget_spent)
    return before +
           " (onnxproof repair found no exporter, opset, runtime, float16 or rewrite change to try: repair/repair.md)";
  return fmt::format("{} (onnxproof repair tried {} change{} and none passes: repair/repair.md)", before, tried,
                     tried == 1 ? "" : "s");
}

RepairPointer repair_pointer(const RepairResult& result, const std::string& before) {
  RepairPointer pointer{.what_to_do = repair_what_to_do(result, before),
                        .before = before,
                        .found = result.repaired.has_value(),
                        .folder = {}};
  if (result.repaired) pointer.folder = result.attempts[*result.repaired].folder.generic_string();
  return pointer;
}

Expected<void> point_report_at_repair(const fs::path& run, const RepairResult& result) {
  // Through the generated contract: every field read back as written (the open objects keep the
  // fields the schema does not type), only the ship summary changed.
  ONNXPROOF_TRY_ASSIGN(auto report, read_published_report(run, ErrorCode::invalid_input));
  if (!report.ship) return {};
  auto& ship = *report.ship;
  // A run repaired before keeps the words its own findings gave.
  const std::string shown = ship.what_to_do;
  const std::string before = ship.repair ? ship.repair->before : shown;
  const RepairPointer pointer = repair_pointer(result, before);
  const std::string& now = pointer.what_to_do;
  ship.what_to_do = now;
  ship.repair = contract::ReportRepair{.before = before, .found = pointer.found, .summary = "repair/repair.md"};
  if (pointer.found) ship.repair->folder = pointer.folder;
  ONNXPROOF_TRY(write_file_atomically(run / "report.json", contract::write_report(report).dump(2) + "\n"));
  return replace_what_to_do_in_views(run, shown, now);
}

}  // namespace onnxproof
