// The workflows that prove one model file: parity, golden freeze and verify, simplify, and the
// export that makes one.
#include <stdlib.h>

#include <optional>
#include <utility>

#include "json_output.h"
#include "onnxproof/export/float16.h"
#include "onnxproof/parity/random_outputs.h"
#include "onnxproof/report/parity_report.h"
#include "onnxproof/report/versions.h"
#include "onnxproof/workflow/workflows.h"

namespace onnxproof {
namespace fs = std::filesystem;

namespace {

// A folder of this process's own in the system's temporary folder, removed with what it holds when
// the value goes: where `parity --precision fp16` keeps the converted model (parity writes nothing
// else but --json).
class ScratchFolder {
 public:
  static Expected<ScratchFolder> create() {
    std::string pattern = (fs::temp_directory_path() / "onnxproof-fp16-XXXXXX").string();
    if (::mkdtemp(pattern.data()) == nullptr)
      return fail(ErrorCode::io, "cannot create a folder in " + fs::temp_directory_path().string());
    return ScratchFolder(pattern);
  }
  ScratchFolder(ScratchFolder&& other) noexcept : m_path(std::exchange(other.m_path, {})) {}
  ScratchFolder(const ScratchFolder&) = delete;
  ScratchFolder& operator=(const ScratchFolder&) = delete;
  ScratchFolder& operator=(ScratchFolder&&) = delete;
  ~ScratchFolder() {
    std::error_code ec;
    if (!m_path.empty()) fs::remove_all(m_path, ec);
  }
  const fs::path& path() const { return m_path; }

