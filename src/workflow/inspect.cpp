// The workflows that inspect one model or the installation: check, run, ops, ops opset, ops probe
// and --version.
#include <set>

#include "json_output.h"
#include "onnxproof/core/installation.h"
#include "onnxproof/core/source_framework.h"
#include "onnxproof/model/graph_walk.h"
#include "onnxproof/ops/openvino_table.h"
#include "onnxproof/ops/probe.h"
#include "onnxproof/report/check_report.h"
#include "onnxproof/report/ops_report.h"
#include "onnxproof/report/versions.h"
#include "onnxproof/runtime/session.h"
#include "onnxproof/workflow/workflows.h"

namespace onnxproof {
namespace fs = std::filesystem;

Outcome<VersionsResult> versions_workflow() {
  Outcome<VersionsResult> outcome{.verdict = verdict_from(true, true)};
  outcome.result = {tool_versions(), installation().data_dir, installation().python_dir};
  // OpenVINO is optional: its release where installed, else where it was looked for.
  const auto openvino = openvino_version();
  outcome.result.engine.emplace_back("openvino", openvino
                                                     ? *openvino + " (" + installation().openvino_dir.string() + ")"
                                                     : "not installed (" + installation().openvino_dir.string() + ")");
  for (const auto& framework : source_frameworks())
    outcome.result.front_ends.emplace_back(std::string(framework.name), front_end_versions(framework.name));
  return outcome;
}

Expected<Outcome<CheckedModel>> check_workflow(const CheckCommand& command) {
  ONNXPROOF_TRY_ASSIGN(auto model, load_model(command.model));
  // A run folder's export.json says which axes were declared dynamic and their traced sizes.
  CheckOptions options;
  options.min_opset = command.min_opset;
  ONNXPROOF_TRY_ASSIGN(options.frozen, frozen_shape_options_beside(model.folder));
  for (const auto& text : command.dynamic) {
    ONNXPROOF_TRY_ASSIGN(auto axis, parse_dynamic_axis(text));
    options.frozen.dynamic.push_back({axis.input, axis.axis, axis.label, 0});
  }
  // export.json beside the model is read too: --json may not replace it.
  CommandInputs inputs = model_inputs(model);
  const fs::path manifest = model.folder / "export.json";
  if (std::error_code ec; fs::exists(manifest, ec)) inputs.files.push_back(manifest);
  ONNXPROOF_TRY(require_output_apart(command.json_path, inputs, "--json"));
  auto result = check_model(model, options);
  if (!result) return std::unexpected(result.error().add_context(command.model.string()));
  ONNXPROOF_TRY(write_json_output(command.json_path, check_result_to_json(model, *result)));
  Outcome<CheckedModel> outcome{.verdict = verdict_from(result->findings), .findings = result->findings};
  if (!command.json_path.empty()) outcome.artifacts.push_back(command.json_path);
  outcome.result = {std::move(model), std::move(*result)};
  return outcome;
}

Expected<Outcome<std::vector<WrittenOutput>>> run_workflow(const RunCommand& command) {
  RunToFolderOptions options{command.model, {}, command.provider, command.format, command.output_dir};
  for (const auto& spec : command.inputs) {
    const auto eq = spec.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == spec.size())
      return fail(ErrorCode::usage, "--input takes NAME=FILE, got '" + spec + "'");
    options.inputs.emplace_back(spec.substr(0, eq), spec.substr(eq + 1));
  }
  ONNXPROOF_TRY_ASSIGN(auto written, run_to_folder(options));
  Outcome<std::vector<WrittenOutput>> outcome{.verdict = verdict_from(true, true)};
  for (const auto& output : written) outcome.artifacts.push_back(output.file);
  outcome.result = std::move(written);
  return outcome;
}

