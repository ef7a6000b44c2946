#pragma once
// The runtimes step's typed result and its definition for the pipeline's step table.

#include <vector>

#include "onnxproof/pipeline/proof.h"
#include "onnxproof/pipeline/runtime_versions.h"
#include "onnxproof/report/step_result.h"

namespace onnxproof {

/// What each release named made of the model (report.json: the runtimes step's "releases").
struct RuntimesFigures final : StepResult {
  std::vector<ReleaseProof> releases;
  [[nodiscard]] nlohmann::json to_json() const override;
};

}  // namespace onnxproof

namespace onnxproof::pipeline_run {

/// The runtimes step: in the pipeline when a --target names a release.
StepDefinition runtimes_proof();

}  // namespace onnxproof::pipeline_run
