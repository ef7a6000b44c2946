#include "onnxproof/check/frozen_shapes.h"

#include <fmt/format.h>

#include <onnx/defs/schema.h>
#include <onnx/shape_inference/implementation.h>

#include <nlohmann/json.hpp>
#include <optional>

#include "onnxproof/core/atomic_file.h"
#include "onnxproof/model/graph_walk.h"
#include "onnxproof/model/model_io.h"
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

using Constants = std::map<std::string, std::vector<int64_t>>;

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

using Dims = InferredDims;
using Shapes = std::map<std::string, Dims>;

}  // namespace

// Empty when inference fails; then every constant is evidence, as without shapes.
Shapes infer_value_shapes(const onnx::ModelProto& model, const std::vector<DeclaredAxis>& dynamic) {
  onnx::ModelProto copy = copy_without_large_tensors(model);
  auto* graph = copy.mutable_graph();
  graph->clear_value_info();  // the exporter's own, possibly with sizes it fixed: inferred afresh
  for (auto& input : *graph->mutable_input()) {
    for (const auto& axis : dynamic) {
      if (input.name() != axis.input || !input.type().tensor_type().has_shape()) continue;
      auto* shape = input.mutable_type()->mutable_tensor_type()->mutable_shape();
      if (axis.axis < shape->dim_size()) shape->mutable_dim(static_cast<int>(axis.axis))->set_dim_param(axis.label);
    }
  }
  try {
    onnx::ShapeInferenceOptions lenient(/*check_type=*/false, /*error_mode=*/0, /*data_prop=*/true);
    onnx::shape_inference::InferShapes(copy, onnx::OpSchemaRegistry::Instance(), lenient);
  } catch (const std::exception&) {
    return {};
  }
  Shapes shapes;
  const auto add = [&](const onnx::ValueInfoProto& value) {
    if (!value.type().has_tensor_type() || !value.type().tensor_type().has_shape()) return;
    Dims dims;
    for (const auto& dim : value.type().tensor_type().shape().dim()) {
      dims.push_back(dim.has_dim_value() ? std::optional<int64_t>(dim.dim_value()) : std::nullopt);
    }
    shapes[value.name()] = std::move(dims);
  };
  for_each_graph(copy.graph(), [&](const onnx::GraphProto& g) {
    for (const auto& value : g.input()) add(value);
    for (const auto& value : g.value_info()) add(value);
    for (const auto& value : g.output()) add(value);
  });
  return shapes;
}

namespace {

// Whether axis `axis` of `value` may be dynamic: unknown shapes and sizes count as dynamic
// (conservative: a warning is only dropped where inference proves the axis fixed).
bool maybe_dynamic(const Shapes& shapes, const std::string& value, int64_t axis) {
  const auto found = shapes.find(value);
  if (found == shapes.end()) return true;
  const auto rank = static_cast<int64_t>(found->second.size());
  if (axis < 0) axis += rank;
  if (axis < 0 || axis >= rank) return false;
  return !found->second[static_cast<std::size_t>(axis)].has_value();
}

bool any_dynamic(const Shapes& shapes, const std::string& value) {
  const auto found = shapes.find(value);
  if (found == shapes.end()) return true;
  return std::any_of(found->second.begin(), found->second.end(), [](const auto& dim) { return !dim.has_value(); });
}

// Whether element `index` of the constant a node feeds into a shape input meets a dynamic axis
// of the node's data: a Slice's start or end on its axis, a Resize size on the same axis, a
// Reshape size where the data's axis at that position is dynamic (or any, when no -1 or 0 lets
// a dynamic size through), an Expand size on the aligned input axis (or one it creates). A
// constant that only meets fixed axes (ViT's q/k/v split of 3 at batch 3) is no evidence.
bool meets_dynamic_axis(const onnx::NodeProto& node, int input, std::size_t index, const std::vector<int64_t>& value,
                        const Constants& constants, const Shapes& shapes) {
  if (shapes.empty() || node.input(0).empty()) return true;
  const std::string& data = node.input(0);
  const auto position = static_cast<int64_t>(index);
  if (node.op_type() == "Slice") {
    if (node.input_size() <= 3 || node.input(3).empty()) return maybe_dynamic(shapes, data, position);
    const auto axes = constants.find(node.input(3));
    if (axes == constants.end() || index >= axes->second.size()) return true;
    return maybe_dynamic(shapes, data, axes->second[index]);
  }
  if (node.op_type() == "Resize") return maybe_dynamic(shapes, data, position);
  if (node.op_type() == "Reshape" && input == 1) {
    const bool passes_through = std::any_of(value.begin(), value.end(), [](int64_t v) { return v == -1 || v == 0; });
    return passes_through ? maybe_dynamic(shapes, data, position) : any_dynamic(shapes, data);
  }
  if (node.op_type() == "Expand" && input == 1) {
    const auto found = shapes.find(data);
    if (found == shapes.end()) return true;
    const auto axis = position - (static_cast<int64_t>(value.size()) - static_cast<int64_t>(found->second.size()));
    // An axis the Expand creates or broadcasts from 1 takes its size from the constant alone.
    if (axis < 0 || found->second[static_cast<std::size_t>(axis)] == 1) return true;
    return maybe_dynamic(shapes, data, axis);
  }
  return true;  // Tile, ConstantOfShape, Range: the constant makes the size; kept as evidence
}

// The constants a node feeds into shape inputs, If conditions and Loop trip counts that equal a
// dynamic axis's traced size.
void check_node(const onnx::NodeProto& node, const Constants& constants, const Shapes& shapes,
                const FrozenShapeOptions& options, const std::string& fix, std::vector<Finding>& findings) {
  for (const auto& shape_input : k_shape_inputs) {
    if (node.op_type() != shape_input.op_type || node.input_size() <= shape_input.input) continue;
    const auto value = constants.find(node.input(shape_input.input));
    if (value == constants.end()) continue;
    for (const auto& axis : options.dynamic) {
      if (axis.example_size <= 1) continue;
      const auto& ints = value->second;
      bool evidence = false;
      for (std::size_t i = 0; i < ints.size() && !evidence; ++i) {
        evidence =
            ints[i] == axis.example_size && meets_dynamic_axis(node, shape_input.input, i, ints, constants, shapes);
      }
      if (!evidence) continue;
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
  const Shapes shapes = infer_value_shapes(model, options.dynamic);
  for_each_graph(graph, [&](const onnx::GraphProto& g, const GraphScope& scope) {
    const auto constants = constants_in_scope(scope, cache);
    for (const auto& node : g.node()) check_node(node, constants, shapes, options, fix, findings);
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
