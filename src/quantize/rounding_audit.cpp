#include "onnxproof/quantize/rounding_audit.h"

#include <fmt/format.h>
#include <onnx/onnx_pb.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <functional>
#include <set>

#include "onnxproof/model/graph_walk.h"
#include "onnxproof/runtime/session.h"
#include "onnxproof/tensor/tensor.h"
#include "onnxproof/tensor/tensor_io.h"

namespace onnxproof {
namespace {

struct Range {
  int64_t low;
  int64_t high;
};

Range range_of(DType type) {
  switch (type) {
    case DType::uint8:
      return {0, 255};
    case DType::int16:
      return {-32768, 32767};
    case DType::uint16:
      return {0, 65535};
    default:
      return {-128, 127};
  }
}

// The scale the test divides by: 1, so x / scale is x itself and every k + 0.5 of the range is
// exact (float16 holds halves below 1024, bfloat16 below 128; ties past those are skipped).
std::vector<double> tie_values(const QuantizePair& pair) {
  const Range range = range_of(pair.output);
  const double exact_limit = pair.input == DType::float16 ? 1024.0 : pair.input == DType::bfloat16 ? 128.0 : 1 << 22;
  std::vector<double> values;
  for (int64_t k = range.low - 2; k <= range.high + 1; ++k) {
    const double tie = static_cast<double>(k) + 0.5;
    if (std::fabs(tie) < exact_limit) values.push_back(tie);
  }
  return values;
}

using Rounding = std::function<double(double)>;
const std::array<std::pair<const char*, Rounding>, 5>& rounding_modes() {
  static const std::array<std::pair<const char*, Rounding>, 5> modes = {{
      {"half to even", [](double v) { return std::nearbyint(v); }},  // the default FE_TONEAREST mode
      {"half away from zero", [](double v) { return std::round(v); }},
      {"half up", [](double v) { return std::floor(v + 0.5); }},
      {"truncation toward zero", [](double v) { return std::trunc(v); }},
      {"floor", [](double v) { return std::floor(v); }},
  }};
  return modes;
}

double saturate(double value, const Range& range) {
  return std::clamp(value, static_cast<double>(range.low), static_cast<double>(range.high));
}

onnx::TensorProto scalar(const std::string& name, int32_t type, double value) {
  onnx::TensorProto tensor;
  tensor.set_name(name);
  tensor.set_data_type(type);
  if (type == onnx::TensorProto::FLOAT) {
    tensor.add_float_data(static_cast<float>(value));
  } else if (type == onnx::TensorProto::FLOAT16 || type == onnx::TensorProto::BFLOAT16) {
    tensor.add_int32_data(type == onnx::TensorProto::FLOAT16 ? float_to_half(static_cast<float>(value))
                                                             : float_to_bfloat16(static_cast<float>(value)));
  } else {
    tensor.add_int32_data(static_cast<int32_t>(value));
  }
  return tensor;
}

std::string audit_model(const QuantizePair& pair, int opset) {
  onnx::ModelProto model;
  model.set_ir_version(opset >= 23 ? 11 : opset >= 21 ? 10 : opset >= 19 ? 9 : 8);  // the oldest IR that imports it
  model.add_opset_import()->set_version(opset);
  auto* graph = model.mutable_graph();
  graph->set_name("rounding_audit");
  auto* node = graph->add_node();
  node->set_op_type("QuantizeLinear");
  node->add_input("x");
  node->add_input("scale");
  node->add_input("zero_point");
  node->add_output("y");
  const auto input_type = static_cast<int32_t>(pair.input);
  const auto output_type = static_cast<int32_t>(pair.output);
  *graph->add_initializer() = scalar("scale", input_type, 1.0);
  *graph->add_initializer() = scalar("zero_point", output_type, 0.0);
  auto add_value = [](google::protobuf::RepeatedPtrField<onnx::ValueInfoProto>* values, const char* name,
                      int32_t type) {
    auto* value = values->Add();
    value->set_name(name);
    auto* tensor = value->mutable_type()->mutable_tensor_type();
    tensor->set_elem_type(type);
    tensor->mutable_shape()->add_dim()->set_dim_param("n");
  };
  add_value(graph->mutable_input(), "x", input_type);
  add_value(graph->mutable_output(), "y", output_type);
  return model.SerializeAsString();
}

Expected<Tensor> input_tensor(const QuantizePair& pair, const std::vector<double>& values) {
  const auto count = static_cast<int64_t>(values.size());
  ONNXPROOF_TRY_ASSIGN(Tensor tensor, Tensor::zeros(pair.input, {count}));
  for (int64_t i = 0; i < count; ++i) {
    const auto value = static_cast<float>(values[static_cast<std::size_t>(i)]);
    if (pair.input == DType::float16) {
      tensor.mutable_values<uint16_t>()[static_cast<std::size_t>(i)] = float_to_half(value);
    } else if (pair.input == DType::bfloat16) {
      tensor.mutable_values<uint16_t>()[static_cast<std::size_t>(i)] = float_to_bfloat16(value);
    } else {
      tensor.mutable_values<float>()[static_cast<std::size_t>(i)] = value;
    }
  }
  return tensor;
}

// Names the rounding the outputs show: the first mode every value agrees with, else "another rounding".
std::string mode_shown(const std::vector<double>& values, const Tensor& got, const Range& range) {
  for (const auto& [name, round] : rounding_modes()) {
    bool all = true;
    for (std::size_t i = 0; i < values.size() && all; ++i)
      all = got.value_as_double(static_cast<int64_t>(i)) == saturate(round(values[i]), range);
    if (all) return name;
  }
  return "another rounding";
}

}  // namespace

std::vector<QuantizePair> quantize_pairs(const onnx::ModelProto& model) {
  std::set<QuantizePair> pairs;
  for_each_graph(model.graph(), [&](const onnx::GraphProto& graph) {
    std::map<std::string, int32_t> types;
    for (const auto& initializer : graph.initializer()) types[initializer.name()] = initializer.data_type();
    for (const auto& node : graph.node()) {
      if (node.op_type() != "QuantizeLinear" || node.input_size() < 2) continue;
      const auto scale = types.find(node.input(1));
      const auto zero_point = node.input_size() > 2 ? types.find(node.input(2)) : types.end();
      QuantizePair pair;
      if (scale != types.end() && dtype_from_onnx(scale->second)) pair.input = *dtype_from_onnx(scale->second);
      pair.output = zero_point != types.end() && dtype_from_onnx(zero_point->second)
                        ? *dtype_from_onnx(zero_point->second)
                        : DType::uint8;
      const std::set<DType> floats = {DType::float32, DType::float16, DType::bfloat16};
      const std::set<DType> integers = {DType::int8, DType::uint8, DType::int16, DType::uint16};
      if (floats.contains(pair.input) && integers.contains(pair.output)) pairs.insert(pair);
    }
  });
  return {pairs.begin(), pairs.end()};
}

RoundingAudit audit_rounding(const std::string& provider, const QuantizePair& pair, int opset) {
  RoundingAudit audit;
  audit.provider = provider;
  audit.pair = pair;
  // The model's own opset (its schema of QuantizeLinear), at least the first that takes the pair:
  // 16-bit integers since 21, float16 and bfloat16 inputs since 19.
  const bool wide_integer = pair.output == DType::int16 || pair.output == DType::uint16;
  opset = std::max(opset, wide_integer ? 21 : pair.input != DType::float32 ? 19 : 13);
  const std::vector<double> values = tie_values(pair);
  auto session =
      Session::open_bytes(audit_model(pair, opset), SessionOptions{.provider = provider, .intra_op_threads = 1});
  auto input = input_tensor(pair, values);
  if (!session || !input) {
    audit.error = !session ? session.error().describe() : input.error().describe();
    return audit;
  }
  auto outputs = session->run({{"x", &*input}});
  if (!outputs || outputs->size() != 1 || outputs->front().size() != static_cast<int64_t>(values.size())) {
    audit.error = outputs ? "QuantizeLinear gave another number of values" : outputs.error().describe();
    return audit;
  }
  const Tensor& got = outputs->front();
  const Range range = range_of(pair.output);
  audit.values = static_cast<int64_t>(values.size());
  for (std::size_t i = 0; i < values.size(); ++i) {
    const double expected = saturate(std::nearbyint(values[i]), range);
    const double actual = got.value_as_double(static_cast<int64_t>(i));
    if (actual == expected) continue;
    if (audit.mismatches++ == 0)
      audit.example = fmt::format("x/scale = {:g} gave {:g}, half to even is {:g}", values[i], actual, expected);
  }
  audit.mode = mode_shown(values, got, range);
  return audit;
}

}  // namespace onnxproof
