// Walking every graph and tensor of a model, subgraphs and local functions included.
#include "onnxproof/model/model_io.h"

namespace onnxproof {
namespace {

template <class Graph, class Visit>
void walk_graph_tensors(Graph& graph, const Visit& visit);

template <class Attribute, class Visit>
void walk_attribute_tensors(Attribute& attribute, const Visit& visit) {
  if (attribute.has_t()) visit(*const_cast<onnx::TensorProto*>(&attribute.t()));
  for (auto& tensor : attribute.tensors()) visit(*const_cast<onnx::TensorProto*>(&tensor));
  if (attribute.has_sparse_tensor()) {
    visit(*const_cast<onnx::TensorProto*>(&attribute.sparse_tensor().values()));
    visit(*const_cast<onnx::TensorProto*>(&attribute.sparse_tensor().indices()));
  }
  if (attribute.has_g()) walk_graph_tensors(attribute.g(), visit);
  for (auto& graph : attribute.graphs()) walk_graph_tensors(graph, visit);
}

template <class Graph, class Visit>
void walk_graph_tensors(Graph& graph, const Visit& visit) {
  for (auto& tensor : graph.initializer()) visit(*const_cast<onnx::TensorProto*>(&tensor));
  for (auto& sparse : graph.sparse_initializer()) {
    visit(*const_cast<onnx::TensorProto*>(&sparse.values()));
    visit(*const_cast<onnx::TensorProto*>(&sparse.indices()));
  }
  for (auto& node : graph.node()) {
    for (auto& attribute : node.attribute()) walk_attribute_tensors(attribute, visit);
  }
}

// One traversal serves both the const and the mutable overloads: the mutable one owns the model,
// so casting away const on its members is sound.
void walk_model(const onnx::ModelProto& model, const std::function<void(onnx::TensorProto&)>& visit) {
  walk_graph_tensors(model.graph(), visit);
  for (const auto& function : model.functions()) {
    for (const auto& node : function.node()) {
      for (const auto& attribute : node.attribute()) walk_attribute_tensors(attribute, visit);
    }
  }
}

}  // namespace

void for_each_tensor(onnx::ModelProto& model, const std::function<void(onnx::TensorProto&)>& visit) {
  walk_model(model, visit);
}

void for_each_tensor(const onnx::ModelProto& model, const std::function<void(const onnx::TensorProto&)>& visit) {
  walk_model(model, [&](onnx::TensorProto& tensor) { visit(tensor); });
}

void for_each_graph(const onnx::GraphProto& graph, const std::function<void(const onnx::GraphProto&)>& visit) {
  visit(graph);
  for (const auto& node : graph.node()) {
    for (const auto& attribute : node.attribute()) {
      if (attribute.has_g()) for_each_graph(attribute.g(), visit);
      for (const auto& sub : attribute.graphs()) for_each_graph(sub, visit);
    }
  }
}

}  // namespace onnxproof
