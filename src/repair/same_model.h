#pragma once
// Whether a repair candidate that exported the model again proved the run's model (repair.cpp).

#include <filesystem>
#include <optional>
#include <string>

#include "onnxproof/core/error.h"

namespace onnxproof {

/// Why the reference a candidate captured anew (`candidate_reference`) is not the run's model's
/// (`run_reference`): on a data set both hold with the same inputs, an output that differs beyond
/// float32 rounding, or no such data set at all; nullopt when they agree.
Expected<std::optional<std::string>> another_model_than_the_run(const std::filesystem::path& run_reference,
                                                                const std::filesystem::path& candidate_reference);

}  // namespace onnxproof
