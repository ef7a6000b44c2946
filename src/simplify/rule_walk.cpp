// The dispatch of node rules: one walk over a graph's nodes, each node offered to the rules for
// its operator type only, so which operators a rule handles is said once, on the rule.

#include <unordered_map>

#include "graph_index.h"
#include "passes.h"

namespace onnxproof::simplify {
namespace {

// The structural changes a walk left in its context, applied in one sweep each.
void apply_walk_changes(RuleContext& context) {
  for (auto& tensor : context.constants) *context.graph.add_initializer() = std::move(tensor);
  for (auto& tensor : context.added) *context.graph.add_initializer() = std::move(tensor);
  if (!context.renamed.empty()) rename_uses(context.graph, context.renamed);
  remove_nodes(context.graph, context.removed);
}

using RulesByOp = std::unordered_map<std::string, std::vector<std::size_t>>;

int walk_graph(onnx::GraphProto& graph, bool body, const std::vector<const Rule*>& rules, const RulesByOp& by_op,
               std::vector<int>& changes) {
  const GraphIndex index(graph);
  RuleContext context{.graph = graph, .index = index, .in_body = body};
  context.removed.assign(static_cast<std::size_t>(graph.node_size()), false);
  int total = 0;
  for (int i = 0; i < graph.node_size(); ++i) {
    auto& node = *graph.mutable_node(i);
    const auto candidates = node.domain().empty() ? by_op.find(node.op_type()) : by_op.end();
    if (candidates == by_op.end()) continue;
    context.node_index = i;
    for (const std::size_t k : candidates->second) {
      const Rule& rule = *rules[k];
      if ((body && !rule.in_bodies) || !rule.condition(context, node)) continue;
      const int changed = rule.apply(context, node);
      if (changed == 0) continue;
      changes[k] += changed;
      total += changed;
      context.rewritten.insert(i);
      break;
    }
  }
  if (total > 0) apply_walk_changes(context);
  return total;
}

}  // namespace

int walk_node_rules(onnx::ModelProto& model, const std::vector<const Rule*>& rules, std::vector<int>& changes) {
  RulesByOp by_op;
  bool bodies = false;
  for (std::size_t k = 0; k < rules.size(); ++k) {
    for (const auto& op : rules[k]->targets) by_op[op].push_back(k);
    bodies |= rules[k]->in_bodies;
  }
  if (by_op.empty()) return 0;
  onnx::GraphProto& main = *model.mutable_graph();
  if (!bodies) return walk_graph(main, false, rules, by_op, changes);
  // Bodies first: their outputs are their interface, and what they stop reading the outer graph
  // need not keep.
  int total = 0;
  for_each_graph_bottom_up(
      main, [&](onnx::GraphProto& graph) { total += walk_graph(graph, &graph != &main, rules, by_op, changes); });
  return total;
}

}  // namespace onnxproof::simplify
