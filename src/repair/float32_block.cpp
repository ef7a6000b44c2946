// The float32 block of a --precision fp16 repair: first the nodes whose constants float16 cannot
// hold (the converter clamps them: on ONNX Runtime's CPU provider, which computes a float16
// model's activations in float32, these are what breaks); else the shortest run of nodes (in the
// graph's order) whose float32 keeps the conversion within the proof's budget, found by two
// bisections over conversions proved on the failing cases.
#include <fmt/format.h>

#include <onnx/onnx_pb.h>
#include <algorithm>
#include <cmath>
#include <set>

#include "onnxproof/export/float16.h"
#include "onnxproof/model/model_io.h"
#include "onnxproof/repair/repair.h"
#include "onnxproof/tensor/tensor_io.h"

namespace onnxproof {
namespace fs = std::filesystem;

namespace {

// Converts `model` with `kept` in float32 and proves it on `reference`: true when it passes.
class BlockProof {
 public:
  BlockProof(const Float32BlockSearch& search, const fs::path& scratch) : m_search(search), m_scratch(scratch) {}

  Expected<bool> passes(const std::vector<std::string>& kept) {
    ++m_conversions;
    const fs::path converted = m_scratch / "model.fp16.onnx";
    ONNXPROOF_TRY(convert_to_float16(m_search.model, converted, m_search.python, m_search.timeout_seconds, kept));
    ONNXPROOF_TRY_ASSIGN(const auto result, run_parity(converted, m_search.reference, m_search.parity));
    return result.passed();
  }

  int conversions() const { return m_conversions; }

 private:
  const Float32BlockSearch& m_search;
  fs::path m_scratch;
  int m_conversions = 0;
};

// ONNX Runtime's converter (onnxruntime.transformers.float16) clamps constants into these bounds.
constexpr double k_float16_largest = 65504.0;
constexpr double k_float16_smallest = 5.96e-08;

bool beyond_float16(const onnx::TensorProto& proto) {
  if (proto.data_type() != onnx::TensorProto::FLOAT && proto.data_type() != onnx::TensorProto::DOUBLE) return false;
  auto tensor = tensor_from_proto(proto);  // an external tensor without its bytes: not read
  if (!tensor) return false;
  for (int64_t i = 0; i < tensor->size(); ++i) {
    const double v = std::abs(tensor->value_as_double(i));
    if (std::isfinite(v) && (v > k_float16_largest || (v > 0 && v < k_float16_smallest))) return true;
  }
  return false;
}

// The named nodes that read a constant (an initializer or a Constant's value) float16 cannot hold.
std::vector<std::string> nodes_reading_constants_beyond_float16(const onnx::GraphProto& graph) {
  std::set<std::string> beyond;
  for (const auto& initializer : graph.initializer())
    if (beyond_float16(initializer)) beyond.insert(initializer.name());
  for (const auto& node : graph.node()) {
    if (node.op_type() != "Constant" || node.output_size() != 1) continue;
    for (const auto& attribute : node.attribute())
      if (attribute.name() == "value" && beyond_float16(attribute.t())) beyond.insert(node.output(0));
  }
  std::vector<std::string> nodes;
  for (const auto& node : graph.node()) {
    const bool reads = std::any_of(node.input().begin(), node.input().end(),
                                   [&](const std::string& input) { return beyond.contains(input); });
    if (reads && node.op_type() != "Constant" && !node.name().empty()) nodes.push_back(node.name());
  }
  return nodes;
}

std::vector<std::string> slice(const std::vector<std::string>& nodes, std::size_t from, std::size_t to) {
  return {nodes.begin() + static_cast<std::ptrdiff_t>(from), nodes.begin() + static_cast<std::ptrdiff_t>(to)};
}

}  // namespace

Expected<Float32Block> find_float32_block(const Float32BlockSearch& search, const fs::path& scratch) {
  ONNXPROOF_TRY_ASSIGN(const auto loaded, load_model(search.model));
  std::vector<std::string> nodes;
  for (const auto& node : loaded.proto.graph().node())
    if (!node.name().empty()) nodes.push_back(node.name());  // the converter's block list goes by name
  BlockProof proof{search, scratch};
  Float32Block block;
  if (auto clamped = nodes_reading_constants_beyond_float16(loaded.proto.graph()); !clamped.empty()) {
    ONNXPROOF_TRY_ASSIGN(const bool passes, proof.passes(clamped));
    if (passes) {
      block.nodes = std::move(clamped);
      block.conversions = proof.conversions();
      return block;
    }
  }
  ONNXPROOF_TRY_ASSIGN(const bool all_kept, proof.passes(nodes));
  if (!all_kept) {
    block.conversions = proof.conversions();
    return block;  // float16 is not what breaks it: no block to keep
  }
  // The shortest prefix that passes ends with the block; the longest start that still passes begins it.
  std::size_t low = 0, high = nodes.size();  // prefix [0, high) passes
  while (high - low > 1) {
    const std::size_t middle = (low + high) / 2;
    ONNXPROOF_TRY_ASSIGN(const bool passes, proof.passes(slice(nodes, 0, middle)));
    (passes ? high : low) = middle;
  }
  std::size_t start = 0, stop = high;  // [start, high) passes; [stop, high) is not known to
  while (stop - start > 1) {
    const std::size_t middle = (start + stop) / 2;
    ONNXPROOF_TRY_ASSIGN(const bool passes, proof.passes(slice(nodes, middle, high)));
    (passes ? start : stop) = middle;
  }
  block.conversions = proof.conversions();
  // Every node in float32 is the float32 model again, not a float16 one that holds.
  if (high - start < nodes.size()) block.nodes = slice(nodes, start, high);
  return block;
}

}  // namespace onnxproof
