#include "generation_findings.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <vector>

namespace onnxproof::detail {

std::string run_context(const GenerationResult& result) {
  return result.run.empty() ? "" : fmt::format(" ({})", result.run);
}

void add_generation_findings(GenerationResult& result, const std::string& source) {
  for (const auto& output : result.encoder) {
    if (output.passed()) continue;
    result.findings.push_back(Finding{
        .code = FindingCode::encoder_mismatch,
        .severity = Severity::error,
        .step = "generate",
        .message = output.shape_problem.empty()
                       ? fmt::format("on {} the encoder's output '{}'{} is {:.3g} from the reference, over the budget "
                                     "{:.3g} ({} values outside): every step decodes from it",
                                     result.provider, output.name, run_context(result), output.error, output.budget,
                                     output.mismatches)
                       : fmt::format("on {} the encoder's output '{}'{} has another shape: {}; every step decodes "
                                     "from it",
                                     result.provider, output.name, run_context(result), output.shape_problem),
        .where = "encoder output " + output.name,
        .hint = "the encoder's graph (encoder.onnx) departs from " + source +
                " before any token: check its attention "
                "mask and the cross-attention keys and values it computes"});
    break;
  }
  std::vector<int> ties;
  for (const auto& step : result.steps) {
    if (step.near_tie) ties.push_back(step.step);
    if (!step.passed() && !result.first_failure) result.first_failure = step.step;
    if (!step.tokens_equal() && !result.first_token_difference) result.first_token_difference = step.step;
  }
  if (result.first_failure) {
    const GenerationStep& step = result.steps[static_cast<std::size_t>(*result.first_failure)];
    std::string what;
    if (!step.shape_problem.empty()) {
      what = "its last-position logits have another shape: " + step.shape_problem;
    } else if (!step.tokens_equal()) {
      what = fmt::format("ONNX Runtime picks token {} where {} picks {} (exact margin {:.3g}, budget {:.3g})",
                         fmt::join(step.onnx_tokens, ","), source, fmt::join(step.pytorch_tokens, ","),
                         step.tie_margin.value_or(0.0), step.budget);
    } else if (result.rule == "user") {  // element by element: no one budget to quote
      what = fmt::format("its logits are up to {:.3g} from {}'s, {} values outside the --rtol/--atol given", step.error,
                         source, step.mismatches);
    } else {
      what = fmt::format("its logits are {:.3g} from the reference, over the budget {:.3g} ({} values outside)",
                         step.error, step.budget, step.mismatches);
    }
    const FindingCode code =
        step.tokens_equal() ? FindingCode::generation_logits_outside : FindingCode::generation_diverged;
    result.findings.push_back(Finding{
        .code = code,
        .severity = Severity::error,
        .step = "generate",
        .message = fmt::format("greedy generation on {}{} first goes wrong at step {} (past length {}): {}",
                               result.provider, run_context(result), step.step, step.past_length, what),
        .where = fmt::format("generation step {}", step.step),
        .hint = step.step == 0 && !result.encoder.empty()
                    ? "step 0 decodes from the encoder's cross-attention cache and an empty self-attention cache: "
                      "check the encoder's mask and which layer's keys and values feed each decoder layer"
                    : "the step and past length named are where the cache path first departs from " + source +
                          ": check how the past length, position ids and attention mask are computed from the cache"});
  }
  if (!ties.empty()) {
    // Warning: the generated tokens are not identical, which the user must hear even though
    // neither runtime is wrong.
    result.findings.push_back(Finding{
        .code = FindingCode::generation_near_tie,
        .severity = Severity::warning,
        .step = "generate",
        .message = fmt::format("on {}{} the top two tokens were within the budget of each other at step(s) {}: ONNX "
                               "Runtime picked the other one; the steps after were fed {}'s token",
                               result.provider, run_context(result), fmt::join(ties, ", "), source),
        .where = fmt::format("generation step {}", ties.front()),
        .hint = "no defect of the export; another prompt proves more, and sampling settings decide such ties in "
                "production"});
  }
}

}  // namespace onnxproof::detail
