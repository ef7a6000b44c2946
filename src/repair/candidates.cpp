// What a failed run's findings point at, as candidate changes in the order they are tried.
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <set>
#include <string_view>

#include "onnxproof/core/finding.h"
#include "onnxproof/core/json_file.h"
#include "onnxproof/repair/repair.h"
#include "onnxproof/report/published_report.h"

namespace onnxproof {
namespace fs = std::filesystem;

namespace {

// Failures of the model itself or of the user's setup: no export, runtime or float16 choice
// changes them, so a run failed by these alone is not repaired.
constexpr std::array<std::string_view, 9> k_not_the_exports = {"NONDETERMINISTIC_FORWARD",
                                                               "TRAINING_MODE",
                                                               "NON_TENSOR_OUTPUT",
                                                               "REFERENCE_FAILED",
                                                               "REFERENCE_NOT_FINITE",
                                                               "RANDOM_OUTPUT",
                                                               "GOLDEN_DRIFT",
                                                               "CASE_REJECTED_BY_PYTORCH",
                                                               "MOVED_TO_CPU"};

bool is_error(const RepairFacts::FindingFact& finding) { return finding.severity == "error"; }

bool has_code(const RepairFacts& facts, std::string_view code) {
  return std::any_of(facts.findings.begin(), facts.findings.end(),
                     [&](const auto& finding) { return finding.code == code; });
}

// The optimizer names a RUNTIME_OPTIMIZATION_CHANGED_OUTPUTS finding gives in its `where`
// ("ConvAddFusion", or several joined by commas when the search could not part them).
std::vector<std::string> named_optimizers(const RepairFacts& facts) {
  std::set<std::string> names;
  for (const auto& finding : facts.findings) {
    // Localization's finding names optimizers; the generation proof's names a step ("generation step 3").
    if (finding.code != "RUNTIME_OPTIMIZATION_CHANGED_OUTPUTS" || finding.step != "localize") continue;
    std::string name;
    for (const char c : finding.where + ",") {
      if (std::isalnum(static_cast<unsigned char>(c)) || c == '_') {
        name.push_back(c);
      } else if (!name.empty()) {
        names.insert(name);
        name.clear();
      }
    }
  }
  return {names.begin(), names.end()};
}

// The Reshape nodes FROZEN_DIMENSION names for a constant shape ("Reshape input 1 (shape) is the constant ...").
std::vector<std::string> frozen_reshapes(const RepairFacts& facts) {
  std::set<std::string> nodes;
  for (const auto& finding : facts.findings) {
    if (finding.code == "FROZEN_DIMENSION" && finding.message.starts_with("Reshape input 1") && !finding.where.empty())
      nodes.insert(finding.where);
  }
  return {nodes.begin(), nodes.end()};
}

// The first error finding a candidate answers, for the table's "why tried".
std::string first_error(const RepairFacts& facts, std::initializer_list<std::string_view> codes) {
  for (const auto& finding : facts.findings) {
    if (!is_error(finding)) continue;
    if (codes.size() == 0 || std::find(codes.begin(), codes.end(), finding.code) != codes.end())
      return finding.code + (finding.where.empty() ? "" : " at " + finding.where);
  }
  return "";
}

std::string other_exporter(const RepairFacts& facts) {
  if (facts.framework == "tensorflow") return facts.exporter == "keras" ? "tf2onnx" : "keras";
  return facts.exporter == "dynamo" ? "torchscript" : "dynamo";
}

// The oldest opset an exporter writes: torch's dynamo exporter 18, the rest 7.
int64_t oldest_opset(const std::string& exporter) { return exporter == "dynamo" ? 18 : 7; }

// Lower opsets to export at with `exporter`: the two below the run's and 17, the opset most
// runtimes in service run (ONNX Runtime from 1.14, TensorRT 8.6, OpenVINO 2023).
std::vector<int64_t> lower_opsets(int64_t opset, const std::string& exporter) {
  std::vector<int64_t> opsets;
  for (const int64_t candidate : {opset - 1, opset - 2, int64_t{17}}) {
    if (candidate >= oldest_opset(exporter) && candidate < opset &&
        std::find(opsets.begin(), opsets.end(), candidate) == opsets.end())
      opsets.push_back(candidate);
  }
  return opsets;
}

// The changes that need no new export: the run's own model, changed or run otherwise.
void add_model_candidates(const RepairFacts& facts, std::vector<RepairCandidate>& out) {
  if (!facts.has_model) return;
  if (const auto optimizers = named_optimizers(facts); !optimizers.empty()) {
    const std::string names = fmt::format("{}", fmt::join(optimizers, ","));
    out.push_back({.kind = "optimizer",
                   .name = "optimizer-" + fmt::format("{}", fmt::join(optimizers, "-")),
                   .change = "ONNX Runtime sessions without the optimizer " + names +
                             " (session config optimization.disable_specified_optimizers=" + names + ")",
                   .reason = first_error(facts, {"RUNTIME_OPTIMIZATION_CHANGED_OUTPUTS"}),
                   .disabled_optimizers = optimizers});
  }
  const std::string numeric = first_error(facts, {"PARITY_MISMATCH", "NAN_OR_INF", "ARGMAX_FLIP", "OUTPUT_SATURATED"});
  // A rewrite is tried only where cases failed: without a failing case nothing would prove it.
  const std::string frozen =
      first_error(facts, {"SHAPE_REJECTED", "PARITY_MISMATCH", "RUN_FAILED", "FROZEN_DIMENSION"});
  if (const auto reshapes = frozen_reshapes(facts);
      !reshapes.empty() && !frozen.empty() && !facts.failing_cases.empty()) {
    out.push_back({.kind = "rewrite",
                   .name = "rewrite-frozen-reshape",
                   .change = fmt::format("Reshape {} (and any Reshape holding the same frozen axes) copies the "
                                         "dynamic axes (shape entries 0) instead of their traced sizes",
                                         fmt::join(reshapes, ", ")),
                   .reason = frozen,
                   .reshapes = reshapes});
  }
  // OpenVINO's default configuration proved as the deployment (--provider openvino:default) and
  // failed: the same model compiled in float32 is the change an application makes in one line.
  if (facts.failing_providers.contains("openvino:default") && !numeric.empty()) {
    out.push_back({.kind = "precision",
                   .name = "openvino-f32",
                   .change = "OpenVINO compiles the model with INFERENCE_PRECISION_HINT=f32 instead of its default "
                             "precision (Python: core.compile_model(path, \"CPU\", {\"INFERENCE_PRECISION_HINT\": "
                             "\"f32\"}); C++: core.compile_model(path, \"CPU\", "
                             "ov::hint::inference_precision(ov::element::f32)))",
                   .reason = numeric,
                   .openvino_float32 = true});
  }
  if (facts.float16 && !numeric.empty()) {
    out.push_back(
        {.kind = "float32",
         .name = "keep-float32",
         .change = "the float16 conversion keeps the block that breaks in float16 in float32 (--keep-float32)",
         .reason = numeric,
         .keep_float32 = true});
  }
}

// The changes that need a new export: the other exporter, lower opsets.
void add_export_candidates(const RepairFacts& facts, std::vector<RepairCandidate>& out) {
  // A file the user made (--onnx) is proved as given: no other exporter or opset makes it.
  if (!facts.can_reexport || facts.exporter == "file") return;
  const std::string reason = first_error(facts, {});
  // After an EXPORTER_FALLBACK the other exporter already failed on this model, as it was asked.
  if (!facts.exporter.empty() && !has_code(facts, "EXPORTER_FALLBACK")) {
    const std::string other = other_exporter(facts);
    out.push_back({.kind = "exporter",
                   .name = "exporter-" + other,
                   .change = fmt::format("export with {} instead of {}", other, facts.exporter),
                   .reason = reason,
                   .reexport = true,
                   .exporter = other});
  }
  // A Python branch the trace took one way is the model's code: every opset traces it alike, and
  // what fails after it follows from it (the other exporter, which may not trace, is still tried).
  const bool traced_branch = std::any_of(facts.findings.begin(), facts.findings.end(), [](const auto& finding) {
    return is_error(finding) && finding.code == "DATA_DEPENDENT_CONTROL_FLOW";
  });
  if (traced_branch) return;
  for (const int64_t opset : lower_opsets(facts.opset == 0 ? 19 : facts.opset, facts.exporter)) {
    out.push_back({.kind = "opset",
                   .name = fmt::format("opset-{}", opset),
                   .change = fmt::format("export at opset {}{}", opset,
                                         facts.opset == 0 ? "" : fmt::format(" instead of {}", facts.opset)),
                   .reason = reason,
                   .reexport = true,
                   .exporter = facts.exporter.empty() ? std::nullopt : std::optional(facts.exporter),
                   .opset = opset});
  }
}

// The smallest combinations: two changes of different kinds, each tried alone before. A rewrite
// and a float32 block name nodes of this export, which another export does not have.
void add_combinations(std::vector<RepairCandidate>& out) {
  constexpr std::size_t k_most = 4;
  std::vector<RepairCandidate> pairs;
  const std::vector<RepairCandidate> singles = out;
  for (std::size_t i = 0; i < singles.size(); ++i) {
    for (std::size_t j = i + 1; j < singles.size() && pairs.size() < k_most; ++j) {
      const auto& a = singles[i];
      const auto& b = singles[j];
      if (a.kind == b.kind || !b.reexport || a.kind == "rewrite" || a.kind == "float32" || a.kind == "precision")
        continue;
      if (a.kind == "exporter" && b.kind == "opset" && *b.opset >= oldest_opset(a.exporter.value_or(""))) {
        RepairCandidate both = b;
        both.exporter = a.exporter;
        both.change = a.change + ", at opset " + std::to_string(*b.opset);
        both.name = a.name + "+" + b.name;
        both.kind = "exporter+opset";
        pairs.push_back(std::move(both));
      } else if (!a.reexport && b.kind == "exporter") {
        RepairCandidate both = a;
        both.reexport = true;
        both.exporter = b.exporter;
        both.change = a.change + "; and " + b.change;
        both.name = a.name + "+" + b.name;
        both.kind = a.kind + "+exporter";
        pairs.push_back(std::move(both));
      }
    }
  }
  out.insert(out.end(), pairs.begin(), pairs.end());
}

}  // namespace

Expected<RepairFacts> read_repair_facts(const fs::path& run, bool can_reexport) {
  ONNXPROOF_TRY_ASSIGN(const auto report, read_published_report(run, ErrorCode::usage));
  RepairFacts facts;
  facts.verdict = report.verdict;
  facts.framework = report.framework.value_or("torch");
  if (report.signature) facts.exporter = report.signature->exporter;
  facts.opset = default_opset_of(report);
  const std::string proved = fs::path(report.onnx_model).filename().string();
  facts.has_model = !proved.empty() && fs::is_regular_file(run / "model.onnx");
  facts.simplified = proved == "model.sim.onnx";
  facts.float16 = proves_float16(report);
  for (const auto& finding : report.findings)
    facts.findings.push_back({finding.code, finding.severity, finding.where, finding.message, finding.step});
  std::set<std::string> advisory;
  if (report.summary.is_object() && report.summary.contains("providers") && report.summary["providers"].is_array()) {
    for (const auto& provider : report.summary["providers"]) {
      if (provider.is_object() && provider.value("advisory", false)) advisory.insert(provider.value("provider", ""));
    }
  }
  for (const auto& row : report.parity)
    if (row.status != "pass") {
      facts.failing_cases.insert(row.case_);
      // Advisory rows (OpenVINO's default beside its float32 proof) did not fail the run.
      if (!advisory.contains(row.provider)) facts.failing_providers.insert(row.provider);
    }
  // The exporter a failed export was asked for, which the report's signature cannot say.
  if (facts.exporter.empty() && fs::is_regular_file(run / "export.json")) {
    if (auto manifest = read_json_object(run / "export.json", ErrorCode::usage)) {
      const std::string asked = manifest->value("exporter", "");
      if (asked != "auto" && asked != "both") facts.exporter = asked;
    }
  }
  facts.can_reexport = can_reexport;
  return facts;
}

std::string frozen_source_line(const RepairFacts& facts) {
  for (const auto& finding : facts.findings)
    if (finding.code == "FROZEN_DIMENSION" && names_source_line(finding.where)) return finding.where;
  return "";
}

std::vector<RepairCandidate> plan_repair(const RepairFacts& facts) {
  const bool repairable = std::any_of(facts.findings.begin(), facts.findings.end(), [](const auto& finding) {
    return is_error(finding) &&
           std::find(k_not_the_exports.begin(), k_not_the_exports.end(), finding.code) == k_not_the_exports.end();
  });
  // Golden drift stands whatever a candidate changes, and candidates do not verify golden sets.
  const bool drifted = std::any_of(facts.findings.begin(), facts.findings.end(), [](const auto& finding) {
    return is_error(finding) && finding.code == "GOLDEN_DRIFT";
  });
  if (facts.verdict != "fail" || !repairable || drifted) return {};
  std::vector<RepairCandidate> candidates;
  add_model_candidates(facts, candidates);
  add_export_candidates(facts, candidates);
  add_combinations(candidates);
  return candidates;
}

}  // namespace onnxproof
