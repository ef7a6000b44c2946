#pragma once
// Golden data: inputs and the ONNX Runtime outputs of a model that passed the parity proof,
// frozen beside it with a manifest, so that a later re-export (or an opset, framework or runtime
// bump) that shifts a kernel fails the build instead of drifting silently.
//
// Layout: GOLDEN/test_data_set_N/{input,output}_K.pb, GOLDEN/cases.json, GOLDEN/manifest.json
// (schema onnxproof.golden/1: model sha256, opsets, tolerances per output, tool versions, shape
// cases, and the sha256 of every data file).

#include <filesystem>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "onnxproof/core/error.h"
#include "onnxproof/core/finding.h"
#include "onnxproof/parity/generation.h"
#include "onnxproof/parity/parity.h"

namespace onnxproof {

struct GoldenOptions {
  ParityOptions parity;  // the proof run before freezing, and the tolerances recorded
  /// (tool, version) pairs to record; the caller knows them (report/versions.h).
  std::vector<std::pair<std::string, std::string>> versions;
  /// The run's generation reference (RUN/reference/generation) to freeze beside the data sets
  /// (golden/generation/); empty: none. Verification proves it again when the set holds one.
  std::filesystem::path generation{};
};

struct FreezeResult {
  bool frozen = false;  // false: the parity proof failed, nothing was written
  ParityResult parity;  // the proof the freeze stands on
  int data_sets = 0;
};

/// Nothing, when `golden_dir` is absent, empty or a golden set onnxproof wrote; a usage error
/// naming why otherwise (a file, a project folder) and the option that named it: what freeze
/// replaces, checked before any work.
Expected<void> require_replaceable_golden_folder(const std::filesystem::path& golden_dir,
                                                 std::string_view option = "--out");

/// Proves `model` against `reference` (PyTorch's data, read_reference()) unless `proof` is the result of that
/// proof already (its kept cpu_outputs are taken and written, not copied or run again); when it passes, writes GOLDEN
/// atomically (built in a temporary folder beside it, then renamed into place). GOLDEN is replaced only when it does
/// not exist, is an empty folder or is a golden folder (an onnxproof.golden/1 manifest); anything else (a project
/// folder, a run folder, a reference folder, a file) is ErrorCode::usage before any work. Fails when the model or
/// reference cannot be read or GOLDEN cannot be written.
Expected<FreezeResult> freeze_golden(const std::filesystem::path& model, const Reference& reference,
                                     const std::filesystem::path& golden_dir, const GoldenOptions& options,
                                     ParityResult* proof = nullptr);

struct VerifyResult {
  ParityResult parity;            // ONNX Runtime now against the frozen outputs
  std::vector<Finding> findings;  // GOLDEN_DRIFT, and an info finding when the model changed since the freeze
  std::vector<GenerationResult> generation;  // the frozen generation proved again, when the set holds one
  bool model_changed = false;
  bool passed() const;
};

/// What verify takes from a golden folder's manifest, checked as untrusted input: entries are plain
/// names of regular files inside the folder, exactly the data sets' files, each with the recorded
/// sha256; recorded tolerances are finite and within the cap (rtol <= 0.5, atol <= 1) unless
/// `overrides` names the output.
struct GoldenManifest {
  ToleranceOptions tolerance;  // `overrides` completed with the recorded tolerances
  std::string model_sha256;
  /// The sha256 of each external data file the model named, by name in its folder (a model with
  /// none: {}); nullopt for a set frozen before it was recorded.
  std::optional<nlohmann::json> model_data_sha256;
  bool generation = false;  // the manifest lists a frozen generation (generation/generation.json)
};
Expected<GoldenManifest> read_golden_manifest(const std::filesystem::path& golden_dir,
                                              const ToleranceOptions& overrides);

/// Re-runs the golden inputs through `model` and compares with the frozen outputs at the
/// recorded tolerances. Fails (ErrorCode::invalid_input) when GOLDEN has no manifest, a listed
/// file is missing, or a file's sha256 differs from the manifest's.
Expected<VerifyResult> verify_golden(const std::filesystem::path& model, const std::filesystem::path& golden_dir,
                                     const GoldenOptions& options);

}  // namespace onnxproof
