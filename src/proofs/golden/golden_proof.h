#pragma once
// The golden step's typed result and its definition for the pipeline's step table.

#include <cstddef>
#include <string>
#include <utility>

#include "onnxproof/pipeline/proof.h"
#include "onnxproof/report/step_result.h"

namespace onnxproof {

enum class GoldenAction { freeze, verify };

/// What the golden step did (report.json: the golden step's action and figures).
struct GoldenFigures final : StepResult {
  GoldenAction action = GoldenAction::freeze;
  std::string folder;               // "golden/" (the run's) or the user's --golden folder
  bool model_changed = false;       // verify: the model is not the one frozen
  std::size_t generation_runs = 0;  // verify: the frozen generation's runs proved again
  int data_sets = 0;                // freeze
  bool generation = false;          // freeze: the generation frozen beside the data sets
  GoldenFigures() = default;
  GoldenFigures(GoldenAction action_, std::string folder_) : action(action_), folder(std::move(folder_)) {}
  [[nodiscard]] nlohmann::json to_json() const override;
};

}  // namespace onnxproof

namespace onnxproof::pipeline_run {

/// The golden step: in the pipeline unless the golden set was not asked for (prove()'s default).
StepDefinition golden_proof();

}  // namespace onnxproof::pipeline_run
