#pragma once
// The CLI's commands: each takes its plain options struct, calls the library, prints to the given
// streams and returns the process exit code (DESIGN.md: 0 pass, 1 the proof failed, 2 usage
// error, 3 the tool could not run).

#include <filesystem>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "onnxproof/core/error.h"
#include "onnxproof/export/export_step.h"
#include "onnxproof/pipeline/pipeline.h"

namespace onnxproof::cli {

inline constexpr int k_exit_pass = 0;
inline constexpr int k_exit_fail = 1;
inline constexpr int k_exit_usage = 2;
inline constexpr int k_exit_error = 3;

struct CheckCommand {
  std::filesystem::path model;
  std::filesystem::path json_path;  // empty: no JSON
  int64_t min_opset = 17;
  std::vector<std::string> dynamic;  // NAME:AXIS=LABEL, added to export.json's when present
};

struct RunCommand {
  std::filesystem::path model;
  std::vector<std::string> inputs;  // NAME=FILE
  std::filesystem::path output_dir;
  std::string provider = "cpu";
  std::string format = "pb";  // pb | npy
};

/// The model options shared by export (and later pipeline), as given on the command line.
struct ModelArguments {
  std::string model;
  std::vector<std::string> inputs;   // NAME=DIMS:DTYPE[:LO..HI]
  std::vector<std::string> dynamic;  // NAME:AXIS=LABEL
  int64_t opset = 0;                 // 0: the newest that ONNX Runtime, the targets and the exporter support
  std::string exporter = "auto";
  std::vector<std::string> sweep;  // LABEL=SIZES
  int samples = 3;
  std::string data;
  std::filesystem::path data_dir;
  std::string python;
  double export_timeout = 1800;       // seconds
  std::filesystem::path from_export;  // pipeline: prove this finished export instead of exporting
};

/// The proof options shared by parity, golden and pipeline, as given on the command line.
struct ProofArguments {
  std::string providers = "cpu";  // comma-separated
  std::optional<double> rtol;
  std::optional<double> atol;
  std::vector<std::string> output_tolerances;  // NAME=RTOL,ATOL
  bool skip_optimization_check = false;
};

struct ParityCommand {
  std::filesystem::path model;
  std::filesystem::path reference;
  ProofArguments proof;
  std::filesystem::path json_path;
};

struct GoldenFreezeCommand {
  std::filesystem::path model;
  std::filesystem::path reference;
  std::filesystem::path out;
  ProofArguments proof;
};

struct GoldenVerifyCommand {
  std::filesystem::path model;
  std::filesystem::path golden;
  ProofArguments proof;
};

struct PipelineCommand {
  ModelArguments model;
  ProofArguments proof;
  std::string targets = "ort-cpu";  // comma-separated
  std::filesystem::path out;        // empty: ./onnxproof-out/<model name>
  bool no_localize = false;         // skip the localization after a parity failure
  bool attach = false;              // the export comes from a front end over stdin/stdout
};

struct DemoCommand {
  std::filesystem::path out = "onnxproof-out/digits";
  std::string python;
  double export_timeout = 1800;  // seconds
};

struct OpsCommand {
  std::filesystem::path model;
  std::string targets = "ort-cpu";  // comma-separated
  std::filesystem::path json_path;
};

struct OpsetCommand {
  std::string targets = "ort-cpu";  // comma-separated
};

struct ProbeCommand {
  std::string provider = "cpu";
  int opset = 0;  // 0: the newest that ONNX and the loaded ONNX Runtime both support
  bool all_versions = false;
  std::vector<std::string> ops;
  std::filesystem::path write_table;
};

struct SimplifyCommand {
  std::filesystem::path model;
  std::filesystem::path output;
  int64_t max_fold_bytes = int64_t{64} << 20;  // signed, so "-5" is caught rather than wrapped
  std::filesystem::path reference;             // optional: prove on these inputs
  std::vector<std::string> skip_passes;        // --skip-pass NAME
  ProofArguments proof;
};

struct LocalizeCommand {
  std::filesystem::path run;  // a pipeline's run folder
  std::string data_set;       // empty: the worst failing parity case of its report
  std::string provider = "cpu";
  std::string optimization = "all";
  std::string python;
  bool captured = false;  // localize/modules.json is there already (onnxproof.prove captured in-process)
  ProofArguments proof;
};

struct ExportCommand {
  ModelArguments model;
  std::filesystem::path out;
};

/// Parses the model options into the export step's options (usage errors for malformed specs).
Expected<ExportOptions> cli_export_options(const ModelArguments& arguments, const std::filesystem::path& out);

/// Prints "onnxproof: error: ..." as one line and returns the exit code for the error.
int report_error(std::ostream& err, const Error& error);

int run_check(const CheckCommand& command, std::ostream& out, std::ostream& err);
int run_run(const RunCommand& command, std::ostream& out, std::ostream& err);
int run_version(std::ostream& out);
int run_parity_command(const ParityCommand& command, std::ostream& out, std::ostream& err);
int run_golden_freeze(const GoldenFreezeCommand& command, std::ostream& out, std::ostream& err);
int run_golden_verify(const GoldenVerifyCommand& command, std::ostream& out, std::ostream& err);
/// `pipeline --attach`: run_attached_pipeline() over this process's stdin and stdout (attached_command.cpp).
int run_attached_pipeline_command(PipelineOptions options, std::ostream& err);
int run_pipeline_command(const PipelineCommand& command, std::ostream& out, std::ostream& err);
int run_demo(const DemoCommand& command, std::ostream& out, std::ostream& err);
int run_ops(const OpsCommand& command, std::ostream& out, std::ostream& err);
int run_probe(const ProbeCommand& command, std::ostream& out, std::ostream& err);
/// `ops opset`: the newest opset every target supports, as one JSON line (what the Python API
/// exports at by default, as the pipeline does).
int run_opset(const OpsetCommand& command, std::ostream& out, std::ostream& err);
int run_simplify(const SimplifyCommand& command, std::ostream& out, std::ostream& err);
/// `localize RUN`: exit 0 when a module is named, 1 when none could be, 2/3 as usual.
int run_localize(const LocalizeCommand& command, std::ostream& out, std::ostream& err);
int run_export_command(const ExportCommand& command, std::ostream& out, std::ostream& err);

}  // namespace onnxproof::cli
