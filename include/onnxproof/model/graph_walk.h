#pragma once
// The one graph walker: every graph of a model (If branches, Loop and Scan bodies, nested) with
// the scopes around it, and the names a node or a subgraph reads from outside. check, ops, the
// frozen-shape analysis and the simplify passes all walk graphs through here.

#include <functional>
#include <set>
#include <string>
#include <vector>

#include <onnx/onnx_pb.h>

namespace onnxproof {

/// Where a graph sits: the graph that encloses it and the node that holds it (both null for the
/// main graph). A subgraph may read any name of its enclosing scopes.
struct GraphScope {
  const GraphScope* parent = nullptr;
  const onnx::GraphProto* graph = nullptr;
  const onnx::NodeProto* owner = nullptr;
  int depth = 0;  // 0 for the main graph
};

/// Calls `visit` for `graph` and then every subgraph below it, depth first, each with its scope.
void for_each_graph(const onnx::GraphProto& graph,
                    const std::function<void(const onnx::GraphProto&, const GraphScope&)>& visit);
/// The same without the scope.
void for_each_graph(const onnx::GraphProto& graph, const std::function<void(const onnx::GraphProto&)>& visit);

/// For rewriting passes: every subgraph of `graph` is visited before the graph holding it, so a
/// body is rewritten before its outer graph is looked at (its outputs are its interface).
void for_each_graph_bottom_up(onnx::GraphProto& graph, const std::function<void(onnx::GraphProto&)>& visit);

/// The subgraphs a node holds, in attribute order.
std::vector<const onnx::GraphProto*> subgraphs_of(const onnx::NodeProto& node);

/// Names a graph reads from its enclosing scopes (used inside, produced nowhere inside).
std::set<std::string> outer_names_used(const onnx::GraphProto& graph);

/// Names a node reads: its inputs and what its subgraphs read from outside them.
std::set<std::string> names_read_by(const onnx::NodeProto& node);

}  // namespace onnxproof
