// No-ops: nodes whose first output equals their first input, one rule per kind, bypassed by one
// shared step (their readers read the input).

#include <algorithm>
#include <unordered_map>

#include "graph_index.h"
#include "onnxproof/simplify/rules.h"
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

bool has_first_input_and_output(const onnx::NodeProto& node) {
  return node.input_size() > 0 && node.output_size() > 0 && !node.input(0).empty();
}

// The node's first output equals its first input: it goes, and its readers read the input (its
// name resolved through earlier bypasses in this walk). 0 when it must stay: another output is
// read, or the output is a graph output that the input's producer cannot take over.
int bypass(RuleContext& context, const onnx::NodeProto& node) {
  const auto& index = context.index;
  for (int k = 1; k < node.output_size(); ++k) {
    const auto& extra = node.output(k);
    if (!extra.empty() && (index.consumers.contains(extra) || index.graph_outputs.contains(extra))) return 0;
  }
  const std::string& out = node.output(0);
  const std::string& in = node.input(0);
  if (!index.graph_outputs.contains(out)) {
    const auto earlier = context.renamed.find(in);
    std::string resolved = earlier == context.renamed.end() ? in : earlier->second;
    context.renamed[out] = std::move(resolved);  // chains are resolved as they are made
  } else {
    // `out` is part of the interface: the producer of the input takes that name, when only this
    // node reads the input and nothing renamed it.
    const auto producer = index.producer.find(in);
    const auto readers = index.consumers.find(in);
    if (context.renamed.contains(in) || producer == index.producer.end() || index.graph_outputs.contains(in) ||
        readers == index.consumers.end() || readers->second.size() != 1)
      return 0;
    for (auto& name : *context.graph.mutable_node(producer->second)->mutable_output()) {
      if (name == in) name = out;
    }
  }
  context.removed[static_cast<std::size_t>(context.node_index)] = true;
  return 1;
}

// A no-op rule: the operators, and the condition under which the node's first output equals its
// first input, value for value. Each condition proves the values unchanged, not only the shape.
using NoOpCondition = bool (*)(const GraphIndex&, const onnx::NodeProto&);
Rule no_op_rule(std::string name, std::vector<std::string> ops, NoOpCondition holds) {
  return Rule{.name = std::move(name),
              .pass = "no-ops",
              .targets = std::move(ops),
              .in_bodies = true,
              .condition =
                  [holds](const RuleContext& context, const onnx::NodeProto& node) {
                    return has_first_input_and_output(node) && holds(context.index, node);
                  },
              .apply = [](RuleContext& context, onnx::NodeProto& node) { return bypass(context, node); }};
}

// x + 0, x * 1, ...: 0 + x is first made x + 0 (the same computation). The swap stays, uncounted,
// when the node then stays, so the graphs come out as they did before the rules had names.
Rule identity_element_rule() {
  return Rule{.name = "remove-identity-element",
              .pass = "no-ops",
              .targets = {"Add", "Sub", "Mul", "Div", "And", "Or"},
              .in_bodies = true,
              .condition = [](const RuleContext&, const onnx::NodeProto& node) { return node.input_size() == 2; },
              .apply =
                  [](RuleContext& context, onnx::NodeProto& node) {
                    put_identity_element_second(context.index, node);
                    return has_first_input_and_output(node) && is_identity_element(context.index, node)
                               ? bypass(context, node)
                               : 0;
                  }};
}

}  // namespace

std::vector<Rule> no_op_rules() {
  return {no_op_rule("remove-identity", {"Identity"}, hands_through),
          no_op_rule("remove-inference-dropout", {"Dropout"}, is_inference_dropout),
          no_op_rule("remove-same-type-cast", {"Cast"}, is_same_type_cast),
          no_op_rule("remove-no-op-expand", {"Expand"}, expands_nothing),
          no_op_rule("remove-same-shape-reshape", {"Reshape"}, reshapes_to_same_shape),
          no_op_rule("remove-whole-slice", {"Slice"}, is_whole_slice),
          no_op_rule("remove-identity-transpose", {"Transpose"}, is_identity_transpose),
          no_op_rule("remove-zero-pad", {"Pad"}, pads_nothing),
          no_op_rule("remove-single-input-concat", {"Concat"}, concatenates_one),
          identity_element_rule()};
}

}  // namespace onnxproof::simplify
