#include <algorithm>

#include "graph_index.h"
#include "passes.h"

namespace onnxproof::simplify {
namespace {

const onnx::AttributeProto* attribute(const onnx::NodeProto& node, const std::string& name) {
  for (const auto& a : node.attribute()) {
    if (a.name() == name) return &a;
  }
  return nullptr;
}

// The fully static shape of a value, or nothing.
std::optional<std::vector<int64_t>> static_shape(const onnx::GraphProto& graph, const GraphIndex& index,
                                                 const std::string& value) {
  if (const auto it = index.initializers.find(value); it != index.initializers.end()) {
    return std::vector<int64_t>(it->second->dims().begin(), it->second->dims().end());
  }
  const auto* type = find_tensor_type(graph, value);
  if (!type || !type->has_shape()) return std::nullopt;
  std::vector<int64_t> dims;
  for (const auto& dim : type->shape().dim()) {
    if (!dim.has_dim_value()) return std::nullopt;
    dims.push_back(dim.dim_value());
  }
  return dims;
}

std::optional<int32_t> elem_type(const onnx::GraphProto& graph, const GraphIndex& index, const std::string& value) {
  if (const auto it = index.initializers.find(value); it != index.initializers.end()) return it->second->data_type();
  const auto* type = find_tensor_type(graph, value);
  if (!type || type->elem_type() == 0) return std::nullopt;
  return type->elem_type();
}

bool same_static_shape(const onnx::GraphProto& graph, const GraphIndex& index, const onnx::NodeProto& node) {
  const auto in = static_shape(graph, index, node.input(0));
  const auto out = static_shape(graph, index, node.output(0));
  return in && out && *in == *out;
}

// True when the node hands its first input through unchanged.
bool is_no_op(const onnx::GraphProto& graph, const GraphIndex& index, const onnx::NodeProto& node) {
  if (!node.domain().empty() || node.input_size() == 0 || node.output_size() == 0 || node.input(0).empty())
    return false;
  const std::string& op = node.op_type();
  if (op == "Identity") return true;
  if (op == "Dropout") {
    if (node.input_size() < 3 || node.input(2).empty()) return true;  // inference unless training_mode says so
    const auto it = index.initializers.find(node.input(2));
    return it != index.initializers.end() && it->second->raw_data().find_first_not_of('\0') == std::string::npos &&
           it->second->int32_data_size() == 0;
  }
  if (op == "Cast") {
    const auto* to = attribute(node, "to");
    const auto from = elem_type(graph, index, node.input(0));
    return to && from && to->i() == *from;
  }
  if (op == "Reshape" || op == "Expand" || op == "Slice") return same_static_shape(graph, index, node);
  if (op == "Transpose") {
    const auto* perm = attribute(node, "perm");
    if (!perm) return false;
    for (int i = 0; i < perm->ints_size(); ++i) {
      if (perm->ints(i) != i) return false;
    }
    return true;
  }
  if (op == "Pad") {
    if (const auto* pads = attribute(node, "pads")) {
      return std::all_of(pads->ints().begin(), pads->ints().end(), [](int64_t p) { return p == 0; });
    }
    if (node.input_size() < 2) return false;
    const auto pads = int64_constant(index, node.input(1));
    return pads && std::all_of(pads->begin(), pads->end(), [](int64_t p) { return p == 0; });
  }
  if (op == "Concat") return node.input_size() == 1;
  return false;
}

// Removes node `i`, whose first output equals its first input. False when it cannot: its other
// outputs are used, or both ends are names the graph's interface needs.
bool bypass(onnx::GraphProto& graph, const GraphIndex& index, int i) {
  const auto& node = graph.node(i);
  const std::string in = node.input(0);
  const std::string out = node.output(0);
  for (int k = 1; k < node.output_size(); ++k) {
    const auto& extra = node.output(k);
    if (!extra.empty() && (index.consumers.contains(extra) || index.graph_outputs.contains(extra))) return false;
  }
  if (!index.graph_outputs.contains(out)) {
    rename_uses(graph, out, in);
  } else {
    // `out` is part of the interface: the producer of `in` takes that name, if only this node reads `in`.
    const auto producer = index.producer.find(in);
    const auto readers = index.consumers.find(in);
    if (producer == index.producer.end() || index.graph_outputs.contains(in) || readers == index.consumers.end() ||
        readers->second.size() != 1) {
      return false;
    }
    for (auto& name : *graph.mutable_node(producer->second)->mutable_output()) {
      if (name == in) name = out;
    }
  }
  graph.mutable_node()->DeleteSubrange(i, 1);
  return true;
}

int remove_no_ops_in_graph(onnx::GraphProto& graph) {
  int changes = 0;
  GraphIndex index(graph);
  for (int i = 0; i < graph.node_size();) {
    if (is_no_op(graph, index, graph.node(i)) && bypass(graph, index, i)) {
      ++changes;
      index = GraphIndex(graph);  // names and positions moved
      continue;                   // the next node now sits at i
    }
    ++i;
  }
  return changes;
}

}  // namespace

// Bodies first: their outputs are their interface.
int remove_no_ops(onnx::ModelProto& model) {
  int changes = 0;
  for_each_graph_bottom_up(*model.mutable_graph(),
                           [&](onnx::GraphProto& graph) { changes += remove_no_ops_in_graph(graph); });
  return changes;
}

}  // namespace onnxproof::simplify
