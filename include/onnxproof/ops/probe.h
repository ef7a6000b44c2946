#pragma once
// Ground truth from the runtime itself: for every operator schema the ONNX library knows, a
// one-node model with valid input types and required attributes is handed to the installed ONNX
// Runtime, which either creates the session (a kernel exists for those types) or says it has no
// implementation. The probe stops at session creation: that is where kernels are chosen.

#include <string>
#include <string_view>
#include <vector>

#include "onnxproof/core/error.h"
#include "onnxproof/ops/support_table.h"

namespace onnxproof {

struct ProbeOptions {
  std::string provider = "cpu";
  int opset = 17;                 // probe the schema each op resolves to at this opset
  bool all_versions = false;      // probe every schema version up to `opset` instead
  std::vector<std::string> only;  // op types to probe; empty: all
};

/// What the probe found for one schema: a kernel, none, or nothing conclusive (the one-node model
/// could not be built or run for another reason).
enum class ProbeStatus { supported, not_implemented, error };

/// "supported", "not-implemented", "error".
std::string_view probe_status_name(ProbeStatus status);

struct ProbeRow {
  std::string domain;
  std::string op_type;
  int since_version = 0;
  ProbeStatus status = ProbeStatus::error;
  std::string message;  // the type tried, or ONNX Runtime's error
};

/// Probes the schemas of the default and ai.onnx.ml domains. Fails only when no session at all
/// can be made (ONNX Runtime missing) or a temporary file cannot be written.
Expected<std::vector<ProbeRow>> probe_operators(const ProbeOptions& options);

/// A support table from probe rows (conclusive rows only) completed with the documented table's
/// rows for the operators the probe could not decide.
SupportTable probed_table(const std::vector<ProbeRow>& rows, const SupportTable& documented,
                          const std::string& runtime);

/// A conclusive probe row whose outcome differs from what the documented table says.
struct ProbeDifference {
  ProbeRow row;
  bool documented_supported = false;
};

/// The probe against the documented table (data/op-support/ort-cpu-documented.csv): rows where
/// the installed runtime does what the documentation does not say, or the reverse.
std::vector<ProbeDifference> differences_from_table(const std::vector<ProbeRow>& rows, const SupportTable& documented);

/// Writes a table in data/op-support's format, atomically.
Expected<void> write_support_table(const SupportTable& table, const std::filesystem::path& path);

}  // namespace onnxproof
