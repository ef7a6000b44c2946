#include "commands.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <map>

#include <nlohmann/json.hpp>

#include "onnxproof/check/check_model.h"
#include "onnxproof/core/atomic_file.h"
#include "onnxproof/core/installation.h"
#include "onnxproof/core/json_file.h"
#include "onnxproof/core/verdict.h"
#include "onnxproof/export/export_step.h"
#include "onnxproof/golden/golden.h"
#include "onnxproof/localize/localize.h"
#include "onnxproof/model/model_io.h"
#include "onnxproof/ops/audit.h"
#include "onnxproof/ops/opset_limits.h"
#include "onnxproof/ops/probe.h"
#include "onnxproof/parity/parity.h"
#include "onnxproof/pipeline/pipeline.h"
#include "onnxproof/report/check_report.h"
#include "onnxproof/report/localize_report.h"
#include "onnxproof/report/ops_report.h"
#include "onnxproof/report/parity_report.h"
#include "onnxproof/report/simplify_report.h"
#include "onnxproof/report/versions.h"
#include "onnxproof/runtime/run_to_folder.h"
#include "onnxproof/runtime/session.h"
#include "onnxproof/simplify/simplify.h"
#include "onnxproof/tensor/tensor_io.h"

namespace onnxproof::cli {
namespace fs = std::filesystem;

int report_error(std::ostream& err, const Error& error) {
  err << "onnxproof: error: " << error.describe() << '\n';
  return error.code() == ErrorCode::usage ? k_exit_usage : k_exit_error;
}

int run_version(std::ostream& out) {
  for (const auto& [tool, version] : tool_versions()) out << fmt::format("{:<18} {}\n", tool, version);
  out << fmt::format("{:<18} {}\n", "data files", installation().data_dir.string());
  out << fmt::format("{:<18} {}\n", "front end", installation().python_dir.string());
  // The front end's versions, asked from the interpreter an export would use now.
  auto front_end = front_end_versions("");
  if (!front_end) {
    out << fmt::format("{:<18} {}\n", "python", "not available: " + front_end.error().describe());
    return k_exit_pass;
  }
  for (const auto& [tool, version] : *front_end)
    out << fmt::format("{:<18} {}\n", tool == "onnx" ? "onnx (python)" : tool, version);
  return k_exit_pass;
}

int run_check(const CheckCommand& command, std::ostream& out, std::ostream& err) {
  auto model = load_model(command.model);
  if (!model) return report_error(err, model.error());
  // A run folder's export.json says which axes were declared dynamic and their traced sizes.
  CheckOptions options;
  options.min_opset = command.min_opset;
  auto frozen = frozen_shape_options_beside(model->folder);
  if (!frozen) return report_error(err, frozen.error());
  options.frozen = std::move(*frozen);
  for (const auto& text : command.dynamic) {
    auto axis = parse_dynamic_axis(text);
    if (!axis) return report_error(err, axis.error());
    options.frozen.dynamic.push_back({axis->input, axis->axis, axis->label, 0});
  }
  if (auto refused = require_output_apart_from(command.json_path, *model, "--json"); !refused)
    return report_error(err, refused.error());
  auto result = check_model(*model, options);
  if (!result) return report_error(err, result.error().add_context(command.model.string()));
  print_check_result(out, *model, *result);
  if (!command.json_path.empty()) {
    const std::string json =
        check_result_to_json(*model, *result).dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
    if (auto written = write_file_atomically(command.json_path, json); !written)
      return report_error(err, written.error());
  }
  return exit_code(verdict_from(result->findings));
}

int run_run(const RunCommand& command, std::ostream& out, std::ostream& err) {
  RunToFolderOptions options{command.model, {}, command.provider, command.format, command.output_dir};
  for (const auto& spec : command.inputs) {
    const auto eq = spec.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == spec.size())
      return report_error(err, Error(ErrorCode::usage, "--input takes NAME=FILE, got '" + spec + "'"));
    options.inputs.emplace_back(spec.substr(0, eq), spec.substr(eq + 1));
  }
  auto written = run_to_folder(options);
  if (!written) return report_error(err, written.error());
  for (const auto& output : *written) {
    out << fmt::format("{:<24} {:<8} {:<16} -> {}\n", output.name, dtype_name(output.dtype), format_shape(output.shape),
                       output.file.string());
  }
  return k_exit_pass;
}

