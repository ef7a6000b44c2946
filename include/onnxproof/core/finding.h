#pragma once
// Findings: what a step learned about the model (not errors of the tool). Codes are a stable
// contract (DESIGN.md): add new ones, never rename.

#include <string>
#include <string_view>
#include <vector>

namespace onnxproof {

namespace finding_code {
inline constexpr std::string_view export_failed = "EXPORT_FAILED";
inline constexpr std::string_view unsupported_aten_op = "UNSUPPORTED_ATEN_OP";
inline constexpr std::string_view tracer_warning = "TRACER_WARNING";
inline constexpr std::string_view data_dependent_control_flow = "DATA_DEPENDENT_CONTROL_FLOW";
inline constexpr std::string_view frozen_dimension = "FROZEN_DIMENSION";
inline constexpr std::string_view nondeterministic_forward = "NONDETERMINISTIC_FORWARD";
inline constexpr std::string_view training_mode = "TRAINING_MODE";
inline constexpr std::string_view non_tensor_output = "NON_TENSOR_OUTPUT";
inline constexpr std::string_view opset_too_old = "OPSET_TOO_OLD";
inline constexpr std::string_view checker_failed = "CHECKER_FAILED";
inline constexpr std::string_view shape_inference_failed = "SHAPE_INFERENCE_FAILED";
inline constexpr std::string_view custom_domain_op = "CUSTOM_DOMAIN_OP";
inline constexpr std::string_view op_unsupported_by_target = "OP_UNSUPPORTED_BY_TARGET";
inline constexpr std::string_view op_restricted_by_target = "OP_RESTRICTED_BY_TARGET";
inline constexpr std::string_view shape_rejected = "SHAPE_REJECTED";
inline constexpr std::string_view parity_mismatch = "PARITY_MISMATCH";
inline constexpr std::string_view argmax_flip = "ARGMAX_FLIP";
inline constexpr std::string_view nan_or_inf = "NAN_OR_INF";
inline constexpr std::string_view provider_fallback = "PROVIDER_FALLBACK";
inline constexpr std::string_view simplify_changed_outputs = "SIMPLIFY_CHANGED_OUTPUTS";
inline constexpr std::string_view golden_drift = "GOLDEN_DRIFT";
}  // namespace finding_code

enum class Severity { error, warning, info };

/// "error", "warning" or "info".
std::string_view severity_name(Severity severity);

struct Finding {
  std::string code;  // one of finding_code
  Severity severity = Severity::error;
  std::string step;     // the step that found it ("check", "export", ...)
  std::string message;  // what is wrong, one line
  std::string where;    // node, value, module or source line; may be empty
  std::string hint;     // how to fix it; may be empty
};

/// True if any finding has severity error.
bool has_errors(const std::vector<Finding>& findings);

}  // namespace onnxproof
