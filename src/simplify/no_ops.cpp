#include <algorithm>
#include <unordered_map>

#include "graph_index.h"
#include "onnxproof/tensor/tensor_io.h"
#include "passes.h"

namespace onnxproof::simplify {
namespace {

// The fully static shape of a value, or nothing.
std::optional<std::vector<int64_t>> static_shape(const GraphIndex& index, const std::string& value) {
  if (const auto it = index.initializers.find(value); it != index.initializers.end()) {
    return std::vector<int64_t>(it->second->dims().begin(), it->second->dims().end());
  }
  const auto* type = index.tensor_type(value);
  if (!type || !type->has_shape()) return std::nullopt;
  std::vector<int64_t> dims;
  for (const auto& dim : type->shape().dim()) {
    if (!dim.has_dim_value()) return std::nullopt;
    dims.push_back(dim.dim_value());
  }
  return dims;
}

std::optional<int32_t> elem_type(const GraphIndex& index, const std::string& value) {
  if (const auto it = index.initializers.find(value); it != index.initializers.end()) return it->second->data_type();
  const auto* type = index.tensor_type(value);
  if (!type || type->elem_type() == 0) return std::nullopt;
  return type->elem_type();
}

bool same_static_shape(const GraphIndex& index, const onnx::NodeProto& node) {
  const auto in = static_shape(index, node.input(0));
  const auto out = static_shape(index, node.output(0));
  return in && out && *in == *out;
}

// True when every element of the constant `value` equals `element` (0 or 1).
bool constant_all(const GraphIndex& index, const std::string& value, double element) {
  const auto it = index.initializers.find(value);
  if (it == index.initializers.end() || index.graph_inputs.contains(value)) return false;
  // A bias-sized constant at most: a large tensor would be decoded for nothing when it is not all 0 or 1.
  if (it->second->ByteSizeLong() > (uint64_t{1} << 20)) return false;
  const auto tensor = tensor_from_proto(*it->second);
  if (!tensor || tensor->size() == 0) return false;
  for (int64_t i = 0; i < tensor->size(); ++i) {
    if (tensor->value_as_double(i) != element) return false;
  }
  return true;
}

// Expand(x, [1, ..., 1]) with no more ones than x has dimensions: broadcasting against ones keeps
// x's shape, whatever its (symbolic) sizes.
bool expands_by_ones(const GraphIndex& index, const onnx::NodeProto& node) {
  const auto* x = index.tensor_type(node.input(0));
  const auto it = index.initializers.find(node.input(1));
  return x && x->has_shape() && it != index.initializers.end() && it->second->dims_size() == 1 &&
         it->second->dims(0) <= x->shape().dim_size() && constant_all(index, node.input(1), 1.0);
}

// x + 0, x - 0, x * 1, x / 1, x and true, x or false, with the constant second, when broadcasting
// it leaves x's shape and type as they are.
bool is_identity_element(const GraphIndex& index, const onnx::NodeProto& node) {
  if (node.input_size() != 2) return false;
  const std::string& op = node.op_type();
  const double element = (op == "Add" || op == "Sub" || op == "Or") ? 0.0 : 1.0;  // And: true
  if (!constant_all(index, node.input(1), element)) return false;
  // Broadcasting the constant leaves x's shape when each of its dimensions (aligned right) is 1 or
  // equals x's static dimension; the type stays when both have the same element type.
  const auto* x = index.tensor_type(node.input(0));
  const auto* constant = index.initializers.at(node.input(1));
  if (!x || !x->has_shape() || x->elem_type() != constant->data_type() || constant->dims_size() > x->shape().dim_size())
    return false;
  const int offset = x->shape().dim_size() - constant->dims_size();
  for (int d = 0; d < constant->dims_size(); ++d) {
    const auto& dim = x->shape().dim(offset + d);
    if (constant->dims(d) != 1 && !(dim.has_dim_value() && dim.dim_value() == constant->dims(d))) return false;
  }
  return true;
}

// 0 + x, 1 * x, true and x, false or x: the operands of a commutative operator swapped, so the
// constant is second like the rules above expect (the same computation).
void put_identity_element_second(const GraphIndex& index, onnx::NodeProto& node) {
  const std::string& op = node.op_type();
  if (!node.domain().empty() || node.input_size() != 2 || !(op == "Add" || op == "Mul" || op == "And" || op == "Or"))
    return;
  const double element = (op == "Add" || op == "Or") ? 0.0 : 1.0;
  if (!constant_all(index, node.input(1), element) && constant_all(index, node.input(0), element))
    node.mutable_input()->SwapElements(0, 1);
}

// Dropout hands x through in inference: no training_mode input (or a constant false one), and not
// the training mode that opsets 1-6 chose with is_test = 0.
bool is_inference_dropout(const GraphIndex& index, const onnx::NodeProto& node) {
  if (const auto* is_test = attribute(node, "is_test"); is_test && is_test->i() == 0) return false;
  if (node.input_size() < 3 || node.input(2).empty()) return true;
  const auto it = index.initializers.find(node.input(2));
  return it != index.initializers.end() && !index.graph_inputs.contains(node.input(2)) &&
         it->second->raw_data().find_first_not_of('\0') == std::string::npos && it->second->int32_data_size() == 0;
}

bool is_same_type_cast(const GraphIndex& index, const onnx::NodeProto& node) {
  const auto* to = attribute(node, "to");
  const auto from = elem_type(index, node.input(0));
  return to && from && to->i() == *from;
}

// Every step of a Slice positive: absent (1), or a constant (int64) without a step <= 0. Why it
// matters: a step -1 over a whole axis (torch.flip, reflection padding) keeps the shape and
// reverses the values.
bool slice_steps_positive(const GraphIndex& index, const onnx::NodeProto& node) {
  if (node.input_size() < 5 || node.input(4).empty()) return true;  // opset 1-9 Slice has no steps
  const auto steps = int64_constant(index, node.input(4));
  return steps && std::all_of(steps->begin(), steps->end(), [](int64_t step) { return step > 0; });
}

// A Slice whose output shape equals its input's and whose steps are positive takes each whole
// axis in order: with step s >= 1 over a clamped [start, end) of at most n elements, n outputs
// need s = 1, start 0 and end n (or n = 1, where the one element is the first). Shapes alone do
// not prove it: the step's sign is the difference between a copy and a reversal.
bool is_whole_slice(const GraphIndex& index, const onnx::NodeProto& node) {
  return slice_steps_positive(index, node) && same_static_shape(index, node);
}

// Reshape and Expand to the input's own static shape keep every element where it was (row-major
// order is what Reshape preserves; Expand to the same shape broadcasts nothing).
bool reshapes_to_same_shape(const GraphIndex& index, const onnx::NodeProto& node) {
  return same_static_shape(index, node);
}

bool expands_nothing(const GraphIndex& index, const onnx::NodeProto& node) {
  return (node.input_size() == 2 && expands_by_ones(index, node)) || same_static_shape(index, node);
}

bool is_identity_transpose(const GraphIndex&, const onnx::NodeProto& node) {
  const auto* perm = attribute(node, "perm");  // none: the dimensions reversed
  if (!perm) return false;
  for (int i = 0; i < perm->ints_size(); ++i) {
    if (perm->ints(i) != i) return false;
  }
  return true;
}

// Zero pads add nothing in every mode (constant, reflect, edge, wrap): the values stay. Any
// non-zero or unknown pad (an input computed at run time) keeps the node.
bool pads_nothing(const GraphIndex& index, const onnx::NodeProto& node) {
  const auto zero = [](int64_t p) { return p == 0; };
  if (const auto* pads = attribute(node, "pads")) return std::all_of(pads->ints().begin(), pads->ints().end(), zero);
  if (attribute(node, "paddings")) return false;  // opset 1's spelling: not worth a rule
  if (node.input_size() < 2) return false;
  const auto pads = int64_constant(index, node.input(1));
  return pads && std::all_of(pads->begin(), pads->end(), zero);
}

bool concatenates_one(const GraphIndex&, const onnx::NodeProto& node) { return node.input_size() == 1; }

bool hands_through(const GraphIndex&, const onnx::NodeProto&) { return true; }

// A no-op rule: the operator, and the condition under which the node's first output equals its
// first input, value for value. Each condition proves the values unchanged, not only the shape.
struct NoOpRule {
  std::string_view op;
  bool (*holds)(const GraphIndex&, const onnx::NodeProto&);
};

constexpr NoOpRule k_no_op_rules[] = {
    {"Identity", hands_through},          {"Dropout", is_inference_dropout},
    {"Cast", is_same_type_cast},          {"Expand", expands_nothing},
    {"Reshape", reshapes_to_same_shape},  {"Slice", is_whole_slice},
    {"Transpose", is_identity_transpose}, {"Pad", pads_nothing},
    {"Concat", concatenates_one},         {"Add", is_identity_element},
    {"Sub", is_identity_element},         {"Mul", is_identity_element},
    {"Div", is_identity_element},         {"And", is_identity_element},
    {"Or", is_identity_element},
};

// True when the node hands its first input through unchanged.
bool is_no_op(const GraphIndex& index, const onnx::NodeProto& node) {
  if (!node.domain().empty() || node.input_size() == 0 || node.output_size() == 0 || node.input(0).empty())
    return false;
  for (const auto& rule : k_no_op_rules) {
    if (rule.op == node.op_type()) return rule.holds(index, node);
  }
  return false;
}

// One pass over the nodes, in order: a no-op's output is renamed to its (already resolved) input
// and the node dropped; the renames are applied and the nodes removed once at the end, so the
// pass is linear in the node count (it rebuilt the index after each removal before).
int remove_no_ops_in_graph(onnx::GraphProto& graph) {
  const GraphIndex index(graph);
  std::unordered_map<std::string, std::string> renamed;  // removed output -> the value that replaces it
  const auto resolve = [&](const std::string& name) {
    const auto it = renamed.find(name);
    return it == renamed.end() ? name : it->second;  // chains are resolved as they are made
  };
  std::vector<bool> removed(static_cast<std::size_t>(graph.node_size()), false);
  int changes = 0;
  for (int i = 0; i < graph.node_size(); ++i) {
    put_identity_element_second(index, *graph.mutable_node(i));
    const auto& node = graph.node(i);
    if (!is_no_op(index, node)) continue;
    const std::string& out = node.output(0);
    bool extra_used = false;
    for (int k = 1; k < node.output_size(); ++k) {
      const auto& extra = node.output(k);
      extra_used |= !extra.empty() && (index.consumers.contains(extra) || index.graph_outputs.contains(extra));
    }
    if (extra_used) continue;
    if (!index.graph_outputs.contains(out)) {
      renamed[out] = resolve(node.input(0));
    } else {
      // `out` is part of the interface: the producer of the input takes that name, when only this
      // node reads the input and nothing renamed it.
      const std::string& in = node.input(0);
      const auto producer = index.producer.find(in);
      const auto readers = index.consumers.find(in);
      if (renamed.contains(in) || producer == index.producer.end() || index.graph_outputs.contains(in) ||
          readers == index.consumers.end() || readers->second.size() != 1)
        continue;
      for (auto& name : *graph.mutable_node(producer->second)->mutable_output()) {
        if (name == in) name = out;
      }
    }
    removed[static_cast<std::size_t>(i)] = true;
    ++changes;
  }
  if (changes == 0) return 0;
  rename_uses(graph, renamed);
  remove_nodes(graph, removed);
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
