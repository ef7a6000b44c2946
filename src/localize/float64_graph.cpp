// The ONNX graph's own float64 run (localize/float64_graph.h).
#include "onnxproof/localize/float64_graph.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <set>

#include <onnx/defs/schema.h>
#include <onnx/shape_inference/implementation.h>

#include "onnxproof/model/model_io.h"
#include "onnxproof/tensor/tensor_io.h"

namespace onnxproof {
namespace fs = std::filesystem;

namespace {

constexpr int k_float = onnx::TensorProto::FLOAT;
constexpr int k_double = onnx::TensorProto::DOUBLE;

// A float32 tensor as float64; any other as it is.
Tensor widened(const Tensor& tensor) {
  if (tensor.dtype() != DType::float32) return tensor;
  std::vector<std::byte> bytes(static_cast<std::size_t>(tensor.size()) * sizeof(double));
  auto* out = reinterpret_cast<double*>(bytes.data());
  const auto in = tensor.values<float>();
  for (std::size_t i = 0; i < in.size(); ++i) out[i] = in[i];
  auto wide = Tensor::from_bytes(DType::float64, tensor.shape(), std::move(bytes));
  return wide ? std::move(*wide) : tensor;
}

void widen_tensor(onnx::TensorProto& proto) {
  if (proto.data_type() != k_float) return;
  auto tensor = tensor_from_proto(proto);
  if (!tensor) return;  // left as float32: the session then says what it cannot run
  const std::string name = proto.name();
  proto = tensor_to_proto(widened(*tensor), name);
}

void widen_type(onnx::TypeProto& type) {
  if (type.has_tensor_type() && type.tensor_type().elem_type() == k_float)
    type.mutable_tensor_type()->set_elem_type(k_double);
  if (type.has_sequence_type()) widen_type(*type.mutable_sequence_type()->mutable_elem_type());
  if (type.has_optional_type()) widen_type(*type.mutable_optional_type()->mutable_elem_type());
}

// The values that only an input taking float32 reads: Resize's and Upsample's scales, the
// quantization operators' scales.
std::set<std::string> float32_only_inputs(const onnx::GraphProto& graph) {
  std::set<std::string> kept;
  for (const auto& node : graph.node()) {
    const std::string& op = node.op_type();
    const bool scale_first = op == "Upsample" || op == "QuantizeLinear" || op == "DequantizeLinear";
    const int position = op == "Resize" ? 2 : scale_first ? 1 : -1;
    if (position >= 0 && node.input_size() > position) kept.insert(node.input(position));
  }
  return kept;
}

void widen_graph(onnx::GraphProto& graph) {
  const auto kept = float32_only_inputs(graph);
  for (auto& initializer : *graph.mutable_initializer())
    if (!kept.contains(initializer.name())) widen_tensor(initializer);
  for (auto* values : {graph.mutable_input(), graph.mutable_output(), graph.mutable_value_info()})
    for (auto& value : *values)
      if (!kept.contains(value.name())) widen_type(*value.mutable_type());
  for (auto& node : *graph.mutable_node()) {
    const bool keep = node.output_size() > 0 && kept.contains(node.output(0));
    for (auto& attribute : *node.mutable_attribute()) {
      if (attribute.has_g()) widen_graph(*attribute.mutable_g());
      for (auto& subgraph : *attribute.mutable_graphs()) widen_graph(subgraph);
      if (keep) continue;
      if (attribute.has_t()) widen_tensor(*attribute.mutable_t());
      if (node.op_type() == "Cast" && attribute.name() == "to" && attribute.i() == k_float) attribute.set_i(k_double);
      const bool floats = attribute.name() == "value_floats";
      if (node.op_type() == "Constant" && (attribute.name() == "value_float" || floats)) {
        onnx::TensorProto wide;
        wide.set_data_type(k_double);
        if (!floats) wide.add_double_data(attribute.f());
        for (const float value : attribute.floats()) wide.add_double_data(value);
        if (floats) wide.add_dims(attribute.floats_size());
        attribute.Clear();
        attribute.set_name("value");
        attribute.set_type(onnx::AttributeProto::TENSOR);
        *attribute.mutable_t() = wide;
      }
    }
  }
}

Float64Deviation deviation(const Tensor& narrow, const Tensor& wide) {
  Float64Deviation d;
  for (int64_t i = 0; i < wide.size() && i < narrow.size(); ++i) {
    const double a = narrow.value_as_double(i), b = wide.value_as_double(i);
    if (std::isfinite(a) != std::isfinite(b)) ++d.nonfinite;
    if (!std::isfinite(a) || !std::isfinite(b)) continue;
    d.max_abs = std::max(d.max_abs, std::abs(a - b));
    d.scale = std::max(d.scale, std::abs(b));
  }
  d.rel = d.scale > 0 ? d.max_abs / d.scale : 0;
  return d;
}

// Runs `model` on `c` and returns its outputs by name.
Expected<std::map<std::string, Tensor>> outputs_of(const onnx::ModelProto& model, const ReferenceCase& c,
                                                   const SessionOptions& options) {
  if (model.ByteSizeLong() >= (uint64_t{1} << 31))
    return fail(ErrorCode::unsupported, "the float64 copy is over 2 GiB");
  ONNXPROOF_TRY_ASSIGN(Session session, Session::open_bytes(model.SerializeAsString(), options));
  ONNXPROOF_TRY_ASSIGN(std::vector<Tensor> outputs, run_case(session, c));
  std::map<std::string, Tensor> by_name;
  for (std::size_t i = 0; i < outputs.size(); ++i) by_name.emplace(session.outputs()[i].name, std::move(outputs[i]));
  return by_name;
}

// The value types shape inference gives the (widened) graph, by value name.
std::map<std::string, int> value_types(const onnx::ModelProto& model) {
  onnx::ModelProto copy = model;  // without its weights' bytes: types need none
  for (auto& initializer : *copy.mutable_graph()->mutable_initializer()) {
    initializer.clear_raw_data();
    initializer.clear_double_data();
    initializer.clear_float_data();
  }
  try {
    onnx::shape_inference::InferShapes(copy, onnx::OpSchemaRegistry::Instance(),
                                       onnx::ShapeInferenceOptions(false, 0, false));
  } catch (const std::exception&) {
  }
  std::map<std::string, int> types;
  const auto& graph = copy.graph();
  for (const auto* values : {&graph.input(), &graph.output(), &graph.value_info()})
    for (const auto& value : *values)
      if (value.type().has_tensor_type()) types[value.name()] = value.type().tensor_type().elem_type();
  for (const auto& initializer : graph.initializer()) types[initializer.name()] = initializer.data_type();
  return types;
}

onnx::NodeProto cast(const std::string& from, const std::string& to, int type) {
  onnx::NodeProto node;
  node.set_op_type("Cast");
  node.set_name(to + "/float64_twin_cast");
  node.add_input(from);
  node.add_output(to);
  auto* attribute = node.add_attribute();
  attribute->set_name("to");
  attribute->set_type(onnx::AttributeProto::INT);
  attribute->set_i(type);
  return node;
}

// Whether the schema lets formal parameter `index` of `node` (an input, else an output) be double:
// a value shape inference gave no type is taken as widened when it may be.
bool may_be_double(const onnx::NodeProto& node, int opset, std::size_t index, bool input) {
  const auto* schema = onnx::OpSchemaRegistry::Schema(node.op_type(), opset, node.domain());
  if (!schema) return false;
  const auto& formals = input ? schema->inputs() : schema->outputs();
  if (formals.empty()) return false;
  const auto& formal = formals[std::min(index, formals.size() - 1)];
  for (const auto& constraint : schema->typeConstraintParams())
    if (constraint.type_param_str == formal.GetTypeStr())
      return std::find(constraint.allowed_type_strs.begin(), constraint.allowed_type_strs.end(), "tensor(double)") !=
             constraint.allowed_type_strs.end();
  return formal.GetTypeStr() == "tensor(double)";
}

// Each node of `ops` (of the top-level graph) computed in float32 between casts: its float64
// inputs cast down (once per value), its float64 outputs cast back up.
void narrow_nodes(onnx::ModelProto& model, const std::set<std::string>& ops) {
  const auto types = value_types(model);
  int opset = 0;
  for (const auto& import : model.opset_import())
    if (import.domain().empty() || import.domain() == "ai.onnx") opset = static_cast<int>(import.version());
  const auto is_double = [&](const std::string& name, const onnx::NodeProto& node, std::size_t i, bool input) {
    const auto found = types.find(name);
    return found != types.end() ? found->second == k_double : may_be_double(node, opset, i, input);
  };
  auto& graph = *model.mutable_graph();
  google::protobuf::RepeatedPtrField<onnx::NodeProto> nodes;
  std::set<std::string> cast_down;
  for (auto& node : *graph.mutable_node()) {
    if (!ops.contains(node.op_type())) {
      *nodes.Add() = std::move(node);
      continue;
    }
    const onnx::NodeProto original = node;
    std::vector<onnx::NodeProto> after;
    for (int i = 0; i < node.input_size(); ++i) {
      const std::string input = node.input(i);
      if (input.empty() || !is_double(input, original, static_cast<std::size_t>(i), true)) continue;
      if (cast_down.insert(input).second) *nodes.Add() = cast(input, input + "/float32", k_float);
      node.set_input(i, input + "/float32");
    }
    for (int i = 0; i < node.output_size(); ++i) {
      const std::string output = node.output(i);
      if (output.empty() || !is_double(output, original, static_cast<std::size_t>(i), false)) continue;
      after.push_back(cast(output + "/float32", output, k_double));
      node.set_output(i, output + "/float32");
    }
    *nodes.Add() = std::move(node);
    for (auto& up : after) *nodes.Add() = std::move(up);
  }
  *graph.mutable_node() = std::move(nodes);
}

// The operator ONNX Runtime names when it has no kernel for a node ("Could not find an
// implementation for Conv(11) node ..."): "Conv"; empty when the message says something else.
std::string missing_kernel(const std::string& message) {
  static const std::string marker = "Could not find an implementation for ";
  const auto at = message.find(marker);
  if (at == std::string::npos) return "";
  const auto start = at + marker.size();
  const auto end = message.find('(', start);
  return end == std::string::npos ? "" : message.substr(start, end - start);
}

// The operator to run in float32 next: `missing` when the graph has such nodes; else (ONNX Runtime
// named a node of a function it expanded: Gelu's Erf) the first operator of the graph, not yet
// narrowed, that ONNX defines by a function. Empty when there is none.
std::string next_float32_op(const onnx::ModelProto& model, const std::string& missing,
                            const std::set<std::string>& narrowed) {
  if (missing.empty()) return "";
  int opset = 0;
  for (const auto& import : model.opset_import())
    if (import.domain().empty() || import.domain() == "ai.onnx") opset = static_cast<int>(import.version());
  std::string function_op;
  for (const auto& node : model.graph().node()) {
    if (node.op_type() == missing) return narrowed.contains(missing) ? "" : missing;
    const auto* schema = onnx::OpSchemaRegistry::Schema(node.op_type(), opset, node.domain());
    if (function_op.empty() && schema && (schema->HasFunction() || schema->HasContextDependentFunction()) &&
        !narrowed.contains(node.op_type()))
      function_op = node.op_type();
  }
  return function_op;
}

constexpr uint64_t k_largest_weights = uint64_t{512} << 20;

// The bytes of the model's initializers, inline or in external data (its `length` entries).
// (An external tensor without a `length` counts its whole file, once.)
uint64_t weight_bytes(const onnx::ModelProto& model, const fs::path& folder) {
  uint64_t total = 0;
  std::set<std::string> whole_files;
  for (const auto& initializer : model.graph().initializer()) {
    total += initializer.ByteSizeLong();
    std::string location, length;
    for (const auto& entry : initializer.external_data()) {
      if (entry.key() == "location") location = entry.value();
      if (entry.key() == "length") length = entry.value();
    }
    if (!length.empty()) {
      total += std::strtoull(length.c_str(), nullptr, 10);
    } else if (!location.empty() && whole_files.insert(location).second) {
      std::error_code ec;
      const auto size = fs::file_size(folder / location, ec);
      total += ec ? 0 : size;
    }
  }
  return total;
}

}  // namespace

onnx::ModelProto float64_model(onnx::ModelProto model, const std::set<std::string>& float32_ops) {
  widen_graph(*model.mutable_graph());
  if (!float32_ops.empty()) narrow_nodes(model, float32_ops);
  return model;
}

Float64Run float64_deviations(const fs::path& model, const ReferenceCase& c, const std::vector<std::string>& values,
                              const SessionOptions& options) {
  Float64Run run;
  // The float64 copy doubles the weights beside the float32 model: not for large models.
  if (auto structure = load_model(model, {.load_external_data = false}); structure) {
    const uint64_t bytes = weight_bytes(structure->proto, model.parent_path());
    if (bytes > k_largest_weights) {
      run.unavailable = fmt::format(
          "not run: the model's {} MiB of weights would be held three times (float32, "
          "float64 and ONNX Runtime's); the limit is {} MiB",
          bytes >> 20, k_largest_weights >> 20);
      return run;
    }
  }
  auto loaded = load_model(model, {.load_external_data = true});
  if (!loaded) {
    run.unavailable = loaded.error().message();
    return run;
  }
  auto& graph = *loaded->proto.mutable_graph();
  std::set<std::string> present;
  for (const auto& value : graph.output()) present.insert(value.name());
  for (const auto& value : values)
    if (present.insert(value).second) graph.add_output()->set_name(value);
  ReferenceCase wide_case = c;
  for (auto& input : wide_case.inputs) input.tensor = widened(input.tensor);
  auto narrow = outputs_of(loaded->proto, c, options);
  if (!narrow) {
    run.unavailable = "the float32 graph did not run: " + narrow.error().message();
    return run;
  }
  // An operator ONNX Runtime has no float64 kernel for (Conv, Erf) runs in float32 in the twin,
  // between casts: the rest of the graph is still float64.
  std::set<std::string> float32_ops;
  auto wide = outputs_of(float64_model(loaded->proto), wide_case, options);
  while (!wide && float32_ops.size() < 16) {
    const std::string op = next_float32_op(loaded->proto, missing_kernel(wide.error().message()), float32_ops);
    if (op.empty()) break;
    float32_ops.insert(op);
    wide = outputs_of(float64_model(loaded->proto, float32_ops), wide_case, options);
  }
  if (!wide) {
    run.unavailable = "ONNX Runtime cannot run the graph in float64: " + wide.error().message();
    return run;
  }
  run.float32_ops.assign(float32_ops.begin(), float32_ops.end());
  for (const auto& name : values) {
    const auto a = narrow->find(name), b = wide->find(name);
    if (a == narrow->end() || b == wide->end() || a->second.dtype() != DType::float32 ||
        b->second.dtype() != DType::float64 || a->second.shape() != b->second.shape())
      continue;
    run.values.emplace(name, deviation(a->second, b->second));
  }
  return run;
}

}  // namespace onnxproof
