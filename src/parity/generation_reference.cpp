#include "generation_reference.h"

#include <fmt/format.h>

#include <algorithm>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "onnxproof/core/json_file.h"
#include "onnxproof/tensor/tensor_io.h"

namespace onnxproof::detail {

namespace fs = std::filesystem;

namespace {

Expected<Tensor> read_tensor(const fs::path& path) {
  ONNXPROOF_TRY_ASSIGN(NamedTensor named, read_tensor_pb(path));
  return std::move(named.tensor);
}

Expected<std::vector<Tensor>> read_numbered(const fs::path& folder, std::string_view stem, std::size_t count) {
  std::vector<Tensor> tensors;
  for (std::size_t index = 0; index < count; ++index) {
    ONNXPROOF_TRY_ASSIGN(Tensor tensor, read_tensor(folder / fmt::format("{}_{}.pb", stem, index)));
    tensors.push_back(std::move(tensor));
  }
  return tensors;
}

// A run's folder is run_N and an encoder a plain .onnx file name: nothing the document names may
// lead outside the run folder.
bool is_run_folder(const std::string& name) {
  return name.size() > 4 && name.starts_with("run_") &&
         std::all_of(name.begin() + 4, name.end(), [](char c) { return c >= '0' && c <= '9'; });
}

bool is_plain_onnx_name(const std::string& name) {
  return name.size() > 5 && name.ends_with(".onnx") && name.find_first_of("/\\") == std::string::npos &&
         name.front() != '.' && name.find('\0') == std::string::npos;
}

// A first-step file lies in the run's components/ folder (a file of the user's keeps its name).
bool is_component_name(const std::string& name) {
  constexpr std::string_view folder = "components/";
  return name.starts_with(folder) && is_plain_onnx_name(name.substr(folder.size()));
}

}  // namespace

Expected<contract::GenerationDocument> read_generation_document(const fs::path& folder) {
  const fs::path path = folder / "generation.json";
  ONNXPROOF_TRY_ASSIGN(const nlohmann::json json, read_json_object(path, ErrorCode::invalid_input));
  ONNXPROOF_TRY_ASSIGN(contract::GenerationDocument document,
                       contract::read_generation(json, path, ErrorCode::invalid_input));
  if (document.past.size() != document.present.size()) {
    return fail(ErrorCode::invalid_input, path.string() + ": past and present name different numbers of tensors");
  }
  for (const auto& run : document.runs) {
    if (!is_run_folder(run.folder)) {
      return fail(ErrorCode::invalid_input, path.string() + ": a run's folder must be run_N, not '" + run.folder + "'");
    }
  }
  if (document.encoder && !document.encoder->model.empty() && !is_plain_onnx_name(document.encoder->model) &&
      !is_component_name(document.encoder->model)) {
    return fail(ErrorCode::invalid_input, path.string() +
                                              ": the encoder must be a .onnx file in the run folder or components/, "
                                              "not '" +
                                              document.encoder->model + "'");
  }
  if (document.first) {
    if (!is_component_name(document.first->model)) {
      return fail(
          ErrorCode::invalid_input,
          path.string() + ": the first-step decoder must be components/NAME.onnx, not '" + document.first->model + "'");
    }
    if (document.first->handoff.size() != document.past.size()) {
      return fail(ErrorCode::invalid_input, path.string() + ": the first-step decoder hands off " +
                                                std::to_string(document.first->handoff.size()) + " tensors for " +
                                                std::to_string(document.past.size()) + " past inputs");
    }
  }
  if (document.encoder && !document.encoder->model.empty() && document.encoder->sha256.size() != 64) {
    return fail(ErrorCode::invalid_input, path.string() + ": the encoder's sha256 must be 64 hex digits");
  }
  if (document.merged) {
    if (!document.encoder || document.encoder->model.empty()) {
      return fail(ErrorCode::invalid_input, path.string() + ": a merged decoder needs the encoder that feeds it");
    }
    if (!is_plain_onnx_name(document.merged->model)) {
      return fail(ErrorCode::invalid_input, path.string() +
                                                ": the merged decoder must be a .onnx file in the run "
                                                "folder, not '" +
                                                document.merged->model + "'");
    }
    if (document.merged->past.size() != document.merged->present.size()) {
      return fail(ErrorCode::invalid_input,
                  path.string() + ": the merged decoder's past and present name different numbers of tensors");
    }
  }
  return document;
}

Expected<RunReference> read_run_reference(const fs::path& folder, const contract::GenerationDocument& document,
                                          const contract::GenerationRun& run) {
  RunReference reference{.run = run};
  ONNXPROOF_TRY_ASSIGN(reference.prompt, read_tensor(folder / "prompt.pb"));
  ONNXPROOF_TRY_ASSIGN(reference.tokens, read_tensor(folder / "tokens.pb"));
  ONNXPROOF_TRY_ASSIGN(reference.logits, read_tensor(folder / "logits.pb"));
  if (!document.first) {  // with a first-step file, step 0 takes no cache
    ONNXPROOF_TRY_ASSIGN(reference.empty_past, read_numbered(folder, "past", document.past.size()));
  }
  if (run.exact) {
    ONNXPROOF_TRY_ASSIGN(Tensor exact, read_tensor(folder / "exact_logits.pb"));
    reference.exact = std::move(exact);
  }
  if (document.encoder) {
    ONNXPROOF_TRY_ASSIGN(reference.encoder_inputs,
                         read_numbered(folder, "encoder_input", document.encoder->inputs.size()));
    ONNXPROOF_TRY_ASSIGN(reference.encoder_outputs,
                         read_numbered(folder, "encoder_output", document.encoder->outputs.size()));
    if (run.exact) {
      ONNXPROOF_TRY_ASSIGN(reference.exact_encoder_outputs,
                           read_numbered(folder, "exact_encoder_output", document.encoder->outputs.size()));
    }
  }
  const int64_t steps = document.steps;
  const int64_t batch = run.batch;
  const bool shapes_hold =
      reference.prompt.dtype() == DType::int64 &&
      reference.prompt.shape() == std::vector<int64_t>{batch, run.prompt_length} &&
      reference.tokens.dtype() == DType::int64 && reference.tokens.shape() == std::vector<int64_t>{steps, batch} &&
      reference.logits.dtype() == DType::float32 && reference.logits.rank() == 3 &&
      reference.logits.shape()[0] == steps && reference.logits.shape()[1] == batch &&
      (!reference.exact ||
       (reference.exact->dtype() == DType::float64 && reference.exact->shape() == reference.logits.shape()));
  // Token ids index the logits: each must lie in [0, vocabulary).
  bool tokens_hold = shapes_hold && reference.logits.shape()[2] >= 1;
  if (tokens_hold) {
    const int64_t vocabulary = reference.logits.shape()[2];
    for (const int64_t token : reference.tokens.values<int64_t>())
      tokens_hold = tokens_hold && token >= 0 && token < vocabulary;
  }
  bool encoder_holds = true;
  for (std::size_t index = 0; index < reference.exact_encoder_outputs.size(); ++index) {
    encoder_holds =
        encoder_holds && reference.exact_encoder_outputs[index].shape() == reference.encoder_outputs[index].shape();
  }
  if (!shapes_hold || !tokens_hold || !encoder_holds) {
    return fail(ErrorCode::invalid_input, folder.string() +
                                              ": the generation tensors do not have the shapes and "
                                              "types generation.json describes");
  }
  return reference;
}

}  // namespace onnxproof::detail
