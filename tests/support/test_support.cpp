#include "test_support.h"

#include <gtest/gtest.h>

#include <fstream>
#include <random>

namespace onnxproof::testing {
namespace fs = std::filesystem;

TempDir::TempDir() {
  std::random_device seed;
  m_path = fs::temp_directory_path() / ("onnxproof-test-" + std::to_string(seed()) + std::to_string(seed()));
  fs::create_directories(m_path);
}

TempDir::~TempDir() {
  std::error_code ignored;
  fs::remove_all(m_path, ignored);
}

onnx::ValueInfoProto tensor_value(const std::string& name, int32_t elem_type, const std::vector<int64_t>& dims) {
  onnx::ValueInfoProto value;
  value.set_name(name);
  auto* tensor = value.mutable_type()->mutable_tensor_type();
  tensor->set_elem_type(elem_type);
  auto* shape = tensor->mutable_shape();
  for (const int64_t dim : dims) {
    if (dim < 0)
      shape->add_dim()->set_dim_param("N");
    else
      shape->add_dim()->set_dim_value(dim);
  }
  return value;
}

onnx::ModelProto single_node_model(const std::string& op_type, const std::vector<onnx::ValueInfoProto>& inputs,
                                   const onnx::ValueInfoProto& output, int64_t opset, const std::string& domain) {
  onnx::ModelProto model;
  model.set_ir_version(8);
  model.set_producer_name("onnxproof-tests");
  auto* import = model.add_opset_import();
  import->set_domain("");
  import->set_version(opset);
  if (!domain.empty()) {
    auto* custom = model.add_opset_import();
    custom->set_domain(domain);
    custom->set_version(1);
  }
  auto* graph = model.mutable_graph();
  graph->set_name("test");
  auto* node = graph->add_node();
  node->set_op_type(op_type);
  node->set_domain(domain);
  node->set_name(op_type + "_0");
  for (const auto& input : inputs) {
    *graph->add_input() = input;
    node->add_input(input.name());
  }
  node->add_output(output.name());
  *graph->add_output() = output;
  return model;
}

onnx::ModelProto matmul_model(int64_t k, int64_t m) {
  auto model = single_node_model("MatMul", {tensor_value("x", onnx::TensorProto::FLOAT, {-1, k})},
                                 tensor_value("y", onnx::TensorProto::FLOAT, {-1, m}));
  auto* graph = model.mutable_graph();
  graph->mutable_node(0)->add_input("W");
  auto* weight = graph->add_initializer();
  weight->set_name("W");
  weight->set_data_type(onnx::TensorProto::FLOAT);
  weight->add_dims(k);
  weight->add_dims(m);
  std::vector<float> values(static_cast<std::size_t>(k * m), 0.5F);
  weight->set_raw_data(values.data(), values.size() * sizeof(float));
  return model;
}

onnx::ModelProto model_with_external_weight(const std::string& location) {
  auto model = matmul_model(4, 2);
  auto* weight = model.mutable_graph()->mutable_initializer(0);
  weight->clear_raw_data();
  weight->set_data_location(onnx::TensorProto::EXTERNAL);
  auto* entry = weight->add_external_data();
  entry->set_key("location");
  entry->set_value(location);
  auto* length = weight->add_external_data();
  length->set_key("length");
  length->set_value("32");
  return model;
}

onnx::ModelProto if_model_with_constant_branches(bool dead_constant_per_branch) {
  auto model = single_node_model("If", {tensor_value("cond", onnx::TensorProto::BOOL, {})},
                                 tensor_value("y", onnx::TensorProto::FLOAT, {1}));
  auto* node = model.mutable_graph()->mutable_node(0);
  for (const std::string branch : {"then_branch", "else_branch"}) {
    auto* attribute = node->add_attribute();
    attribute->set_name(branch);
    attribute->set_type(onnx::AttributeProto::GRAPH);
    auto* graph = attribute->mutable_g();
    graph->set_name(branch);
    std::vector<std::string> outputs = {branch + "_out"};
    if (dead_constant_per_branch) outputs.push_back(branch + "_dead");
    for (const auto& out : outputs) {
      auto* constant = graph->add_node();
      constant->set_op_type("Constant");
      constant->add_output(out);
      auto* value = constant->add_attribute();
      value->set_name("value");
      value->set_type(onnx::AttributeProto::TENSOR);
      value->mutable_t()->set_data_type(onnx::TensorProto::FLOAT);
      value->mutable_t()->add_dims(1);
      value->mutable_t()->add_float_data(1.0F);
    }
    *graph->add_output() = tensor_value(branch + "_out", onnx::TensorProto::FLOAT, {1});
  }
  return model;
}

void write_bytes(const fs::path& path, const std::string& bytes) { std::ofstream(path, std::ios::binary) << bytes; }

std::string locked_version(const std::string& package) {
  std::ifstream lock(ONNXPROOF_REQUIREMENTS_LOCK);
  const std::string prefix = package + "==";
  for (std::string line; std::getline(lock, line);) {
    if (line.rfind(prefix, 0) == 0) return line.substr(prefix.size());
  }
  ADD_FAILURE() << "no " << prefix << " line in " << ONNXPROOF_REQUIREMENTS_LOCK;
  return "";
}

}  // namespace onnxproof::testing
