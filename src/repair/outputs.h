#pragma once
// What a repair leaves in the run folder (outputs.cpp): repair.json, repair.md, the session
// options of an optimizer fix, and the diff of what the repair changed.

#include <filesystem>

#include <nlohmann/json.hpp>

#include "onnxproof/core/error.h"
#include "onnxproof/repair/repair.h"

namespace onnxproof {

/// What the passing attempt changed against the failed run: exporter, opset, session options,
/// simplify, nodes kept in float32, rewritten nodes, and the proved models' operator counts.
nlohmann::json repair_diff(const std::filesystem::path& run, const RepairFacts& facts, const RepairAttempt& repaired);

/// RUN/repair/repair.json (onnxproof.repair/1), repair.md and, when the repair disables an
/// optimizer, the passing attempt's session-options.md.
/// `shown`: the folder `run` is published as, which they name.
Expected<void> write_repair(const std::filesystem::path& run, const std::filesystem::path& shown,
                            const RepairFacts& facts, const RepairResult& result);

}  // namespace onnxproof
