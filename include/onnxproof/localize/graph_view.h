#pragma once
// The localization node by node: every node of the ONNX graph with the innermost compared module
// the exporter attributed it to, and that module's figures (RUN/localize/node_errors.json); the
// same as a Model Explorer node-data overlay (RUN/localize/model_explorer_node_data.json); and the
// neighbourhood of the first divergent module's nodes, a small graph the report draws.

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace onnx {
class GraphProto;
}

namespace onnxproof {

/// What the view needs of one node: its name, operator and the values it reads and writes.
struct GraphNodeInfo {
  std::string name;
  std::string op_type;
  std::vector<std::string> inputs;
  std::vector<std::string> outputs;
};

/// The top-level graph's structure, no tensors (subgraphs stay inside their node).
struct GraphStructure {
  std::string name;  // the graph's own name: Model Explorer's graph id
  std::vector<GraphNodeInfo> nodes;
};

GraphStructure graph_structure(const onnx::GraphProto& graph);

/// A node's part in the divergence, from the innermost compared module that holds it.
enum class NodeStatus {
  first,         // the first divergent module's node: its inputs agree, its outputs do not
  diverges,      // another module whose inputs agree and outputs do not
  carried,       // the module's inputs already differ: it carries an error from upstream
  agrees,        // the module's outputs agree
  not_paired,    // its module's values could not be paired with the source framework's
  not_compared,  // no compared module holds it
};

std::string_view node_status_name(NodeStatus status);

struct NodeError {
  std::string node{};
  std::string op_type{};
  std::string module{};  // the innermost compared module holding it ("" for the whole model)
  NodeStatus status = NodeStatus::not_compared;
  double output_max_rel = 0;
  double output_max_abs = 0;
  /// The share of the module's output elements outside their budget (0 within it, 1 all
  /// outside): the verdict's measure, by the calibrated rule where a float64 twin exists.
  double share_outside = 0;
  /// Its first output in the float32 run against the ONNX graph's own float64 run
  /// (localize/float64_graph.h): the error float32 arithmetic adds up to this node, where that
  /// run was made (the view's nodes).
  std::optional<double> float64_rel{};
  std::optional<double> float64_abs{};
};

/// The neighbourhood of the first divergent nodes: those nodes and what lies up to a few hops
/// before and after them, each with its row (its depth among the view's nodes) and the edges
/// between them.
struct GraphView {
  std::string graph{};
  std::vector<NodeError> nodes{};
  std::vector<int> rows{};
  std::vector<std::pair<std::size_t, std::size_t>> edges{};  // producer, consumer (indexes into nodes)
  std::size_t graph_nodes = 0;                               // nodes in the whole graph
};

/// The first divergent nodes and their producers and consumers `hops` steps out, at most
/// `max_nodes` in all (the first divergent ones first); none when no node is first.
std::optional<GraphView> divergence_neighbourhood(const std::vector<NodeError>& errors, const GraphStructure& structure,
                                                  int hops = 2, std::size_t max_nodes = 40);

nlohmann::json node_errors_to_json(const std::vector<NodeError>& errors);
nlohmann::json graph_view_to_json(const GraphView& view);

/// Model Explorer's node data (ai-edge-model-explorer's ModelNodeData: per graph id, "results"
/// keyed by node name with a "value", and colour "thresholds"): each compared node's share of
/// output elements outside the budget; the first divergent nodes drawn apart.
nlohmann::json model_explorer_node_data(const std::string& graph, const std::vector<NodeError>& errors);

}  // namespace onnxproof
