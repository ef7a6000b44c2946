#pragma once
// Who produces and who consumes each value of a graph, for the passes. Rebuilt after each change;
// graphs are small next to their weights, so this costs little.

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <onnx/onnx_pb.h>

#include "onnxproof/model/graph_walk.h"

namespace onnxproof::simplify {

struct GraphIndex {
  std::map<std::string, int> producer;                // value -> node index
  std::map<std::string, std::vector<int>> consumers;  // value -> node indices (subgraph uses count for the node)
  std::set<std::string> graph_inputs;
  std::set<std::string> graph_outputs;
  std::map<std::string, const onnx::TensorProto*> initializers;

  explicit GraphIndex(const onnx::GraphProto& graph);
};

/// The value's tensor type from the graph's inputs, outputs, value_info or initializers; nullptr when unknown.
const onnx::TypeProto_Tensor* find_tensor_type(const onnx::GraphProto& graph, const std::string& value);

/// Replaces every use of `from` by `to` in the graph's nodes (and subgraphs that read it).
void rename_uses(onnx::GraphProto& graph, const std::string& from, const std::string& to);

/// The small int64 constant a value holds (an initializer), or nothing.
std::optional<std::vector<int64_t>> int64_constant(const GraphIndex& index, const std::string& value);

}  // namespace onnxproof::simplify
