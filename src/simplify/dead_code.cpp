#include <set>

#include "graph_index.h"
#include "passes.h"

namespace onnxproof::simplify {
namespace {

int eliminate_in_graph(onnx::GraphProto& graph) {
  std::set<std::string> needed;
  for (const auto& output : graph.output()) needed.insert(output.name());
  std::vector<bool> live(static_cast<std::size_t>(graph.node_size()), false);
  for (int i = graph.node_size() - 1; i >= 0; --i) {
    const auto& node = graph.node(i);
    bool used = false;
    for (const auto& output : node.output()) used |= needed.contains(output);
    if (!used) continue;
    live[static_cast<std::size_t>(i)] = true;
    const auto reads = names_read_by(node);
    needed.insert(reads.begin(), reads.end());
  }
  int changes = 0;
  google::protobuf::RepeatedPtrField<onnx::NodeProto> kept;
  for (int i = 0; i < graph.node_size(); ++i) {
    if (live[static_cast<std::size_t>(i)])
      kept.Add()->Swap(graph.mutable_node(i));
    else
      ++changes;
  }
  graph.mutable_node()->Swap(&kept);

  std::set<std::string> graph_inputs;
  for (const auto& input : graph.input()) graph_inputs.insert(input.name());
  auto* initializers = graph.mutable_initializer();
  for (int i = initializers->size() - 1; i >= 0; --i) {
    const auto& name = initializers->Get(i).name();
    if (!needed.contains(name) && !graph_inputs.contains(name)) {
      initializers->DeleteSubrange(i, 1);  // moves nothing but the pointer: no copy of the bytes
      ++changes;
    }
  }
  std::set<std::string> existing;
  for (const auto& node : graph.node()) existing.insert(node.output().begin(), node.output().end());
  auto* infos = graph.mutable_value_info();
  for (int i = infos->size() - 1; i >= 0; --i) {
    if (!existing.contains(infos->Get(i).name())) infos->DeleteSubrange(i, 1);
  }
  return changes;
}

}  // namespace

// Bodies first: what a body no longer reads, its outer graph need not keep.
int eliminate_dead_code(onnx::ModelProto& model) {
  int changes = 0;
  for_each_graph_bottom_up(*model.mutable_graph(),
                           [&](onnx::GraphProto& graph) { changes += eliminate_in_graph(graph); });
  return changes;
}

std::vector<Rule> dead_code_rules() {
  return {Rule{.name = "remove-dead-code",
               .pass = "dead-code",
               .run = [](onnx::ModelProto& model, const SimplifyOptions&, std::vector<std::string>&) -> Expected<int> {
                 return eliminate_dead_code(model);
               }}};
}

}  // namespace onnxproof::simplify
