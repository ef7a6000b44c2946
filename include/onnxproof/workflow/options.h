#pragma once
// Each workflow's options, as plain structs the command line fills (tools/onnxproof/main.cpp) and
// the workflows (workflow/workflows.h) resolve: specs given as text (NAME=DIMS:DTYPE, NAME:AXIS=LABEL,
// comma-separated lists) are parsed by the workflow, which answers a malformed one with
// ErrorCode::usage naming the option.

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "onnxproof/contract/command.h"

namespace onnxproof {

struct CheckCommand {
  std::filesystem::path model{};
  std::filesystem::path json_path{};  // empty: no JSON
  int64_t min_opset = 17;
  std::vector<std::string> dynamic{};  // NAME:AXIS=LABEL, added to export.json's when present
};

struct RunCommand {
  std::filesystem::path model{};
  std::vector<std::string> inputs{};  // NAME=FILE
  std::filesystem::path output_dir{};
  std::string provider = "cpu";
  std::string format = "pb";  // pb | npy
};

/// The model options shared by export and pipeline, and the proof options shared by parity,
/// golden, simplify, localize and pipeline, as given on the command line: the command schema's
/// structs (schemas/command.schema.json: each field's option, meaning and default), so the options
/// the CLI fills, the command record RUN/command.json and the repair that reads it back are one
/// description.
using ModelArguments = contract::CommandModel;
using ProofArguments = contract::CommandProof;

struct ParityCommand {
  std::filesystem::path model{};
  std::filesystem::path reference{};
  ProofArguments proof{};
  std::filesystem::path json_path{};
  std::string python{};  // --precision fp16: the interpreter that converts (front_end_interpreter's rule)
};

struct GoldenFreezeCommand {
  std::filesystem::path model{};
  std::filesystem::path reference{};
  std::filesystem::path out{};
  ProofArguments proof{};
};

struct GoldenVerifyCommand {
  std::filesystem::path model{};
  std::filesystem::path golden{};
  ProofArguments proof{};
};

struct PipelineCommand {
  ModelArguments model{};
  ProofArguments proof{};
  std::string targets = "ort-cpu";  // comma-separated
  std::filesystem::path out{};      // empty: ./onnxproof-out/<model name>
  bool no_localize = false;         // skip the localization after a parity failure
  bool attach = false;              // the export comes from a front end over stdin/stdout
  std::filesystem::path golden{};   // --golden DIR: the golden set lives there (empty: OUT/golden)
  bool no_golden = false;           // --no-golden: no golden step (onnxproof.prove()'s default)
  std::string quantize{};           // --quantize static: also model.quant.onnx, proved (docs/quantization.md)
  bool no_simplify = false;         // --no-simplify: prove and ship the export as written
  bool repair = false;              // --repair: after a failure, look for the change that fixes it (docs/repair.md)
  double repair_budget = 900;       // --repair-budget SECONDS
};

/// `repair RUN`: the candidate fixes a failed run's findings point at, each proved in RUN/repair/.
struct RepairCommand {
  std::filesystem::path run{};
  double budget = 900;           // seconds; a candidate is started only while some of it is left
  bool every_candidate = false;  // --all: every candidate tried, not only up to the first that passes
};

struct DemoCommand {
  std::filesystem::path out = "onnxproof-out/digits";
  std::string python{};
  double export_timeout = 1800;  // seconds
};

struct OpsCommand {
  std::filesystem::path model{};
  std::string targets = "ort-cpu";  // comma-separated
  std::filesystem::path json_path{};
  bool probe = false;  // audit against the loaded ONNX Runtime itself, probed, instead of the tables
};

struct OpsetCommand {
  std::string targets = "ort-cpu";  // comma-separated
};

struct ProbeCommand {
  std::string provider = "cpu";
  int opset = 0;  // 0: the newest that ONNX and the loaded ONNX Runtime both support
  bool all_versions = false;
  std::vector<std::string> ops{};
  std::filesystem::path write_table{};
};

struct SimplifyCommand {
  std::filesystem::path model{};
  std::filesystem::path output{};
  int64_t max_fold_bytes = int64_t{64} << 20;  // signed, so "-5" is caught rather than wrapped
  std::filesystem::path reference{};           // optional: prove on these inputs
  std::vector<std::string> skip_passes{};      // --skip-pass NAME
  std::vector<std::string> skip_rules{};       // --skip-rule NAME
  ProofArguments proof{};
};

struct LocalizeCommand {
  std::filesystem::path run{};  // a pipeline's run folder
  std::string data_set{};       // empty: the worst failing parity case of its report
  std::string provider = "cpu";
  std::string optimization = "all";
  std::string python{};
  bool captured = false;  // localize/modules.json is there already (captured in the model's own process)
  ProofArguments proof{};
};

/// `bisect-release RUN`: the release at which a run's proof turns from pass to fail.
struct BisectReleaseCommand {
  std::filesystem::path run{};  // a pipeline's run folder
  std::string good{};           // X.Y or X.Y.Z; empty: from the run's runtimes step
  std::string bad{};
  bool fetch = false;  // fetch the releases of data/onnxruntime-releases.csv missing in between
};

/// `zoo ...`: every argument after `zoo`, handed to the model zoo (python -m onnxproof.zoo).
struct ZooCommand {
  std::vector<std::string> arguments{};
  std::filesystem::path engine{};  // this binary: the zoo proves each model with `ENGINE pipeline`
};

struct ExportCommand {
  ModelArguments model{};
  std::filesystem::path out{};
};

}  // namespace onnxproof
