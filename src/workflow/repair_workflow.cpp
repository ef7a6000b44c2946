// `onnxproof repair RUN` and `pipeline --repair` (docs/repair.md): the command a run was made
// with, recorded beside it, changed as each candidate says and proved again (repair/repair.h).
#include "repair_workflow.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <map>

#include "onnxproof/core/atomic_file.h"
#include "onnxproof/core/json_file.h"
#include "onnxproof/export/export_step.h"
#include "onnxproof/repair/repair.h"
#include "onnxproof/report/ship_summary.h"
#include "onnxproof/workflow/workflows.h"

namespace onnxproof {
namespace fs = std::filesystem;

namespace {

constexpr std::string_view k_command_schema = "onnxproof.command/1";

// A path as the run folder keeps it: absolute, so a repair from another folder finds it.
std::string absolute_path(const fs::path& path) { return path.empty() ? std::string() : fs::absolute(path).string(); }

// A spec whose first part names a file (file.py:callable, model.pt, model.keras) or a SavedModel
// folder (saved_model:DIR) with that part absolute; package.module:callable (even where a folder
// of that name lies here) and family specs unchanged.
std::string absolute_spec(const std::string& spec) {
  if (spec.starts_with("saved_model:")) return "saved_model:" + absolute_path(spec.substr(12));
  const auto colon = spec.find(':');
  const std::string head = spec.substr(0, colon);
  std::error_code ec;
  if (head.empty() || !fs::is_regular_file(head, ec)) return spec;
  return absolute_path(head) + (colon == std::string::npos ? "" : spec.substr(colon));
}

nlohmann::json command_to_json(const PipelineCommand& command) {
  const ModelArguments& m = command.model;
  const ProofArguments& p = command.proof;
  nlohmann::json proof = {{"providers", p.providers},
                          {"output_tolerances", p.output_tolerances},
                          {"skip_optimization_check", p.skip_optimization_check},
                          {"precision", p.precision},
                          {"disabled_optimizers", p.disabled_optimizers},
                          {"keep_float32", p.keep_float32}};
  if (p.rtol) proof["rtol"] = *p.rtol;
  if (p.atol) proof["atol"] = *p.atol;
  return {{"schema", std::string(k_command_schema)},
          {"model",
           {{"model", absolute_spec(m.model)},
            {"inputs", m.inputs},
            {"dynamic", m.dynamic},
            {"opset", m.opset},
            {"exporter", m.exporter},
            {"sweep", m.sweep},
            {"samples", m.samples},
            {"generate", m.generate},
            {"merged_decoder", m.merged_decoder},
            {"data", absolute_spec(m.data)},
            {"data_dir", absolute_path(m.data_dir)},
            {"python", m.python.find('/') == std::string::npos ? m.python : absolute_path(m.python)},
            {"export_timeout", m.export_timeout},
            {"from_export", absolute_path(m.from_export)}}},
          {"proof", proof},
          {"targets", command.targets},
          {"quantize", command.quantize},
          {"no_simplify", command.no_simplify}};
}

// RUN/command.json back as the command; ErrorCode::usage naming what is wrong.
Expected<PipelineCommand> read_command_record(const fs::path& run) {
  const fs::path file = run / "command.json";
  ONNXPROOF_TRY_ASSIGN(const auto json, read_json_object(file, ErrorCode::usage));
  if (json.value("schema", "") != k_command_schema)
    return fail(ErrorCode::usage, file.string() + " is not an onnxproof command record (" + std::string(k_command_schema) + ")");
  try {
    PipelineCommand command;
    const auto& m = json.at("model");
    command.model = {.model = m.at("model"),
                     .inputs = m.at("inputs"),
                     .dynamic = m.at("dynamic"),
                     .opset = m.at("opset"),
                     .exporter = m.at("exporter"),
                     .sweep = m.at("sweep"),
                     .samples = m.at("samples"),
                     .generate = m.at("generate"),
                     .merged_decoder = m.at("merged_decoder"),
                     .data = m.at("data"),
                     .data_dir = m.at("data_dir").get<std::string>(),
                     .python = m.at("python"),
                     .export_timeout = m.at("export_timeout"),
                     .from_export = m.at("from_export").get<std::string>()};
    const auto& p = json.at("proof");
    command.proof = {.providers = p.at("providers"),
                     .output_tolerances = p.at("output_tolerances"),
                     .skip_optimization_check = p.at("skip_optimization_check"),
                     .precision = p.at("precision"),
                     .disabled_optimizers = p.at("disabled_optimizers"),
                     .keep_float32 = p.at("keep_float32")};
    if (p.contains("rtol")) command.proof.rtol = p.at("rtol").get<double>();
    if (p.contains("atol")) command.proof.atol = p.at("atol").get<double>();
    command.targets = json.at("targets");
    command.quantize = json.at("quantize");
    command.no_simplify = json.at("no_simplify");
    return command;
  } catch (const nlohmann::json::exception& error) {
    return fail(ErrorCode::usage, file.string() + " is not a readable command record: " + error.what());
  }
}

// The proof options a report's parity rows show: the providers, and the tolerances of rows a
// user's --rtol/--atol (or --output-tolerance) decided, per output.
void proof_from_rows(const nlohmann::json& rows, ProofArguments& proof) {
  std::vector<std::string> providers;
  std::map<std::string, std::pair<double, double>> user_rule;
  for (const auto& row : rows) {
    const std::string provider = row.value("provider", "cpu");
    if (std::find(providers.begin(), providers.end(), provider) == providers.end()) providers.push_back(provider);
    if (row.value("rule", "") == "user" && row.contains("rtol") && row.contains("atol"))
      user_rule[row.value("output", "")] = {row.value("rtol", 0.0), row.value("atol", 0.0)};
  }
  if (!providers.empty()) proof.providers = fmt::format("{}", fmt::join(providers, ","));
  for (const auto& [output, tolerance] : user_rule)
    proof.output_tolerances.push_back(fmt::format("{}={},{}", output, tolerance.first, tolerance.second));
}

// The targets a report's ops step audited against ("ort-cpu: ONNX Runtime ...") and the releases
// its runtimes step proved on (ort-cpu@VERSION), comma-separated; the quantization it made.
void targets_from_steps(const nlohmann::json& steps, PipelineCommand& command) {
  std::vector<std::string> targets;
  for (const auto& step : steps) {
    const std::string name = step.value("name", "");
    if (name == "quantize") command.quantize = "static";
    for (const auto& target : step.value("targets", nlohmann::json::array())) {
      if (name != "ops" || !target.is_string()) continue;
      const std::string text = target.get<std::string>();
      targets.push_back(text.substr(0, text.find(':')));
    }
    for (const auto& release : step.value("releases", nlohmann::json::array()))
      if (name == "runtimes" && release.is_object())
        targets.push_back(release.value("target", "ort-cpu@" + release.value("version", "")));
  }
  if (!targets.empty()) command.targets = fmt::format("{}", fmt::join(targets, ","));
}

// A run without a command record (proved by onnxproof.prove(), or by an older onnxproof): its
// own export proved again with the proof options its report shows (providers, float16, the
// user's tolerances, the targets and releases, the quantization); no new export is possible.
PipelineCommand command_from_report(const fs::path& run) {
  PipelineCommand command;
  command.model.from_export = fs::absolute(run);
  if (auto report = read_json_object(run / "report.json", ErrorCode::usage)) {
    if (report_proves_float16(*report)) command.proof.precision = "fp16";
    proof_from_rows(report->value("parity", nlohmann::json::array()), command.proof);
    targets_from_steps(report->value("steps", nlohmann::json::array()), command);
  }
  return command;
}

// The repair's options from the run's command: its model and proof options. Each candidate gets
// its own folder in RUN/repair/; until then `out` names none, never the run (which a
// --from-export of it may not hold).
Expected<RepairOptions> repair_options(const PipelineCommand& command, const fs::path& run, double budget) {
  const fs::path placeholder = fs::absolute(run).parent_path() / (fs::absolute(run).filename().string() + ".repair");
  ONNXPROOF_TRY_ASSIGN(auto base, pipeline_options_from(command, placeholder));
  return RepairOptions{.run = run, .base = std::move(base), .budget_seconds = budget};
}

// A candidate's export by an attached front end, asked for as the first export was.
ReExport by_front_end(const ExportAgain& export_again) {
  return [export_again](const RepairCandidate& candidate, const fs::path& folder) {
    return export_again(candidate.exporter.value_or(""), candidate.opset.value_or(0), folder);
  };
}

}  // namespace

Expected<void> write_command_record(const PipelineCommand& command, const fs::path& run) {
  return write_file_atomically(run / "command.json", command_to_json(command).dump(2) + "\n");
}

void repair_after_pipeline(const PipelineCommand& command, const PipelineOptions& options, Report& report,
                           const fs::path& run, const ExportAgain& export_again, std::ostream& progress) {
  if (report.verdict != Verdict::fail) return;
  RepairOptions repair{.run = run, .base = options, .budget_seconds = command.repair_budget};
  repair.base.export_options.out = run;
  if (export_again) repair.reexport = by_front_end(export_again);
  auto result = repair_run(repair, progress);
  if (!result) {
    progress << "onnxproof repair: could not run: " << result.error().describe() << '\n' << std::flush;
    return;
  }
  report.repair_advice = repair_what_to_do(*result, summarize_for_shipping(report).what_to_do);
  if (auto pointed = point_report_at_repair(run, *result); !pointed)
    progress << "onnxproof repair: " << pointed.error().describe() << '\n' << std::flush;
}

Expected<Outcome<RepairedRun>> repair_workflow(const RepairCommand& command, std::ostream& progress) {
  if (!(command.budget > 0)) return fail(ErrorCode::usage, "--repair-budget must be a positive number of seconds");
  if (!fs::is_regular_file(command.run / "report.json"))
    return fail(ErrorCode::usage, command.run.string() + " is not a run folder of onnxproof pipeline (no report.json)");
  for (const char* own : {"report.json", "reference", "export.json"})
    ONNXPROOF_TRY(require_not_a_link(command.run / own, "a run folder"));
  PipelineCommand recorded;
  if (fs::exists(command.run / "command.json")) {
    ONNXPROOF_TRY(require_not_a_link(command.run / "command.json", "a run folder"));
    ONNXPROOF_TRY_ASSIGN(recorded, read_command_record(command.run));
  } else {
    recorded = command_from_report(command.run);
  }
  ONNXPROOF_TRY_ASSIGN(auto options, repair_options(recorded, command.run, command.budget));
  options.every_candidate = command.every_candidate;
  ONNXPROOF_TRY_ASSIGN(auto result, repair_run(options, progress));
  ONNXPROOF_TRY(point_report_at_repair(command.run, result));
  Outcome<RepairedRun> outcome;
  outcome.verdict = verdict_from(true, result.repaired.has_value());
  outcome.artifacts = {command.run / "repair" / "repair.md", command.run / "repair" / "repair.json"};
  outcome.result = {std::move(result), command.run / "repair" / "repair.md"};
  return outcome;
}

}  // namespace onnxproof