namespace {

// The loaded ONNX Runtime as a support table for the model's operators: each schema the model
// uses probed with a one-node session (ops --probe; a proof per runtime release runs it with the
// release's library), the documented table where the probe cannot decide.
Expected<SupportTable> probed_model_table(const onnx::ModelProto& model) {
  const int opset = default_domain_opset(model);
  std::set<std::string> op_types;
  for_each_graph(model.graph(), [&](const onnx::GraphProto& graph) {
    for (const auto& node : graph.node())
      if (node.domain().empty() || node.domain() == "ai.onnx" || node.domain() == "ai.onnx.ml")
        op_types.insert(node.op_type());
  });
  SupportTable table;
  const std::string version = onnxruntime_version();
  if (!op_types.empty() && opset > 0) {
    ONNXPROOF_TRY_ASSIGN(auto rows, probe_operators({"cpu", opset, false, {op_types.begin(), op_types.end()}}));
    ONNXPROOF_TRY_ASSIGN(const auto documented, load_support_table(support_table_dir() / "ort-cpu-documented.csv"));
    table = probed_table(rows, documented, "ONNX Runtime " + version + " CPUExecutionProvider (probed for this model)");
  }
  table.target = "ort-cpu@" + version;
  return table;
}

}  // namespace

Expected<Outcome<OpsAudit>> ops_workflow(const OpsCommand& command) {
  ONNXPROOF_TRY_ASSIGN(const auto targets, split_list(command.targets, "--target"));
  ONNXPROOF_TRY_ASSIGN(const auto model, load_model(command.model));
  // An opset or IR version no runtime here runs: "supported" would be an answer about nothing.
  if (auto known = require_known_versions(model.proto); !known)
    return fail(known.error().code(), command.model.string() + ": " + known.error().message());
  std::vector<SupportTable> tables;
  if (command.probe) {
    ONNXPROOF_TRY_ASSIGN(auto probed, probed_model_table(model.proto));
    tables.push_back(std::move(probed));
  } else {
    ONNXPROOF_TRY_ASSIGN(tables, load_target_tables(targets));
    use_installed_openvino(tables, command.model, model.proto);
  }
  CommandInputs read = model_inputs(model);
  for (const auto& target : targets) read.files.push_back(support_table_dir() / (target + ".csv"));
  ONNXPROOF_TRY(require_output_apart(command.json_path, read, "--json"));
  OpsAudit audit = audit_operators(model.proto, std::move(tables));
  Outcome<OpsAudit> outcome{.verdict = verdict_from(audit.findings), .findings = audit.findings};
  ONNXPROOF_TRY(write_json_output(command.json_path, ops_audit_to_json(audit)));
  if (!command.json_path.empty()) outcome.artifacts.push_back(command.json_path);
  outcome.result = std::move(audit);
  return outcome;
}

Expected<Outcome<OpsetLimit>> opset_workflow(const OpsetCommand& command) {
  ONNXPROOF_TRY(start_onnxruntime());  // limits of a runtime that cannot start would read as 0
  ONNXPROOF_TRY_ASSIGN(const auto targets, split_list(command.targets, "--target"));
  ONNXPROOF_TRY_ASSIGN(const auto tables, load_target_tables(targets));
  return Outcome<OpsetLimit>{.verdict = verdict_from(true, true), .result = newest_supported_opset(tables)};
}

Expected<Outcome<ProbeReport>> probe_workflow(const ProbeCommand& command) {
  const int opset = command.opset > 0 ? command.opset : newest_supported_opset().opset;
  ProbeOptions options{command.provider, opset, command.all_versions, command.ops};
  ONNXPROOF_TRY_ASSIGN(auto rows, probe_operators(options));
  const fs::path documented_table = support_table_dir() / "ort-cpu-documented.csv";
  ONNXPROOF_TRY(require_output_apart(command.write_table, {.files = {documented_table}}, "--write-table"));
  ONNXPROOF_TRY_ASSIGN(const auto documented, load_support_table(documented_table));
  Outcome<ProbeReport> outcome{.verdict = verdict_from(true, true)};
  outcome.result = {command.provider, std::move(rows), {}, 0};
  outcome.result.differences = differences_from_table(outcome.result.rows, documented);
  if (!command.write_table.empty()) {
    const auto table = probed_table(outcome.result.rows, documented,
                                    "ONNX Runtime " + onnxruntime_version() + " CPUExecutionProvider (probed)");
    ONNXPROOF_TRY(write_support_table(table, command.write_table));
    outcome.result.table_rows = table.entries.size();
    outcome.artifacts.push_back(command.write_table);
  }
  return outcome;
}

}  // namespace onnxproof
