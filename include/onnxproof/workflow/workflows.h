#pragma once
// Every command of onnxproof as one library call: typed options in (workflow/options.h), one
// Outcome out (workflow/outcome.h). Workflows print nothing but progress (to the stream given);
// workflow/present.h turns an outcome into the command line's summary. Each returns an Error
// (ErrorCode::usage for bad options) when it cannot start or its input cannot be read.

#include <filesystem>
#include <istream>
#include <optional>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "onnxproof/check/check_model.h"
#include "onnxproof/export/export_step.h"
#include "onnxproof/golden/golden.h"
#include "onnxproof/localize/localize.h"
#include "onnxproof/localize/release_bisect.h"
#include "onnxproof/model/model_io.h"
#include "onnxproof/ops/audit.h"
#include "onnxproof/ops/opset_limits.h"
#include "onnxproof/ops/probe.h"
#include "onnxproof/parity/parity.h"
#include "onnxproof/repair/repair.h"
#include "onnxproof/report/report.h"
#include "onnxproof/runtime/run_to_folder.h"
#include "onnxproof/simplify/simplify.h"
#include "onnxproof/workflow/options.h"
#include "onnxproof/workflow/outcome.h"

namespace onnxproof {

using ToolVersions = std::vector<std::pair<std::string, std::string>>;

/// `--version`: the engine's tools, its data folders, and the front end's versions as the
/// interpreter an export would use now reports them (or why it cannot).
struct VersionsResult {
  ToolVersions engine;
  std::filesystem::path data_dir;
  std::filesystem::path python_dir;
  /// Each source framework's interpreter and packages (core/source_framework.h's order).
  std::vector<std::pair<std::string, Expected<ToolVersions>>> front_ends{};
};
Outcome<VersionsResult> versions_workflow();

struct CheckedModel {
  LoadedModel model;
  CheckResult check;
};
/// `check`: the checker, shape inference and the frozen-shape analysis (export.json beside the
/// model read too); fail on an error finding. Writes command.json_path when given.
Expected<Outcome<CheckedModel>> check_workflow(const CheckCommand& command);

/// `run`: the model's outputs on the given inputs, written to command.output_dir.
Expected<Outcome<std::vector<WrittenOutput>>> run_workflow(const RunCommand& command);

/// `ops`: the operator audit against the targets' tables; fail on an error finding.
Expected<Outcome<OpsAudit>> ops_workflow(const OpsCommand& command);

/// `ops opset`: the newest opset every target supports.
Expected<Outcome<OpsetLimit>> opset_workflow(const OpsetCommand& command);

struct ProbeReport {
  std::string provider;
  std::vector<ProbeRow> rows;
  std::vector<ProbeDifference> differences;  // from the documented CPU table
  std::size_t table_rows = 0;                // of the table written (command.write_table)
};
/// `ops probe`: which operators the installed ONNX Runtime implements.
Expected<Outcome<ProbeReport>> probe_workflow(const ProbeCommand& command);

struct SimplifiedModel {
  SimplifyOutcome simplify;
  std::filesystem::path output;
};
/// `simplify`: pass when the simplified model was proved and written (or copied unchanged); fail
/// when it was refused (the findings say why).
Expected<Outcome<SimplifiedModel>> simplify_workflow(const SimplifyCommand& command);

/// `parity`: the parity proof; error when a provider could not run (outcome.error says which).
Expected<Outcome<ParityResult>> parity_workflow(const ParityCommand& command, std::ostream& progress);

/// `golden freeze`: pass when the proof held and the data sets were frozen in command.out.
Expected<Outcome<FreezeResult>> golden_freeze_workflow(const GoldenFreezeCommand& command);

/// `golden verify`: pass when the model still gives the frozen outputs.
Expected<Outcome<VerifyResult>> golden_verify_workflow(const GoldenVerifyCommand& command);

/// `export`: fail when no model was exported or a finding is an error.
Expected<Outcome<ExportResult>> export_workflow(const ExportCommand& command, std::ostream& progress);

/// `pipeline`: the whole proof into one run folder (artifacts: the folder); error when a step
/// could not run (outcome.error names it).
Expected<Outcome<Report>> pipeline_workflow(const PipelineCommand& command, std::ostream& progress);
/// `pipeline --attach`: the same, for a front end on the two streams (pipeline/attached_front_end.h).
Expected<Outcome<Report>> attached_pipeline_workflow(const PipelineCommand& command, std::istream& from_front_end,
                                                     std::ostream& to_front_end, std::ostream& progress);
/// `pipeline --attach` on the process's own streams: stdin from the front end, the channel to it
/// on what was stdout, fd 1 then pointing at stderr (a library's chatter and the summary join the
/// progress); a front end gone is an error, not SIGPIPE.
Expected<Outcome<Report>> attached_pipeline_on_stdio(const PipelineCommand& command);

/// What `demo` proves, said before it starts.
inline constexpr const char* k_demo_announcement =
    "onnxproof demo: a small CNN trained on scikit-learn's digits, proved on the 450 held-out images\n";
struct DemoRun {
  Report report;  // its parity's accuracy: PyTorch's and ONNX Runtime's on the held-out digits
};
/// `demo`: the pipeline on the built-in digits example.
Expected<Outcome<DemoRun>> demo_workflow(const DemoCommand& command, std::ostream& progress);

struct LocalizedRun {
  Localization localization;
  std::filesystem::path markdown;  // RUN/localize/localization.md
};
/// `localize RUN`: pass when a module (or an ONNX Runtime optimizer) is named, fail when none
/// could be. The findings put the optimizer's first. `progress` hears about the capture.
Expected<Outcome<LocalizedRun>> localize_workflow(const LocalizeCommand& command, std::ostream& progress);

struct BisectedRun {
  ReleaseBisectResult result;
  std::filesystem::path markdown;  // RUN/bisect/bisect.md
};
/// `bisect-release RUN`: the run's model proved on the cached ONNX Runtime releases between one
/// that passes and one that fails (the run's --target releases, or --good and --bad), by
/// bisection, and the optimizer to blame on the first failing one (localize/release_bisect.h);
/// pass when the boundary is found. RUN's reports then say it in "What to do".
Expected<Outcome<BisectedRun>> bisect_release_workflow(const BisectReleaseCommand& command, std::ostream& progress);

/// The arguments a release's parity child is given besides the model and reference: the
/// tolerances and optimizer options the run was given, so every release is judged by its rule.
std::vector<std::string> release_parity_arguments(const ProofArguments& proof);

/// `zoo run|merge ...`: the model zoo (python/onnxproof/zoo, docs/zoo.md), which schedules
/// `ENGINE pipeline` per model on Ray or in local processes and writes its own dashboard. This
/// process becomes the zoo (the front end's interpreter and package, as the export uses), so its
/// output, signals (Ctrl-C ends its pipelines) and exit code (0 pass, 1 fail, 2 usage, 3 error)
/// are the command's. Returns only when the interpreter cannot start (ErrorCode::not_found).
Error zoo_workflow(const ZooCommand& command);

/// The pipeline's options from the command (ErrorCode::usage for a bad option); with --attach the
/// export comes from the front end. `out_dir` is the run folder.
Expected<PipelineOptions> pipeline_options_from(const PipelineCommand& command, const std::filesystem::path& out_dir);

struct RepairedRun {
  RepairResult result;
  std::filesystem::path markdown;  // RUN/repair/repair.md
};
/// `repair RUN`: the changes the failed run's findings point at, each proved in RUN/repair/
/// (repair/repair.h), with the options RUN/command.json recorded (or, for a run without one,
/// its own export proved again); pass when one repairs it, fail when none does. RUN's reports
/// then point at the result.
Expected<Outcome<RepairedRun>> repair_workflow(const RepairCommand& command, std::ostream& progress);

/// The export options the model options give (ErrorCode::usage for a malformed spec).
Expected<ExportOptions> export_options_from(const ModelArguments& arguments, const std::filesystem::path& out);
/// --attach: the export arrives over the protocol, so options that name or shape one are usage errors.
Expected<ExportOptions> attached_export_options_from(const ModelArguments& arguments, const std::filesystem::path& out);

/// The parity options the proof options give (ErrorCode::usage for a malformed list or tolerance).
Expected<ParityOptions> parity_options_from(const ProofArguments& arguments);

/// A comma-separated option's items; ErrorCode::usage naming `option` for an empty item.
Expected<std::vector<std::string>> split_list(const std::string& list, const std::string& option);

}  // namespace onnxproof
