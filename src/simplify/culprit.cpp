// Bisecting the rules behind a failed proof: skipping half of the suspects either makes the proof
// hold (the culprit is in that half) or not (it is in the other), so n rules need about log2 n
// reruns of simplify and the proof, not n.

#include "culprit.h"

#include <fmt/format.h>

#include <algorithm>
#include <span>

#include "onnxproof/model/model_io.h"

namespace onnxproof::simplify {
namespace {

// Whether the proof holds when `rules` are skipped (unchanged without them counts: they alone
// made the change).
Expected<bool> holds_without(std::span<const std::string> rules, const std::filesystem::path& candidate,
                             const std::filesystem::path& input, const SimplifyOptions& options,
                             const Reference* reference, const ToleranceOptions& tolerance) {
  SimplifyOptions without = options;
  without.skip_rules.insert(rules.begin(), rules.end());
  {
    ONNXPROOF_TRY_ASSIGN(auto model, load_model(input, LoadOptions{.load_external_data = true}));
    const auto result = simplify_model(model.proto, without);
    if (!result) return false;  // still invalid without them
    if (!result->changed()) return true;
    ONNXPROOF_TRY(save_model(model.proto, candidate));
  }
  ONNXPROOF_TRY_ASSIGN(const auto proof, prove_simplification(input, candidate, reference, tolerance));
  return !has_errors(proof.findings) && proof.cases > 0;
}

// The rules to bisect, in the order they run, remove-dead-code last: removing what nothing reads
// changes which nodes the others see, so skipping it can hide another rule's defect; it is
// skipped only when the others are cleared.
std::vector<std::string> suspects(const SimplifyOptions& options, const SimplifyResult& result) {
  std::vector<RuleReport> rules = result.rules;
  if (rules.empty()) {  // an invalid result: every rule is a suspect
    for (const auto& rule : builtin_rules()) rules.push_back({rule.name, rule.pass, 1});
    for (const auto& rule : options.extra_rules) rules.push_back({rule.name, rule.pass, 1});
  }
  std::stable_partition(rules.begin(), rules.end(), [](const RuleReport& r) { return r.name != "remove-dead-code"; });
  std::vector<std::string> names;
  for (const auto& rule : rules) {
    if (rule.changes > 0 && !options.skip_passes.contains(rule.pass) && !options.skip_rules.contains(rule.name))
      names.push_back(rule.name);
  }
  return names;
}

}  // namespace

Expected<void> name_the_rule(const std::filesystem::path& input, const std::filesystem::path& folder,
                             const SimplifyOptions& options, const Reference* reference,
                             const ToleranceOptions& tolerance, SimplifyOutcome& outcome) {
  const std::vector<std::string> names = suspects(options, outcome.result);
  int reruns = 0;
  const auto holds = [&](std::span<const std::string> skipped) {
    const auto candidate = folder / fmt::format("without-{}.onnx", ++reruns);
    return holds_without(skipped, candidate, input, options, reference, tolerance);
  };
  std::span<const std::string> range(names);
  std::string culprit;
  while (range.size() > 1) {
    const auto half = range.first((range.size() + 1) / 2);
    ONNXPROOF_TRY_ASSIGN(const bool held, holds(half));
    if (held && half.size() == 1) culprit = half.front();
    range = held ? half : range.subspan(half.size());
  }
  if (range.size() == 1 && culprit.empty()) {  // not yet seen to hold without it alone
    ONNXPROOF_TRY_ASSIGN(const bool held, holds(range));
    if (held) culprit = range.front();
  }
  if (culprit.empty()) return {};
  outcome.culprit_pass = culprit;
  for (auto& finding : outcome.proof.findings) {
    if (finding.code != FindingCode::simplify_changed_outputs) continue;
    finding.message += fmt::format(" (the rule '{}' makes the change: without it the proof holds)", culprit);
    finding.hint = fmt::format("simplify --skip-rule {} keeps the rest of the simplification", culprit);
  }
  return {};
}

}  // namespace onnxproof::simplify
