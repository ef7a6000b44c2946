// Shape folding: Shape, Size and the arithmetic on them folded where the sizes are static, and
// the size guards an exporter writes dropped when the shapes prove them (shape_folding_rules()).

#include <optional>
#include <set>
#include <unordered_map>

#include "graph_index.h"
#include "onnxproof/tensor/tensor_io.h"
#include "passes.h"

namespace onnxproof::simplify {

namespace {

// The dimensions a Shape node outputs (its start/end applied), each a number or unknown
// (symbolic); nothing when the input's rank is unknown.
std::optional<std::vector<std::optional<int64_t>>> shape_dims(const onnx::NodeProto& node, const GraphIndex& index) {
  const auto* type = index.tensor_type(node.input(0));
  if (!type || !type->has_shape()) return std::nullopt;
  std::vector<std::optional<int64_t>> dims;
  for (const auto& dim : type->shape().dim())
    dims.push_back(dim.has_dim_value() ? std::optional<int64_t>(dim.dim_value()) : std::nullopt);
  if (node.op_type() == "Size") return dims;
  const auto rank = static_cast<int64_t>(dims.size());
  const auto clamp = [&](int64_t v) { return std::clamp<int64_t>(v < 0 ? v + rank : v, 0, rank); };
  int64_t start = 0;
  int64_t end = rank;
  for (const auto& a : node.attribute()) {
    if (a.name() == "start") start = clamp(a.i());
    if (a.name() == "end") end = clamp(a.i());
  }
  return std::vector<std::optional<int64_t>>(dims.begin() + start, dims.begin() + std::max(start, end));
}

bool is_shape_query(const onnx::NodeProto& node) {
  return node.domain().empty() && (node.op_type() == "Shape" || node.op_type() == "Size") && node.input_size() == 1;
}

Tensor int64_tensor(const std::vector<int64_t>& values, std::vector<int64_t> shape) {
  auto tensor = *Tensor::zeros(DType::int64, std::move(shape));
  std::copy(values.begin(), values.end(), tensor.mutable_values<int64_t>().begin());
  return tensor;
}

// The value a Shape or Size node computes from a fully static input shape, or nothing.
std::optional<Tensor> static_shape_value(const onnx::NodeProto& node, const GraphIndex& index) {
  if (!is_shape_query(node)) return std::nullopt;
  const auto dims = shape_dims(node, index);
  if (!dims || std::any_of(dims->begin(), dims->end(), [](const auto& d) { return !d; })) return std::nullopt;
  std::vector<int64_t> values;
  for (const auto& d : *dims) values.push_back(*d);
  if (node.op_type() == "Size") {
    int64_t count = 1;
    for (const int64_t d : values) count *= d;
    return int64_tensor({count}, {});
  }
  return int64_tensor(values, {static_cast<int64_t>(values.size())});
}

// Gather(Shape(x), constant indices) when the dimensions it picks are static, though others
// (batch, sequence) are not: the chains exporters write to read one size, folded at their start.
std::optional<Tensor> static_gathered_dims(const onnx::GraphProto& graph, const onnx::NodeProto& node,
                                           const GraphIndex& index) {
  if (!node.domain().empty() || node.op_type() != "Gather" || node.input_size() != 2) return std::nullopt;
  for (const auto& a : node.attribute()) {
    if (a.name() == "axis" && a.i() != 0) return std::nullopt;
  }
  const auto producer = index.producer.find(node.input(0));
  if (producer == index.producer.end()) return std::nullopt;
  const auto& shape = graph.node(producer->second);
  if (!is_shape_query(shape) || shape.op_type() != "Shape") return std::nullopt;
  const auto dims = shape_dims(shape, index);
  const auto indices = index.initializers.find(node.input(1));
  if (!dims || indices == index.initializers.end() || indices->second->dims_size() > 1) return std::nullopt;
  const auto picked = int64_constant(index, node.input(1));
  if (!picked) return std::nullopt;
  std::vector<int64_t> values;
  for (int64_t i : *picked) {
    if (i < 0) i += static_cast<int64_t>(dims->size());
    if (i < 0 || i >= static_cast<int64_t>(dims->size()) || !(*dims)[static_cast<std::size_t>(i)]) return std::nullopt;
    values.push_back(*(*dims)[static_cast<std::size_t>(i)]);
  }
  if (indices->second->dims_size() == 0) return int64_tensor(values, {});
  return int64_tensor(values, {static_cast<int64_t>(values.size())});
}

// The [begin, end) positions a Slice of a shape vector of `rank` elements picks: constant
// starts/ends of one element, axis 0, step 1; nothing otherwise.
std::optional<std::pair<int64_t, int64_t>> sliced_range(const onnx::NodeProto& slice, const GraphIndex& index,
                                                        int64_t rank) {
  const auto starts = int64_constant(index, slice.input(1));
  const auto ends = int64_constant(index, slice.input(2));
  const auto is = [&](int i, int64_t wanted) {
    return slice.input_size() <= i || slice.input(i).empty() ||
           int64_constant(index, slice.input(i)) == std::vector{wanted};
  };
  if (!starts || !ends || starts->size() != 1 || ends->size() != 1 || !is(3, 0) || !is(4, 1)) return std::nullopt;
  const auto clamp = [&](int64_t v) { return std::clamp<int64_t>(v < 0 ? v + rank : v, 0, rank); };
  return std::pair{clamp(starts->front()), std::max(clamp(starts->front()), clamp(ends->front()))};
}

// Slice(Shape(x), start, end) (one axis, step 1) when the dimensions it picks are static:
// `q.shape[-1]` of a [batch, heads, tokens, 64] tensor, the attention scale's source, is [64].
std::optional<Tensor> static_sliced_dims(const onnx::GraphProto& graph, const onnx::NodeProto& node,
                                         const GraphIndex& index) {
  if (!node.domain().empty() || node.op_type() != "Slice" || node.input_size() < 3 || node.input_size() > 5)
    return std::nullopt;
  const auto producer = index.producer.find(node.input(0));
  if (producer == index.producer.end()) return std::nullopt;
  const auto& shape = graph.node(producer->second);
  if (!is_shape_query(shape) || shape.op_type() != "Shape") return std::nullopt;
  const auto dims = shape_dims(shape, index);
  const auto range = dims ? sliced_range(node, index, static_cast<int64_t>(dims->size())) : std::nullopt;
  if (!range) return std::nullopt;
  std::vector<int64_t> values;
  for (int64_t i = range->first; i < range->second; ++i) {
    if (!(*dims)[static_cast<std::size_t>(i)]) return std::nullopt;
    values.push_back(*(*dims)[static_cast<std::size_t>(i)]);
  }
  return int64_tensor(values, {static_cast<int64_t>(values.size())});
}

// The symbol of a value's dimension (batch, unk__3), or "" when it is a number or unknown.
std::string dim_symbol(const GraphIndex& index, const std::string& value, int64_t axis) {
  const auto* type = index.tensor_type(value);
  if (!type || !type->has_shape() || axis < 0 || axis >= type->shape().dim_size()) return {};
  const auto& dim = type->shape().dim(static_cast<int>(axis));
  return dim.has_dim_param() ? dim.dim_param() : std::string();
}

// One part of a Concat that builds a shape: its constant values, or the symbol of the one
// dimension it reads with Unsqueeze(Gather(Shape(x), i)) or Gather(Shape(x), [i]).
struct ShapePart {
  std::vector<int64_t> values;
  std::string symbol;
};

// A part of a shape Concat that reads sizes (never negative): Unsqueeze(Gather(Shape(x), i), [0])
// or Gather(Shape(x), [i, ...]); the Shape node and the positions it picks.
struct SizeRead {
  const onnx::NodeProto* shape;
  std::vector<int64_t> picked;
};

std::optional<SizeRead> size_read(const onnx::GraphProto& graph, const GraphIndex& index, const std::string& name) {
  auto producer = index.producer.find(name);
  if (producer == index.producer.end()) return std::nullopt;
  const onnx::NodeProto* node = &graph.node(producer->second);
  const bool unsqueezed = node->domain().empty() && node->op_type() == "Unsqueeze" && node->input_size() == 2;
  if (unsqueezed) {
    if (int64_constant(index, node->input(1)) != std::vector<int64_t>{0}) return std::nullopt;
    producer = index.producer.find(node->input(0));
    if (producer == index.producer.end()) return std::nullopt;
    node = &graph.node(producer->second);
  }
  if (!node->domain().empty() || node->op_type() != "Gather" || node->input_size() != 2) return std::nullopt;
  const auto* axis = attribute(*node, "axis");
  const auto query = index.producer.find(node->input(0));
  const auto indices = index.initializers.find(node->input(1));
  const auto picked = int64_constant(index, node->input(1));
  if ((axis && axis->i() != 0) || query == index.producer.end() || indices == index.initializers.end() || !picked ||
      indices->second->dims_size() != (unsqueezed ? 0 : 1))
    return std::nullopt;
  const auto& shape = graph.node(query->second);
  if (!is_shape_query(shape) || shape.op_type() != "Shape") return std::nullopt;
  return SizeRead{&shape, *picked};
}

std::optional<ShapePart> shape_part(const onnx::GraphProto& graph, const GraphIndex& index, const std::string& name) {
  if (const auto constant = int64_constant(index, name)) return ShapePart{*constant, {}};
  const auto read = size_read(graph, index, name);
  if (!read || read->picked.size() != 1 || read->shape->attribute_size() != 0) return std::nullopt;
  const std::string symbol = dim_symbol(index, read->shape->input(0), read->picked.front());
  if (symbol.empty()) return std::nullopt;
  return ShapePart{{}, symbol};
}

// How many dimensions a part reads when it is Slice(Shape(data), position, end): data's own
// dimensions at the positions they fill (each a 0 in a Reshape of data); nothing otherwise.
std::optional<std::size_t> own_dims_sliced(const onnx::GraphProto& graph, const GraphIndex& index,
                                           const std::string& name, const std::string& data, std::size_t position) {
  const auto producer = index.producer.find(name);
  if (producer == index.producer.end()) return std::nullopt;
  const auto& slice = graph.node(producer->second);
  if (!slice.domain().empty() || slice.op_type() != "Slice" || slice.input_size() < 3) return std::nullopt;
  const auto query = index.producer.find(slice.input(0));
  if (query == index.producer.end()) return std::nullopt;
  const auto& shape = graph.node(query->second);
  const auto* type = index.tensor_type(data);
  if (!is_shape_query(shape) || shape.op_type() != "Shape" || shape.attribute_size() != 0 || shape.input(0) != data ||
      !type || !type->has_shape())
    return std::nullopt;
  const auto range = sliced_range(slice, index, type->shape().dim_size());
  if (!range || range->first != static_cast<int64_t>(position) || range->second == range->first) return std::nullopt;
  return static_cast<std::size_t>(range->second - range->first);
}

// Whether a value is declared as one element of rank 1 ([1]): an Unsqueezed scalar size.
bool holds_one_element(const GraphIndex& index, const std::string& value) {
  const auto* type = index.tensor_type(value);
  return type && type->has_shape() && type->shape().dim_size() == 1 && type->shape().dim(0).has_dim_value() &&
         type->shape().dim(0).dim_value() == 1;
}

// Reshape(data, Concat(parts)) where every part is a constant or the size of a dimension that
// data has at the same position (the same symbol): that part is Reshape's 0 ("copy this
// dimension"), and the whole shape a constant. The chains exporters write over symbolic batch
// and sequence sizes, folded.
std::optional<Tensor> symbolic_reshape_shape(const onnx::GraphProto& graph, const onnx::NodeProto& node,
                                             const GraphIndex& index) {
  if (!node.domain().empty() || node.op_type() != "Reshape" || node.input_size() != 2) return std::nullopt;
  const auto* allowzero = attribute(node, "allowzero");
  if ((allowzero && allowzero->i() != 0) || int64_constant(index, node.input(1))) return std::nullopt;
  const auto concat = index.producer.find(node.input(1));
  if (concat == index.producer.end()) return std::nullopt;
  const auto& parts = graph.node(concat->second);
  if (!parts.domain().empty() || parts.op_type() != "Concat") return std::nullopt;
  std::vector<int64_t> shape;
  bool symbolic = false;
  std::optional<std::size_t> unknown;  // the position of the one part computed otherwise
  for (const auto& name : parts.input()) {
    if (const auto copied = own_dims_sliced(graph, index, name, node.input(0), shape.size())) {
      shape.insert(shape.end(), *copied, 0);  // flatten(2)'s [batch, channels] prefix
      symbolic = true;
      continue;
    }
    const auto part = shape_part(graph, index, name);
    if (part && part->symbol.empty()) {
      // A 0 in a constant part copies the data's dimension at its position, as before.
      shape.insert(shape.end(), part->values.begin(), part->values.end());
    } else if (part && dim_symbol(index, node.input(0), static_cast<int64_t>(shape.size())) == part->symbol) {
      shape.push_back(0);
      symbolic = true;
    } else if (!unknown && holds_one_element(index, name)) {
      unknown = shape.size();
      shape.push_back(-1);
    } else {
      return std::nullopt;
    }
  }
  // One computed size (ViT's batch * heads) among sizes that are all known and positive is the
  // only one that makes the element count match: Reshape's -1. Not beside a 0 (a copy), which an
  // empty tensor would make 0, and -1 then undefined.
  if (unknown && std::any_of(shape.begin(), shape.end(), [](int64_t d) { return d == 0; })) return std::nullopt;
  if (unknown && std::count(shape.begin(), shape.end(), -1) > 1) return std::nullopt;
  if (!symbolic && !unknown) return std::nullopt;  // all constants: constant folding's job
  return int64_tensor(shape, {static_cast<int64_t>(shape.size())});
}

// Reshape(data, Shape(x)) where x's shape has one symbolic size and positive static ones (the
// Reshape back after a normalization over a reshaped x): that size is the only one that fits, so
// the shape is a constant with -1 there.
std::optional<Tensor> shape_of_other_with_one_unknown(const onnx::GraphProto& graph, const onnx::NodeProto& node,
                                                      const GraphIndex& index) {
  if (!node.domain().empty() || node.op_type() != "Reshape" || node.input_size() != 2) return std::nullopt;
  const auto producer = index.producer.find(node.input(1));
  if (producer == index.producer.end()) return std::nullopt;
  const auto& query = graph.node(producer->second);
  if (!is_shape_query(query) || query.op_type() != "Shape" || query.attribute_size() != 0) return std::nullopt;
  const auto dims = shape_dims(query, index);
  if (!dims || std::count(dims->begin(), dims->end(), std::nullopt) != 1) return std::nullopt;
  std::vector<int64_t> shape;
  for (const auto& dim : *dims) {
    if (dim && *dim <= 0) return std::nullopt;
    shape.push_back(dim.value_or(-1));
  }
  return int64_tensor(shape, {static_cast<int64_t>(shape.size())});
}

// Where(Equal(x, c), a, x) with x = Concat(parts) a shape built from constants and sizes: the
// guard the TorchScript exporter writes before Expand so that a -1 in the sizes keeps a dimension.
// A size is never negative, so where c < 0 the comparison is false for every read size; at the
// constant parts it is computed. Returns the Concat that replaces the Where (its constant parts
// resolved, new constants added to `values`), or nothing when the guard is not decided.
std::optional<onnx::NodeProto> resolved_size_guard(const onnx::GraphProto& graph, const onnx::NodeProto& where,
                                                   const GraphIndex& index, std::vector<onnx::TensorProto>& values) {
  if (!where.domain().empty() || where.op_type() != "Where" || where.input_size() != 3) return std::nullopt;
  const auto equal = index.producer.find(where.input(0));
  const auto built = index.producer.find(where.input(2));
  const auto chosen = int64_constant(index, where.input(1));
  if (equal == index.producer.end() || built == index.producer.end() || !chosen) return std::nullopt;
  const auto& compare = graph.node(equal->second);
  const auto& concat = graph.node(built->second);
  if (!compare.domain().empty() || compare.op_type() != "Equal" || compare.input_size() != 2 ||
      !concat.domain().empty() || concat.op_type() != "Concat")
    return std::nullopt;
  const bool x_first = compare.input(0) == where.input(2);
  const auto against = int64_constant(index, compare.input(x_first ? 1 : 0));
  if (!against || (!x_first && compare.input(1) != where.input(2))) return std::nullopt;
  // Element i of a constant that broadcasts (one element) or matches the shape's length; the
  // lengths are checked before any element is read.
  const auto at = [](const std::vector<int64_t>& v, std::size_t i) { return v.size() == 1 ? v[0] : v[i]; };
  const auto fits = [](const std::vector<int64_t>& v, std::size_t i) { return v.size() == 1 || i < v.size(); };
  onnx::NodeProto replacement = concat;
  replacement.set_name(where.name());
  replacement.set_output(0, where.output(0));
  std::size_t position = 0;
  std::vector<onnx::TensorProto> resolved;
  for (int p = 0; p < concat.input_size(); ++p) {
    if (const auto constant = int64_constant(index, concat.input(p))) {
      std::vector<int64_t> out = *constant;
      for (std::size_t i = 0; i < out.size(); ++i, ++position) {
        if (!fits(*against, position) || !fits(*chosen, position)) return std::nullopt;
        if (out[i] == at(*against, position)) out[i] = at(*chosen, position);
      }
      if (out == *constant) continue;
      resolved.push_back(int64_initializer(out, where.output(0) + "_part" + std::to_string(p)));
      replacement.set_input(p, resolved.back().name());
      continue;
    }
    const auto read = size_read(graph, index, concat.input(p));
    if (!read) return std::nullopt;
    for (std::size_t i = 0; i < read->picked.size(); ++i, ++position) {
      if (!fits(*against, position)) return std::nullopt;
      if (at(*against, position) >= 0) return std::nullopt;  // a size could equal it
    }
  }
  if ((against->size() != 1 && against->size() != position) || (chosen->size() != 1 && chosen->size() != position))
    return std::nullopt;
  for (auto& tensor : resolved) values.push_back(std::move(tensor));
  return replacement;
}

}  // namespace

namespace {

// A value computed from static dimensions replaces the node: its output becomes a constant.
Rule folding_rule(std::string name, std::vector<std::string> ops,
                  std::optional<Tensor> (*value)(const onnx::GraphProto&, const onnx::NodeProto&, const GraphIndex&)) {
  return Rule{.name = std::move(name),
              .pass = "shape-folding",
              .targets = std::move(ops),
              .needs = {"Shape", "Size"},
              .condition = [](const RuleContext&, const onnx::NodeProto& node) { return node.input_size() > 0; },
              .apply =
                  [value](RuleContext& context, onnx::NodeProto& node) {
                    auto folded = value(context.graph, node, context.index);
                    if (!folded) return 0;
                    context.constants.push_back(tensor_to_proto(*folded, node.output(0)));
                    context.removed[static_cast<std::size_t>(context.node_index)] = true;
                    return 1;
                  }};
}

// A Reshape whose shape chain becomes a constant (the chain is then dead, for dead-code).
Rule reshape_shape_rule(std::string name, std::optional<Tensor> (*shape)(const onnx::GraphProto&,
                                                                         const onnx::NodeProto&, const GraphIndex&)) {
  return Rule{.name = std::move(name),
              .pass = "shape-folding",
              .targets = {"Reshape"},
              .needs = {"Shape", "Size"},
              .condition = [](const RuleContext&, const onnx::NodeProto& node) { return node.input_size() == 2; },
              .apply =
                  [shape](RuleContext& context, onnx::NodeProto& node) {
                    const auto constant = shape(context.graph, node, context.index);
                    if (!constant) return 0;
                    context.added.push_back(tensor_to_proto(*constant, node.output(0) + "_shape"));
                    node.set_input(1, context.added.back().name());
                    return 1;
                  }};
}

// The Where guard over sizes becomes the Concat it decides (the Equal is then dead); one change
// for the guard and one per constant part it resolved.
Rule size_guard_rule() {
  return Rule{.name = "decide-size-guard",
              .pass = "shape-folding",
              .targets = {"Where"},
              .needs = {"Shape", "Size"},
              .condition = [](const RuleContext&, const onnx::NodeProto& node) { return node.input_size() == 3; },
              .apply =
                  [](RuleContext& context, onnx::NodeProto& node) {
                    const std::size_t before = context.added.size();
                    auto concat = resolved_size_guard(context.graph, node, context.index, context.added);
                    if (!concat) return 0;
                    node.Swap(&*concat);
                    return 1 + static_cast<int>(context.added.size() - before);
                  }};
}

}  // namespace

std::vector<Rule> shape_folding_rules() {
  return {
      folding_rule("fold-static-shape", {"Shape", "Size"},
                   [](const onnx::GraphProto&, const onnx::NodeProto& node, const GraphIndex& index) {
                     return static_shape_value(node, index);
                   }),
      folding_rule("fold-gathered-static-dims", {"Gather"}, static_gathered_dims),
      folding_rule("fold-sliced-static-dims", {"Slice"}, static_sliced_dims),
      reshape_shape_rule("fold-symbolic-reshape-shape", symbolic_reshape_shape),
      reshape_shape_rule("fold-reshape-to-shape-with-one-unknown", shape_of_other_with_one_unknown),
      size_guard_rule(),
  };
}

}  // namespace onnxproof::simplify
