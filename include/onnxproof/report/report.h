#pragma once
// The Report: one value the pipeline fills step by step and writes once at the end (and on
// failure): report.json (schema onnxproof.report/2) and report.md.

#include <filesystem>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "onnxproof/core/error.h"
#include "onnxproof/core/finding.h"
#include "onnxproof/core/given_file.h"
#include "onnxproof/core/verdict.h"
#include "onnxproof/localize/localize.h"
#include "onnxproof/parity/parity.h"
#include "onnxproof/report/exporter_comparison.h"
#include "onnxproof/report/step_result.h"

namespace onnxproof {

struct StepReport {
  std::string name{};
  StepStatus status = StepStatus::skip;
  double seconds = 0.0;
  std::optional<double> peak_mib{};  // the engine's peak resident set during the step
  std::string reason{};              // why skipped or errored, or what it did
  /// The step's typed result (its figures, report section and files); null when it has none.
  std::shared_ptr<StepResult> result{};

  /// The result as the step's own type; null when it has none or another.
  template <class T>
  [[nodiscard]] T* result_as() const {
    return dynamic_cast<T*>(result.get());
  }
};

/// One of MISSION.md's headline questions with its answer ("yes", "no" or "not checked").
struct HeadlineAnswer {
  std::string question;
  std::string answer;
  std::string evidence;
};

/// One input or output of the exported model: its dims are sizes ("3") or the names of dynamic
/// dimensions ("batch"), "?" when neither; no dims when the rank is unknown.
struct SignatureValue {
  std::string name;
  std::string dtype;  // "float32", "sequence(float32)", ...
  std::optional<std::vector<std::string>> dims;
};

/// The exported model's interface, what a deployment feeds it and gets back (from the check
/// step's summary), and the exporter that wrote it.
struct ModelSignature {
  std::string exporter;  // "dynamo", "torchscript", "tf2onnx", "keras"; empty when unknown
  int64_t ir_version = 0;
  std::string producer;
  std::vector<std::pair<std::string, int64_t>> opsets;  // domain ("ai.onnx" for "") -> version
  std::vector<SignatureValue> inputs, outputs;
};

/// What a repair made of a failed run's advice.
struct RepairPointer {
  std::string what_to_do;  // repair/repair.h's repair_what_to_do: the proved fix, or what was tried
  std::string before;      // the "what to do" the run's own findings gave
  bool found = false;      // a candidate passed
  std::string folder;      // the passing candidate's folder, relative to the run; empty when none
};

struct Report {
  std::string model;  // the model spec
  /// The source framework whose outputs are the reference (core/source_framework.h: "torch",
  /// "tensorflow"): the spec's, then export.json's. The writers name it (source_title); empty
  /// when unknown, worded as PyTorch.
  std::string framework;
  std::filesystem::path onnx_model;  // OUT/model.onnx when exported
  /// --onnx FILE: the user's file onnx_model is a copy of, proved as it is; shipped by its own path.
  std::optional<GivenFile> given_file;
  /// The dynamo exporter's own report, relative to the run folder (exporter_report.md); empty
  /// when there is none.
  std::filesystem::path exporter_report;
  std::vector<std::pair<std::string, std::string>> versions;
  std::vector<StepReport> steps;
  std::vector<Finding> findings;
  std::optional<ParityResult> parity;  // when the parity step ran
  std::vector<HeadlineAnswer> headline;
  /// --exporter both: one summary per exporter's run folder (empty otherwise).
  std::vector<ExporterSummary> exporters;
  /// Where the outputs first diverge, when parity failed and localization ran; why it could not
  /// run otherwise (then `localization` is empty).
  std::optional<Localization> localization;
  std::string localization_error;
  std::optional<ModelSignature> signature;  // when the check step read the exported model
  /// The golden set the golden step froze or verified ("golden/", or the user's --golden folder);
  /// empty when it did neither.
  std::string golden_folder;
  /// After a repair (`pipeline --repair`, `onnxproof repair RUN`): the "what to do" that points at
  /// its result (report.json's ship.repair); none: the main cause's hint.
  std::optional<RepairPointer> repair;
  Verdict verdict = Verdict::error;  // set once, by finish_report()
  /// Where the pipeline published the run: its --out, or RUN.failed beside a run that passed
  /// (run_pipeline). Not in report.json.
  std::filesystem::path run_folder;
};

/// Computes the verdict once, from the steps and the findings: verdict_from() of the step
/// statuses, and fail when a finding is an error (a later step may confirm an earlier warning).
void finish_report(Report& report);

/// The pipeline's terminal summary: the answer first (verdict, where, what to do), then
/// `after_answer` (lines a command adds, such as the demo's accuracy), each step, the headline
/// answers, the findings that are not info grouped under their causes, the report's path and the
/// verdict again.
void print_report_summary(std::ostream& out, const Report& report, const std::filesystem::path& out_dir,
                          const std::string& after_answer = "");

/// The step of that name; null when the run has none.
const StepReport* find_step(const Report& report, std::string_view name);

/// The first step that could not do its job; null when none.
const StepReport* first_error_step(const Report& report);

/// report.json's content.
nlohmann::json report_to_json(const Report& report);

/// report.md's content: the headline questions, findings by severity, steps, the parity table.
std::string report_to_markdown(const Report& report);

/// report.html's content: the same as report.md in one self-contained page, the plot inline.
std::string report_to_html(const Report& report);

/// Writes OUT/report.json, OUT/report.md, OUT/report.html and, when parity ran,
/// OUT/report-parity.svg (and OUT/report-localize.svg after a localization), each atomically.
Expected<void> write_report(const Report& report, const std::filesystem::path& out);

}  // namespace onnxproof
