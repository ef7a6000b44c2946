// The generation proof (--generate N, docs/generation.md): the greedy loop through ONNX Runtime
// against the source framework's loop, one slice: this step, its typed result and report section
// (generation_result.h), and its run-folder entry (report-generate.svg, core/run_layout.h). The
// loop itself (parity/generation.h) is shared with the golden set's verification.
#include "generation_proof.h"

#include <fmt/format.h>

#include <algorithm>
#include <memory>
#include <set>
#include <string>

#include "generation_result.h"
#include "onnxproof/parity/generation.h"

namespace onnxproof::pipeline_run {

namespace {

// A run that fails at ONNX Runtime's default level and passes with its optimizer off.
Finding generation_run_failed(const Error& error) {
  return Finding{.code = FindingCode::generation_run_failed,
                 .severity = Severity::error,
                 .step = "generate",
                 .message = error.describe(),
                 .where = "generation",
                 .hint = "prove each decoder file alone (--onnx FILE): its own parity names the file that breaks"};
}

Finding optimizer_changed_generation(const GenerationResult& result) {
  return Finding{
      .code = FindingCode::runtime_optimization_changed_outputs,
      .severity = Severity::error,
      .step = "generate",
      .message =
          fmt::format("greedy generation{} on {} goes wrong at step {} at ONNX Runtime's level '{}' and passes "
                      "with its graph optimizations disabled: an optimizer rewrite changes the decoder's results",
                      result.run.empty() ? "" : " (" + result.run + ")", result.provider,
                      result.first_failure.value_or(0), result.optimization),
      .where = fmt::format("generation step {}", result.first_failure.value_or(0)),
      .hint =
          "deploy with graph_optimization_level ORT_DISABLE_ALL (or the optimizer the parity step's localization "
          "names disabled), or report the rewrite to ONNX Runtime"};
}

// --generate N: the greedy loop through ONNX Runtime on every provider, against PyTorch's loop
// (reference/generation/, written by the export), each run (request) at ONNX Runtime's default
// level; a run that fails there runs again with the optimizer off, which names the optimizer
// when that one passes. Only in the pipeline when --generate is given.
StepReport generate_step(Run& run) {
  StepReport step{.name = "generate"};
  const fs::path folder = run.out / "reference" / "generation";
  std::error_code ec;
  if (!fs::is_regular_file(folder / "generation.json", ec)) {
    return step_error(
        step, Error(ErrorCode::not_found, "the export recorded no generation (reference/generation/generation.json)"));
  }
  std::vector<GenerationResult> results;
  for (const auto& provider : run.options.parity.providers) {
    SessionOptions session{.provider = provider,
                           .intra_op_threads = run.options.parity.intra_op_threads,
                           .disabled_optimizers = run.options.parity.disabled_optimizers};
    auto by_run =
        prove_generation(run.model, run.out, folder, session, run.options.parity.tolerance, run.report.framework);
    if (!by_run && by_run.error().code() == ErrorCode::runtime) {  // the files cannot run the loop: a defect
      add_findings(run, {generation_run_failed(by_run.error())});
      step.status = StepStatus::fail;
      step.reason = by_run.error().describe();
      return step;
    }
    if (!by_run) return step_error(step, by_run.error());
    const bool any_failed =
        std::any_of(by_run->begin(), by_run->end(), [](const auto& result) { return !result.passed(); });
    std::vector<GenerationResult> unoptimized;
    if (any_failed && session.optimization != GraphOptimization::disabled) {
      session.optimization = GraphOptimization::disabled;
      auto again =
          prove_generation(run.model, run.out, folder, session, run.options.parity.tolerance, run.report.framework);
      if (!again) return step_error(step, again.error());
      unoptimized = std::move(*again);
    }
    for (std::size_t index = 0; index < by_run->size(); ++index) {
      auto& result = (*by_run)[index];
      add_findings(run, result.findings);
      if (index < unoptimized.size() && !result.passed()) {
        if (unoptimized[index].passed()) add_findings(run, {optimizer_changed_generation(result)});
        results.push_back(std::move(result));
        results.push_back(std::move(unoptimized[index]));
      } else {
        results.push_back(std::move(result));
      }
    }
  }
  const bool passed = std::all_of(results.begin(), results.end(), [](const auto& result) {
    return result.passed() || result.optimization == "disabled";  // the default level's row decides
  });
  step.status = passed && !results.empty() ? StepStatus::pass : StepStatus::fail;
  auto figures = std::make_shared<GenerationFigures>();
  figures->steps =
      results.empty() ? run.options.export_options.generate : static_cast<int>(results.front().steps.size());
  if (!results.empty()) {
    const auto failed =
        std::find_if(results.begin(), results.end(), [](const auto& result) { return !result.passed(); });
    const auto& shown = failed == results.end() ? results.front() : *failed;
    std::set<std::string> requests;  // a request's label, whichever decoder file and provider ran it
    for (const auto& result : results) requests.insert(result.run.substr(0, result.run.find(", decoder_merged")));
    const auto runs = requests.size();
    step.reason =
        fmt::format("{} greedy steps in {} run(s), {} with identical tokens on {}{}{}", shown.steps.size(), runs,
                    shown.identical_steps(), shown.provider, shown.run.empty() ? "" : " (" + shown.run + ")",
                    shown.first_failure ? fmt::format("; first wrong at step {}", *shown.first_failure) : "");
  }
  figures->results = std::move(results);
  step.result = figures;
  return step;
}

// --generate, or an export (--from-export) that recorded a generation: it is part of its proof.
bool generation_wanted(const Run& run) {
  std::error_code ec;
  return run.options.export_options.generate > 0 ||
         fs::is_regular_file(run.out / "reference" / "generation" / "generation.json", ec);
}

}  // namespace

StepDefinition generation_proof() {
  return {"generate", generate_step, "model, reference/generation/", "the generation proof", true, generation_wanted};
}

}  // namespace onnxproof::pipeline_run
