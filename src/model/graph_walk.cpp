// Walking every graph and tensor of a model, subgraphs and local functions included.
#include "onnxproof/model/graph_walk.h"
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

namespace {

void walk_scoped(const onnx::GraphProto& graph, const GraphScope& scope,
                 const std::function<void(const onnx::GraphProto&, const GraphScope&)>& visit) {
  visit(graph, scope);
  for (const auto& node : graph.node()) {
    for (const auto* sub : subgraphs_of(node)) walk_scoped(*sub, {&scope, sub, &node, scope.depth + 1}, visit);
  }
}

}  // namespace

void for_each_graph(const onnx::GraphProto& graph,
                    const std::function<void(const onnx::GraphProto&, const GraphScope&)>& visit) {
  walk_scoped(graph, {nullptr, &graph, nullptr, 0}, visit);
}

void for_each_graph(const onnx::GraphProto& graph, const std::function<void(const onnx::GraphProto&)>& visit) {
  for_each_graph(graph, [&](const onnx::GraphProto& g, const GraphScope&) { visit(g); });
}

void for_each_graph_bottom_up(onnx::GraphProto& graph, const std::function<void(onnx::GraphProto&)>& visit) {
  for (auto& node : *graph.mutable_node()) {
    for (auto& attribute : *node.mutable_attribute()) {
      if (attribute.has_g()) for_each_graph_bottom_up(*attribute.mutable_g(), visit);
      for (auto& sub : *attribute.mutable_graphs()) for_each_graph_bottom_up(sub, visit);
    }
  }
  visit(graph);
}

std::vector<const onnx::GraphProto*> subgraphs_of(const onnx::NodeProto& node) {
  std::vector<const onnx::GraphProto*> graphs;
  for (const auto& attribute : node.attribute()) {
    if (attribute.has_g()) graphs.push_back(&attribute.g());
    for (const auto& sub : attribute.graphs()) graphs.push_back(&sub);
  }
  return graphs;
}

std::set<std::string> outer_names_used(const onnx::GraphProto& graph) {
  // Produced anywhere in the graph, whatever the node order (a graph being sorted is not yet).
  std::set<std::string> produced;
  for (const auto& input : graph.input()) produced.insert(input.name());
  for (const auto& initializer : graph.initializer()) produced.insert(initializer.name());
  for (const auto& node : graph.node()) produced.insert(node.output().begin(), node.output().end());
  std::set<std::string> used;
  for (const auto& node : graph.node()) {
    for (const auto& name : names_read_by(node)) {
      if (!name.empty() && !produced.contains(name)) used.insert(name);
    }
  }
  for (const auto& output : graph.output()) {
    if (!produced.contains(output.name())) used.insert(output.name());
  }
  return used;
}

std::set<std::string> names_read_by(const onnx::NodeProto& node) {
  std::set<std::string> names(node.input().begin(), node.input().end());
  for (const auto* sub : subgraphs_of(node)) {
    const auto inner = outer_names_used(*sub);
    names.insert(inner.begin(), inner.end());
  }
  names.erase("");
  return names;
}

}  // namespace onnxproof
