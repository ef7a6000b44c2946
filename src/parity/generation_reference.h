#pragma once
// The generation proof's reference (RUN/reference/generation/, onnxproof.generation/2) as the
// engine reads it: generation.json checked (nothing it names may lie outside the run folder) and
// each run's tensors checked against it (shapes, token ids within the vocabulary), so the loop in
// generation.cpp never reads past a tensor.

#include <filesystem>
#include <optional>
#include <vector>

#include "onnxproof/contract/generation.h"
#include "onnxproof/core/error.h"
#include "onnxproof/tensor/tensor.h"

namespace onnxproof::detail {

/// What the front end recorded for one run: its tensors.
struct RunReference {
  contract::GenerationRun run{};
  Tensor prompt{};                              // batch x prompt_length, int64
  std::vector<Tensor> empty_past{};             // step 0's cache, in `past` order
  Tensor tokens{};                              // steps x batch, int64, each in [0, vocabulary)
  Tensor logits{};                              // steps x batch x vocabulary, float32
  std::optional<Tensor> exact{};                // the same in float64
  std::vector<Tensor> encoder_inputs{};         // in encoder.inputs order
  std::vector<Tensor> encoder_outputs{};        // PyTorch's, in encoder.outputs order
  std::vector<Tensor> exact_encoder_outputs{};  // float64, when exact
};

/// FOLDER/generation.json, its names checked. ErrorCode::invalid_input when it breaks the contract.
Expected<contract::GenerationDocument> read_generation_document(const std::filesystem::path& folder);

/// One run's tensors from its FOLDER, checked against `document`. ErrorCode::invalid_input when
/// one is missing or has another shape or type.
Expected<RunReference> read_run_reference(const std::filesystem::path& folder,
                                          const contract::GenerationDocument& document,
                                          const contract::GenerationRun& run);

}  // namespace onnxproof::detail
