// The known rewrite of a traced reshape: a constant shape that froze a dynamic axis's traced size
// gets ONNX's 0 ("copy the input's size") in its place.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <onnx/onnx_pb.h>
#include <algorithm>
#include <map>

#include "onnxproof/model/model_io.h"
#include "onnxproof/repair/repair.h"
#include "onnxproof/tensor/tensor_io.h"

namespace onnxproof {
namespace fs = std::filesystem;

namespace {

// The int64 values of a shape constant (an initializer or a Constant node's value) named `name`.
std::optional<std::vector<int64_t>> constant_shape(const onnx::GraphProto& graph, const std::string& name) {
  const auto ints = [](const onnx::TensorProto& proto) -> std::optional<std::vector<int64_t>> {
    if (proto.data_type() != onnx::TensorProto::INT64) return std::nullopt;
    auto tensor = tensor_from_proto(proto);
    if (!tensor || tensor->shape().size() != 1) return std::nullopt;
    std::vector<int64_t> values;
    for (int64_t i = 0; i < tensor->size(); ++i) values.push_back(static_cast<int64_t>(tensor->value_as_double(i)));
    return values;
  };
  for (const auto& initializer : graph.initializer())
    if (initializer.name() == name) return ints(initializer);
  for (const auto& node : graph.node()) {
    if (node.op_type() != "Constant" || node.output_size() != 1 || node.output(0) != name) continue;
    for (const auto& attribute : node.attribute())
      if (attribute.name() == "value") return ints(attribute.t());
  }
  return std::nullopt;
}

// allowzero=1 makes 0 a real size, not "copy": such a Reshape cannot take the rewrite.
bool zero_copies(const onnx::NodeProto& node) {
  return std::none_of(node.attribute().begin(), node.attribute().end(),
                      [](const auto& attribute) { return attribute.name() == "allowzero" && attribute.i() != 0; });
}

// `shape` with 0 at each entry holding a traced size where the data's axis is dynamic; without
// inferred sizes for the data, at the first entry holding one.
std::vector<int64_t> copying_dynamic_axes(std::vector<int64_t> shape, const std::set<int64_t>& traced,
                                          const InferredDims* data) {
  for (std::size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] <= 1 || !traced.contains(shape[i])) continue;
    if (data == nullptr) {
      shape[i] = 0;
      break;
    }
    if (i < data->size() && !(*data)[i].has_value()) shape[i] = 0;
  }
  return shape;
}

// One pass over the graph with the shapes inferred before it: each Reshape not yet rewritten
// whose frozen entries meet a dynamic axis of its input gets a shape constant of its own with 0
// there. Returns how many it rewrote.
std::size_t rewrite_pass(onnx::GraphProto& graph, const std::map<std::string, InferredDims>& shapes,
                         const std::vector<std::string>& nodes, const std::set<int64_t>& traced,
                         std::vector<ReshapeRewrite>& rewrites) {
  const std::size_t before = rewrites.size();
  std::size_t again = 0;  // nodes of earlier passes rewritten once more
  for (auto& node : *graph.mutable_node()) {
    if (node.op_type() != "Reshape" || node.input_size() < 2 || !zero_copies(node)) continue;
    const auto shape = constant_shape(graph, node.input(1));
    if (!shape) continue;
    const auto data = shapes.find(node.input(0));
    // A Reshape the findings did not name is rewritten only on inference's evidence: the same
    // frozen axes one merged finding stands for (FROZEN_DIMENSION names one node per axis).
    const bool named = std::find(nodes.begin(), nodes.end(), node.name()) != nodes.end();
    if (!named && data == shapes.end()) continue;
    std::vector<int64_t> after = copying_dynamic_axes(*shape, traced, data == shapes.end() ? nullptr : &data->second);
    if (after == *shape) continue;
    // A name of its own for each constant: unnamed nodes, and a node a later pass rewrites again.
    const std::string name = fmt::format("{}_repaired_shape_{}", node.name(), rewrites.size());
    onnx::TensorProto& constant = *graph.add_initializer();
    constant.set_name(name);
    constant.set_data_type(onnx::TensorProto::INT64);
    constant.add_dims(static_cast<int64_t>(after.size()));
    for (const int64_t v : after) constant.add_int64_data(v);
    node.set_input(1, name);
    const auto earlier = std::find_if(rewrites.begin(), rewrites.end(), [&](const ReshapeRewrite& r) {
      return !node.name().empty() && r.node == node.name();
    });
    if (earlier != rewrites.end()) {
      ++again;
      earlier->after = std::move(after);  // rewritten again: one entry, from the export's shape to the last
    } else {
      rewrites.push_back({node.name(), *shape, std::move(after)});
    }
  }
  return rewrites.size() - before + again;
}

}  // namespace

Expected<std::vector<ReshapeRewrite>> rewrite_frozen_reshapes(const fs::path& model,
                                                              const std::vector<std::string>& nodes,
                                                              const std::vector<DeclaredAxis>& dynamic,
                                                              const fs::path& out) {
  ONNXPROOF_TRY_ASSIGN(auto loaded, load_model(model, LoadOptions{.load_external_data = true}));
  std::set<int64_t> traced;
  for (const auto& axis : dynamic) traced.insert(axis.example_size);
  std::vector<ReshapeRewrite> rewrites;
  // A frozen Reshape makes every size after it look fixed to inference: each pass infers again on
  // the rewritten graph, so a Reshape further on shows its dynamic input (a few passes at most).
  constexpr int k_passes = 8;
  for (int pass = 0; pass < k_passes; ++pass) {
    const auto shapes = infer_value_shapes(loaded.proto, dynamic);
    if (rewrite_pass(*loaded.proto.mutable_graph(), shapes, nodes, traced, rewrites) == 0) break;
  }
  if (rewrites.empty())
    return fail(ErrorCode::invalid_input,
                fmt::format("no Reshape of {} named {} has a constant shape holding a traced size", model.string(),
                            fmt::join(nodes, ", ")));
  ONNXPROOF_TRY(save_model(loaded.proto, out));
  return rewrites;
}

}  // namespace onnxproof
