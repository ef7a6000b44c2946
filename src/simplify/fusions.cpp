// Fusions: pairs of nodes that one node does as well. Each rule rewrites the second node of a
// pair to read what the first one read (the first is then dead, and dead-code removes it), except
// the three that merge numbers into weights (BatchNormalization or a per-channel Mul into Conv,
// MatMul + Add into Gemm),
// which rewrite the first node and drop the second. Each is a rule (fusion_rules(), the end of
// this file); one walk over the main graph, with one index: linear. The fusions that rewrite a
// whole graph at once (parallel MatMuls, Reshapes around elementwise chains) are in
// fusions_graph.cpp.

#include <algorithm>
#include <array>
#include <cmath>
#include <map>
#include <optional>
#include <set>

#include "graph_index.h"
#include "onnxproof/tensor/tensor_io.h"
#include "passes.h"

namespace onnxproof::simplify {
namespace {

int64_t int_attribute(const onnx::NodeProto& node, const std::string& name, int64_t fallback) {
  const auto* a = attribute(node, name);
  return a && a->type() == onnx::AttributeProto::INT ? a->i() : fallback;
}

onnx::AttributeProto* mutable_attribute(onnx::NodeProto& node, const std::string& name) {
  for (auto& a : *node.mutable_attribute()) {
    if (a.name() == name) return &a;
  }
  return nullptr;
}

// The node that produces `value` in this graph, when exactly one node reads it (the reader asking).
const onnx::NodeProto* sole_producer(const onnx::GraphProto& graph, const GraphIndex& index, const std::string& value) {
  const auto producer = index.producer.find(value);
  const auto readers = index.consumers.find(value);
  if (producer == index.producer.end() || index.graph_outputs.contains(value) || readers == index.consumers.end() ||
      readers->second.size() != 1)
    return nullptr;
  return &graph.node(producer->second);
}

// The node that produces `value`, when every node reading it is a `reader_op` and it is no graph
// output: rewriting each reader to skip it leaves it dead (the same node count when one reader
// cannot be rewritten, never more). A shared Unsqueeze read by two Unsqueezes goes this way.
const onnx::NodeProto* producer_read_only_by(const onnx::GraphProto& graph, const GraphIndex& index,
                                             const std::string& value, std::string_view reader_op) {
  const auto producer = index.producer.find(value);
  const auto readers = index.consumers.find(value);
  if (producer == index.producer.end() || index.graph_outputs.contains(value) || readers == index.consumers.end())
    return nullptr;
  for (const int reader : readers->second) {
    if (!is(graph.node(reader), reader_op)) return nullptr;
  }
  return &graph.node(producer->second);
}

// Transpose(Transpose(x, p1), p2) is Transpose(x, p) with p[i] = p1[p2[i]].
bool fuse_transposes(onnx::NodeProto& node, const onnx::GraphProto& graph, const GraphIndex& index) {
  if (!is(node, "Transpose") || node.input_size() != 1) return false;
  const auto* first = producer_read_only_by(graph, index, node.input(0), "Transpose");
  if (!first || !is(*first, "Transpose") || first->input_size() != 1) return false;
  const auto* p1 = attribute(*first, "perm");
  auto* p2 = mutable_attribute(node, "perm");
  if (!p1 || !p2 || p1->ints_size() != p2->ints_size()) return false;
  std::vector<int64_t> composed;
  for (const int64_t i : p2->ints()) {
    if (i < 0 || i >= p1->ints_size()) return false;
    composed.push_back(p1->ints(static_cast<int>(i)));
  }
  p2->clear_ints();
  for (const int64_t v : composed) p2->add_ints(v);
  node.set_input(0, first->input(0));
  return true;
}

// A Transpose that only moves dimensions of size 1 ([N, 1, 1, C] -> [N, C, 1, 1]) keeps the
// elements in order: it is a reshape. The input's shape must be known where it matters.
bool transpose_only_moves_unit_dims(const onnx::NodeProto& transpose, const GraphIndex& index) {
  const auto* perm = attribute(transpose, "perm");
  const auto* x = index.tensor_type(transpose.input(0));
  if (!perm || !x || !x->has_shape() || x->shape().dim_size() != perm->ints_size()) return false;
  int64_t last = -1;
  for (const int64_t axis : perm->ints()) {
    if (axis < 0 || axis >= x->shape().dim_size()) return false;
    const auto& dim = x->shape().dim(static_cast<int>(axis));
    if (dim.has_dim_value() && dim.dim_value() == 1) continue;
    if (axis < last) return false;  // two dimensions that are not 1 swap places
    last = axis;
  }
  return true;
}

// Whether every 0 of a Reshape's shape (a copy of its input's dimension there) copies the same
// dimension from the Transpose's input: the Transpose leaves those positions in place.
bool zeros_stay_in_place(const onnx::NodeProto& transpose, const std::vector<int64_t>& shape) {
  const auto* perm = attribute(transpose, "perm");
  for (std::size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == 0 && (!perm || static_cast<int>(i) >= perm->ints_size() ||
                          perm->ints(static_cast<int>(i)) != static_cast<int64_t>(i)))
      return false;
  }
  return true;
}

// A shape with one 0 (copy that dimension), no -1 and otherwise positive sizes: the copied size is
// the only one that makes the element count match, so -1 says the same without naming the input.
std::optional<std::vector<int64_t>> zero_as_inferred(std::vector<int64_t> shape) {
  if (std::count(shape.begin(), shape.end(), 0) != 1 ||
      std::any_of(shape.begin(), shape.end(), [](int64_t d) { return d < 0; }))
    return std::nullopt;
  *std::find(shape.begin(), shape.end(), 0) = -1;
  return shape;
}

// Reshape(R(x), shape) is Reshape(x, shape) when R only reshapes (Reshape, Flatten, Squeeze,
// Unsqueeze, a Transpose of size-1 dimensions) and `shape` is a constant without 0 (a 0 would copy
// a dimension of R's output; after such a Transpose, a 0 where it leaves the dimension in place;
// a lone 0 beside positive sizes becomes -1).
bool fuse_reshapes(onnx::NodeProto& node, const onnx::GraphProto& graph, const GraphIndex& index,
                   std::vector<onnx::TensorProto>& added) {
  if (!is(node, "Reshape") || node.input_size() != 2) return false;
  const auto shape = int64_constant(index, node.input(1));
  if (!shape) return false;
  const auto* first = producer_read_only_by(graph, index, node.input(0), "Reshape");
  if (!first || first->input_size() < 1) return false;
  // With allowzero = 1 a 0 is a size of 0, not a copy: the shape reads nothing of R's output.
  const bool zeros =
      int_attribute(node, "allowzero", 0) == 0 && std::find(shape->begin(), shape->end(), 0) != shape->end();
  const bool unit_transpose = is(*first, "Transpose") && transpose_only_moves_unit_dims(*first, index);
  const bool reshapes =
      is(*first, "Reshape") || is(*first, "Flatten") || is(*first, "Squeeze") || is(*first, "Unsqueeze");
  if (!unit_transpose && !reshapes) return false;
  if (zeros && !(unit_transpose && zeros_stay_in_place(*first, *shape))) {
    const auto inferred = zero_as_inferred(*shape);
    if (!inferred) return false;
    added.push_back(int64_initializer(*inferred, node.output(0) + "_inferred_shape"));
    node.set_input(1, added.back().name());
  }
  node.set_input(0, first->input(0));
  return true;
}

// Integer and float widenings that hold every value of the narrower type exactly.
bool widens_losslessly(int32_t from, int32_t to) {
  using T = onnx::TensorProto;
  static const std::set<std::pair<int32_t, int32_t>> k_lossless = {
      {T::FLOAT16, T::FLOAT}, {T::FLOAT16, T::DOUBLE}, {T::BFLOAT16, T::FLOAT}, {T::BFLOAT16, T::DOUBLE},
      {T::FLOAT, T::DOUBLE},  {T::INT8, T::INT16},     {T::INT8, T::INT32},     {T::INT8, T::INT64},
      {T::INT16, T::INT32},   {T::INT16, T::INT64},    {T::INT32, T::INT64},    {T::UINT8, T::INT16},
      {T::UINT8, T::INT32},   {T::UINT8, T::INT64},    {T::UINT16, T::INT32},   {T::UINT16, T::INT64},
      {T::UINT32, T::INT64},  {T::BOOL, T::INT32},     {T::BOOL, T::INT64},     {T::BOOL, T::FLOAT}};
  return k_lossless.contains({from, to});
}

// Cast(Cast(x, T1), T2) is Cast(x, T2) when T1 holds every value of x's type (no rounding in
// between to lose).
bool fuse_casts(onnx::NodeProto& node, const onnx::GraphProto& graph, const GraphIndex& index) {
  if (!is(node, "Cast") || node.input_size() != 1) return false;
  const auto* first = producer_read_only_by(graph, index, node.input(0), "Cast");
  if (!first || !is(*first, "Cast") || first->input_size() != 1) return false;
  const auto* source = index.tensor_type(first->input(0));
  const int64_t middle = int_attribute(*first, "to", 0);
  if (!source || source->elem_type() == 0 || !widens_losslessly(source->elem_type(), static_cast<int32_t>(middle)))
    return false;
  node.set_input(0, first->input(0));
  return true;
}

// Unsqueeze(Unsqueeze(x, a1), a2) is Unsqueeze(x, a): a2's positions in the final shape, and a1's
// positions (in the middle shape) carried past them. Axes as constant inputs (opset 13 on), the
// rank of x known when an axis is negative.
bool fuse_unsqueezes(onnx::NodeProto& node, const onnx::GraphProto& graph, const GraphIndex& index,
                     std::vector<onnx::TensorProto>& added) {
  if (!is(node, "Unsqueeze") || node.input_size() != 2) return false;
  const auto* first = producer_read_only_by(graph, index, node.input(0), "Unsqueeze");
  if (!first || !is(*first, "Unsqueeze") || first->input_size() != 2) return false;
  const auto a1 = int64_constant(index, first->input(1));
  const auto a2 = int64_constant(index, node.input(1));
  const auto* x = index.tensor_type(first->input(0));
  if (!a1 || !a2 || !x || !x->has_shape()) return false;
  const auto rank = static_cast<int64_t>(x->shape().dim_size());
  const int64_t middle = rank + static_cast<int64_t>(a1->size());
  const int64_t final_rank = middle + static_cast<int64_t>(a2->size());
  std::set<int64_t> second;
  for (const int64_t a : *a2) second.insert(a < 0 ? a + final_rank : a);
  std::vector<int64_t> kept;  // final positions of the middle shape's dimensions, in order
  for (int64_t p = 0; p < final_rank; ++p) {
    if (!second.contains(p)) kept.push_back(p);
  }
  std::set<int64_t> axes = second;
  for (const int64_t a : *a1) {
    const int64_t m = a < 0 ? a + middle : a;
    if (m < 0 || m >= static_cast<int64_t>(kept.size())) return false;
    axes.insert(kept[static_cast<std::size_t>(m)]);
  }
  if (axes.size() != a1->size() + a2->size()) return false;
  added.push_back(int64_initializer({axes.begin(), axes.end()}, node.output(0) + "_axes"));
  node.set_input(0, first->input(0));
  node.set_input(1, node.output(0) + "_axes");
  return true;
}

// Slice(Slice(x, s1, e1, a1, t1), s2, e2, a2, t2) on different axes is one Slice over both: the
// axes are independent, so their starts, ends and steps just line up. Constant inputs only;
// negative axes need x's rank.
bool fuse_slices(onnx::NodeProto& node, const onnx::GraphProto& graph, const GraphIndex& index,
                 std::vector<onnx::TensorProto>& added) {
  if (!is(node, "Slice") || node.input_size() < 4) return false;
  const auto* first = producer_read_only_by(graph, index, node.input(0), "Slice");
  if (!first || first->input_size() < 4) return false;
  const auto* x = index.tensor_type(first->input(0));
  const int64_t rank = x && x->has_shape() ? x->shape().dim_size() : -1;
  std::vector<std::vector<int64_t>> merged(4);  // starts, ends, axes, steps
  std::set<int64_t> axes;
  for (const auto* slice : {first, static_cast<const onnx::NodeProto*>(&node)}) {
    std::vector<std::optional<std::vector<int64_t>>> parts;
    for (int k = 1; k <= 4; ++k)
      parts.push_back(k < slice->input_size() ? int64_constant(index, slice->input(k)) : std::nullopt);
    if (!parts[0] || !parts[1] || !parts[2] || (slice->input_size() > 4 && !parts[3])) return false;
    if (!parts[3]) parts[3] = std::vector<int64_t>(parts[0]->size(), 1);
    for (std::size_t i = 0; i < parts[2]->size(); ++i) {
      int64_t axis = (*parts[2])[i];
      if (axis < 0 && rank < 0) return false;
      if (axis < 0) axis += rank;
      if (!axes.insert(axis).second) return false;  // the same axis twice: not a simple merge
      (*parts[2])[i] = axis;
    }
    for (std::size_t k = 0; k < 4; ++k) merged[k].insert(merged[k].end(), parts[k]->begin(), parts[k]->end());
  }
  if (merged[0].size() != merged[2].size() || merged[1].size() != merged[2].size() ||
      merged[3].size() != merged[2].size())
    return false;
  static constexpr std::array<std::string_view, 4> k_names = {"starts", "ends", "axes", "steps"};
  while (node.input_size() < 5) node.add_input("");
  for (std::size_t k = 0; k < 4; ++k) {
    const std::string name = node.output(0) + "_" + std::string(k_names[k]);
    added.push_back(int64_initializer(merged[k], name));
    node.set_input(static_cast<int>(k) + 1, name);
  }
  node.set_input(0, first->input(0));
  return true;
}

// Per output channel c of a Conv: W'[c] = W[c] * scale[c], b'[c] = (b[c] - minus[c]) * scale[c] + plus[c];
// the Conv takes `output`'s name. Float32 weights only; false (nothing changed) otherwise.
bool fold_into_conv(onnx::NodeProto& conv, const GraphIndex& index, const std::vector<double>& scale,
                    const std::vector<double>& minus, const std::vector<double>& plus, const std::string& output,
                    std::vector<onnx::TensorProto>& added) {
  if (conv.input_size() < 2 || conv.output_size() != 1) return false;
  auto weight = float_constant(index, conv.input(1));
  if (!weight || weight->shape().empty() || weight->shape()[0] != static_cast<int64_t>(scale.size())) return false;
  const int64_t channels = weight->shape()[0];
  std::optional<Tensor> bias = conv.input_size() > 2 ? float_constant(index, conv.input(2)) : std::nullopt;
  if (conv.input_size() > 2 && (!bias || bias->shape() != std::vector<int64_t>{channels})) return false;
  auto new_bias = *Tensor::zeros(DType::float32, {channels});
  auto w = weight->mutable_values<float>();
  const auto per_channel = static_cast<std::size_t>(weight->size() / channels);
  for (std::size_t k = 0; k < scale.size(); ++k) {
    for (std::size_t i = 0; i < per_channel; ++i)
      w[k * per_channel + i] = static_cast<float>(w[k * per_channel + i] * scale[k]);
    const double b = bias ? bias->values<float>()[k] : 0.0;
    new_bias.mutable_values<float>()[k] = static_cast<float>((b - minus[k]) * scale[k] + plus[k]);
  }
  const std::string base = output + "_fused";
  added.push_back(tensor_to_proto(*weight, base + "_weight"));
  added.push_back(tensor_to_proto(new_bias, base + "_bias"));
  conv.set_input(1, base + "_weight");
  if (conv.input_size() > 2)
    conv.set_input(2, base + "_bias");
  else
    conv.add_input(base + "_bias");
  conv.set_output(0, output);
  return true;
}

// BatchNormalization(Conv(x, W, b)) in inference is Conv(x, W', b') with s = scale / sqrt(var + eps),
// W' = W * s (per output channel) and b' = (b - mean) * s + B. The Conv takes the BN's output name;
// the BN goes. Float32 weights and parameters only.
bool fuse_batch_norm(onnx::NodeProto& bn, onnx::GraphProto& graph, const GraphIndex& index,
                     std::vector<onnx::TensorProto>& added) {
  // Training mode normalizes by the batch's own statistics, not the constants.
  if (!is(bn, "BatchNormalization") || bn.input_size() != 5 || bn.output_size() != 1 ||
      int_attribute(bn, "training_mode", 0) != 0)
    return false;
  const auto producer = index.producer.find(bn.input(0));
  if (!sole_producer(graph, index, bn.input(0)) || !is(graph.node(producer->second), "Conv")) return false;
  auto scale = float_constant(index, bn.input(1));
  auto shift = float_constant(index, bn.input(2));
  auto mean = float_constant(index, bn.input(3));
  auto variance = float_constant(index, bn.input(4));
  if (!scale || !shift || !mean || !variance || scale->shape().size() != 1) return false;
  const auto channels = static_cast<std::size_t>(scale->shape()[0]);
  for (const auto* p : {&*shift, &*mean, &*variance}) {
    if (p->shape() != scale->shape()) return false;
  }
  const auto* eps = attribute(bn, "epsilon");
  const double epsilon = eps ? eps->f() : 1e-5;
  std::vector<double> s(channels), m(channels), b(channels);
  for (std::size_t k = 0; k < channels; ++k) {
    s[k] = scale->values<float>()[k] / std::sqrt(static_cast<double>(variance->values<float>()[k]) + epsilon);
    m[k] = mean->values<float>()[k];
    b[k] = shift->values<float>()[k];
  }
  return fold_into_conv(*graph.mutable_node(producer->second), index, s, m, b, bn.output(0), added);
}

// Mul(Conv(x, W, b), g) is Conv(x, W * g, b * g) when g is a float32 constant holding one value per
// output channel ([1, C, 1, ...] or [C, 1, ...]) or one for all (ConvNeXt's layer scale).
bool fuse_mul_into_conv(onnx::NodeProto& mul, onnx::GraphProto& graph, const GraphIndex& index,
                        std::vector<onnx::TensorProto>& added) {
  if (!is(mul, "Mul") || mul.input_size() != 2 || mul.output_size() != 1) return false;
  for (int side = 0; side < 2; ++side) {
    const auto producer = index.producer.find(mul.input(side));
    if (!sole_producer(graph, index, mul.input(side)) || !is(graph.node(producer->second), "Conv")) continue;
    auto& conv = *graph.mutable_node(producer->second);
    const auto gain = float_constant(index, mul.input(1 - side));
    const auto weight = conv.input_size() > 1 ? float_constant(index, conv.input(1)) : std::nullopt;
    if (!gain || !weight || weight->shape().empty()) continue;
    const auto channels = static_cast<std::size_t>(weight->shape()[0]);
    const auto& dims = gain->shape();
    // The channel axis of the Conv's output is 1 (rank = W's rank); g broadcasts from the right.
    const auto rank = weight->shape().size();
    const bool scalar = gain->size() == 1 && dims.size() <= rank;
    const bool per_channel = static_cast<std::size_t>(gain->size()) == channels && dims.size() <= rank &&
                             dims.size() >= rank - 1 &&
                             dims[dims.size() - (rank - 1)] == static_cast<int64_t>(channels);
    if (!scalar && !per_channel) continue;
    std::vector<double> g(channels);
    for (std::size_t k = 0; k < channels; ++k) g[k] = gain->values<float>()[scalar ? 0 : k];
    return fold_into_conv(conv, index, g, std::vector<double>(channels, 0.0), std::vector<double>(channels, 0.0),
                          mul.output(0), added);
  }
  return false;
}

// Add(MatMul(A, B), C) is Gemm(A, B, C) when A is a matrix, B a constant matrix and C a constant
// vector of B's column count: the MatMul takes the Add's output name and becomes a Gemm.
bool fuse_matmul_add(onnx::NodeProto& add, onnx::GraphProto& graph, const GraphIndex& index) {
  if (!is(add, "Add") || add.input_size() != 2) return false;
  for (int side = 0; side < 2; ++side) {
    const auto producer = index.producer.find(add.input(side));
    if (!sole_producer(graph, index, add.input(side)) || !is(graph.node(producer->second), "MatMul")) continue;
    auto& matmul = *graph.mutable_node(producer->second);
    const auto* a = index.tensor_type(matmul.input(0));
    const auto b = index.initializers.find(matmul.input(1));
    const auto c = index.initializers.find(add.input(1 - side));
    if (!a || a->shape().dim_size() != 2 || b == index.initializers.end() || b->second->dims_size() != 2 ||
        c == index.initializers.end() || c->second->dims_size() != 1 || c->second->dims(0) != b->second->dims(1) ||
        index.graph_inputs.contains(b->first) || index.graph_inputs.contains(c->first) ||
        b->second->data_type() != c->second->data_type() || a->elem_type() != b->second->data_type() ||
        !(a->elem_type() == onnx::TensorProto::FLOAT || a->elem_type() == onnx::TensorProto::DOUBLE))
      continue;  // Gemm's kernels in ONNX Runtime are float and double: an integer MatMul stays
    matmul.set_op_type("Gemm");
    matmul.add_input(add.input(1 - side));
    matmul.set_output(0, add.output(0));
    return true;
  }
  return false;
}

// A rewrite reading the node before it is left alone when that node was rewritten in this walk
// (its outputs are not what the index says any more).
bool reads_unrewritten(const RuleContext& context, const onnx::NodeProto& node) {
  if (node.input_size() == 0) return true;
  const auto producer = context.index.producer.find(node.input(0));
  return producer == context.index.producer.end() || !context.rewritten.contains(producer->second);
}

using FusionRewrite = bool (*)(RuleContext&, onnx::NodeProto&);

// A fusion of the node before into `op`. `into_first`: the node before does the work now (it took
// the numbers and the output name), so this one goes.
Rule fusion_rule(std::string name, std::string op, std::size_t inputs, FusionRewrite rewrite, bool into_first = false) {
  return Rule{.name = std::move(name),
              .pass = "fusions",
              .targets = {std::move(op)},
              .condition =
                  [inputs](const RuleContext& context, const onnx::NodeProto& node) {
                    return static_cast<std::size_t>(node.input_size()) >= inputs && reads_unrewritten(context, node);
                  },
              .apply =
                  [rewrite, into_first](RuleContext& context, onnx::NodeProto& node) {
                    if (!rewrite(context, node)) return 0;
                    if (into_first) context.removed[static_cast<std::size_t>(context.node_index)] = true;
                    return 1;
                  }};
}

}  // namespace

