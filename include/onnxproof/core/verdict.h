#pragma once
// Step statuses and the verdict (DESIGN.md): computed in one place, named in one place.

#include <span>
#include <string_view>
#include <vector>

#include "onnxproof/core/error.h"
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

/// The process exit code of an error: 2 for a usage error, 3 for every other (DESIGN.md).
int exit_code(const Error& error);

/// The status of a step that ran: fail when its own check failed or a finding is an error, pass
/// otherwise (a step that could not run is StepStatus::error, with the reason).
StepStatus status_from(bool passed, const std::vector<Finding>& findings);

/// The run's verdict from its steps: error when a step errored, fail when any step did not
/// pass (a skipped step is never a pass) or no step ran, pass otherwise.
Verdict verdict_from(std::span<const StepStatus> statuses);

/// The run's verdict from its steps and its merged findings: as above, and fail when a step
/// passed yet a finding (merged after the steps) is an error.
Verdict verdict_from(std::span<const StepStatus> statuses, const std::vector<Finding>& findings);

/// The verdict of a single-step command that ran: fail when a finding is an error, else pass.
Verdict verdict_from(const std::vector<Finding>& findings);

/// The verdict of a workflow: error when it could not complete its job, fail when its own check
/// did not pass or a finding is an error, pass otherwise.
Verdict verdict_from(bool completed, bool passed, const std::vector<Finding>& findings = {});

/// A run's verdict as the status of the step that holds it (--exporter both: one step per exporter).
StepStatus status_from(Verdict verdict);

}  // namespace onnxproof
