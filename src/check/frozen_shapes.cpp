#include "onnxproof/check/frozen_shapes.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "onnxproof/core/atomic_file.h"
#include "onnxproof/model/graph_walk.h"
#include "onnxproof/tensor/tensor_io.h"

namespace onnxproof {
namespace {

// The shape-consuming inputs that a traced Python int turns into constants.
struct ShapeInput {
  std::string_view op_type;
  int input;
  std::string_view role;
};
constexpr ShapeInput k_shape_inputs[] = {
    {"Reshape", 1, "shape"}, {"Expand", 1, "shape"}, {"Tile", 1, "repeats"}, {"ConstantOfShape", 0, "shape"},
    {"Slice", 1, "starts"},  {"Slice", 2, "ends"},   {"Resize", 3, "sizes"}, {"Range", 1, "limit"},
};

// Small integer constants of one graph: initializers and Constant outputs.
std::map<std::string, std::vector<int64_t>> small_int_constants(const onnx::GraphProto& graph) {
  std::map<std::string, std::vector<int64_t>> values;
  const auto keep = [&](const std::string& name, const onnx::TensorProto& proto) {
    if (proto.data_type() != onnx::TensorProto::INT64 && proto.data_type() != onnx::TensorProto::INT32) return;
    auto tensor = tensor_from_proto(proto);
    if (!tensor || tensor->size() > 16) return;
    std::vector<int64_t> ints;
    for (int64_t i = 0; i < tensor->size(); ++i) ints.push_back(static_cast<int64_t>(tensor->value_as_double(i)));
    values[name] = std::move(ints);
  };
  for (const auto& initializer : graph.initializer()) keep(initializer.name(), initializer);
  for (const auto& node : graph.node()) {
    if (node.op_type() != "Constant" || node.output_size() != 1) continue;
    for (const auto& attribute : node.attribute()) {
      if (attribute.name() == "value") keep(node.output(0), attribute.t());
    }
  }
  return values;
}

std::string node_name(const onnx::NodeProto& node) { return node.name().empty() ? node.op_type() : node.name(); }

std::string join(const std::vector<int64_t>& values) { return fmt::format("[{}]", fmt::join(values, ", ")); }

// The constants a node feeds into shape inputs, If conditions and Loop trip counts that equal a
// dynamic axis's traced size.
void check_node(const onnx::NodeProto& node, const std::map<std::string, std::vector<int64_t>>& constants,
                const FrozenShapeOptions& options, const std::string& fix, std::vector<Finding>& findings) {
  for (const auto& shape_input : k_shape_inputs) {
    if (node.op_type() != shape_input.op_type || node.input_size() <= shape_input.input) continue;
    const auto value = constants.find(node.input(shape_input.input));
    if (value == constants.end()) continue;
    for (const auto& axis : options.dynamic) {
      if (axis.example_size <= 1) continue;
      if (std::find(value->second.begin(), value->second.end(), axis.example_size) == value->second.end()) continue;
      findings.push_back(
          {FindingCode::frozen_dimension,
           Severity::warning,
           "check",
           fmt::format("{} input {} ({}) is the constant {}, which holds {}, the traced size of dynamic axis '{}'",
                       node.op_type(), shape_input.input, shape_input.role, join(value->second), axis.example_size,
                       axis.label),
           node_name(node),
           fix,
           {.axis = axis.label}});
      break;
    }
  }
  if (node.op_type() == "If" && node.input_size() > 0 && constants.contains(node.input(0))) {
    findings.push_back({FindingCode::frozen_dimension, Severity::warning, "check",
                        "If condition is a constant: only one branch can ever run", node_name(node),
                        "compute the condition from tensors, or drop the If"});
  }
  if (node.op_type() == "Loop" && node.input_size() > 0) {
    const auto trips = constants.find(node.input(0));
    if (trips == constants.end() || trips->second.size() != 1) return;
    for (const auto& axis : options.dynamic) {
      if (axis.example_size > 1 && trips->second[0] == axis.example_size) {
        findings.push_back({FindingCode::frozen_dimension,
                            Severity::warning,
                            "check",
                            fmt::format("Loop trip count is the constant {}, the traced size of dynamic axis '{}'",
                                        trips->second[0], axis.label),
                            node_name(node),
                            "take the trip count from the tensor's shape (a Shape/Gather), not a Python int",
                            {.axis = axis.label}});
        break;
      }
    }
  }
}

using Constants = std::map<std::string, std::vector<int64_t>>;

// A graph's small constants with those of every scope around it (a body reads its outer graphs');
// each graph's own are found once (`cache`), however many bodies it holds.
Constants constants_in_scope(const GraphScope& scope, std::map<const onnx::GraphProto*, Constants>& cache) {
  Constants constants;
  for (const GraphScope* at = &scope; at; at = at->parent) {
    auto [own, added] = cache.try_emplace(at->graph);
    if (added) own->second = small_int_constants(*at->graph);
    constants.insert(own->second.begin(), own->second.end());  // inner names shadow outer ones
  }
  return constants;
}

}  // namespace

std::vector<Finding> find_frozen_dimensions(const onnx::ModelProto& model, const FrozenShapeOptions& options) {
  std::vector<Finding> findings;
  const auto& graph = model.graph();
  const std::string fix =
      "compute sizes with shape ops (x.shape[0] without int(), x.size(0) kept as a tensor) or -1 in "
      "reshape, instead of Python ints";

  // Declared dynamic axes that the exported graph fixed on its own inputs.
  for (const auto& axis : options.dynamic) {
    for (const auto& input : graph.input()) {
      if (input.name() != axis.input || !input.type().tensor_type().has_shape()) continue;
      const auto& shape = input.type().tensor_type().shape();
      if (axis.axis < shape.dim_size() && shape.dim(static_cast<int>(axis.axis)).has_dim_value()) {
        findings.push_back(
            {FindingCode::frozen_dimension,
             Severity::error,
             "check",
             fmt::format("input '{}' axis {} ('{}') is fixed at {} in the graph", axis.input, axis.axis, axis.label,
                         shape.dim(static_cast<int>(axis.axis)).dim_value()),
             axis.input,
             "export with the axis named: --dynamic " + axis.input + ":" + std::to_string(axis.axis) + "=" + axis.label,
             {.axis = axis.label}});
      }
    }
  }

  // Every graph, subgraphs included: a frozen size inside a Loop body is as frozen as outside.
  std::map<const onnx::GraphProto*, Constants> cache;
  for_each_graph(graph, [&](const onnx::GraphProto& g, const GraphScope& scope) {
    const auto constants = constants_in_scope(scope, cache);
    for (const auto& node : g.node()) check_node(node, constants, options, fix, findings);
  });

  // Outputs that should follow a dynamic input axis but are fixed in the graph.
  for (const auto& output : graph.output()) {
    const auto expected = options.output_axes.find(output.name());
    if (expected == options.output_axes.end() || !output.type().tensor_type().has_shape()) continue;
    const auto& shape = output.type().tensor_type().shape();
    for (const auto& [axis, label] : expected->second) {
      if (axis < shape.dim_size() && shape.dim(static_cast<int>(axis)).has_dim_value()) {
        findings.push_back({FindingCode::frozen_dimension,
                            Severity::error,
                            "check",
                            fmt::format("output '{}' axis {} should follow dynamic axis '{}' but is fixed at {}",
                                        output.name(), axis, label, shape.dim(static_cast<int>(axis)).dim_value()),
                            output.name(),
                            fix,
                            {.axis = label}});
      }
    }
  }
  return findings;
}

}  // namespace onnxproof
