#include "onnxproof/parity/random_outputs.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <set>
#include <string_view>

#include "onnxproof/model/graph_walk.h"

namespace onnxproof {

namespace {

constexpr std::array<std::string_view, 6> k_random_ops = {"Multinomial",   "RandomNormal",      "RandomNormalLike",
                                                          "RandomUniform", "RandomUniformLike", "Bernoulli"};

bool is_random(const onnx::NodeProto& node) {
  return (node.domain().empty() || node.domain() == "ai.onnx") &&
         std::find(k_random_ops.begin(), k_random_ops.end(), node.op_type()) != k_random_ops.end();
}

std::string describe(const onnx::NodeProto& node) {
  return node.name().empty() ? node.op_type() + " node" : fmt::format("{} node '{}'", node.op_type(), node.name());
}

// The first random node inside a node's subgraphs (an If branch that samples), or "".
std::string random_inside(const onnx::NodeProto& node) {
  std::string found;
  for (const auto* body : subgraphs_of(node)) {
    for_each_graph(*body, [&](const onnx::GraphProto& graph) {
      for (const auto& inner : graph.node()) {
        if (found.empty() && is_random(inner)) found = describe(inner);
      }
    });
  }
  return found;
}

}  // namespace

std::map<std::string, std::string> random_graph_outputs(const onnx::ModelProto& model) {
  // ONNX graphs are topologically sorted: one pass carries each value's random source forward.
  std::map<std::string, std::string> source;  // value -> the random node it depends on
  for (const auto& node : model.graph().node()) {
    std::string cause = is_random(node) ? describe(node) : random_inside(node);
    if (cause.empty()) {
      for (const auto& name : names_read_by(node)) {
        if (const auto found = source.find(name); found != source.end()) {
          cause = found->second;
          break;
        }
      }
    }
    if (cause.empty()) continue;
    for (const auto& output : node.output()) {
      if (!output.empty()) source.emplace(output, cause);
    }
  }
  std::map<std::string, std::string> outputs;
  for (const auto& output : model.graph().output()) {
    if (const auto found = source.find(output.name()); found != source.end())
      outputs.emplace(output.name(), found->second);
  }
  return outputs;
}

void mark_random_outputs(const onnx::ModelProto& model, Reference& reference) {
  for (auto& [name, cause] : random_graph_outputs(model))
    reference.random_outputs.insert_or_assign(name, std::move(cause));  // the graph names the node
}

Comparison compare_domain(const Tensor& expected, const Tensor& actual) {
  Comparison result;
  result.elements = expected.size();
  result.dtype_match = expected.dtype() == actual.dtype();
  result.shape_match = expected.shape() == actual.shape();
  if (!result.dtype_match || !result.shape_match) {
    result.allclose = false;
    return result;
  }
  bool nan = false, inf = false, negative = false;
  for (int64_t i = 0; i < expected.size(); ++i) {
    const double value = expected.value_as_double(i);
    nan = nan || std::isnan(value);
    inf = inf || std::isinf(value);
    negative = negative || value < 0.0;
  }
  // Integers PyTorch draws all non-negative are indices or counts (a Multinomial's samples). A
  // float domain read from one draw would be chance: x + noise is positive in one draw of 16
  // and negative somewhere in the next, so floats keep only their NaN/Inf classes.
  constexpr int64_t k_domain_sample = 16;
  const bool indices = !is_floating(expected.dtype()) && expected.size() >= k_domain_sample && !negative;
  for (int64_t i = 0; i < actual.size(); ++i) {
    const double value = actual.value_as_double(i);
    const bool outside = (std::isnan(value) && !nan) || (std::isinf(value) && !inf) || (value < 0.0 && indices);
    if (!outside) continue;
    if (result.mismatches == 0) result.worst_index = i;
    ++result.mismatches;
    if (!std::isfinite(value)) ++result.nan_mismatches;
  }
  result.allclose = result.mismatches == 0;
  return result;
}

}  // namespace onnxproof
