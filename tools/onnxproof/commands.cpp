#include "commands.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <map>

#include <nlohmann/json.hpp>

#include "onnxproof/check/check_model.h"
#include "onnxproof/core/atomic_file.h"
#include "onnxproof/core/numbered_name.h"
#include "onnxproof/export/export_step.h"
#include "onnxproof/golden/golden.h"
#include "onnxproof/model/model_io.h"
#include "onnxproof/ops/audit.h"
#include "onnxproof/ops/opset_limits.h"
#include "onnxproof/ops/probe.h"
#include "onnxproof/parity/parity.h"
#include "onnxproof/pipeline/pipeline.h"
#include "onnxproof/report/check_report.h"
#include "onnxproof/report/ops_report.h"
#include "onnxproof/report/parity_report.h"
#include "onnxproof/report/versions.h"
#include "onnxproof/runtime/session.h"
#include "onnxproof/simplify/simplify.h"
#include "onnxproof/tensor/tensor_io.h"

namespace onnxproof::cli {
namespace fs = std::filesystem;

namespace {

// --json may not name the model or its external data, nor anything but a regular file.
Expected<void> json_output_allowed(const fs::path& json_path, const LoadedModel& model) {
  if (json_path.empty()) return {};
  ONNXPROOF_TRY(require_not_an_input(json_path, model_files(model), "--json"));
  return require_replaceable_file(json_path);
}

}  // namespace

int report_error(std::ostream& err, const Error& error) {
  err << "onnxproof: error: " << error.describe() << '\n';
  return error.code() == ErrorCode::usage ? k_exit_usage : k_exit_error;
}

int run_version(std::ostream& out) {
  for (const auto& [tool, version] : tool_versions()) out << fmt::format("{:<18} {}\n", tool, version);
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
  CheckOptions options{.min_opset = command.min_opset, .frozen = frozen_shape_options_for_run_folder(model->folder)};
  for (const auto& text : command.dynamic) {
    auto axis = parse_dynamic_axis(text);
    if (!axis) return report_error(err, axis.error());
    options.frozen.dynamic.push_back({axis->input, axis->axis, axis->label, 0});
  }
  if (auto refused = json_output_allowed(command.json_path, *model); !refused)
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
  return has_errors(result->findings) ? k_exit_fail : k_exit_pass;
}

namespace {

// A re-used --output-dir: output files of an earlier run that this one did not write (a higher
// index, or the other format) would sit beside the new outputs.json as if they were current.
void remove_stale_outputs(const fs::path& folder, std::size_t written, const std::string& format) {
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(folder, ec)) {
    const std::string ext = entry.path().extension().string();
    const auto index = number_after(entry.path().stem().string(), "output_");
    if (!index || (ext != ".pb" && ext != ".npy") || !entry.is_regular_file()) continue;
    if (*index >= written || ext != "." + format) fs::remove(entry.path(), ec);
  }
}

}  // namespace

int run_run(const RunCommand& command, std::ostream& out, std::ostream& err) {
  if (command.format != "pb" && command.format != "npy") {
    return report_error(err, Error(ErrorCode::usage, "--format must be pb or npy, not '" + command.format + "'"));
  }
  // Load through our loader first: it refuses unsafe external data before ONNX Runtime reads it.
  if (auto model = load_model(command.model); !model) return report_error(err, model.error());

  std::vector<std::string> names;
  std::vector<Tensor> tensors;
  for (const auto& spec : command.inputs) {
    const auto eq = spec.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == spec.size()) {
      return report_error(err, Error(ErrorCode::usage, "--input takes NAME=FILE, got '" + spec + "'"));
    }
    auto tensor = read_tensor_file(spec.substr(eq + 1));
    if (!tensor) return report_error(err, tensor.error().add_context("input '" + spec.substr(0, eq) + "'"));
    names.push_back(spec.substr(0, eq));
    tensors.push_back(std::move(tensor->tensor));
  }
  std::vector<Feed> feeds;
  for (std::size_t i = 0; i < names.size(); ++i) feeds.push_back({names[i], &tensors[i]});

  auto session = Session::open(command.model, SessionOptions{.provider = command.provider});
  if (!session) return report_error(err, session.error());
  auto outputs = session->run(feeds);
  if (!outputs) return report_error(err, outputs.error().add_context(command.model.string()));

  std::error_code ec;
  fs::create_directories(command.output_dir, ec);
  if (ec)
    return report_error(err,
                        Error(ErrorCode::io, "cannot create " + command.output_dir.string() + ": " + ec.message()));
  nlohmann::json manifest = nlohmann::json::array();
  for (std::size_t i = 0; i < outputs->size(); ++i) {
    const auto& name = session->outputs()[i].name;
    const auto& tensor = (*outputs)[i];
    const fs::path file = command.output_dir / fmt::format("output_{}.{}", i, command.format);
    auto written = command.format == "pb" ? write_tensor_pb(file, tensor, name) : write_npy(file, tensor);
    if (!written) return report_error(err, written.error().add_context("output '" + name + "'"));
    out << fmt::format("{:<24} {:<8} {:<16} -> {}\n", name, dtype_name(tensor.dtype()), format_shape(tensor.shape()),
                       file.string());
    manifest.push_back({{"name", name},
                        {"dtype", dtype_name(tensor.dtype())},
                        {"shape", tensor.shape()},
                        {"file", file.filename().string()}});
  }
  if (auto written =
          write_file_atomically(command.output_dir / "outputs.json",
                                manifest.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n");
      !written) {
    return report_error(err, written.error());
  }
  remove_stale_outputs(command.output_dir, outputs->size(), command.format);
  return k_exit_pass;
}

