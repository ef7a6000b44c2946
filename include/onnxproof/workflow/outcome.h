#pragma once
// What every workflow returns: its verdict, its findings, the files it wrote and its typed result.
// A workflow that could not start (bad options, unreadable input) returns an Error instead.

#include <filesystem>
#include <optional>
#include <vector>

#include "onnxproof/core/error.h"
#include "onnxproof/core/finding.h"
#include "onnxproof/core/verdict.h"

namespace onnxproof {

template <typename Result>
struct Outcome {
  /// Decided by verdict_from() (core/verdict.h) from what the workflow found.
  Verdict verdict = Verdict::error;
  /// The problems found in the model, in the order they are shown.
  std::vector<Finding> findings{};
  /// The files and folders written, in the order they are named.
  std::vector<std::filesystem::path> artifacts{};
  /// Why a workflow that ran could not finish its job (verdict error), said after its summary.
  std::optional<Error> error{};
  /// The workflow's own typed result (a ParityResult, a Report, ...).
  Result result{};
};

}  // namespace onnxproof
