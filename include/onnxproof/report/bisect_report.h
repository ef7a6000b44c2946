#pragma once
// RUN/bisect/bisect.md: what `onnxproof bisect-release RUN` found, for people (bisect.json holds
// the same for programs: localize/release_bisect.h).

#include <string>

#include "onnxproof/localize/release_bisect.h"

namespace onnxproof {

/// The boundary in one sentence, each release's outcome, the optimizer and the evidence rows.
std::string release_bisect_to_markdown(const ReleaseBisectResult& result);

}  // namespace onnxproof