 private:
  explicit ScratchFolder(fs::path path) : m_path(std::move(path)) {}
  fs::path m_path;
};

// The folder holding a reference folder (RUN for RUN/reference/), where the export.json that
// names the reference's source framework lies when the reference is a run's.
fs::path folder_above(const fs::path& folder) {
  std::error_code ec;
  fs::path normal = fs::absolute(folder, ec).lexically_normal();
  if (!normal.has_filename()) normal = normal.parent_path();
  return normal.parent_path();
}

// A reference folder read on its own, named by the framework that made it where it can be known:
// RUN/reference beside the RUN/export.json that names it; else (ONNX's test folders, a copy) the
// findings keep saying PyTorch.
Expected<Reference> read_reference_of_run(const fs::path& folder) {
  ONNXPROOF_TRY_ASSIGN(Reference reference, read_reference(folder));
  reference.framework = source_framework_beside(folder_above(folder));
  return reference;
}

}  // namespace

Expected<Outcome<ParityResult>> parity_workflow(const ParityCommand& command, std::ostream& progress) {
  ONNXPROOF_TRY_ASSIGN(auto options, parity_options_from(command.proof));
  ONNXPROOF_TRY_ASSIGN(const auto model, load_model(command.model));
  CommandInputs read = model_inputs(model);
  read.folders.push_back(command.reference);                              // cases.json, every data set's .pb files
  read.files.push_back(folder_above(command.reference) / "export.json");  // the reference's framework
  ONNXPROOF_TRY(require_output_apart(command.json_path, read, "--json"));
  ONNXPROOF_TRY_ASSIGN(auto reference, read_reference_of_run(command.reference));
  mark_random_outputs(model.proto, reference);
  options.progress = &progress;
  std::optional<ScratchFolder> scratch;
  fs::path proved = command.model;
  if (options.precision == DType::float16) {
    auto created = ScratchFolder::create();
    if (!created) return std::unexpected(created.error());
    scratch.emplace(std::move(*created));
    progress << "onnxproof parity: converting the model to float16\n" << std::flush;
    ONNXPROOF_TRY_ASSIGN(const auto conversion, convert_to_float16(command.model, scratch->path() / "model.fp16.onnx",
                                                                   command.python, 600, command.proof.keep_float32));
    proved = conversion.model;
  }
  ONNXPROOF_TRY_ASSIGN(auto result, run_parity(proved, reference, options));
  ONNXPROOF_TRY(write_json_output(command.json_path, parity_result_to_json(command.model, result)));
  Outcome<ParityResult> outcome{.verdict = parity_verdict(result), .findings = result.findings};
  if (!command.json_path.empty()) outcome.artifacts.push_back(command.json_path);
  if (const auto* missing = result.provider_not_run())
    outcome.error = Error(ErrorCode::not_found, "provider " + missing->provider + " could not run: " + missing->reason);
  outcome.result = std::move(result);
  return outcome;
}

Expected<Outcome<FreezeResult>> golden_freeze_workflow(const GoldenFreezeCommand& command) {
  ONNXPROOF_TRY_ASSIGN(const auto parity, parity_options_from(command.proof));
  ONNXPROOF_TRY_ASSIGN(const auto model, load_model(command.model));
  // The golden folder is replaced whole: it may neither hold nor lie in what the freeze reads.
  CommandInputs read = model_inputs(model);
  read.folders.push_back(command.reference);
  read.files.push_back(folder_above(command.reference) / "export.json");  // the reference's framework
  ONNXPROOF_TRY(require_output_apart(command.out, read, "--out", OutputKind::whole_folder));
  ONNXPROOF_TRY_ASSIGN(auto reference, read_reference_of_run(command.reference));
  mark_random_outputs(model.proto, reference);  // frozen with the set: verification checks their domain
  ONNXPROOF_TRY_ASSIGN(auto result, freeze_golden(command.model, reference, command.out, {parity, tool_versions()}));
  Outcome<FreezeResult> outcome{.verdict = verdict_from(true, result.frozen), .findings = result.parity.findings};
  if (result.frozen) outcome.artifacts.push_back(command.out);
  outcome.result = std::move(result);
  return outcome;
}

Expected<Outcome<VerifyResult>> golden_verify_workflow(const GoldenVerifyCommand& command) {
  ONNXPROOF_TRY_ASSIGN(auto parity, parity_options_from(command.proof));
  parity.compare_optimization_off = false;  // the golden outputs came from all optimizations
  ONNXPROOF_TRY(load_model(command.model));
  ONNXPROOF_TRY_ASSIGN(auto result, verify_golden(command.model, command.golden, {parity, tool_versions()}));
  Outcome<VerifyResult> outcome{.verdict = verdict_from(true, result.passed()), .findings = result.findings};
  outcome.result = std::move(result);
  return outcome;
}

Expected<Outcome<SimplifiedModel>> simplify_workflow(const SimplifyCommand& command) {
  if (command.max_fold_bytes < 0) return fail(ErrorCode::usage, "--max-fold-bytes must be 0 or more");
  ONNXPROOF_TRY_ASSIGN(const auto parity, parity_options_from(command.proof));
  std::optional<Reference> reference;
  if (!command.reference.empty()) {
    // simplify_file keeps -o apart from the model's files; the reference folder is read here.
    ONNXPROOF_TRY(require_output_apart(command.output, {.folders = {command.reference}}, "-o"));
    ONNXPROOF_TRY_ASSIGN(reference, read_reference(command.reference));
  }
  SimplifyOptions options{.max_fold_bytes = static_cast<uint64_t>(command.max_fold_bytes)};
  options.skip_passes.insert(command.skip_passes.begin(), command.skip_passes.end());
  options.skip_rules.insert(command.skip_rules.begin(), command.skip_rules.end());
  ONNXPROOF_TRY_ASSIGN(auto simplified, simplify_file(command.model, command.output, options,
                                                      reference ? &*reference : nullptr, parity.tolerance,
                                                      /*copy_when_unchanged=*/true));
  // Written: proved (or unchanged and copied); not written: refused, the findings say why.
  Outcome<SimplifiedModel> outcome{.verdict = verdict_from(true, simplified.written),
                                   .findings = simplified.proof.findings};
  if (simplified.written) outcome.artifacts.push_back(command.output);
  outcome.result = {std::move(simplified), command.output};
  return outcome;
}

Expected<Outcome<ExportResult>> export_workflow(const ExportCommand& command, std::ostream& progress) {
  ONNXPROOF_TRY_ASSIGN(const auto options, export_options_from(command.model, command.out));
  ONNXPROOF_TRY_ASSIGN(auto result, run_export(options, progress));
  Outcome<ExportResult> outcome{.verdict = verdict_from(true, !result.model.empty(), result.findings),
                                .findings = result.findings};
  if (!result.model.empty()) outcome.artifacts = {result.model, command.out / "reference"};
  outcome.result = std::move(result);
  return outcome;
}

}  // namespace onnxproof
