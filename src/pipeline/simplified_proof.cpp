// The simplified model's proof in the pipeline: the parity step runs model.sim.onnx against the
// reference; only when that fails is the export run too, to tell a defect of onnxproof's
// simplifier (the simplified model fails where the export passes: the export is kept and proved)
// from the export's own (both fail: the simplified model stands, its failure is the export's).
#include "run.h"

#include "onnxproof/report/step_figures.h"

#include <fmt/format.h>

#include <set>
#include <tuple>

namespace onnxproof::pipeline_run {
namespace {

using RowKey = std::tuple<std::string, GraphOptimization, std::string, std::string>;

RowKey key_of(const ParityRow& row) { return {row.provider, row.optimization, row.data_set, row.output}; }

std::size_t error_count(const std::vector<Finding>& findings) {
  std::size_t count = 0;
  for (const auto& finding : findings) count += finding.severity == Severity::error ? 1 : 0;
  return count;
}

}  // namespace

std::optional<std::string> simplified_fails_where_export_passes(const ParityResult& simplified,
                                                                const ParityResult& exported) {
  if (simplified.passed()) return std::nullopt;
  if (exported.passed()) return std::string("the export passes parity and the simplified model does not");
  std::set<RowKey> passing;
  for (const auto& row : exported.rows) {
    if (row.status == RowStatus::pass) passing.insert(key_of(row));
  }
  for (const auto& row : simplified.rows) {
    if (simplified.advisory(row.provider)) continue;  // OpenVINO's default precision does not gate
    if (row.status != RowStatus::pass && passing.contains(key_of(row))) {
      return fmt::format("output '{}' of {} fails on {} at level {} where the export's passes", row.output,
                         row.data_set, row.provider, optimization_name(row.optimization));
    }
  }
  if (error_count(simplified.findings) > error_count(exported.findings)) {
    return fmt::format("{} errors against the export's {}", error_count(simplified.findings),
                       error_count(exported.findings));
  }
  return std::nullopt;
}

void settle_simplified_proof(Run& run, ParityResult& result,
                             const std::function<Expected<ParityResult>()>& prove_export) {
  StepReport* simplify = nullptr;
  for (auto& step : run.report.steps) simplify = step.name == "simplify" ? &step : simplify;
  SimplifyFigures* figures = simplify ? simplify->result_as<SimplifyFigures>() : nullptr;
  if (figures && run.simplified_unproved) figures->parity_cases = run.reference->cases.size();
  run.simplified_unproved = false;
  if (result.passed()) return;
  auto exported = prove_export();
  const auto blame = exported ? simplified_fails_where_export_passes(result, *exported) : std::nullopt;
  if (!blame) return;  // the export fails alike (or could not be run): the failure is the export's
  // onnxproof's defect, not the model's: the export is what gets proved, audited and shipped.
  run.report.findings.push_back(
      {FindingCode::simplify_changed_outputs, Severity::warning, "simplify",
       "the simplified model fails the parity proof where the export passes (" + *blame +
           "); onnxproof's defect, not the model's: the export is proved as it is",
       "model.sim.onnx",
       "report the model; `onnxproof simplify model.onnx -o sim.onnx --reference reference` names the rule"});
  std::error_code ec;
  fs::remove(run.model.string() + ".data", ec);
  fs::remove(run.model, ec);
  run.model = run.exported;
  result = std::move(*exported);
  if (simplify) {
    simplify->reason = "the simplified model failed the parity proof where the export passes; the export is kept";
    if (figures) figures->export_kept = true;
  }
  // The operator audit was of the simplified model: it is made again of the export.
  std::erase_if(run.report.findings, [](const Finding& finding) { return finding.step == "ops"; });
  for (auto& step : run.report.steps) {
    if (step.name == "ops") step = ops_step(run);
  }
}

}  // namespace onnxproof::pipeline_run
