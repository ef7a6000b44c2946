#include "analyzer.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <optional>

namespace onnxproof::parity_analyzers {

namespace {

// Output -> the largest change between cases of one output shape (inputs differ between cases):
// the exact values where the case has them, else PyTorch's. Outputs with no two cases of one
// shape are absent.
std::map<std::string, double> input_effects(const Reference& reference) {
  std::map<std::string, double> effects;
  std::map<std::pair<std::string, std::vector<int64_t>>, const Tensor*> first_of_shape;
  for (const auto& c : reference.cases) {
    for (std::size_t k = 0; k < c.outputs.size(); ++k) {
      const Tensor* exact = exact_output(c, c.outputs[k].name, k);
      const Tensor& values = exact ? *exact : c.outputs[k].tensor;
      if (!is_floating(values.dtype())) continue;
      const auto [first, inserted] = first_of_shape.try_emplace({output_key(c, k), values.shape()}, &values);
      if (inserted) continue;
      double change = 0.0;
      for (int64_t i = 0; i < values.size(); ++i) {
        const double delta = std::fabs(values.value_as_double(i) - first->second->value_as_double(i));
        if (std::isfinite(delta)) change = std::max(change, delta);
      }
      effects[c.outputs[k].name] = std::max(effects[c.outputs[k].name], change);
    }
  }
  return effects;
}

}  // namespace

// EVIDENCE_WEAK for each floating output that passed on evidence too weak to see a plausible bug.
void add_evidence_findings(const AnalyzerInput& in) {
  const Reference& reference = in.reference;
  const ParityResult& result = in.result;
  std::vector<Finding>& findings = in.result.findings;
  const auto effects = input_effects(reference);
  std::map<std::string, std::vector<EvidenceSample>> samples;
  std::set<std::string> failed;
  for (const auto& row : result.rows) {
    if (!row.compared() || result.advisory(row.provider)) continue;
    if (row.status == RowStatus::fail) failed.insert(row.output);
    if (row.optimization == GraphOptimization::all && row.evidence) samples[row.output].push_back(*row.evidence);
  }
  for (const auto& [output, evidence] : samples) {
    if (failed.contains(output)) continue;  // the comparison saw a problem: it was not blind
    const auto effect = effects.find(output);
    const std::string reason =
        weak_evidence_reason(evidence, effect == effects.end() ? std::nullopt : std::optional(effect->second));
    if (reason.empty()) continue;
    findings.push_back({FindingCode::evidence_weak, Severity::warning, "parity",
                        fmt::format("output '{}' passed on weak evidence: {}", output, reason), output,
                        "prove on real data (--data) or trained weights so the output carries signal; a random-weight "
                        "model whose activations vanish proves little"});
  }
}

}  // namespace onnxproof::parity_analyzers
