// Common subexpressions: two nodes with the same operator, attributes and inputs compute the same
// values; the later one goes and its readers read the earlier one's outputs. One sweep in
// topological order with a hash of each node's key: linear in the node count.

#include <algorithm>
#include <set>
#include <unordered_map>

#include "graph_index.h"
#include "passes.h"

namespace onnxproof::simplify {
namespace {

// Small constants by value: two initializers that hold the same few numbers under different names
// (axes, shapes, scalars: exporters write one per use) are the same input.
std::unordered_map<std::string, std::string> small_constant_values(const onnx::GraphProto& graph) {
  std::set<std::string> inputs;
  for (const auto& input : graph.input()) inputs.insert(input.name());
  std::unordered_map<std::string, std::string> values;
  for (const auto& initializer : graph.initializer()) {
    if (inputs.contains(initializer.name()) || initializer.data_location() == onnx::TensorProto::EXTERNAL ||
        initializer.ByteSizeLong() > 256)
      continue;
    onnx::TensorProto unnamed = initializer;
    unnamed.clear_name();
    values[initializer.name()] = "#" + unnamed.SerializeAsString();
  }
  return values;
}

// The node's identity: domain, operator, inputs (small constants by value) and attributes (sorted
// by name, serialized). Empty for nodes never merged: random ops and nodes with subgraphs.
std::string key_of(const onnx::NodeProto& node, const std::unordered_map<std::string, std::string>& constants) {
  if (is_random(node) || !subgraphs_of(node).empty()) return {};
  std::string key = node.domain() + '\n' + node.op_type() + '\n' + std::to_string(node.output_size()) + '\n';
  for (const auto& input : node.input()) {
    const auto constant = constants.find(input);
    key += (constant == constants.end() ? input : constant->second) + '\n';
  }
  std::vector<const onnx::AttributeProto*> attributes;
  for (const auto& a : node.attribute()) attributes.push_back(&a);
  std::sort(attributes.begin(), attributes.end(), [](auto* a, auto* b) { return a->name() < b->name(); });
  for (const auto* a : attributes) key += a->SerializeAsString() + '\n';
  return key;
}

int merge_in_graph(onnx::GraphProto& graph) {
  std::set<std::string> graph_outputs;
  for (const auto& output : graph.output()) graph_outputs.insert(output.name());
  const auto constants = small_constant_values(graph);
  std::unordered_map<std::string, int> first_with_key;
  std::unordered_map<std::string, std::string> renamed;
  std::vector<bool> removed(static_cast<std::size_t>(graph.node_size()), false);
  int changes = 0;
  for (int i = 0; i < graph.node_size(); ++i) {
    auto& node = *graph.mutable_node(i);
    for (auto& input : *node.mutable_input()) {
      if (const auto it = renamed.find(input); it != renamed.end()) input = it->second;
    }
    const std::string key = key_of(node, constants);
    if (key.empty()) continue;
    const auto [first, inserted] = first_with_key.emplace(key, i);
    if (inserted) continue;
    const auto& kept = graph.node(first->second);
    const bool interface = std::any_of(node.output().begin(), node.output().end(),
                                       [&](const std::string& out) { return graph_outputs.contains(out); });
    if (interface) continue;  // its names are the graph's outputs: it stays
    // An output the kept node leaves unnamed (an optional output it does not ask for) cannot stand
    // in for one this node names.
    bool unnamed = false;
    for (int k = 0; k < node.output_size(); ++k) unnamed |= !node.output(k).empty() && kept.output(k).empty();
    if (unnamed) continue;
    for (int k = 0; k < node.output_size(); ++k) {
      if (!node.output(k).empty()) renamed[node.output(k)] = kept.output(k);
    }
    removed[static_cast<std::size_t>(i)] = true;
    ++changes;
  }
  if (changes == 0) return 0;
  rename_uses(graph, renamed);  // subgraphs that read the merged values from outside
  remove_nodes(graph, removed);
  return changes;
}

}  // namespace

// Bodies first, each graph on its own (a body's nodes are not merged with its parent's).
std::vector<Rule> common_subexpression_rules() {
  return {Rule{.name = "merge-common-subexpressions",
               .pass = "common-subexpressions",
               .run = [](onnx::ModelProto& model, const SimplifyOptions&, std::vector<std::string>&) -> Expected<int> {
                 int changes = 0;
                 for_each_graph_bottom_up(*model.mutable_graph(),
                                          [&](onnx::GraphProto& graph) { changes += merge_in_graph(graph); });
                 return changes;
               }}};
}

}  // namespace onnxproof::simplify