Expected<ExportOptions> cli_export_options(const ModelArguments& arguments, const fs::path& out) {
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

Expected<std::vector<SupportTable>> load_tables(const std::vector<std::string>& targets) {
  std::vector<SupportTable> tables;
  for (const auto& target : targets) {
    ONNXPROOF_TRY_ASSIGN(auto table, load_target_table(target));
    tables.push_back(std::move(table));
  }
  return tables;
}

Expected<ParityOptions> parity_options(const ProofArguments& arguments) {
  ParityOptions options;
  ONNXPROOF_TRY_ASSIGN(options.providers, split_list(arguments.providers, "--provider"));
  options.tolerance.rtol = arguments.rtol;
  options.tolerance.atol = arguments.atol;
  for (const auto& text : arguments.output_tolerances) {
    const auto eq = text.find('=');
    const auto comma = text.find(',', eq == std::string::npos ? 0 : eq);
    double rtol = -1;
    double atol = -1;
    if (eq == std::string::npos || comma == std::string::npos ||
        std::sscanf(text.c_str() + eq + 1, "%lf", &rtol) != 1 ||
        std::sscanf(text.c_str() + comma + 1, "%lf", &atol) != 1 || rtol < 0 || atol < 0) {
      return fail(ErrorCode::usage,
                  "--output-tolerance '" + text + "': expected NAME=RTOL,ATOL, e.g. logits=1e-2,1e-4");
    }
    options.tolerance.per_output[text.substr(0, eq)] = Tolerance{rtol, atol};
  }
  ONNXPROOF_TRY(options.tolerance.validate());
  options.compare_optimization_off = !arguments.skip_optimization_check;
  return options;
}

}  // namespace

