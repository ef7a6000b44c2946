#include "onnxproof/quantize/grid.h"

#include <algorithm>
#include <cmath>
#include <set>
#include <variant>

#include <fmt/format.h>

#include "onnxproof/model/graph_walk.h"
#include "onnxproof/model/model_io.h"
#include "onnxproof/tensor/tensor_io.h"

namespace onnxproof {
namespace {

bool is_integer_op(const std::string& op) {
  static const std::set<std::string> ops = {"MatMulInteger",
                                            "ConvInteger",
                                            "QGemm",
                                            "QAttention",
                                            "QEmbedLayerNormalization",
                                            "DynamicQuantizeMatMul",
                                            "MatMulNBits",
                                            "MatMulIntegerToFloat"};
  return op.starts_with("QLinear") || ops.contains(op);
}

// The tensor a name holds when the graph fixes it: an initializer or a Constant's value.
const onnx::TensorProto* constant_named(const onnx::GraphProto& graph, const std::string& name) {
  for (const auto& initializer : graph.initializer()) {
    if (initializer.name() == name) return &initializer;
  }
  for (const auto& node : graph.node()) {
    if (node.op_type() != "Constant" || node.output_size() != 1 || node.output(0) != name) continue;
    for (const auto& attribute : node.attribute()) {
      if (attribute.name() == "value" && attribute.has_t()) return &attribute.t();
    }
  }
  return nullptr;
}

bool has_block_size(const onnx::NodeProto& node) {
  return std::any_of(node.attribute().begin(), node.attribute().end(),
                     [](const onnx::AttributeProto& a) { return a.name() == "block_size" && a.i() != 0; });
}

int64_t axis_of(const onnx::NodeProto& node) {
  for (const auto& attribute : node.attribute()) {
    if (attribute.name() == "axis") return attribute.i();
  }
  return 1;  // the operator's default
}

}  // namespace

double QuantGrid::scale_at(int64_t flat, const std::vector<int64_t>& shape) const {
  if (scales.size() == 1 || axis < 0 || shape.empty()) return scales.front();
  const auto rank = static_cast<int64_t>(shape.size());
  const int64_t dimension = (axis % rank + rank) % rank;
  int64_t inner = 1;
  for (int64_t a = dimension + 1; a < rank; ++a) inner *= shape[static_cast<std::size_t>(a)];
  const auto index = static_cast<std::size_t>((flat / inner) % shape[static_cast<std::size_t>(dimension)]);
  return index < scales.size() ? scales[index] : scales.front();
}

QdqCensus count_qdq(const onnx::ModelProto& model) {
  QdqCensus census;
  for_each_graph(model.graph(), [&](const onnx::GraphProto& graph) {
    for (const auto& node : graph.node()) {
      const std::string& op = node.op_type();
      if (op == "QuantizeLinear" || op == "DynamicQuantizeLinear") {
        ++census.quantize;
      } else if (op == "DequantizeLinear") {
        ++census.dequantize;
      } else if (is_integer_op(op)) {
        ++census.integer_ops;
      } else {
        continue;
      }
      ++census.by_op[op];
    }
  });
  return census;
}

namespace {

// The grid of the DequantizeLinear `node`, or why it has none usable for steps.
std::variant<QuantGrid, std::string> grid_of(const onnx::GraphProto& graph, const onnx::NodeProto& node) {
  const onnx::TensorProto* scale = constant_named(graph, node.input(1));
  if (!scale) return std::string("its scale is no initializer or Constant of the graph");
  if (has_block_size(node)) return std::string("it dequantizes in blocks (block_size)");
  if (scale->data_location() == onnx::TensorProto::EXTERNAL)
    return std::string("its scale is stored as external data, which parity does not read");
  auto tensor = tensor_from_proto(*scale);
  if (!tensor || tensor->size() < 1) return std::string("its scale cannot be read");
  QuantGrid grid;
  for (int64_t i = 0; i < tensor->size(); ++i) grid.scales.push_back(tensor->value_as_double(i));
  // A scale of 0 (an output of zeros), negative or not finite has no steps: the other rules judge it.
  if (!std::all_of(grid.scales.begin(), grid.scales.end(), [](double s) { return std::isfinite(s) && s > 0.0; }))
    return std::string("its scale is 0, negative or not finite");
  grid.axis = tensor->size() > 1 ? axis_of(node) : -1;
  grid.node = node.name();
  return grid;
}

}  // namespace

std::map<std::string, QuantGrid> output_grids(const onnx::ModelProto& model,
                                              std::map<std::string, std::string>* no_grid) {
  const auto& graph = model.graph();
  std::map<std::string, QuantGrid> grids;
  for (const auto& output : graph.output()) {
    for (const auto& node : graph.node()) {
      if (node.op_type() != "DequantizeLinear" || node.output_size() < 1 || node.output(0) != output.name() ||
          node.input_size() < 2) {
        continue;
      }
      auto grid = grid_of(graph, node);
      if (auto* found = std::get_if<QuantGrid>(&grid)) {
        grids[output.name()] = std::move(*found);
      } else if (no_grid) {
        (*no_grid)[output.name()] =
            fmt::format("DequantizeLinear '{}' makes it, but {}", node.name(), std::get<std::string>(grid));
      }
      break;
    }
  }
  return grids;
}

Expected<QuantizedModel> read_quantization(const std::filesystem::path& model) {
  ONNXPROOF_TRY_ASSIGN(const LoadedModel loaded, load_model(model));
  QuantizedModel quantized{
      count_qdq(loaded.proto), {}, quantize_pairs(loaded.proto), default_domain_opset(loaded.proto), {}};
  quantized.grids = output_grids(loaded.proto, &quantized.no_grid);
  return quantized;
}

}  // namespace onnxproof
