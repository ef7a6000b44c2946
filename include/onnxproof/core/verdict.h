#pragma once
// Step statuses and the verdict (DESIGN.md): computed in one place, named in one place.

#include <span>
#include <string_view>
#include <vector>

#include "onnxproof/core/finding.h"

namespace onnxproof {

/// pass: ran and found nothing that fails; fail: ran and found a problem in the model; skip: did
/// not run (said why); error: could not do its job (bad input, missing dependency).
enum class StepStatus { pass, fail, skip, error };

/// pass only when every required step ran and passed; fail when the proof found a problem in the
/// model; error when the tool could not do its job.
enum class Verdict { pass, fail, error };

std::string_view status_name(StepStatus status);
std::string_view verdict_name(Verdict verdict);

/// The process exit code of a verdict: 0 pass, 1 fail, 3 error (DESIGN.md's exit codes).
int exit_code(Verdict verdict);

/// The status of a step that ran: fail when its own check failed or a finding is an error, pass
/// otherwise (a step that could not run is StepStatus::error, with the reason).
StepStatus status_from(bool passed, const std::vector<Finding>& findings);

/// The run's verdict from its steps: error when a step errored, fail when any step did not
/// pass (a skipped step is never a pass) or no step ran, pass otherwise.
Verdict verdict_from(std::span<const StepStatus> statuses);

/// The verdict of a single-step command that ran: fail when a finding is an error, else pass.
Verdict verdict_from(const std::vector<Finding>& findings);

}  // namespace onnxproof