std::vector<Rule> fusion_rules() {
  std::vector<Rule> rules = {
      fusion_rule("fuse-transposes", "Transpose", 1,
                  [](RuleContext& c, onnx::NodeProto& n) { return fuse_transposes(n, c.graph, c.index); }),
      fusion_rule("fuse-reshapes", "Reshape", 2,
                  [](RuleContext& c, onnx::NodeProto& n) { return fuse_reshapes(n, c.graph, c.index, c.added); }),
      fusion_rule("fuse-widening-casts", "Cast", 1,
                  [](RuleContext& c, onnx::NodeProto& n) { return fuse_casts(n, c.graph, c.index); }),
      fusion_rule("fuse-unsqueezes", "Unsqueeze", 2,
                  [](RuleContext& c, onnx::NodeProto& n) { return fuse_unsqueezes(n, c.graph, c.index, c.added); }),
      fusion_rule("fuse-slices", "Slice", 4,
                  [](RuleContext& c, onnx::NodeProto& n) { return fuse_slices(n, c.graph, c.index, c.added); }),
      fusion_rule(
          "fuse-batch-norm-into-conv", "BatchNormalization", 5,
          [](RuleContext& c, onnx::NodeProto& n) { return fuse_batch_norm(n, c.graph, c.index, c.added); }, true),
      fusion_rule(
          "fuse-mul-into-conv", "Mul", 2,
          [](RuleContext& c, onnx::NodeProto& n) { return fuse_mul_into_conv(n, c.graph, c.index, c.added); }, true),
      fusion_rule(
          "fuse-matmul-add-into-gemm", "Add", 2,
          [](RuleContext& c, onnx::NodeProto& n) { return fuse_matmul_add(n, c.graph, c.index); }, true),
  };
  for (auto& rule : graph_fusion_rules()) rules.push_back(std::move(rule));  // after the pairs, as before
  return rules;
}

}  // namespace onnxproof::simplify
