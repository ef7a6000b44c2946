// Fusions over a whole graph at once (rules with a `run`, no per-node targets): MatMuls that share
// an input merged into one, and Reshapes around an elementwise chain elided. fusion_rules()
// (fusions.cpp) lists them after the pairwise fusions.

#include <algorithm>
#include <array>
#include <map>
#include <optional>
#include <set>
#include <unordered_map>

#include "graph_index.h"
#include "onnxproof/tensor/tensor_io.h"
#include "passes.h"

namespace onnxproof::simplify {

namespace {

int64_t default_opset(const onnx::ModelProto& model) {
  for (const auto& entry : model.opset_import()) {
    if (entry.domain().empty() || entry.domain() == "ai.onnx") return entry.version();
  }
  return 0;
}

// MatMuls that read the same input with constant float32 weights of the same row count
// (attention's query, key and value projections) become one MatMul over the weights side by side
// and a Split of its last axis: n nodes become 2. The Split takes each MatMul's output name.
int merge_parallel_matmuls(onnx::GraphProto& graph) {
  const GraphIndex index(graph);
  std::map<std::string, std::vector<int>> by_input;  // input -> MatMuls with constant 2-D weights
  for (int i = 0; i < graph.node_size(); ++i) {
    const auto& node = graph.node(i);
    if (!is(node, "MatMul") || node.input_size() != 2 || node.output_size() != 1) continue;
    const auto weight = float_constant(index, node.input(1));
    if (weight && weight->shape().size() == 2) by_input[node.input(0)].push_back(i);
  }
  std::vector<bool> removed(static_cast<std::size_t>(graph.node_size()), false);
  std::map<int, std::vector<onnx::NodeProto>> inserted;  // at the first member's place: MatMul, Split
  std::vector<onnx::TensorProto> added;
  for (const auto& [input, members] : by_input) {
    if (members.size() < 3) continue;  // two become two: nothing gained
    std::vector<Tensor> weights;
    for (const int i : members) weights.push_back(*float_constant(index, graph.node(i).input(1)));
    const int64_t rows = weights[0].shape()[0];
    if (std::any_of(weights.begin(), weights.end(), [&](const Tensor& w) { return w.shape()[0] != rows; })) continue;
    int64_t columns = 0;
    for (const auto& w : weights) columns += w.shape()[1];
    auto merged = *Tensor::zeros(DType::float32, {rows, columns});
    auto out = merged.mutable_values<float>();
    std::vector<int64_t> splits;
    int64_t offset = 0;
    for (const auto& w : weights) {
      const int64_t width = w.shape()[1];
      for (int64_t r = 0; r < rows; ++r)
        std::copy_n(w.values<float>().begin() + r * width, width, out.begin() + r * columns + offset);
      offset += width;
      splits.push_back(width);
    }
    const std::string base = graph.node(members[0]).output(0) + "_merged";
    added.push_back(tensor_to_proto(merged, base + "_weight"));
    added.push_back(int64_initializer(splits, base + "_split"));
    onnx::NodeProto matmul;
    matmul.set_op_type("MatMul");
    matmul.set_name(base);
    matmul.add_input(input);
    matmul.add_input(base + "_weight");
    matmul.add_output(base);
    onnx::NodeProto split;
    split.set_op_type("Split");
    split.set_name(base + "_split");
    split.add_input(base);
    split.add_input(base + "_split");
    auto* axis = split.add_attribute();
    axis->set_name("axis");
    axis->set_type(onnx::AttributeProto::INT);
    axis->set_i(-1);
    for (const int i : members) {
      split.add_output(graph.node(i).output(0));
      removed[static_cast<std::size_t>(i)] = true;
    }
    inserted[members[0]] = {std::move(matmul), std::move(split)};
  }
  if (inserted.empty()) return 0;
  google::protobuf::RepeatedPtrField<onnx::NodeProto> order;
  for (int i = 0; i < graph.node_size(); ++i) {
    // Every reader of a member comes after it, so after the first member: the new pair stands
    // there, and the order stays topological.
    if (const auto pair = inserted.find(i); pair != inserted.end())
      for (auto& node : pair->second) *order.Add() = std::move(node);
    if (!removed[static_cast<std::size_t>(i)]) *order.Add() = std::move(*graph.mutable_node(i));
  }
  graph.mutable_node()->Swap(&order);
  for (auto& tensor : added) *graph.add_initializer() = std::move(tensor);
  return static_cast<int>(inserted.size());
}

}  // namespace

namespace {

// Elementwise operators: the same value at each position, whatever the tensor's shape.
constexpr std::array k_elementwise = {"Add",        "Sub",  "Mul",      "Div",       "Pow",         "Tanh", "Erf",
                                      "Sigmoid",    "Relu", "Neg",      "Sqrt",      "Exp",         "Log",  "Abs",
                                      "Reciprocal", "Gelu", "Softplus", "LeakyRelu", "HardSigmoid", "Elu",  "Cast"};

// The most elementwise nodes one search visits (GELU's tanh form has 8): keeps the rule linear
// in the node count when many Reshapes read one long elementwise chain.
constexpr std::size_t k_max_region = 64;

int rank_of(const GraphIndex& index, const std::string& value) {
  const auto* type = index.tensor_type(value);
  return type && type->has_shape() ? type->shape().dim_size() : -1;
}

// The elementwise nodes that compute `top` from `source` and constants of one element (of rank at
// most `max_rank`, so that they broadcast no dimension in), in graph order; nothing when `top`
// depends on anything else or a value inside is read from outside (a graph output included).
std::optional<std::vector<int>> elementwise_region(const onnx::GraphProto& graph, const GraphIndex& index,
                                                   const std::string& top, const std::string& source, int max_rank) {
  std::set<int> region;
  std::vector<std::string> pending{top};
  bool reaches_source = false;
  while (!pending.empty()) {
    const std::string value = pending.back();
    pending.pop_back();
    if (value == source) {
      reaches_source = true;
      continue;
    }
    if (const auto constant = index.initializers.find(value); constant != index.initializers.end()) {
      const auto& dims = constant->second->dims();
      if (dims.size() > max_rank || std::any_of(dims.begin(), dims.end(), [](int64_t d) { return d != 1; }))
        return std::nullopt;
      continue;
    }
    const auto producer = index.producer.find(value);
    if (producer == index.producer.end()) return std::nullopt;
    const auto& node = graph.node(producer->second);
    if (!node.domain().empty() || node.output_size() != 1 ||
        std::find(k_elementwise.begin(), k_elementwise.end(), node.op_type()) == k_elementwise.end())
      return std::nullopt;
    if (region.insert(producer->second).second) pending.insert(pending.end(), node.input().begin(), node.input().end());
    if (region.size() > k_max_region) return std::nullopt;
  }
  if (!reaches_source) return std::nullopt;
  for (const int i : region) {
    const auto& out = graph.node(i).output(0);
    if (index.graph_outputs.contains(out)) return std::nullopt;
    const auto readers = index.consumers.find(out);
    if (out == top) continue;  // its reader is the Reshape back, checked by the caller
    for (const int reader : readers->second)
      if (!region.contains(reader)) return std::nullopt;
  }
  return std::vector<int>(region.begin(), region.end());
}

// Whether Reshape(·, shape) of a tensor shaped like `x` leaves it as it is: the shape has x's rank,
// x's static sizes, and at most one -1 (no 0, which would copy from the Reshape's own input).
bool reshape_restores(const GraphIndex& index, const std::string& x, const std::vector<int64_t>& shape) {
  const auto* type = index.tensor_type(x);
  if (!type || !type->has_shape() || type->shape().dim_size() != static_cast<int>(shape.size())) return false;
  int inferred = 0;
  for (std::size_t i = 0; i < shape.size(); ++i) {
    const auto& dim = type->shape().dim(static_cast<int>(i));
    if (shape[i] == 0) return false;  // a copy of the reshaped tensor's size there, not x's
    if (shape[i] == -1) {
      ++inferred;
    } else if (!dim.has_dim_value() || dim.dim_value() != shape[i]) {
      return false;
    }
  }
  return inferred <= 1;
}

// Reshape(f(Reshape(x, s)), back) with f elementwise and `back` giving x's shape (GPT-2's MLP
// reshapes [tokens, 4d] to [batch, seq, 4d] for GELU and back for the next Gemm): f reads x, and
// both Reshapes go (the first once nothing else reads it). Declared shapes inside f are dropped.
int elide_reshapes_around_elementwise(onnx::GraphProto& graph) {
  const GraphIndex index(graph);
  std::vector<bool> removed(static_cast<std::size_t>(graph.node_size()), false);
  std::set<int> rewritten;
  std::set<std::string> reshaped;  // values whose shape changes: their declarations go
  std::unordered_map<std::string, std::string> renamed;
  for (int i = 0; i < graph.node_size(); ++i) {
    const auto& back = graph.node(i);
    if (!is(back, "Reshape") || back.input_size() != 2 || index.graph_outputs.contains(back.output(0))) continue;
    const auto shape = int64_constant(index, back.input(1));
    const auto top = index.producer.find(back.input(0));
    const auto readers = index.consumers.find(back.input(0));
    if (!shape || top == index.producer.end() || readers->second.size() != 1) continue;
    // The first Reshape: the nearest one up the elementwise nodes.
    std::string source, x;
    std::vector<std::string> frontier{back.input(0)};
    for (std::set<int> seen; !frontier.empty() && source.empty() && seen.size() < k_max_region;) {
      const auto found = index.producer.find(frontier.back());
      frontier.pop_back();
      if (found == index.producer.end() || !seen.insert(found->second).second) continue;
      const auto& node = graph.node(found->second);
      if (is(node, "Reshape") && node.input_size() == 2) {
        source = node.output(0);
        x = node.input(0);
      } else if (std::find(k_elementwise.begin(), k_elementwise.end(), node.op_type()) != k_elementwise.end()) {
        frontier.insert(frontier.end(), node.input().begin(), node.input().end());
      }
    }
    if (source.empty() || !reshape_restores(index, x, *shape)) continue;
    const auto region =
        elementwise_region(graph, index, back.input(0), source, std::min(rank_of(index, x), rank_of(index, source)));
    if (!region || std::any_of(region->begin(), region->end(), [&](int n) { return rewritten.contains(n); })) continue;
    for (const int n : *region) {
      auto& node = *graph.mutable_node(n);
      for (auto& in : *node.mutable_input())
        if (in == source) in = x;
      reshaped.insert(node.output(0));
      rewritten.insert(n);
    }
    renamed[back.output(0)] = back.input(0);
    removed[static_cast<std::size_t>(i)] = true;
  }
  if (renamed.empty()) return 0;
  rename_uses(graph, renamed);
  remove_nodes(graph, removed);
  auto* infos = graph.mutable_value_info();
  for (int i = infos->size() - 1; i >= 0; --i)
    if (reshaped.contains(infos->Get(i).name())) infos->DeleteSubrange(i, 1);
  return static_cast<int>(renamed.size());
}

}  // namespace

std::vector<Rule> graph_fusion_rules() {
  const auto whole_graph = [](std::string name, std::string needs, int (*run)(onnx::ModelProto&)) {
    return Rule{.name = std::move(name),
                .pass = "fusions",
                .needs = {std::move(needs)},
                .run = [run](onnx::ModelProto& model, const SimplifyOptions&,
                             std::vector<std::string>&) -> Expected<int> { return run(model); }};
  };
  return {
      whole_graph("elide-reshapes-around-elementwise", "Reshape",
                  [](onnx::ModelProto& m) { return elide_reshapes_around_elementwise(*m.mutable_graph()); }),
      // Split takes its sizes as an input from opset 13 on.
      whole_graph(
          "merge-parallel-matmuls", "MatMul",
          [](onnx::ModelProto& m) { return default_opset(m) >= 13 ? merge_parallel_matmuls(*m.mutable_graph()) : 0; }),
  };
}

}  // namespace onnxproof::simplify
