#include "onnxproof/localize/graph_view.h"

#include <algorithm>
#include <deque>
#include <map>
#include <set>

#include <onnx/onnx_pb.h>
#include "onnxproof/localize/localize.h"

namespace onnxproof {

GraphStructure graph_structure(const onnx::GraphProto& graph) {
  GraphStructure structure{.name = graph.name(), .nodes = {}};
  structure.nodes.reserve(static_cast<std::size_t>(graph.node_size()));
  for (const auto& node : graph.node()) {
    structure.nodes.push_back({.name = node.name(),
                               .op_type = node.op_type(),
                               .inputs = {node.input().begin(), node.input().end()},
                               .outputs = {node.output().begin(), node.output().end()}});
  }
  return structure;
}

std::string_view node_status_name(NodeStatus status) {
  switch (status) {
    case NodeStatus::first:
      return "first divergent";
    case NodeStatus::diverges:
      return "diverges";
    case NodeStatus::carried:
      return "carries an error";
    case NodeStatus::agrees:
      return "agrees";
    case NodeStatus::not_paired:
      return "not paired";
    case NodeStatus::not_compared:
      break;
  }
  return "not compared";
}

namespace {

NodeStatus status_of(const ModuleComparison& m) {
  if (!m.matched) return NodeStatus::not_paired;
  if (m.outputs_agree) return NodeStatus::agrees;
  return m.inputs_agree ? NodeStatus::diverges : NodeStatus::carried;
}

// Each value's producing node (its index).
std::map<std::string, std::size_t> producers_of(const GraphStructure& structure) {
  std::map<std::string, std::size_t> producer;
  for (std::size_t i = 0; i < structure.nodes.size(); ++i) {
    for (const auto& value : structure.nodes[i].outputs) producer.emplace(value, i);
  }
  return producer;
}

// Each value's reading nodes (their indexes, in graph order).
std::map<std::string, std::vector<std::size_t>> consumers_of(const GraphStructure& structure) {
  std::map<std::string, std::vector<std::size_t>> consumers;
  for (std::size_t i = 0; i < structure.nodes.size(); ++i) {
    for (const auto& value : structure.nodes[i].inputs) consumers[value].push_back(i);
  }
  return consumers;
}

// The nodes no compared module claims that read `m`'s output values, and those that read theirs:
// an activation a rewrite left without a name or scope right after the module (the exporter's
// own nodes carry a scope). Its output value was paired with the module's last scoped node, so
// the error the pairing saw leaves through them. At most 16.
std::set<std::size_t> unclaimed_after(const ModuleComparison& m, const GraphStructure& structure,
                                      const std::map<std::string, std::size_t>& claimed) {
  auto consumers = consumers_of(structure);
  std::set<std::size_t> found;
  std::vector<std::string> pending(m.output_values.begin(), m.output_values.end());
  while (!pending.empty() && found.size() < 16) {
    const std::string value = pending.back();
    pending.pop_back();
    for (const std::size_t i : consumers[value]) {
      if (found.size() >= 16) break;
      const auto& node = structure.nodes[i];
      if ((!node.name.empty() && claimed.contains(node.name)) || !found.insert(i).second) continue;
      pending.insert(pending.end(), node.outputs.begin(), node.outputs.end());
    }
  }
  return found;
}

// The nodes a module's outputs are computed by from its inputs: walking back from its output
// values to its input values. A walk that leaves the module (an input the capture did not pair,
// so nothing stops it) would take in what lies upstream: then only the nodes it lists.
std::set<std::size_t> nodes_between(const ModuleComparison& m, const GraphStructure& structure) {
  const auto producer = producers_of(structure);
  std::map<std::string, std::size_t> by_name;
  for (std::size_t i = 0; i < structure.nodes.size(); ++i) {
    if (!structure.nodes[i].name.empty()) by_name.emplace(structure.nodes[i].name, i);
  }
  std::set<std::size_t> listed;
  for (const auto& name : m.nodes) {
    if (const auto found = by_name.find(name); found != by_name.end()) listed.insert(found->second);
  }
  const std::set<std::string> stop(m.input_values.begin(), m.input_values.end());
  const std::size_t most = 4 * listed.size() + 16;
  std::set<std::size_t> walked;
  std::vector<std::string> pending(m.output_values.begin(), m.output_values.end());
  while (!pending.empty()) {
    const std::string value = pending.back();
    pending.pop_back();
    const auto from = producer.find(value);
    if (stop.contains(value) || from == producer.end() || !walked.insert(from->second).second) continue;
    if (walked.size() > most) return listed;
    for (const auto& input : structure.nodes[from->second].inputs) pending.push_back(input);
  }
  walked.insert(listed.begin(), listed.end());
  return walked;
}

}  // namespace

std::vector<NodeError> node_errors_of(const std::vector<ModuleComparison>& modules, std::optional<std::size_t> located,
                                      const GraphStructure& structure) {
  // The innermost module holding a node is the one of fewest nodes that lists it (a module's
  // nodes include those of the modules inside it).
  std::map<std::string, std::size_t> innermost;
  for (std::size_t i = 0; i < modules.size(); ++i) {
    for (const auto& node : modules[i].nodes) {
      const auto [at, added] = innermost.emplace(node, i);
      if (!added && modules[i].nodes.size() < modules[at->second].nodes.size()) at->second = i;
    }
  }
  std::vector<NodeError> errors;
  errors.reserve(structure.nodes.size());
  for (const auto& node : structure.nodes) {
    NodeError error{.node = node.name, .op_type = node.op_type};
    const auto found = node.name.empty() ? innermost.end() : innermost.find(node.name);
    if (found != innermost.end()) {
      const ModuleComparison& m = modules[found->second];
      error.module = m.module;
      error.status = status_of(m);
      error.output_max_rel = m.output_error;
      error.output_max_abs = m.output_abs;
      error.share_outside =
          m.output_elements > 0 ? static_cast<double>(m.output_mismatches) / static_cast<double>(m.output_elements) : 0;
    }
    errors.push_back(std::move(error));
  }
  // First divergent: the located module's nodes (their own status says "diverges"), every node
  // between its boundary values (an activation the exporter left without the module's scope, a
  // node a rewrite inserted) and the unclaimed nodes right after it, unless a child shows it
  // agrees: the error appears among them.
  if (located) {
    auto between = nodes_between(modules[*located], structure);
    between.merge(unclaimed_after(modules[*located], structure, innermost));
    for (std::size_t i = 0; i < errors.size(); ++i) {
      if (between.contains(i) && errors[i].status != NodeStatus::agrees) {
        errors[i].status = NodeStatus::first;
        if (errors[i].module.empty() && !modules[*located].module.empty()) errors[i].module = modules[*located].module;
      }
    }
  }
  return errors;
}

namespace {

// Nodes within `hops` producer/consumer steps of the seeds, nearest first, at most `max_nodes`.
std::vector<std::size_t> nearby_nodes(const GraphStructure& structure, const std::vector<std::size_t>& seeds, int hops,
                                      std::size_t max_nodes) {
  const auto producer = producers_of(structure);
  const auto consumers = consumers_of(structure);
  std::vector<std::size_t> chosen;
  std::set<std::size_t> seen;
  std::deque<std::pair<std::size_t, int>> pending;
  for (const auto seed : seeds) {
    if (seen.insert(seed).second) pending.emplace_back(seed, 0);
  }
  while (!pending.empty() && chosen.size() < max_nodes) {
    const auto [node, distance] = pending.front();
    pending.pop_front();
    chosen.push_back(node);
    if (distance == hops) continue;
    const auto& info = structure.nodes[node];
    for (const auto& value : info.inputs) {
      const auto from = producer.find(value);
      if (from != producer.end() && seen.insert(from->second).second) pending.emplace_back(from->second, distance + 1);
    }
    for (const auto& value : info.outputs) {
      const auto to = consumers.find(value);
      if (to == consumers.end()) continue;
      for (const auto next : to->second) {
        if (seen.insert(next).second) pending.emplace_back(next, distance + 1);
      }
    }
  }
  std::sort(chosen.begin(), chosen.end());  // graph order: producers before consumers
  return chosen;
}

}  // namespace

std::optional<GraphView> divergence_neighbourhood(const std::vector<NodeError>& errors, const GraphStructure& structure,
                                                  int hops, std::size_t max_nodes) {
  std::vector<std::size_t> seeds;
  for (std::size_t i = 0; i < errors.size() && i < structure.nodes.size(); ++i) {
    // Half the view at most for the first divergent module itself: its surroundings show too.
    if (errors[i].status == NodeStatus::first && seeds.size() < std::max<std::size_t>(1, max_nodes / 2))
      seeds.push_back(i);
  }
  if (seeds.empty()) return std::nullopt;
  const auto chosen = nearby_nodes(structure, seeds, hops, max_nodes);
  GraphView view{.graph = structure.name, .graph_nodes = structure.nodes.size()};
  std::map<std::string, std::size_t> produced_by;  // a value written by a chosen node -> its view index
  for (const auto index : chosen) {
    const std::size_t at = view.nodes.size();
    view.nodes.push_back(errors[index]);
    int row = 0;
    for (const auto& value : structure.nodes[index].inputs) {
      const auto from = produced_by.find(value);
      if (from == produced_by.end()) continue;
      view.edges.emplace_back(from->second, at);
      row = std::max(row, view.rows[from->second] + 1);
    }
    view.rows.push_back(row);
    for (const auto& value : structure.nodes[index].outputs) produced_by.emplace(value, at);
  }
  return view;
}

nlohmann::json node_errors_to_json(const std::vector<NodeError>& errors) {
  nlohmann::json nodes = nlohmann::json::array();
  for (const auto& e : errors) {
    nlohmann::json node = {{"node", e.node},
                           {"op_type", e.op_type},
                           {"module", e.module},
                           {"status", node_status_name(e.status)},
                           {"output_max_rel", e.output_max_rel},
                           {"output_max_abs", e.output_max_abs},
                           {"share_outside_budget", e.share_outside}};
    if (e.float64_rel) node.update({{"float64_rel", *e.float64_rel}, {"float64_abs", *e.float64_abs}});
    nodes.push_back(std::move(node));
  }
  return nodes;
}

nlohmann::json graph_view_to_json(const GraphView& view) {
  nlohmann::json edges = nlohmann::json::array();
  for (const auto& [from, to] : view.edges) edges.push_back({from, to});
  return {{"graph", view.graph},
          {"graph_nodes", view.graph_nodes},
          {"nodes", node_errors_to_json(view.nodes)},
          {"rows", view.rows},
          {"edges", edges}};
}

nlohmann::json model_explorer_node_data(const std::string& graph, const std::vector<NodeError>& errors) {
  nlohmann::json results = nlohmann::json::object();
  for (const auto& e : errors) {
    if (e.node.empty() || e.status == NodeStatus::not_compared || e.status == NodeStatus::not_paired) continue;
    nlohmann::json result = {{"value", e.share_outside}};
    if (e.status == NodeStatus::first) result.update({{"bgColor", "#b71c1c"}, {"textColor", "#ffffff"}});
    results[e.node] = std::move(result);
  }
  // Upper bounds of the share outside the budget: none, under 1%, under 10%, more.
  const nlohmann::json thresholds = nlohmann::json::array({{{"value", 0}, {"bgColor", "#c8e6c9"}},
                                                           {{"value", 0.01}, {"bgColor", "#ffe082"}},
                                                           {{"value", 0.1}, {"bgColor", "#ffb74d"}},
                                                           {{"value", 1}, {"bgColor", "#ef5350"}}});
  return {{graph, {{"results", results}, {"thresholds", thresholds}}}};
}

}  // namespace onnxproof
