#pragma once
// How new an opset onnxproof can prove: the ONNX library's last released opset, the newest one
// the loaded ONNX Runtime accepts, and the opset ranges of the target support tables.

#include <map>
#include <string>
#include <vector>

#include "onnxproof/ops/support_table.h"

namespace onnxproof {

/// The last released ai.onnx opset of the ONNX library onnxproof is built with (opsets under
/// development are not counted: the checker would accept them without knowing their operators).
int onnx_last_released_opset();

struct OpsetLimit {
  int opset = 0;
  /// What set it, e.g. "ONNX Runtime 1.30.0 runs up to 26; ONNX 1.23.1 knows up to 27".
  std::string reason;
  /// Default-domain operators that some target table does not support at `opset` but does at an
  /// older one: op type -> the newest such opset (over every table). The export lowers the
  /// default opset to this when the model holds the operator (RoiAlign-22 has no ONNX Runtime
  /// 1.30 CPU kernel: 21).
  std::map<std::string, int> op_limits;
  /// The newest opset the ONNX Runtime releases of the last 18 months all load
  /// (release_forecast.h's portable_opset); 0 when unknown. Not a limit: an --opset above it is
  /// proved; the default export opset stays at or below it.
  int portable = 0;
  std::string portable_reason;
};

/// The newest ai.onnx opset that the ONNX library, the loaded ONNX Runtime and every given
/// target table all support, with each limit named.
OpsetLimit newest_supported_opset(const std::vector<SupportTable>& targets = {});

}  // namespace onnxproof
