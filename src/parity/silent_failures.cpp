#include "onnxproof/parity/silent_failures.h"

#include <cmath>
#include <limits>
#include <map>
#include <set>
#include <vector>

#include "onnxproof/model/model_io.h"
#include "onnxproof/parity/parity.h"

namespace onnxproof {
namespace fs = std::filesystem;

namespace {

constexpr double k_float16_max = 65504.0;

// The largest finite magnitudes a value of `dtype` saturates at: its own, and for float32 also
// float16's (a float16 stage whose result was cast back keeps 65504 exactly). Empty for others.
std::vector<double> saturation_magnitudes(DType dtype) {
  switch (dtype) {
    case DType::float16:
      return {k_float16_max};
    case DType::bfloat16:
      return {3.3895313892515355e38};
    case DType::float32:
      return {static_cast<double>(std::numeric_limits<float>::max()), k_float16_max};
    case DType::float64:
      return {std::numeric_limits<double>::max()};
    default:
      return {};
  }
}

// The saturation magnitude `value` sits at, or 0 when none.
double saturated_at(double value, const std::vector<double>& magnitudes) {
  for (const double magnitude : magnitudes) {
    if (std::fabs(value) == magnitude) return magnitude;
  }
  return 0.0;
}

// True when PyTorch's element is itself at (within 1% of) that magnitude: no silent sign. A PyTorch
// value far beyond it (8e5 where ONNX Runtime gives 65504) is exactly what saturation looks like.
bool near_magnitude(double expected, double magnitude) {
  return std::fabs(std::fabs(expected) - magnitude) <= 0.01 * magnitude;
}

bool all_zero(const Tensor& values) {
  for (int64_t i = 0; i < values.size(); ++i) {
    if (values.value_as_double(i) != 0.0) return false;  // NaN counts as non-zero
  }
  return true;
}

}  // namespace

std::string_view silent_sign_name(SilentSign sign) {
  switch (sign) {
    case SilentSign::all_zeros:
      return "all zeros";
    case SilentSign::saturated:
      return "saturated";
    case SilentSign::non_finite:
      break;
  }
  return "NaN/Inf";
}

SilentSigns detect_silent_signs(const Tensor& expected, const Tensor& actual) {
  SilentSigns signs;
  if (!is_floating(actual.dtype()) || !is_floating(expected.dtype()) || expected.shape() != actual.shape() ||
      actual.size() == 0) {
    return signs;
  }
  const auto magnitudes = saturation_magnitudes(actual.dtype());
  bool actual_zero = true;
  bool expected_zero = true;
  for (int64_t i = 0; i < actual.size(); ++i) {
    const double a = actual.value_as_double(i);
    const double e = expected.value_as_double(i);
    actual_zero = actual_zero && a == 0.0;
    expected_zero = expected_zero && e == 0.0;
    if (!std::isfinite(e)) continue;  // PyTorch's own NaN/Inf: nothing silent about it
    if (!std::isfinite(a)) {
      ++signs.non_finite;
      continue;
    }
    const double magnitude = saturated_at(a, magnitudes);
    if (magnitude > 0.0 && !near_magnitude(e, magnitude)) {
      ++signs.saturated;
      signs.saturated_value = magnitude;
    }
  }
  signs.all_zeros = actual_zero && !expected_zero;
  return signs;
}

bool shows_sign(const Tensor& values, SilentSign sign) {
  if (!is_floating(values.dtype()) || values.size() == 0) return false;
  if (sign == SilentSign::all_zeros) return all_zero(values);
  const auto magnitudes = saturation_magnitudes(values.dtype());
  for (int64_t i = 0; i < values.size(); ++i) {
    const double v = values.value_as_double(i);
    if (sign == SilentSign::non_finite ? !std::isfinite(v) : saturated_at(v, magnitudes) > 0.0) return true;
  }
  return false;
}

namespace {

// A copy of the model whose outputs also carry every node output of the main graph.
Expected<onnx::ModelProto> model_with_every_value(const fs::path& model) {
  ONNXPROOF_TRY_ASSIGN(LoadedModel loaded, load_model(model, {.load_external_data = true}));
  auto& graph = *loaded.proto.mutable_graph();
  std::set<std::string> present;
  for (const auto& value : graph.output()) present.insert(value.name());
  std::vector<std::string> added;
  for (const auto& node : graph.node()) {
    for (const auto& output : node.output()) {
      if (!output.empty() && present.insert(output).second) added.push_back(output);
    }
  }
  for (const auto& name : added) graph.add_output()->set_name(name);
  if (loaded.proto.ByteSizeLong() >= (uint64_t{1} << 31)) {
    return fail(ErrorCode::unsupported, "locating a silent failure in a model over 2 GiB is not supported yet");
  }
  return std::move(loaded.proto);
}

// True when one of the node's inputs (present in `values`) is floating and has a non-zero element.
bool reads_non_zero(const onnx::NodeProto& node, const std::map<std::string, Tensor>& values) {
  for (const auto& input : node.input()) {
    const auto it = values.find(input);
    if (it != values.end() && is_floating(it->second.dtype()) && !all_zero(it->second)) return true;
  }
  return false;
}

// The main graph's node indices in an order where every node follows the nodes it reads: ONNX
// requires graph order to be one, but converters (onnxruntime.transformers.float16 appends its
// input casts last) do not always keep it. Nodes in a cycle or reading a missing value come last.
std::vector<int> topological_order(const onnx::GraphProto& graph) {
  std::map<std::string, int> producer;
  for (int i = 0; i < graph.node_size(); ++i) {
    for (const auto& output : graph.node(i).output()) producer[output] = i;
  }
  std::vector<int> waiting(static_cast<std::size_t>(graph.node_size()), 0);
  std::map<int, std::vector<int>> readers;
  for (int i = 0; i < graph.node_size(); ++i) {
    for (const auto& input : std::set<std::string>(graph.node(i).input().begin(), graph.node(i).input().end())) {
      const auto it = producer.find(input);
      if (it == producer.end() || it->second == i) continue;
      ++waiting[static_cast<std::size_t>(i)];
      readers[it->second].push_back(i);
    }
  }
  std::vector<int> order;
  std::vector<bool> placed(waiting.size(), false);
  for (int i = 0; i < graph.node_size(); ++i) {
    if (waiting[static_cast<std::size_t>(i)] == 0) order.push_back(i);
  }
  for (std::size_t next = 0; next < order.size(); ++next) {
    placed[static_cast<std::size_t>(order[next])] = true;
    for (const int reader : readers[order[next]]) {
      if (--waiting[static_cast<std::size_t>(reader)] == 0) order.push_back(reader);
    }
  }
  for (int i = 0; i < graph.node_size(); ++i) {
    if (!placed[static_cast<std::size_t>(i)]) order.push_back(i);
  }
  return order;
}

// The indices of the main graph's nodes whose results reach `output` (all of them when no node
// produces it, e.g. an empty name).
std::set<int> nodes_feeding(const onnx::GraphProto& graph, const std::string& output) {
  std::map<std::string, int> producer;
  for (int i = 0; i < graph.node_size(); ++i) {
    for (const auto& value : graph.node(i).output()) producer[value] = i;
  }
  std::set<int> feeding;
  if (!producer.contains(output)) {
    for (int i = 0; i < graph.node_size(); ++i) feeding.insert(i);
    return feeding;
  }
  std::vector<std::string> pending = {output};
  while (!pending.empty()) {
    const std::string value = std::move(pending.back());
    pending.pop_back();
    const auto it = producer.find(value);
    if (it == producer.end() || !feeding.insert(it->second).second) continue;
    for (const auto& input : graph.node(it->second).input()) pending.push_back(input);
  }
  return feeding;
}

}  // namespace

Expected<std::optional<FirstNode>> find_first_node_showing(const fs::path& model, const ReferenceCase& c,
                                                           const SessionOptions& options, SilentSign sign,
                                                           const std::string& output_name) {
  ONNXPROOF_TRY_ASSIGN(const onnx::ModelProto proto, model_with_every_value(model));
  ONNXPROOF_TRY_ASSIGN(Session session, Session::open_bytes(proto.SerializeAsString(), options));
  ONNXPROOF_TRY_ASSIGN(std::vector<Tensor> outputs, run_case(session, c));
  std::map<std::string, Tensor> values;
  for (std::size_t i = 0; i < outputs.size(); ++i) values.emplace(session.outputs()[i].name, std::move(outputs[i]));
  for (const auto& input : c.inputs) values.emplace(input.name, input.tensor);
  const std::set<int> feeding = nodes_feeding(proto.graph(), output_name);
  for (const int index : topological_order(proto.graph())) {
    if (!feeding.contains(index)) continue;
    const auto& node = proto.graph().node(index);
    for (const auto& output : node.output()) {
      const auto it = values.find(output);
      if (it == values.end() || !shows_sign(it->second, sign)) continue;
      if (sign == SilentSign::all_zeros && !reads_non_zero(node, values)) continue;
      return FirstNode{node.name().empty() ? "#" + std::to_string(index) : node.name(), node.op_type(), output};
    }
  }
  return std::optional<FirstNode>{};
}

}  // namespace onnxproof
