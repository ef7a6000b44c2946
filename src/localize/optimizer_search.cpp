// Naming the ONNX Runtime optimizer behind a difference that only shows with optimizations on.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <array>
#include <string_view>

#include "onnxproof/core/source_framework.h"
#include "onnxproof/localize/localize.h"
#include "onnxproof/parity/compare.h"

namespace onnxproof {
namespace {

// ONNX Runtime's graph transformers and rewrite rules, by the names the session config
// optimization.disable_specified_optimizers takes: the basic, extended and layout optimizations (and the GELU
// approximation an option turns on) of its "Graph Optimizations" documentation, as
// onnxruntime/core/optimizer/graph_transformer_utils.cc names them (most found as strings in libonnxruntime.so 1.30.0).
// A name a build lacks is ignored.
constexpr std::array<std::string_view, 53> k_ort_optimizers = {
    "ConstantFolding",
    "CommonSubexpressionElimination",
    "ConstantSharing",
    "EliminateIdentity",
    "EliminateSlice",
    "EliminateDropout",
    "UnsqueezeElimination",
    "ExpandElimination",
    "CastElimination",
    "CastChainElimination",
    "NoopElimination",
    "PreShapeNodeElimination",
    "DivMulFusion",
    "FuseReluClip",
    "GemmSumFusion",
    "GemmTransposeFusion",
    "NotWhereFusion",
    "ConvAddFusion",
    "ConvMulFusion",
    "ConvBNFusion",
    "Pad_Fusion",
    "ReshapeFusion",
    "MatMulAddFusion",
    "MatmulTransposeFusion",
    "MatMulScaleFusion",
    "MatMulActivationFusion",
    "MatMul_BatchNormalization_Fusion",
    "GemmActivationFusion",
    "ConvActivationFusion",
    "GeluFusionL1",
    "GeluFusionL2",
    "GeluFusion",
    "LayerNormFusion",
    "SimplifiedLayerNormFusion",
    "AttentionFusion",
    "EmbedLayerNormFusion",
    "SkipLayerNormFusion",
    "BiasSkipLayerNormFusion",
    "BiasGeluFusion",
    "FastGeluFusion",
    "GeluApproximation",  // on only with the session option optimization.enable_gelu_approximation
    "QuickGeluFusion",
    "BiasSoftmaxFusion",
    "BiasDropoutFusion",
    "GatherToSliceFusion",
    "GatherSliceToSplitFusion",
    "SliceConcatToSpaceToDepthFusion",
    "GroupQueryAttentionFusion",
    "DoubleQDQPairsRemover",
    "QDQPropagationTransformer",
    "QDQFinalCleanupTransformer",
    "TransposeOptimizer",
    "NchwcTransformer",
};

// True when the case, run with `disabled` optimizers off, matches PyTorch's outputs.
Expected<bool> matches_with(const std::filesystem::path& model, const ReferenceCase& c, SessionOptions options,
                            const std::vector<std::string>& disabled, const ToleranceOptions& tolerance) {
  options.disabled_optimizers = disabled;
  ONNXPROOF_TRY_ASSIGN(Session session, Session::open(model, options));
  ONNXPROOF_TRY_ASSIGN(const std::vector<Tensor> outputs, run_case(session, c));
  if (outputs.size() != c.outputs.size()) return false;
  for (std::size_t i = 0; i < outputs.size(); ++i) {
    const auto& expected = c.outputs[i];
    const std::string& name = session.outputs()[i].name;
    if (!tolerance.compare(name, expected.tensor, outputs[i]).allclose) return false;
  }
  return true;
}

}  // namespace

Expected<OptimizerSearch> find_optimizer_by(const DisabledOptimizersMatch& matches,
                                            const std::vector<std::string>& kept_on) {
  OptimizerSearch search;
  std::vector<std::string> suspects;
  for (const auto name : k_ort_optimizers)
    if (std::find(kept_on.begin(), kept_on.end(), name) == kept_on.end()) suspects.emplace_back(name);
  const auto tried = [&](const std::vector<std::string>& disabled) {
    ++search.sessions;
    return matches(disabled);
  };
  ONNXPROOF_TRY_ASSIGN(const bool all_off, tried(suspects));
  if (!all_off) {
    search.unnamed = true;
    return search;
  }
  // Halve the suspects while disabling one half alone restores the match; when neither half
  // does, both hold a culprit and the remaining suspects are named together.
  while (suspects.size() > 1) {
    const auto middle = suspects.begin() + static_cast<std::ptrdiff_t>(suspects.size() / 2);
    std::vector<std::string> first(suspects.begin(), middle);
    std::vector<std::string> second(middle, suspects.end());
    ONNXPROOF_TRY_ASSIGN(const bool first_restores, tried(first));
    if (first_restores) {
      suspects = std::move(first);
      continue;
    }
    ONNXPROOF_TRY_ASSIGN(const bool second_restores, tried(second));
    if (!second_restores) break;
    suspects = std::move(second);
  }
  search.optimizers = std::move(suspects);
  return search;
}

std::vector<std::string> in_onnxruntime_order(std::vector<std::string> names) {
  const auto rank = [](const std::string& name) {
    return std::find(k_ort_optimizers.begin(), k_ort_optimizers.end(), name) - k_ort_optimizers.begin();
  };
  std::stable_sort(names.begin(), names.end(), [&](const auto& a, const auto& b) { return rank(a) < rank(b); });
  return names;
}

Expected<OptimizerSearch> find_optimizer_changing_outputs(const std::filesystem::path& model, const ReferenceCase& c,
                                                          const SessionOptions& failing,
                                                          const ToleranceOptions& tolerance) {
  return find_optimizer_by(
      [&](const std::vector<std::string>& disabled) { return matches_with(model, c, failing, disabled, tolerance); });
}

bool passes_without_optimizations(const ParityResult& parity, const ParityRow& failing) {
  if (failing.optimization != GraphOptimization::all) return false;
  return std::any_of(parity.rows.begin(), parity.rows.end(), [&](const ParityRow& row) {
    return row.optimization == GraphOptimization::disabled && row.status == RowStatus::pass &&
           row.data_set == failing.data_set && row.provider == failing.provider && row.output == failing.output;
  });
}

Finding optimizer_finding(const OptimizerSearch& search, const std::string& data_set, const std::string& provider,
                          const std::string& framework) {
  const std::string source = source_title(framework);
  if (search.unnamed)
    return {FindingCode::runtime_optimization_changed_outputs,
            Severity::error,
            "localize",
            fmt::format("on {} ({}) the outputs match {}'s with ONNX Runtime's graph optimizations disabled and "
                        "differ with them on, and disabling every named optimizer does not restore the match: what "
                        "the level changes otherwise (layouts, kernel choice) does ({} sessions)",
                        data_set, provider, source, search.sessions),
            "",
            "deploy with the optimization level that passes (session option graph_optimization_level)"};
  const bool one = search.optimizers.size() == 1;
  return {FindingCode::runtime_optimization_changed_outputs,
          Severity::error,
          "localize",
          fmt::format("on {0} ({1}) ONNX Runtime's {2} {3} {4} the outputs: with {5} disabled they match "
                      "{7}'s, with {5} on they do not (found in {6} sessions)",
                      data_set, provider, one ? "optimizer" : "optimizers", fmt::join(search.optimizers, ", "),
                      one ? "changes" : "change", one ? "it" : "them", search.sessions, source),
          fmt::format("{}", fmt::join(search.optimizers, ";")),
          fmt::format("deploy with session option optimization.disable_specified_optimizers={} (or the optimization "
                      "level that passes)",
                      fmt::join(search.optimizers, ";"))};
}

}  // namespace onnxproof
