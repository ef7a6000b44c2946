#pragma once
// Operational errors as values: every library function that can fail for reasons outside the
// caller's control (a missing file, a model protobuf will not parse, a session ORT refuses)
// returns Expected<T>. Findings about the model are not errors; they go into reports.

#include <expected>
#include <string>
#include <utility>
#include <vector>

namespace onnxproof {

/// What kind of failure an Error is; the CLI maps it to an exit code (usage -> 2, others -> 3).
enum class ErrorCode {
  usage,           // the caller asked for something malformed (bad option value, bad spec)
  not_found,       // a file, input or provider that does not exist
  invalid_input,   // a file exists but its content is not what it should be
  unsupported,     // valid, but beyond what this build can do (newer opset, unknown dtype)
  limit_exceeded,  // a size limit was hit before allocating
  io,              // reading or writing failed
  runtime,         // ONNX Runtime refused or failed
  internal,        // a bug or an unexpected exception from a dependency
};

/// A failure with a message and the context gathered on its way up, outermost first.
class Error {
 public:
  Error(ErrorCode code, std::string message) : m_code(code), m_message(std::move(message)) {}

  ErrorCode code() const { return m_code; }
  const std::string& message() const { return m_message; }
  const std::vector<std::string>& context() const { return m_context; }

  /// Adds an outer context ("loading model.onnx"); returns *this for chaining.
  Error& add_context(std::string context) {
    m_context.insert(m_context.begin(), std::move(context));
    return *this;
  }

  /// One line: "context: context: message".
  std::string describe() const;

 private:
  ErrorCode m_code;
  std::string m_message;
  std::vector<std::string> m_context;
};

template <class T>
using Expected = std::expected<T, Error>;

/// Shorthand for returning an error from a function that returns Expected<T>.
inline std::unexpected<Error> fail(ErrorCode code, std::string message) {
  return std::unexpected<Error>(Error(code, std::move(message)));
}

}  // namespace onnxproof

#define ONNXPROOF_CONCAT_INNER(a, b) a##b
#define ONNXPROOF_CONCAT(a, b) ONNXPROOF_CONCAT_INNER(a, b)

/// Evaluates an Expected<T> expression; on error returns it from the enclosing function,
/// otherwise assigns the value to `lhs` (which may be a declaration: `auto x`).
#define ONNXPROOF_TRY_ASSIGN(lhs, expr) ONNXPROOF_TRY_ASSIGN_IMPL(ONNXPROOF_CONCAT(onnxproof_try_, __LINE__), lhs, expr)
#define ONNXPROOF_TRY_ASSIGN_IMPL(tmp, lhs, expr)           \
  auto tmp = (expr);                                        \
  if (!tmp) return std::unexpected(std::move(tmp).error()); \
  lhs = std::move(*tmp)

/// Evaluates an Expected<void> expression; on error returns it from the enclosing function.
#define ONNXPROOF_TRY(expr) ONNXPROOF_TRY_IMPL(ONNXPROOF_CONCAT(onnxproof_try_, __LINE__), expr)
#define ONNXPROOF_TRY_IMPL(tmp, expr)                         \
  do {                                                        \
    auto tmp = (expr);                                        \
    if (!tmp) return std::unexpected(std::move(tmp).error()); \
  } while (false)