namespace {

// --from-export adopts a finished export: the options that shape one are refused, not ignored.
Expected<ExportOptions> adopted_export_options(const ModelArguments& arguments, const fs::path& out) {
  if (out.empty()) return fail(ErrorCode::usage, "--from-export needs --out: the run folder to prove the export in");
  if (!arguments.inputs.empty() || !arguments.dynamic.empty() || !arguments.sweep.empty() || arguments.opset != 0 ||
      arguments.exporter != "auto" || !arguments.data.empty() || !arguments.data_dir.empty())
    return fail(ErrorCode::usage,
                "--input, --dynamic, --sweep, --opset, --exporter and --data shape an export; --from-export proves "
                "one already made (export again to change them)");
  ExportOptions options;
  options.from_export = arguments.from_export;
  options.out = out;
  return options;
}

// --attach: the export arrives over the protocol, so the options that name or shape one are refused.
Expected<ExportOptions> attached_export_options(const ModelArguments& arguments, const fs::path& out) {
  if (out.empty()) return fail(ErrorCode::usage, "--attach needs --out: the run folder to prove the export in");
  if (!arguments.model.empty() || !arguments.from_export.empty())
    return fail(ErrorCode::usage, "--attach takes the export from the front end: give no --model or --from-export");
  return adopted_export_options(arguments, out);
}

}  // namespace

Expected<ExportOptions> cli_export_options(const ModelArguments& arguments, const fs::path& out) {
  if (!arguments.from_export.empty()) return adopted_export_options(arguments, out);
  if (arguments.model.empty()) return fail(ErrorCode::usage, "give the model with --model SPEC (or --from-export DIR)");
  ExportOptions options;
  options.model = arguments.model;
  for (const auto& text : arguments.inputs) {
    ONNXPROOF_TRY_ASSIGN(auto spec, parse_input_spec(text));
    options.inputs.push_back(std::move(spec));
  }
  for (const auto& text : arguments.dynamic) {
    ONNXPROOF_TRY_ASSIGN(auto axis, parse_dynamic_axis(text));
    options.dynamic.push_back(std::move(axis));
  }
  for (const auto& text : arguments.sweep) {
    ONNXPROOF_TRY_ASSIGN(auto sweep, parse_sweep(text));
    options.sweep[sweep.first] = std::move(sweep.second);
  }
  if (arguments.samples < 1) return fail(ErrorCode::usage, "--samples must be at least 1");
  if (!arguments.data.empty() && !arguments.data_dir.empty()) {
    return fail(ErrorCode::usage, "--data and --data-dir are alternatives; give one");
  }
  if (arguments.opset < 0) return fail(ErrorCode::usage, "--opset must be a positive opset number");
  options.opset = arguments.opset;
  const OpsetLimit limit = newest_supported_opset();
  options.opset_ceiling = limit.opset;
  options.opset_ceiling_reason = limit.reason;
  options.opset_op_limits = limit.op_limits;
  options.exporter = arguments.exporter;
  options.samples = arguments.samples;
  options.data = arguments.data;
  options.data_dir = arguments.data_dir;
  options.python = arguments.python;
  if (!(arguments.export_timeout > 0))
    return fail(ErrorCode::usage, "--export-timeout must be a positive number of seconds");
  options.timeout_seconds = arguments.export_timeout;
  options.out = out;
  return options;
}

