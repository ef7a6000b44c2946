// The option groups several commands share, spelled the same by each (DESIGN.md): the model group
// (what is exported, or the file or finished export proved instead), the proof group (providers
// and tolerances) and --precision.
#pragma once

#include <CLI/CLI.hpp>

#include "onnxproof/workflow/options.h"

namespace onnxproof::cli {

/// `adoptable`: the command may prove a finished export (--from-export) or a given file (--onnx)
/// instead of exporting one.
void add_model_options(CLI::App* app, ModelArguments& model, bool adoptable = false);
void add_proof_options(CLI::App* app, ProofArguments& proof);
/// --precision, for the commands that prove a model file's numbers (parity, pipeline).
void add_precision_option(CLI::App* app, ProofArguments& proof);

}  // namespace onnxproof::cli
