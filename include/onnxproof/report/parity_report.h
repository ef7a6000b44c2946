#pragma once
// Writers for the parity proof: a terminal table and the report's parity[] JSON rows.

#include <ostream>

#include <nlohmann/json.hpp>

#include "onnxproof/core/verdict.h"
#include "onnxproof/parity/parity.h"

namespace onnxproof {

/// The report's parity[] entries (DESIGN.md): per case x provider x output, with max_abs,
/// max_rel, mismatches, elements, allclose, nan_mismatch, argmax_flips, rows and more.
nlohmann::json parity_rows_to_json(const ParityResult& result);

/// Providers, accuracy, and the accuracy per (provider, optimization) as JSON.
nlohmann::json parity_summary_to_json(const ParityResult& result);

/// error when a provider could not run, fail when the proof failed, pass otherwise.
Verdict parity_verdict(const ParityResult& result);

/// `onnxproof parity --json`'s content (schema onnxproof.parity/2): model, verdict, summary,
/// findings and rows.
nlohmann::json parity_result_to_json(const std::filesystem::path& model, const ParityResult& result);

/// The terminal summary: per provider and optimization level, per output, the cases passed and
/// the worst figures; then task accuracy.
void print_parity_result(std::ostream& out, const ParityResult& result);

}  // namespace onnxproof
