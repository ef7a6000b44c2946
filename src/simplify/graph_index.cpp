#include "graph_index.h"

#include <optional>
#include <set>

#include "onnxproof/tensor/tensor_io.h"

namespace onnxproof::simplify {

GraphIndex::GraphIndex(const onnx::GraphProto& graph) {
  for (const auto& input : graph.input()) graph_inputs.insert(input.name());
  for (const auto& output : graph.output()) graph_outputs.insert(output.name());
  for (const auto& initializer : graph.initializer()) initializers[initializer.name()] = &initializer;
  // The first declaration wins: inputs, outputs, then value_info.
  for (const auto* list : {&graph.input(), &graph.output(), &graph.value_info()}) {
    for (const auto& info : *list) {
      if (info.type().has_tensor_type()) tensor_types.emplace(info.name(), &info.type().tensor_type());
    }
  }
  for (int i = 0; i < graph.node_size(); ++i) {
    const auto& node = graph.node(i);
    for (const auto& output : node.output()) {
      if (!output.empty()) producer[output] = i;
    }
    for (const auto& use : names_read_by(node)) consumers[use].push_back(i);
  }
}

const onnx::TypeProto_Tensor* GraphIndex::tensor_type(const std::string& value) const {
  const auto it = tensor_types.find(value);
  return it == tensor_types.end() ? nullptr : it->second;
}

void rename_uses(onnx::GraphProto& graph, const std::unordered_map<std::string, std::string>& renamed) {
  for (auto& node : *graph.mutable_node()) {
    for (auto& input : *node.mutable_input()) {
      if (const auto it = renamed.find(input); it != renamed.end()) input = it->second;
    }
    for (auto& attribute : *node.mutable_attribute()) {
      if (attribute.has_g()) rename_uses(*attribute.mutable_g(), renamed);
      for (auto& g : *attribute.mutable_graphs()) rename_uses(g, renamed);
    }
  }
}

const onnx::AttributeProto* attribute(const onnx::NodeProto& node, const std::string& name) {
  for (const auto& a : node.attribute()) {
    if (a.name() == name) return &a;
  }
  return nullptr;
}

void remove_nodes(onnx::GraphProto& graph, const std::vector<bool>& removed) {
  google::protobuf::RepeatedPtrField<onnx::NodeProto> kept;
  for (int i = 0; i < graph.node_size(); ++i) {
    if (!removed[static_cast<std::size_t>(i)]) kept.Add()->Swap(graph.mutable_node(i));
  }
  graph.mutable_node()->Swap(&kept);
}

bool is_random(const onnx::NodeProto& node) {
  static const std::set<std::string> k_random_ops = {"RandomNormal",      "RandomUniform", "RandomNormalLike",
                                                     "RandomUniformLike", "Multinomial",   "Bernoulli"};
  return node.domain().empty() && k_random_ops.contains(node.op_type());
}

std::optional<std::vector<int64_t>> int64_constant(const GraphIndex& index, const std::string& value) {
  const auto it = index.initializers.find(value);
  if (it == index.initializers.end() || index.graph_inputs.contains(value)) return std::nullopt;
  if (it->second->data_type() != onnx::TensorProto::INT64) return std::nullopt;
  auto tensor = tensor_from_proto(*it->second);
  if (!tensor || tensor->size() > 64) return std::nullopt;
  const auto values = tensor->values<int64_t>();
  return std::vector<int64_t>(values.begin(), values.end());
}

onnx::TensorProto int64_initializer(const std::vector<int64_t>& values, const std::string& name) {
  auto tensor = *Tensor::zeros(DType::int64, {static_cast<int64_t>(values.size())});
  std::copy(values.begin(), values.end(), tensor.mutable_values<int64_t>().begin());
  return tensor_to_proto(tensor, name);
}

bool is(const onnx::NodeProto& node, std::string_view op) { return node.domain().empty() && node.op_type() == op; }

std::optional<Tensor> float_constant(const GraphIndex& index, const std::string& name) {
  const auto it = index.initializers.find(name);
  if (name.empty() || it == index.initializers.end() || index.graph_inputs.contains(name) ||
      it->second->data_type() != onnx::TensorProto::FLOAT)
    return std::nullopt;
  auto tensor = tensor_from_proto(*it->second);
  return tensor ? std::optional<Tensor>(std::move(*tensor)) : std::nullopt;
}

}  // namespace onnxproof::simplify