namespace {

Expected<std::vector<std::string>> split_list(const std::string& list, const std::string& option) {
  std::vector<std::string> items;
  for (std::size_t start = 0; start <= list.size();) {
    const auto comma = list.find(',', start);
    const std::string item = list.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    if (item.empty()) return fail(ErrorCode::usage, option + " takes a comma-separated list, e.g. cpu,cuda");
    items.push_back(item);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return items;
}

Expected<ParityOptions> parity_options(const ProofArguments& arguments) {
  ParityOptions options;
  ONNXPROOF_TRY_ASSIGN(options.providers, split_list(arguments.providers, "--provider"));
  options.tolerance.rtol = arguments.rtol;
  options.tolerance.atol = arguments.atol;
  for (const auto& text : arguments.output_tolerances) ONNXPROOF_TRY(options.tolerance.add_output_tolerance(text));
  ONNXPROOF_TRY(options.tolerance.validate());
  options.compare_optimization_off = !arguments.skip_optimization_check;
  return options;
}

}  // namespace

int run_opset(const OpsetCommand& command, std::ostream& out, std::ostream& err) {
  auto targets = split_list(command.targets, "--target");
  if (!targets) return report_error(err, targets.error());
  auto tables = load_target_tables(*targets);
  if (!tables) return report_error(err, tables.error());
  const OpsetLimit limit = newest_supported_opset(*tables);
  out << nlohmann::json{{"opset", limit.opset}, {"reason", limit.reason}, {"op_limits", limit.op_limits}}.dump() << '\n';
  return k_exit_pass;
}

int run_ops(const OpsCommand& command, std::ostream& out, std::ostream& err) {
  auto targets = split_list(command.targets, "--target");
  if (!targets) return report_error(err, targets.error());
  auto tables = load_target_tables(*targets);
  if (!tables) return report_error(err, tables.error());
  auto model = load_model(command.model);
  if (!model) return report_error(err, model.error());
  if (auto refused = require_output_apart_from(command.json_path, *model, "--json"); !refused)
    return report_error(err, refused.error());
  const OpsAudit audit = audit_operators(model->proto, std::move(*tables));
  print_ops_audit(out, audit);
  print_findings(out, audit.findings);
  const Verdict verdict = verdict_from(audit.findings);
  out << fmt::format("verdict          {}\n", verdict_name(verdict));
  if (!command.json_path.empty()) {
    if (auto written = write_file_atomically(
            command.json_path,
            ops_audit_to_json(audit).dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n");
        !written) {
      return report_error(err, written.error());
    }
  }
  return exit_code(verdict);
}

int run_probe(const ProbeCommand& command, std::ostream& out, std::ostream& err) {
  const int opset = command.opset > 0 ? command.opset : newest_supported_opset().opset;
  ProbeOptions options{command.provider, opset, command.all_versions, command.ops};
  auto rows = probe_operators(options);
  if (!rows) return report_error(err, rows.error());
  auto documented = load_support_table(support_table_dir() / "ort-cpu-documented.csv");
  if (!documented) return report_error(err, documented.error());
  print_probe_result(out, *rows, differences_from_table(*rows, *documented), command.provider);
  if (!command.write_table.empty()) {
    const auto table =
        probed_table(*rows, *documented, "ONNX Runtime " + onnxruntime_version() + " CPUExecutionProvider (probed)");
    if (auto written = write_support_table(table, command.write_table); !written)
      return report_error(err, written.error());
    out << fmt::format("table            {} ({} rows)\n", command.write_table.string(), table.entries.size());
  }
  return k_exit_pass;
}

int run_simplify(const SimplifyCommand& command, std::ostream& out, std::ostream& err) {
  if (command.max_fold_bytes < 0)
    return report_error(err, Error(ErrorCode::usage, "--max-fold-bytes must be 0 or more"));
  auto parity = parity_options(command.proof);
  if (!parity) return report_error(err, parity.error());
  std::optional<Reference> reference;
  if (!command.reference.empty()) {
    auto read = read_reference(command.reference);
    if (!read) return report_error(err, read.error());
    reference = std::move(*read);
  }
  SimplifyOptions options{.max_fold_bytes = static_cast<uint64_t>(command.max_fold_bytes)};
  options.skip_passes.insert(command.skip_passes.begin(), command.skip_passes.end());
  auto outcome = simplify_file(command.model, command.output, options, reference ? &*reference : nullptr,
                               parity->tolerance, /*copy_when_unchanged=*/true);
  if (!outcome) return report_error(err, outcome.error());
  print_simplify_outcome(out, *outcome, command.output);
  // Written: proved (or unchanged and copied); not written: refused, the findings say why.
  const bool passed = outcome->written;
  out << (passed ? "verdict          pass\n" : "verdict          fail (the simplified model was not written)\n");
  return passed ? k_exit_pass : k_exit_fail;
}

int run_parity_command(const ParityCommand& command, std::ostream& out, std::ostream& err) {
  auto options = parity_options(command.proof);
  if (!options) return report_error(err, options.error());
  auto model = load_model(command.model);
  if (!model) return report_error(err, model.error());
  if (auto refused = require_output_apart_from(command.json_path, *model, "--json"); !refused)
    return report_error(err, refused.error());
  auto reference = read_reference(command.reference);
  if (!reference) return report_error(err, reference.error());
  options->progress = &err;
  auto result = run_parity(command.model, *reference, *options);
  if (!result) return report_error(err, result.error());
  print_parity_result(out, *result);
  print_findings(out, result->findings);
  const Verdict verdict = parity_verdict(*result);
  out << fmt::format("verdict          {}\n", verdict_name(verdict));
  if (!command.json_path.empty()) {
    const std::string json =
        parity_result_to_json(command.model, *result).dump(2, ' ', false, nlohmann::json::error_handler_t::replace);
    if (auto written = write_file_atomically(command.json_path, json + "\n"); !written)
      return report_error(err, written.error());
  }
  if (const auto* missing = result->provider_not_run()) {
    return report_error(
        err, Error(ErrorCode::not_found, "provider " + missing->provider + " could not run: " + missing->reason));
  }
  return exit_code(verdict);
}

int run_golden_freeze(const GoldenFreezeCommand& command, std::ostream& out, std::ostream& err) {
  auto parity = parity_options(command.proof);
  if (!parity) return report_error(err, parity.error());
  if (auto model = load_model(command.model); !model) return report_error(err, model.error());
  auto reference = read_reference(command.reference);
  if (!reference) return report_error(err, reference.error());
  auto result = freeze_golden(command.model, *reference, command.out, {*parity, tool_versions()});
  if (!result) return report_error(err, result.error());
  print_parity_result(out, result->parity);
  print_findings(out, result->parity.findings);
  if (result->frozen) {
    out << fmt::format("golden           {} data sets frozen in {}\n", result->data_sets, command.out.string());
  } else {
    out << "golden           nothing frozen: the parity proof failed\n";
  }
  out << fmt::format("verdict          {}\n", result->frozen ? "pass" : "fail");
  return result->frozen ? k_exit_pass : k_exit_fail;
}

int run_golden_verify(const GoldenVerifyCommand& command, std::ostream& out, std::ostream& err) {
  auto parity = parity_options(command.proof);
  if (!parity) return report_error(err, parity.error());
  parity->compare_optimization_off = false;  // the golden outputs came from all optimizations
  if (auto model = load_model(command.model); !model) return report_error(err, model.error());
  auto result = verify_golden(command.model, command.golden, {*parity, tool_versions()});
  if (!result) return report_error(err, result.error());
  print_parity_result(out, result->parity);
  print_findings(out, result->findings);
  out << fmt::format("verdict          {}\n", result->passed() ? "pass" : "fail");
  return result->passed() ? k_exit_pass : k_exit_fail;
}

int run_export_command(const ExportCommand& command, std::ostream& out, std::ostream& err) {
  auto options = cli_export_options(command.model, command.out);
  if (!options) return report_error(err, options.error());
  auto result = run_export(*options, err);
  if (!result) return report_error(err, result.error());
  if (result->model.empty()) {
    out << "exported         nothing: the export failed\n";
  } else {
    out << fmt::format("exported         {} ({} exporter, sha256 {})\n", result->model.string(), result->exporter,
                       result->sha256.substr(0, 16));
    out << fmt::format("reference        {} data sets in {}\n", result->reference_sets,
                       (command.out / "reference").string());
  }
  print_findings(out, result->findings);
  const Verdict verdict = result->model.empty() ? Verdict::fail : verdict_from(result->findings);
  out << fmt::format("verdict          {}\n", verdict_name(verdict));
  return exit_code(verdict);
}

namespace {

int finish_pipeline(const Report& report, const fs::path& out_dir, std::ostream& out, std::ostream& err) {
  print_report_summary(out, report, out_dir);
  if (const auto* step = first_error_step(report))
    return report_error(err, Error(ErrorCode::runtime, step->name + " step: " + step->reason));
  return exit_code(report.verdict);
}

}  // namespace

int run_pipeline_command(const PipelineCommand& command, std::ostream& out, std::ostream& err) {
  const fs::path out_dir = command.out.empty() && command.model.from_export.empty() && !command.attach
                              ? default_run_folder(command.model.model)
                              : command.out;
  auto export_options =
      command.attach ? attached_export_options(command.model, out_dir) : cli_export_options(command.model, out_dir);
  if (!export_options) return report_error(err, export_options.error());
  auto parity = parity_options(command.proof);
  if (!parity) return report_error(err, parity.error());
  auto targets = split_list(command.targets, "--target");
  if (!targets) return report_error(err, targets.error());
  auto tables = load_target_tables(*targets);
  if (!tables) return report_error(err, tables.error());
  PipelineOptions options{*export_options, *parity, CheckOptions{}, std::move(*tables)};
  options.localize = !command.no_localize;
  if (command.attach) return run_attached_pipeline_command(std::move(options), err);
  auto report = run_pipeline(options, err);
  if (!report) return report_error(err, report.error());
  return finish_pipeline(*report, out_dir, out, err);
}

namespace {

// A number of a report row, or `fallback` when the row has none (null: an integer output has no
// argmax figures, a refused case no error figures).
template <typename T>
T row_number(const nlohmann::json& row, const char* key, T fallback) {
  const auto it = row.find(key);
  return it != row.end() && it->is_number() ? it->get<T>() : fallback;
}

// The case, provider and optimization level to localize on: as given, else the worst failing
// comparison of the run's report.json.
Expected<ParityRow> localize_target(const LocalizeCommand& command, const nlohmann::json& report,
                                    ParityResult& parity) {
  ParityRow chosen;
  chosen.data_set = command.data_set;
  chosen.provider = command.provider;
  chosen.optimization = command.optimization;
  for (const auto& row : report.value("parity", nlohmann::json::array())) {
    ParityRow parsed;
    parsed.data_set = row.value("case", "");
    parsed.provider = row.value("provider", "cpu");
    parsed.optimization = row.value("optimization", "all");
    parsed.status = row.value("status", "");
    parsed.output = row.value("output", "");
    parsed.comparison.max_abs = row_number(row, "max_abs", 0.0);
    parsed.comparison.nan_mismatches = row_number(row, "nan_mismatch", int64_t{0});
    parsed.argmax = ArgmaxCheck{.flips = row_number(row, "argmax_flips", int64_t{0})};
    parity.rows.push_back(std::move(parsed));
  }
  if (!command.data_set.empty()) return chosen;
  const auto worst = worst_failing_row(parity);
  if (!worst)
    return fail(ErrorCode::usage,
                "the run's parity passed: nothing to localize (--case test_data_set_N compares "
                "one case anyway)");
  return *worst;
}

// When the case passed with optimizations disabled: the ONNX Runtime optimizer that changes it.
Expected<std::optional<Finding>> optimizer_behind(const fs::path& model, const ReferenceCase& c,
                                                  const ParityRow& target, const ParityResult& parity,
                                                  const ToleranceOptions& tolerance) {
  if (!passes_without_optimizations(parity, target)) return std::nullopt;
  SessionOptions options;
  options.provider = target.provider;
  ONNXPROOF_TRY_ASSIGN(const OptimizerSearch search, find_optimizer_changing_outputs(model, c, options, tolerance));
  return optimizer_finding(search, target.data_set, target.provider);
}

}  // namespace

int run_localize(const LocalizeCommand& command, std::ostream& out, std::ostream& err) {
  if (!fs::is_regular_file(command.run / "report.json"))
    return report_error(err, fail(ErrorCode::usage,
                                  command.run.string() + " is not a run folder of onnxproof pipeline (no report.json)")
                                 .error());
  auto report = read_json_object(command.run / "report.json", ErrorCode::usage);
  if (!report) return report_error(err, report.error());
  auto parity = parity_options(command.proof);
  if (!parity) return report_error(err, parity.error());
  ParityResult recorded;  // the run's parity rows, as report.json has them
  auto target = localize_target(command, *report, recorded);
  if (!target) return report_error(err, target.error());
  if (target->optimization != "all" && target->optimization != "disabled")
    return report_error(err, fail(ErrorCode::usage, "--optimization must be all or disabled").error());
  auto reference = read_reference(command.run / "reference");
  if (!reference) return report_error(err, reference.error());
  const ReferenceCase* c = find_case(*reference, target->data_set);
  if (!c)
    return report_error(err, fail(ErrorCode::usage, "no reference case " + target->data_set + " in " +
                                                        (command.run / "reference").string())
                                 .error());
  // The model the run proved (model.sim.onnx when simplification changed it), in the run folder.
  const fs::path model = command.run / fs::path(report->value("onnx_model", "model.onnx")).filename();
  if (!command.captured) {
    out << "capturing every module's outputs in PyTorch on " << target->data_set << '\n' << std::flush;
    if (auto captured =
            capture_module_outputs(command.run, model.filename().string(), target->data_set, command.python, 1800);
        !captured)
      return report_error(err, captured.error());
  }
  LocalizeOptions options{.session = {}, .tolerance = parity->tolerance};
  options.session.provider = target->provider;
  options.session.optimization =
      target->optimization == "disabled" ? GraphOptimization::disabled : GraphOptimization::all;
  auto localization = localize_divergence(command.run, model, *c, options);
  if (!localization) return report_error(err, localization.error());
  const fs::path folder = command.run / "localize";
  for (const auto& [file, text] :
       {std::pair<std::string, std::string>{"localization.json", localization_to_json(*localization).dump(1) + "\n"},
        {"localization.md", localization_to_markdown(*localization)},
        {"report-localize.svg", localization_plot_svg(*localization)}}) {
    if (auto written = write_file_atomically(folder / file, text); !written) return report_error(err, written.error());
  }
  auto optimizer = optimizer_behind(model, *c, *target, recorded, parity->tolerance);
  if (!optimizer) return report_error(err, optimizer.error());
  std::vector<Finding> findings = localization->findings;
  if (*optimizer) findings.insert(findings.begin(), **optimizer);
  print_findings(out, findings);
  out << fmt::format("localization     {}\n", (folder / "localization.md").string());
  const bool named_optimizer = *optimizer && !(*optimizer)->where.empty();
  return localization->located || named_optimizer ? k_exit_pass : k_exit_fail;
}

int run_demo(const DemoCommand& command, std::ostream& out, std::ostream& err) {
  const std::string example = (installation().examples_dir / "digits" / "digits_cnn.py").string();
  ModelArguments model;
  model.model = example + ":build";
  model.inputs = {"image=1x1x8x8:float32"};
  model.dynamic = {"image:0=batch"};
  model.data = example + ":held_out_batches";
  model.python = command.python;
  auto export_options = cli_export_options(model, command.out);
  if (!export_options) return report_error(err, export_options.error());
  out << "onnxproof demo: a small CNN trained on scikit-learn's digits, proved on the 450 held-out images\n";
  auto tables = load_target_tables({"ort-cpu"});
  if (!tables) return report_error(err, tables.error());
  auto report =
      run_pipeline(PipelineOptions{*export_options, ParityOptions{}, CheckOptions{}, std::move(*tables)}, err);
  if (!report) return report_error(err, report.error());
  for (auto accuracy : report->parity ? report->parity->accuracy : std::vector<TaskAccuracy>{}) {
    out << fmt::format(
        "accuracy         PyTorch {:.1f}%, ONNX Runtime {:.1f}% on {} held-out digits; {} predictions flipped\n",
        100.0 * accuracy.accuracy["pytorch"], 100.0 * accuracy.accuracy["cpu"], accuracy.samples, accuracy.flipped);
  }
  return finish_pipeline(*report, command.out, out, err);
}

}  // namespace onnxproof::cli
