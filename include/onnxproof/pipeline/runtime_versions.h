#pragma once
// A proof per ONNX Runtime release: `--target ort-cpu@1.22` proves the model again with that
// release, the one an application embeds, not only with the library the engine was built with.
// Each release runs in a child of this binary started with its library (ONNXPROOF_ONNXRUNTIME
// naming the release's folder in the cache scripts/fetch-onnxruntime-versions.sh fills), since
// one process holds one ONNX Runtime: the child reports the opset and IR version the release
// loads (`ops opset`), audits the model's operators by probing the release itself
// (`ops MODEL --probe`), and runs the parity proof against the run's reference (`parity`).

#include <filesystem>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "onnxproof/core/error.h"
#include "onnxproof/core/finding.h"
#include "onnxproof/ops/opset_limits.h"

namespace onnxproof {

/// One --target ort-cpu@VERSION or openvino@VERSION, found in the cache.
struct RuntimeRelease {
  std::string target;     // as given: "ort-cpu@1.22", "openvino@2025.4"
  bool openvino = false;  // an OpenVINO release: its rows run on its CPU plugin in float32
  std::string version;    // the release found: "1.22.1"
  std::filesystem::path library_folder;
  // What an ONNX Runtime release loads, asked of it when the options are read (release_limits);
  // 0 for OpenVINO, whose frontend says what it reads when it reads the model.
  int newest_opset = 0;
  int newest_ir_version = 0;
};

/// Where fetched releases live: $ONNXPROOF_ORT_CACHE, else $XDG_CACHE_HOME/onnxproof/onnxruntime,
/// else ~/.cache/onnxproof/onnxruntime (scripts/fetch-onnxruntime-versions.sh writes there).
std::filesystem::path runtime_release_cache();

/// Whether a --target names a release ("NAME@VERSION").
bool is_release_target(const std::string& target);

/// The release a --target names, found in the cache (X.Y: its newest patch fetched) and asked
/// for its limits (ONNX Runtime) or its version (OpenVINO, in the cache's openvino/ folder).
/// Usage errors: a target other than ort-cpu or openvino with a version, a version that is not
/// X.Y or X.Y.Z, a release not fetched (naming the command that fetches it); ErrorCode::runtime
/// when the release's library cannot start.
Expected<RuntimeRelease> find_runtime_release(const std::string& target);

/// X.Y.Z as numbers (ordering releases); nullopt for a text that is no such version.
std::optional<std::vector<int>> release_version_numbers(const std::string& text);

/// Every ONNX Runtime release fetched into the cache (X.Y.Z folders holding a library), oldest first.
std::vector<std::string> fetched_onnxruntime_releases();

/// The proof of one model on one release: what the children found.
struct ReleaseProof {
  RuntimeRelease release;
  std::string outcome;            // "pass", "fail" (a mismatch or an unsupported operator), "refused", "error"
  std::string reason;             // why refused or error: "opset 23 is above 22", ONNX Runtime's message
  std::vector<Finding> findings;  // the children's, their `where` naming the release
  nlohmann::json parity;          // the parity child's document (rows, summary), when it ran
};

/// The arguments of the parity child besides the model, reference and --json: the tolerances
/// the pipeline was given, so that every release is judged by the same rule.
struct ReleaseProofOptions {
  std::vector<std::string> parity_arguments;
  double timeout_seconds = 1800;
};

/// Proves `model` (its opset and IR version given) against `reference` on `release`, writing the
/// children's JSON under `folder`. Never fails: a child that cannot run is an "error" outcome.
ReleaseProof prove_on_release(const RuntimeRelease& release, const std::filesystem::path& model, int model_opset,
                              int model_ir_version, const std::filesystem::path& reference,
                              const std::filesystem::path& folder, const ReleaseProofOptions& options,
                              std::ostream& progress);

/// Whether `model` matches `reference` on `release` (ONNX Runtime) with its graph optimizations on
/// and the optimizers `disabled` off: the parity child's rows at that level all pass. Its document
/// is written to `json`; ErrorCode::runtime when the child cannot run or writes none.
Expected<bool> release_matches_without(const RuntimeRelease& release, const std::filesystem::path& model,
                                       const std::filesystem::path& reference, const std::vector<std::string>& disabled,
                                       const std::filesystem::path& json, const ReleaseProofOptions& options);

/// The release's part of report.json (the runtimes step's figures, proofs/runtimes).
nlohmann::json release_proof_to_json(const ReleaseProof& proof);

/// Lowers `limit` to the newest opset every release runs, naming each one that lowers it.
void fit_opset_limit_to_releases(OpsetLimit& limit, const std::vector<RuntimeRelease>& releases);

}  // namespace onnxproof
