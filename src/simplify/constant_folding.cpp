// Constant folding. Constant subgraphs are evaluated by ONNX Runtime on the CPU in one run, so
// folding computes exactly what the runtime would; and the topological sort the passes end with.

#include <queue>
#include <set>
#include <unordered_map>

#include "graph_index.h"
#include "onnxproof/runtime/session.h"
#include "onnxproof/tensor/tensor_io.h"
#include "passes.h"

namespace onnxproof::simplify {

namespace {

bool has_subgraph(const onnx::NodeProto& node) { return !subgraphs_of(node).empty(); }

// A quantized weight's DequantizeLinear (and a QuantizeLinear of a constant) stays: folded, the
// weight is float32 (4x the bytes) and a runtime that fuses Q/DQ groups into integer kernels
// quantizes it again its own way. Measured on a PT2E model: the folded model's QLinearConv moved
// outputs by 2 steps where the unfolded one matched PyTorch exactly (docs/quantization.md).
bool is_quantization_node(const onnx::NodeProto& node) {
  return node.op_type() == "DequantizeLinear" || node.op_type() == "QuantizeLinear";
}

}  // namespace

namespace {

// Constant nodes holding a tensor become initializers outright, in one sweep; in a body (an
// If/Loop/Scan graph) not those that are the body's outputs, which a node must produce.
int constant_nodes_to_initializers(onnx::GraphProto& graph, bool body) {
  std::set<std::string> outputs;
  if (body)
    for (const auto& output : graph.output()) outputs.insert(output.name());
  int changes = 0;
  google::protobuf::RepeatedPtrField<onnx::NodeProto> kept;
  for (int i = 0; i < graph.node_size(); ++i) {
    auto& node = *graph.mutable_node(i);
    if (node.op_type() == "Constant" && node.domain().empty() && node.attribute_size() == 1 &&
        node.attribute(0).name() == "value" && node.output_size() == 1 && !outputs.contains(node.output(0))) {
      onnx::TensorProto& tensor = *graph.add_initializer();
      tensor.Swap(node.mutable_attribute(0)->mutable_t());  // the bytes move, they are not copied
      tensor.set_name(node.output(0));
      ++changes;
      continue;
    }
    kept.Add()->Swap(&node);
  }
  graph.mutable_node()->Swap(&kept);
  return changes;
}

// The nodes computed from constants only, and the frontier: the values among their outputs that
// something outside that constant subgraph reads.
struct ConstantSubgraph {
  std::set<int> nodes;
  std::vector<int> order;
  std::vector<std::string> frontier;
};

ConstantSubgraph find_constant_subgraph(const onnx::GraphProto& graph, const GraphIndex& index) {
  ConstantSubgraph sub;
  std::set<std::string> constant;
  for (const auto& [name, tensor] : index.initializers) {
    if (!index.graph_inputs.contains(name)) constant.insert(name);
  }
  for (int i = 0; i < graph.node_size(); ++i) {
    const auto& node = graph.node(i);
    if (!node.domain().empty() || is_random(node) || has_subgraph(node) || is_quantization_node(node)) continue;
    const bool all_constant = std::all_of(node.input().begin(), node.input().end(),
                                          [&](const std::string& in) { return in.empty() || constant.contains(in); });
    if (!all_constant || node.input_size() == 0) continue;
    sub.order.push_back(i);
    sub.nodes.insert(i);
    for (const auto& out : node.output()) constant.insert(out);
  }
  for (const int i : sub.order) {
    for (const auto& out : graph.node(i).output()) {
      if (out.empty()) continue;
      bool outside = index.graph_outputs.contains(out);
      if (const auto readers = index.consumers.find(out); readers != index.consumers.end()) {
        for (const int reader : readers->second) outside |= !sub.nodes.contains(reader);
      }
      if (outside) sub.frontier.push_back(out);
    }
  }
  return sub;
}

// The frontier's values: one model holding the constant subgraph, evaluated by ONNX Runtime from
// memory without optimizations (no temporary file that a killed run would leave behind).
Expected<std::vector<Tensor>> evaluate(const onnx::ModelProto& model, const onnx::GraphProto& graph,
                                       const ConstantSubgraph& constants) {
  onnx::ModelProto sub;
  sub.set_ir_version(model.ir_version());
  *sub.mutable_opset_import() = model.opset_import();
  auto* sub_graph = sub.mutable_graph();
  sub_graph->set_name("constant_subgraph");
  std::set<std::string> needed;
  for (const int i : constants.order) {
    *sub_graph->add_node() = graph.node(i);
    needed.insert(graph.node(i).input().begin(), graph.node(i).input().end());
  }
  for (const auto& initializer : graph.initializer()) {
    if (needed.contains(initializer.name())) *sub_graph->add_initializer() = initializer;
  }
  for (const auto& name : constants.frontier) sub_graph->add_output()->set_name(name);
  ONNXPROOF_TRY_ASSIGN(auto session, Session::open_bytes(sub.SerializeAsString(),
                                                         SessionOptions{.optimization = GraphOptimization::disabled,
                                                                        .intra_op_threads = 1}));
  return session.run({});
}

// The folded nodes that must stay: those computing a value over the size cap (or a string), or
// a body's output (which a node must produce), and every node such a value needs.
std::set<int> nodes_to_keep(const onnx::GraphProto& graph, const GraphIndex& index, const ConstantSubgraph& constants,
                            const std::vector<Tensor>& values, uint64_t max_bytes, bool body) {
  std::vector<std::string> pending;
  for (std::size_t k = 0; k < constants.frontier.size(); ++k) {
    if (values[k].dtype() == DType::string || values[k].bytes().size() > max_bytes ||
        (body && index.graph_outputs.contains(constants.frontier[k])))
      pending.push_back(constants.frontier[k]);
  }
  std::set<int> keep;
  while (!pending.empty()) {
    const std::string name = pending.back();
    pending.pop_back();
    const auto producer = index.producer.find(name);
    if (producer == index.producer.end() || !constants.nodes.contains(producer->second) ||
        !keep.insert(producer->second).second)
      continue;
    for (const auto& in : graph.node(producer->second).input()) pending.push_back(in);
  }
  return keep;
}

// One graph's constant subgraph folded; `body`: an If/Loop/Scan graph (its outputs stay nodes).
// Values read from an enclosing graph are not constants here, even where they are there.
int fold_constants_in(onnx::GraphProto& graph, bool body, const onnx::ModelProto& model, const SimplifyOptions& options,
                      std::vector<std::string>& notes) {
  int changes = constant_nodes_to_initializers(graph, body);
  const GraphIndex index(graph);
  const ConstantSubgraph constants = find_constant_subgraph(graph, index);
  if (constants.frontier.empty()) return changes;
  auto values = evaluate(model, graph, constants);
  if (!values) {
    // Not an error of the model: the subgraph stays computed at run time, and the report says why.
    notes.push_back("ONNX Runtime could not evaluate the constant subgraph" +
                    (body ? " of the body " + graph.name() : std::string()) +
                    ", left unfolded: " + values.error().describe());
    return changes;
  }
  const std::set<int> keep = nodes_to_keep(graph, index, constants, *values, options.max_fold_bytes, body);
  std::set<std::string> kept_outputs;  // a kept node still defines its outputs
  for (const int i : keep) kept_outputs.insert(graph.node(i).output().begin(), graph.node(i).output().end());
  for (std::size_t k = 0; k < constants.frontier.size(); ++k) {
    const auto& name = constants.frontier[k];
    const auto& value = (*values)[k];
    const bool over_cap = value.dtype() == DType::string || value.bytes().size() > options.max_fold_bytes;
    if (!over_cap && !kept_outputs.contains(name)) *graph.add_initializer() = tensor_to_proto(value, name);
  }
  std::vector<bool> folded(static_cast<std::size_t>(graph.node_size()), false);
  for (const int i : constants.nodes) {
    if (!keep.contains(i)) {
      folded[static_cast<std::size_t>(i)] = true;
      ++changes;
    }
  }
  remove_nodes(graph, folded);
  return changes;
}

// Bodies first, then the graphs around them.
int fold_constants(onnx::ModelProto& model, const SimplifyOptions& options, std::vector<std::string>& notes) {
  int changes = 0;
  const onnx::GraphProto* main = &model.graph();
  for_each_graph_bottom_up(*model.mutable_graph(), [&](onnx::GraphProto& graph) {
    changes += fold_constants_in(graph, &graph != main, model, options, notes);
  });
  return changes;
}

}  // namespace

std::vector<Rule> constant_folding_rules() {
  return {Rule{.name = "fold-constants",
               .pass = "constant-folding",
               .run = [](onnx::ModelProto& model, const SimplifyOptions& options, std::vector<std::string>& notes)
                   -> Expected<int> { return fold_constants(model, options, notes); }}};
}

// Kahn's algorithm, the ready node with the smallest original index first (so an ordered graph
// keeps its order): n log n in the node count, whatever order the nodes come in.
int sort_topologically(onnx::ModelProto& model) {
  auto& graph = *model.mutable_graph();
  const auto n = static_cast<std::size_t>(graph.node_size());
  std::unordered_map<std::string, int> producer;
  for (int i = 0; i < graph.node_size(); ++i) {
    for (const auto& output : graph.node(i).output()) {
      if (!output.empty()) producer.emplace(output, i);
    }
  }
  std::vector<int> waiting(n, 0);            // inputs not yet produced, per node
  std::vector<std::vector<int>> readers(n);  // producer -> the nodes that read its outputs
  for (int i = 0; i < graph.node_size(); ++i) {
    for (const auto& name : names_read_by(graph.node(i))) {
      const auto it = producer.find(name);  // graph inputs, initializers, outer names: available
      if (it == producer.end() || it->second == i) continue;
      ++waiting[static_cast<std::size_t>(i)];
      readers[static_cast<std::size_t>(it->second)].push_back(i);
    }
  }
  std::priority_queue<int, std::vector<int>, std::greater<>> ready;
  for (int i = 0; i < graph.node_size(); ++i) {
    if (waiting[static_cast<std::size_t>(i)] == 0) ready.push(i);
  }
  std::vector<int> order;
  std::vector<bool> placed(n, false);
  while (!ready.empty()) {
    const int i = ready.top();
    ready.pop();
    placed[static_cast<std::size_t>(i)] = true;
    order.push_back(i);
    for (const int reader : readers[static_cast<std::size_t>(i)]) {
      if (--waiting[static_cast<std::size_t>(reader)] == 0) ready.push(reader);
    }
  }
  for (int i = 0; i < graph.node_size(); ++i) {
    if (!placed[static_cast<std::size_t>(i)]) order.push_back(i);  // a cycle: keep what remains as it was
  }
  bool changed = false;
  for (std::size_t k = 0; k < order.size(); ++k) changed |= order[k] != static_cast<int>(k);
  if (!changed) return 0;
  google::protobuf::RepeatedPtrField<onnx::NodeProto> sorted;
  for (const int i : order) sorted.Add()->Swap(graph.mutable_node(i));
  graph.mutable_node()->Swap(&sorted);
  return 1;
}

}  // namespace onnxproof::simplify
