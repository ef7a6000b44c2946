#pragma once
// Naming the rule behind a failed proof.

#include <filesystem>

#include "onnxproof/simplify/simplify.h"

namespace onnxproof::simplify {

/// After a failed proof or an invalid result: bisects the rules that changed something (every
/// rule when the result was invalid and left no counts), rerunning simplify and the proof with
/// half of them skipped, to the one rule whose skipping alone makes the proof hold; at most
/// ceil(log2 n) + 1 reruns for n rules. Sets `outcome.culprit_pass` to it and names it in the
/// SIMPLIFY_CHANGED_OUTPUTS findings; leaves both as they are when no single rule is found.
/// Candidates are written into `folder`. Errors: loading `input`, writing, or running a proof.
Expected<void> name_the_rule(const std::filesystem::path& input, const std::filesystem::path& folder,
                             const SimplifyOptions& options, const Reference* reference,
                             const ToleranceOptions& tolerance, SimplifyOutcome& outcome);

}  // namespace onnxproof::simplify
