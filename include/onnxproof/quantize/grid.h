#pragma once
// Quantized models (docs/quantization.md): where a graph's quantization grids are. An output that a
// DequantizeLinear produces takes only the values (q - zero point) x scale, so two correct runs
// differ from each other by whole quantization steps: the unit its parity is judged in.

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "onnxproof/core/error.h"
#include "onnxproof/quantize/rounding_audit.h"

namespace onnx {
class ModelProto;
}

namespace onnxproof {

/// A DequantizeLinear's grid: one scale for the tensor (axis -1), or one per index of `axis`.
struct QuantGrid {
  std::vector<double> scales;
  int64_t axis = -1;
  std::string node;  // the DequantizeLinear that sets it

  /// The scale that element `flat` of a tensor of `shape` is on.
  double scale_at(int64_t flat, const std::vector<int64_t>& shape) const;
};

/// The quantization nodes of a graph (subgraphs included).
struct QdqCensus {
  int64_t quantize = 0;                  // QuantizeLinear, DynamicQuantizeLinear
  int64_t dequantize = 0;                // DequantizeLinear
  int64_t integer_ops = 0;               // QLinear*, MatMulInteger, ConvInteger, com.microsoft Q* kernels
  std::map<std::string, int64_t> by_op;  // every one of them by op type

  bool quantized() const { return quantize + dequantize + integer_ops > 0; }
};

QdqCensus count_qdq(const onnx::ModelProto& model);

/// The graph outputs that a DequantizeLinear produces, with a scale held in the graph (an
/// initializer or a Constant, in the model file itself), per tensor or per axis, every scale
/// finite and positive; an output behind anything else (a blocked grid, a scale of 0) is on no grid.
/// `no_grid`, when given, gets each output a DequantizeLinear makes that has no usable grid, and why.
std::map<std::string, QuantGrid> output_grids(const onnx::ModelProto& model,
                                              std::map<std::string, std::string>* no_grid = nullptr);

/// Both of the above from a model file (its external data is not read: a scale stored there
/// leaves its output on no grid, judged by the calibrated rule).
struct QuantizedModel {
  QdqCensus census;
  std::map<std::string, QuantGrid> grids;
  std::vector<QuantizePair> pairs;  // its QuantizeLinear type pairs (rounding_audit.h)
  int opset = 0;
  std::map<std::string, std::string> no_grid;  // outputs a DequantizeLinear makes, judged otherwise: why
};
Expected<QuantizedModel> read_quantization(const std::filesystem::path& model);

}  // namespace onnxproof