int run_ops(const OpsCommand& command, std::ostream& out, std::ostream& err) {
  auto targets = split_list(command.targets, "--target");
  if (!targets) return report_error(err, targets.error());
  auto tables = load_tables(*targets);
  if (!tables) return report_error(err, tables.error());
  auto model = load_model(command.model);
  if (!model) return report_error(err, model.error());
  if (auto refused = json_output_allowed(command.json_path, *model); !refused)
    return report_error(err, refused.error());
  const OpsAudit audit = audit_operators(model->proto, std::move(*tables));
  print_ops_audit(out, audit);
  print_findings(out, audit.findings);
  const bool failed = has_errors(audit.findings);
  out << fmt::format("verdict          {}\n", failed ? "fail" : "pass");
  if (!command.json_path.empty()) {
    if (auto written = write_file_atomically(
            command.json_path,
            ops_audit_to_json(audit).dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n");
        !written) {
      return report_error(err, written.error());
    }
  }
  return failed ? k_exit_fail : k_exit_pass;
}

int run_probe(const ProbeCommand& command, std::ostream& out, std::ostream& err) {
  const int opset = command.opset > 0 ? command.opset : newest_supported_opset().opset;
  ProbeOptions options{command.provider, opset, command.all_versions, command.ops};
  auto rows = probe_operators(options);
  if (!rows) return report_error(err, rows.error());
  std::map<std::string, int> counts;
  for (const auto& row : *rows) {
    ++counts[row.status];
    if (row.status != "supported") {
      out << fmt::format("{:<16} {}::{}-{}: {}\n", row.status, row.domain, row.op_type, row.since_version, row.message);
    }
  }
  auto documented = load_support_table(support_table_dir() / "ort-cpu-documented.csv");
  if (!documented) return report_error(err, documented.error());
  // The documented table against what the installed runtime does, for conclusive probes.
  int differences = 0;
  for (const auto& row : *rows) {
    if (row.status == "error") continue;
    bool documented_supported = false;
    for (const auto& entry : documented->entries) {
      if (entry.domain == row.domain && entry.op_type == row.op_type && entry.since_version <= row.since_version &&
          (entry.until_version == 0 || row.since_version <= entry.until_version)) {
        documented_supported = true;
      }
    }
    if (documented_supported != (row.status == "supported")) {
      ++differences;
      out << fmt::format("differs          {}::{}-{}: documented {}, probed {}\n", row.domain, row.op_type,
                         row.since_version, documented_supported ? "supported" : "absent", row.status);
    }
  }
  out << fmt::format(
      "probed {} schemas on {} (ONNX Runtime {}): {} supported, {} not implemented, {} errors; "
      "{} differences from the documented table\n",
      rows->size(), command.provider, onnxruntime_version(), counts["supported"], counts["not-implemented"],
      counts["error"], differences);
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
  auto outcome = simplify_file(command.model, command.output,
                               SimplifyOptions{.max_fold_bytes = static_cast<uint64_t>(command.max_fold_bytes)},
                               reference ? &*reference : nullptr, parity->tolerance, /*copy_when_unchanged=*/true);
  if (!outcome) return report_error(err, outcome.error());
  const auto& result = outcome->result;
  for (const auto& pass : result.passes) out << fmt::format("pass {:<17} {:>5} changes\n", pass.name, pass.changes);
  int before = 0;
  int after = 0;
  std::map<std::string, std::pair<int, int>> ops;
  for (const auto& [op, n] : result.ops_before) ops[op].first = n, before += n;
  for (const auto& [op, n] : result.ops_after) ops[op].second = n, after += n;
  out << fmt::format("nodes            {} -> {} in {} rounds, {:.2f} s\n", before, after, result.rounds,
                     result.seconds);
  for (const auto& [op, counts] : ops) {
    if (counts.first != counts.second) out << fmt::format("  {:<24} {:>5} -> {}\n", op, counts.first, counts.second);
  }
  out << fmt::format("bytes            {} -> {}\n", format_bytes(result.bytes_before),
                     format_bytes(result.bytes_after));
  if (!result.changed()) {
    out << fmt::format("simplified       nothing to simplify; {} is a copy\nverdict          pass\n",
                       command.output.string());
    return k_exit_pass;
  }
  out << fmt::format("proof            {} cases, max abs difference {:.3g}\n", outcome->proof.cases,
                     outcome->proof.max_abs);
  print_findings(out, outcome->proof.findings);
  if (!outcome->written) {
    out << "verdict          fail (the simplified model was not written)\n";
    return k_exit_fail;
  }
  out << fmt::format("simplified       {}\n", command.output.string());
  out << "verdict          pass\n";
  return k_exit_pass;
}

int run_parity_command(const ParityCommand& command, std::ostream& out, std::ostream& err) {
  auto options = parity_options(command.proof);
  if (!options) return report_error(err, options.error());
  auto model = load_model(command.model);
  if (!model) return report_error(err, model.error());
  if (auto refused = json_output_allowed(command.json_path, *model); !refused)
    return report_error(err, refused.error());
  auto reference = read_reference(command.reference);
  if (!reference) return report_error(err, reference.error());
  options->progress = &err;
  auto result = run_parity(command.model, *reference, *options);
  if (!result) return report_error(err, result.error());
  print_parity_result(out, *result);
  print_findings(out, result->findings);
  const bool all_ran =
      std::all_of(result->providers.begin(), result->providers.end(), [](const auto& p) { return p.ran; });
  const char* verdict = !all_ran ? "error" : result->passed() ? "pass" : "fail";
  out << fmt::format("verdict          {}\n", verdict);
  if (!command.json_path.empty()) {
    nlohmann::json json = {{"schema", "onnxproof.parity/1"},
                           {"model", command.model.string()},
                           {"verdict", verdict},
                           {"summary", parity_summary_to_json(*result)},
                           {"findings", nlohmann::json::array()},
                           {"parity", parity_rows_to_json(*result)}};
    for (const auto& finding : result->findings) json["findings"].push_back(finding_to_json(finding));
    if (auto written = write_file_atomically(command.json_path,
                                             json.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n");
        !written) {
      return report_error(err, written.error());
    }
  }
  if (!all_ran) {
    for (const auto& p : result->providers) {
      if (!p.ran)
        return report_error(err, Error(ErrorCode::not_found, "provider " + p.provider + " could not run: " + p.reason));
    }
  }
  return result->passed() ? k_exit_pass : k_exit_fail;
}

int run_golden_freeze(const GoldenFreezeCommand& command, std::ostream& out, std::ostream& err) {
  auto parity = parity_options(command.proof);
  if (!parity) return report_error(err, parity.error());
  if (auto model = load_model(command.model); !model) return report_error(err, model.error());
  auto result = freeze_golden(command.model, command.reference, command.out, {*parity, tool_versions()});
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
  const bool failed = result->model.empty() || has_errors(result->findings);
  out << fmt::format("verdict          {}\n", failed ? "fail" : "pass");
  return failed ? k_exit_fail : k_exit_pass;
}

namespace {

// "resnet18" for torchvision:resnet18, "model" for path/model.py:build or model.pt, "build" for
// package.module:build.
std::string model_name(const std::string& spec) {
  if (spec.starts_with("torchvision:")) return spec.substr(spec.find(':') + 1);
  const auto colon = spec.rfind(':');
  const std::string target = colon == std::string::npos ? spec : spec.substr(0, colon);
  if (target.ends_with(".py") || target.ends_with(".pt") || target.ends_with(".pth"))
    return fs::path(target).stem().string();
  return colon == std::string::npos ? fs::path(spec).stem().string() : spec.substr(colon + 1);
}

int print_pipeline_report(const Report& report, const fs::path& out_dir, std::ostream& out, std::ostream& err) {
  for (const auto& step : report.steps) {
    out << fmt::format("step {:<11} {:<5} {:>7.2f} s  {}\n", step.name, step.status, step.seconds, step.reason);
  }
  for (const auto& answer : report.headline) {
    out << fmt::format("{:<12} {}\n             {}\n", answer.answer, answer.question, answer.evidence);
  }
  std::vector<Finding> shown;
  for (const auto& f : report.findings) {
    if (f.severity != Severity::info) shown.push_back(f);
  }
  print_findings(out, shown);
  out << fmt::format("report           {}\n", (out_dir / "report.md").string());
  const std::string verdict = report.verdict();
  out << fmt::format("verdict          {}\n", verdict);
  if (verdict == "error") {
    for (const auto& step : report.steps) {
      if (step.status == "error")
        return report_error(err, Error(ErrorCode::runtime, step.name + " step: " + step.reason));
    }
  }
  return verdict == "pass" ? k_exit_pass : verdict == "fail" ? k_exit_fail : k_exit_error;
}

}  // namespace

int run_pipeline_command(const PipelineCommand& command, std::ostream& out, std::ostream& err) {
  const fs::path out_dir =
      command.out.empty() ? fs::path("onnxproof-out") / model_name(command.model.model) : command.out;
  auto export_options = cli_export_options(command.model, out_dir);
  if (!export_options) return report_error(err, export_options.error());
  auto parity = parity_options(command.proof);
  if (!parity) return report_error(err, parity.error());
  auto targets = split_list(command.targets, "--target");
  if (!targets) return report_error(err, targets.error());
  auto tables = load_tables(*targets);
  if (!tables) return report_error(err, tables.error());
  auto report = run_pipeline(PipelineOptions{*export_options, *parity, CheckOptions{}, std::move(*tables)}, err);
  if (!report) return report_error(err, report.error());
  return print_pipeline_report(*report, out_dir, out, err);
}

int run_demo(const DemoCommand& command, std::ostream& out, std::ostream& err) {
  const std::string example = std::string(ONNXPROOF_EXAMPLES_DIR) + "/digits/digits_cnn.py";
  ModelArguments model;
  model.model = example + ":build";
  model.inputs = {"image=1x1x8x8:float32"};
  model.dynamic = {"image:0=batch"};
  model.data = example + ":held_out_batches";
  model.python = command.python;
  auto export_options = cli_export_options(model, command.out);
  if (!export_options) return report_error(err, export_options.error());
  out << "onnxproof demo: a small CNN trained on scikit-learn's digits, proved on the 450 held-out images\n";
  auto tables = load_tables({"ort-cpu"});
  if (!tables) return report_error(err, tables.error());
  auto report =
      run_pipeline(PipelineOptions{*export_options, ParityOptions{}, CheckOptions{}, std::move(*tables)}, err);
  if (!report) return report_error(err, report.error());
  for (const auto& accuracy : report->summary.value("accuracy", nlohmann::json::array())) {
    out << fmt::format(
        "accuracy         PyTorch {:.1f}%, ONNX Runtime {:.1f}% on {} held-out digits; {} predictions flipped\n",
        100.0 * accuracy["accuracy"].value("pytorch", 0.0), 100.0 * accuracy["accuracy"].value("cpu", 0.0),
        accuracy["samples"].get<int64_t>(), accuracy["flipped"].get<int64_t>());
  }
  return print_pipeline_report(*report, command.out, out, err);
}

}  // namespace onnxproof::cli
