// The pipeline workflows: `pipeline` on the options given, `demo` on the built-in example.
#include <fmt/format.h>

#include <unistd.h>
#include <ext/stdio_filebuf.h>

#include <algorithm>
#include <csignal>
#include <cstdio>
#include <iostream>

#include "command_record.h"
#include "onnxproof/core/installation.h"
#include "onnxproof/golden/golden.h"
#include "onnxproof/pipeline/attached_front_end.h"
#include "onnxproof/pipeline/pipeline.h"
#include "onnxproof/workflow/workflows.h"
#include "repair_workflow.h"

namespace onnxproof {
namespace fs = std::filesystem;

namespace {

// A finished run as an outcome: the report's verdict and findings, the run folder written, and
// the step that could not run, if any.
Outcome<Report> run_outcome(Report report, const fs::path& out_dir) {
  // The folder the run went to: out_dir, or the one beside it when an earlier run there passed.
  const fs::path folder = report.run_folder.empty() ? out_dir : report.run_folder;
  Outcome<Report> outcome{.verdict = report.verdict, .findings = report.findings, .artifacts = {folder}};
  if (const auto* step = first_error_step(report))
    outcome.error = Error(ErrorCode::runtime, step->name + " step: " + step->reason);
  outcome.result = std::move(report);
  return outcome;
}

fs::path run_folder(const PipelineCommand& command) {
  const bool named = !command.out.empty() || !command.model.from_export.empty() || command.attach;
  return named ? command.out : default_run_folder(command.model.model);
}

// True when `path` is `folder` or lies below it (both made absolute and normal, links resolved
// where they exist).
bool lies_in(const fs::path& path, const fs::path& folder) {
  std::error_code ec;
  const fs::path inner = fs::weakly_canonical(fs::absolute(path), ec);
  const fs::path outer = fs::weakly_canonical(fs::absolute(folder), ec);
  const auto [end, ignored] = std::mismatch(outer.begin(), outer.end(), inner.begin(), inner.end());
  return end == outer.end();
}

// --golden DIR / --no-golden: the golden set in a folder of the user's, or no golden step. A
// golden folder is neither inside the run folder (replaced by every run) nor holding it.
Expected<void> golden_options(const PipelineCommand& command, const fs::path& out_dir, PipelineOptions& options) {
  options.golden = !command.no_golden;
  if (command.golden.empty()) return {};
  if (command.no_golden) return fail(ErrorCode::usage, "--golden and --no-golden exclude each other");
  if (command.model.exporter == "both")
    return fail(ErrorCode::usage,
                "--golden holds one model's golden set; --exporter both proves two (each run "
                "folder keeps its own golden/)");
  if (lies_in(command.golden, out_dir) || lies_in(out_dir, command.golden))
    return fail(ErrorCode::usage, "--golden " + command.golden.string() +
                                      " may neither lie in nor hold the run folder " + out_dir.string() +
                                      ", which every run replaces");
  if (!command.model.from_export.empty() && lies_in(command.golden, command.model.from_export))
    return fail(ErrorCode::usage, "--golden " + command.golden.string() + " lies in --from-export " +
                                      command.model.from_export + ", which the pipeline only reads");
  // A user's file or project folder named as --golden is refused now, not after the whole proof.
  ONNXPROOF_TRY(require_replaceable_golden_folder(command.golden, "--golden"));
  options.golden_folder = fs::absolute(command.golden);
  return {};
}

}  // namespace

std::vector<std::string> release_parity_arguments(const ProofArguments& proof) {
  std::vector<std::string> arguments;
  if (proof.rtol) arguments.insert(arguments.end(), {"--rtol", fmt::format("{}", *proof.rtol)});
  if (proof.atol) arguments.insert(arguments.end(), {"--atol", fmt::format("{}", *proof.atol)});
  for (const auto& tolerance : proof.output_tolerances)
    arguments.insert(arguments.end(), {"--output-tolerance", tolerance});
  if (proof.skip_optimization_check) arguments.emplace_back("--no-optimization-check");
  for (const auto& name : proof.disabled_optimizers) arguments.insert(arguments.end(), {"--disable-optimizer", name});
  return arguments;
}

// The pipeline's options; with --attach the export comes from the front end, not from options.
Expected<PipelineOptions> pipeline_options_from(const PipelineCommand& command, const fs::path& out_dir) {
  ONNXPROOF_TRY_ASSIGN(auto export_options, command.attach ? attached_export_options_from(command.model, out_dir)
                                                           : export_options_from(command.model, out_dir));
  ONNXPROOF_TRY_ASSIGN(auto parity, parity_options_from(command.proof));
  ONNXPROOF_TRY_ASSIGN(auto listed, split_list(command.targets, "--target"));
  // ort-cpu@VERSION: a release proved in a child of its own; the rest are support tables.
  std::vector<std::string> targets;
  std::vector<RuntimeRelease> releases;
  for (const auto& target : listed) {
    if (!is_release_target(target)) {
      targets.push_back(target);
      continue;
    }
    ONNXPROOF_TRY_ASSIGN(auto release, find_runtime_release(target));
    releases.push_back(std::move(release));
  }
  // A GPU provider's support table joins the audit, so the nodes it rejects are reported before
  // the run (OP_UNSUPPORTED_BY_TARGET), not discovered as a fallback or a failed session.
  for (const auto& [provider, target] : {std::pair{"cuda", "ort-cuda"}, std::pair{"tensorrt", "tensorrt"}}) {
    const bool asked = std::find(parity.providers.begin(), parity.providers.end(), provider) != parity.providers.end();
    if (asked && std::find(targets.begin(), targets.end(), target) == targets.end()) targets.emplace_back(target);
  }
  ONNXPROOF_TRY_ASSIGN(auto tables, load_target_tables(targets));
  PipelineOptions options{std::move(export_options), std::move(parity), CheckOptions{}, std::move(tables)};
  options.releases = std::move(releases);
  options.release_proof.parity_arguments = release_parity_arguments(command.proof);
  options.localize = !command.no_localize;
  if (!command.quantize.empty() && command.quantize != "static")
    return fail(ErrorCode::usage, "--quantize takes static, not '" + command.quantize + "'");
  if (!command.quantize.empty() && command.model.exporter == "both")
    return fail(ErrorCode::usage, "--quantize static quantizes one export; --exporter both makes two");
  options.quantize = command.quantize;
  options.simplify = !command.no_simplify;
  if (!command.proof.keep_float32.empty() && parity.precision != DType::float16)
    return fail(ErrorCode::usage, "--keep-float32 names nodes of the float16 conversion: it needs --precision fp16");
  options.keep_float32 = command.proof.keep_float32;
  if (command.repair && command.model.exporter == "both")
    return fail(ErrorCode::usage, "--repair repairs one export; --exporter both makes two");
  if (command.repair && !(command.repair_budget > 0))
    return fail(ErrorCode::usage, "--repair-budget must be a positive number of seconds");
  ONNXPROOF_TRY(golden_options(command, out_dir, options));
  return options;
}

Expected<Outcome<Report>> pipeline_workflow(const PipelineCommand& command, std::ostream& progress) {
  const fs::path out_dir = run_folder(command);
  ONNXPROOF_TRY_ASSIGN(auto options, pipeline_options_from(command, out_dir));
  // The options the repair proves candidates with are the run's own, without this hook.
  options.before_publish = [&command, base = options, &progress](Report& report, const StagedRun& run) {
    return before_pipeline_publishes(command, base, report, run, {}, progress);
  };
  ONNXPROOF_TRY_ASSIGN(auto report, run_pipeline(options, progress));
  return run_outcome(std::move(report), out_dir);
}

Expected<Outcome<Report>> attached_pipeline_workflow(const PipelineCommand& given, std::istream& from_front_end,
                                                     std::ostream& to_front_end, std::ostream& progress) {
  if (has_options_besides_attach(given))
    return fail(ErrorCode::usage,
                "--attach takes its command from the front end (onnxproof.attach/2's first message): give no other "
                "option");
  // The command arrives over the channel; it is checked as the command line's options are, once.
  PipelineCommand command;
  PipelineOptions options;
  fs::path out_dir;
  const AttachedCommand read_command = [&](const nlohmann::json& document) -> Expected<PipelineOptions> {
    ONNXPROOF_TRY_ASSIGN(command, attached_command(document));
    out_dir = run_folder(command);
    ONNXPROOF_TRY_ASSIGN(options, pipeline_options_from(command, out_dir));
    return options;
  };
  const BeforeAttachedPublish before_publish = [&command, &options, &progress](Report& report, const StagedRun& run,
                                                                               const ExportAgain& again) {
    return before_pipeline_publishes(command, options, report, run, again, progress);
  };
  ONNXPROOF_TRY_ASSIGN(auto report,
                       run_attached_pipeline(read_command, from_front_end, to_front_end, progress, before_publish));
  return run_outcome(std::move(report), out_dir);
}

Expected<Outcome<DemoRun>> demo_workflow(const DemoCommand& command, std::ostream& progress) {
  const std::string example = (installation().examples_dir / "digits" / "digits_cnn.py").string();
  ModelArguments model;
  model.model = example + ":build";
  model.inputs = {"image=1x1x8x8:float32"};
  model.dynamic = {"image:0=batch"};
  model.data = example + ":held_out_batches";
  model.python = command.python;
  ONNXPROOF_TRY_ASSIGN(auto export_options, export_options_from(model, command.out));
  ONNXPROOF_TRY_ASSIGN(auto tables, load_target_tables({"ort-cpu"}));
  ONNXPROOF_TRY_ASSIGN(auto report, run_pipeline(PipelineOptions{std::move(export_options), ParityOptions{},
                                                                 CheckOptions{}, std::move(tables)},
                                                 progress));
  Outcome<Report> run = run_outcome(std::move(report), command.out);
  return Outcome<DemoRun>{run.verdict, std::move(run.findings), std::move(run.artifacts), std::move(run.error),
                          DemoRun{std::move(run.result)}};
}

Expected<Outcome<Report>> attached_pipeline_on_stdio(const PipelineCommand& command) {
  std::signal(SIGPIPE, SIG_IGN);
  std::cout.flush();
  std::fflush(stdout);
  const int channel_fd = ::dup(STDOUT_FILENO);
  if (channel_fd < 0 || ::dup2(STDERR_FILENO, STDOUT_FILENO) < 0)
    return fail(ErrorCode::io, "cannot set up the front end's channel on stdout");
  __gnu_cxx::stdio_filebuf<char> channel_buffer(channel_fd, std::ios::out);
  std::ostream to_front_end(&channel_buffer);
  return attached_pipeline_workflow(command, std::cin, to_front_end, std::cerr);
}

}  // namespace onnxproof
