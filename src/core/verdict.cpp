#include "onnxproof/core/verdict.h"

namespace onnxproof {

std::string_view status_name(StepStatus status) {
  switch (status) {
    case StepStatus::pass:
      return "pass";
    case StepStatus::fail:
      return "fail";
    case StepStatus::skip:
      return "skip";
    case StepStatus::error:
      return "error";
  }
  return "error";
}

std::string_view verdict_name(Verdict verdict) {
  switch (verdict) {
    case Verdict::pass:
      return "pass";
    case Verdict::fail:
      return "fail";
    case Verdict::error:
      return "error";
  }
  return "error";
}

int exit_code(Verdict verdict) {
  switch (verdict) {
    case Verdict::pass:
      return 0;
    case Verdict::fail:
      return 1;
    case Verdict::error:
      return 3;
  }
  return 3;
}

int exit_code(const Error& error) { return error.code() == ErrorCode::usage ? 2 : 3; }

StepStatus status_from(bool passed, const std::vector<Finding>& findings) {
  return passed && !has_errors(findings) ? StepStatus::pass : StepStatus::fail;
}

Verdict verdict_from(std::span<const StepStatus> statuses) {
  bool failed = statuses.empty();
  for (const StepStatus status : statuses) {
    if (status == StepStatus::error) return Verdict::error;
    if (status != StepStatus::pass) failed = true;
  }
  return failed ? Verdict::fail : Verdict::pass;
}

Verdict verdict_from(std::span<const StepStatus> statuses, const std::vector<Finding>& findings) {
  const Verdict verdict = verdict_from(statuses);
  return verdict == Verdict::pass && has_errors(findings) ? Verdict::fail : verdict;
}

Verdict verdict_from(const std::vector<Finding>& findings) { return verdict_from(true, true, findings); }

Verdict verdict_from(bool completed, bool passed, const std::vector<Finding>& findings) {
  if (!completed) return Verdict::error;
  return passed && !has_errors(findings) ? Verdict::pass : Verdict::fail;
}

StepStatus status_from(Verdict verdict) {
  switch (verdict) {
    case Verdict::pass:
      return StepStatus::pass;
    case Verdict::fail:
      return StepStatus::fail;
    case Verdict::error:
      return StepStatus::error;
  }
  return StepStatus::error;
}

}  // namespace onnxproof
