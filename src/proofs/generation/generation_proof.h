#pragma once
// The generation proof's step, for the pipeline's step table (pipeline/steps.cpp).

#include "onnxproof/pipeline/proof.h"

namespace onnxproof::pipeline_run {

/// The generate step: in the pipeline under --generate N, or for an export that recorded a generation.
StepDefinition generation_proof();

}  // namespace onnxproof::pipeline_run
