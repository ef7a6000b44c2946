#pragma once
// Who produces and who consumes each value of a graph, and its declared type, for the passes.
// Built once per pass over a graph: a pass that changes the graph collects its changes and applies
// them at the end, so no pass rebuilds it per change (that made them quadratic in the node count).

#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include <onnx/onnx_pb.h>

#include "onnxproof/model/graph_walk.h"
#include "onnxproof/tensor/tensor.h"

namespace onnxproof::simplify {

struct GraphIndex {
  std::map<std::string, int> producer;                // value -> node index
  std::map<std::string, std::vector<int>> consumers;  // value -> node indices (subgraph uses count for the node)
  std::set<std::string> graph_inputs;
  std::set<std::string> graph_outputs;
  std::map<std::string, const onnx::TensorProto*> initializers;
  /// Declared tensor types (inputs, outputs, value_info), looked up in one step.
  std::unordered_map<std::string, const onnx::TypeProto_Tensor*> tensor_types;

  explicit GraphIndex(const onnx::GraphProto& graph);

  /// The value's declared tensor type; nullptr when unknown.
  const onnx::TypeProto_Tensor* tensor_type(const std::string& value) const;
};

/// Replaces every read of a name in `renamed` by its new name, in the graph's nodes and the
/// subgraphs that read it from outside, in one sweep.
void rename_uses(onnx::GraphProto& graph, const std::unordered_map<std::string, std::string>& renamed);

/// The node's attribute of that name; nullptr when it has none.
const onnx::AttributeProto* attribute(const onnx::NodeProto& node, const std::string& name);

/// Drops the nodes marked in `removed` (indexed like the graph's nodes) in one sweep; the others
/// keep their order.
void remove_nodes(onnx::GraphProto& graph, const std::vector<bool>& removed);

/// Ops whose output changes from run to run (RandomNormal, Bernoulli, ...): never folded or merged.
bool is_random(const onnx::NodeProto& node);

/// The small int64 constant a value holds (an initializer), or nothing.
std::optional<std::vector<int64_t>> int64_constant(const GraphIndex& index, const std::string& value);

/// A 1-D int64 initializer of that name (a shape, axes, split sizes a rule writes).
onnx::TensorProto int64_initializer(const std::vector<int64_t>& values, const std::string& name);

// Whether `node` is the default domain's operator `op`.
bool is(const onnx::NodeProto& node, std::string_view op);

// The float32 initializer `name` (no graph input of that name overrides it) as a Tensor; nullopt otherwise.
std::optional<Tensor> float_constant(const GraphIndex& index, const std::string& name);

}  // namespace onnxproof::simplify
