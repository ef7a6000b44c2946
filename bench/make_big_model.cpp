// Writes a synthetic model larger than protobuf's 2 GiB limit, with its weights in external data,
// for the simplify benchmark:
//
//   make_big_model OUT.onnx [LAYERS]     (default 10 layers of 8192x8192 float32 = 2.68 GB)
//
// y = ((x @ W0) * s) @ W1 ... with an Identity after each MatMul and s = Mul(c, c) a constant
// subgraph: work for the no-op and constant-folding passes.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "onnxproof/model/model_io.h"

using namespace onnxproof;

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s OUT.onnx [LAYERS]\n", argv[0]);
    return 2;
  }
  const int layers = argc > 2 ? std::atoi(argv[2]) : 10;
  constexpr int64_t k_width = 8192;
  onnx::ModelProto model;
  model.set_ir_version(8);
  model.set_producer_name("onnxproof-bench");
  model.add_opset_import()->set_version(17);
  auto* graph = model.mutable_graph();
  graph->set_name("big");
  const auto add_value = [](auto* list, const std::string& name) {
    auto* value = list->Add();
    value->set_name(name);
    auto* tensor = value->mutable_type()->mutable_tensor_type();
    tensor->set_elem_type(onnx::TensorProto::FLOAT);
    tensor->mutable_shape()->add_dim()->set_dim_param("batch");
    tensor->mutable_shape()->add_dim()->set_dim_value(k_width);
  };
  add_value(graph->mutable_input(), "x");
  const auto add_node = [&](const std::string& op, std::vector<std::string> inputs, const std::string& output) {
    auto* node = graph->add_node();
    node->set_op_type(op);
    node->set_name(output);
    for (const auto& in : inputs) node->add_input(in);
    node->add_output(output);
  };
  auto* c = graph->add_initializer();
  c->set_name("c");
  c->set_data_type(onnx::TensorProto::FLOAT);
  c->add_float_data(1.0F);
  add_node("Mul", {"c", "c"}, "s");

  uint32_t state = 12345;
  const float scale = 1.0F / std::sqrt(static_cast<float>(k_width));
  std::string current = "x";
  for (int layer = 0; layer < layers; ++layer) {
    const std::string w = "W" + std::to_string(layer);
    auto* weight = graph->add_initializer();
    weight->set_name(w);
    weight->set_data_type(onnx::TensorProto::FLOAT);
    weight->add_dims(k_width);
    weight->add_dims(k_width);
    std::string bytes(static_cast<std::size_t>(k_width * k_width) * sizeof(float), '\0');
    auto* values = reinterpret_cast<float*>(bytes.data());
    for (int64_t i = 0; i < k_width * k_width; ++i) {
      state = state * 1664525U + 1013904223U;  // a linear congruential generator: fast and repeatable
      values[i] = (static_cast<float>(state >> 8) / 16777216.0F - 0.5F) * 2.0F * scale;
    }
    weight->set_raw_data(std::move(bytes));
    add_node("MatMul", {current, w}, "m" + std::to_string(layer));
    add_node("Identity", {"m" + std::to_string(layer)}, "i" + std::to_string(layer));
    add_node("Mul", {"i" + std::to_string(layer), "s"}, "h" + std::to_string(layer));
    current = "h" + std::to_string(layer);
  }
  graph->mutable_node(graph->node_size() - 1)->set_output(0, "y");
  add_value(graph->mutable_output(), "y");
  auto saved = save_model(model, argv[1], SaveOptions{.external = SaveOptions::External::always});
  if (!saved) {
    std::fprintf(stderr, "%s\n", saved.error().describe().c_str());
    return 3;
  }
  std::printf("wrote %s with %d layers of %lldx%lld float32\n", argv[1], layers, static_cast<long long>(k_width),
              static_cast<long long>(k_width));
  return 0;
}
