#pragma once
// The rounding audit (docs/quantization.md): QuantizeLinear must round x / scale half to even and
// saturate at its type's ends. Providers have not always (ONNX Runtime's float16 QuantizeLinear
// truncated, onnxruntime PR#32452; the OpenVINO provider rounds half away from zero,
// onnxruntime#25045). Before a quantized model's own comparison, every tie x / scale = k + 0.5 of
// the model's (input, output) type pairs, both signs and past both ends, goes through each
// provider's QuantizeLinear alone; a provider that rounds another way is named with the mode it
// showed.

#include <cstdint>
#include <string>
#include <vector>

#include "onnxproof/core/error.h"
#include "onnxproof/tensor/dtype.h"

namespace onnx {
class ModelProto;
}

namespace onnxproof {

/// One QuantizeLinear type pair of a model: the input (float32, float16, bfloat16) and the
/// quantized type (int8, uint8, int16, uint16).
struct QuantizePair {
  DType input = DType::float32;
  DType output = DType::int8;
  auto operator<=>(const QuantizePair&) const = default;
};

/// The pairs the model's QuantizeLinear nodes use (from their scale's and zero point's types;
/// no zero point: uint8, the operator's default).
std::vector<QuantizePair> quantize_pairs(const onnx::ModelProto& model);

struct RoundingAudit {
  std::string provider;
  QuantizePair pair;
  int64_t values = 0;      // inputs tried: every tie of the type's range and past both ends
  int64_t mismatches = 0;  // outputs that are not round-half-to-even, saturated
  std::string mode;        // "half to even", or what it did: "half away from zero", "truncation", ...
  std::string example;     // the first mismatch: "x/scale = 2.5 gave 3, half to even is 2"
  std::string error;       // why the audit could not run on the provider (then nothing is said of it)

  bool passed() const { return error.empty() && mismatches == 0; }
};

/// Runs the tie test of `pair` through `provider`'s QuantizeLinear at `opset` (at least 13;
/// float16 inputs need 19).
RoundingAudit audit_rounding(const std::string& provider, const QuantizePair& pair, int opset);

}  // namespace onnxproof
