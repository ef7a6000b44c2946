// RUN/command.json through the generated contract: the command as a CommandDocument and back.
#include "command_record.h"

#include "onnxproof/contract/command.h"
#include "onnxproof/core/atomic_file.h"
#include "onnxproof/core/json_file.h"

namespace onnxproof {
namespace fs = std::filesystem;

namespace {

// A path as the run folder keeps it: absolute, so a repair from another folder finds it.
std::string absolute_path(const fs::path& path) { return path.empty() ? std::string() : fs::absolute(path).string(); }

// A spec whose first part names a file (file.py:callable, model.pt, model.keras) or a SavedModel
// folder (saved_model:DIR) with that part absolute; package.module:callable (even where a folder
// of that name lies here) and family specs unchanged.
std::string absolute_spec(const std::string& spec) {
  if (spec.starts_with("saved_model:")) return "saved_model:" + absolute_path(spec.substr(12));
  const auto colon = spec.find(':');
  const std::string head = spec.substr(0, colon);
  std::error_code ec;
  if (head.empty() || !fs::is_regular_file(head, ec)) return spec;
  return absolute_path(head) + (colon == std::string::npos ? "" : spec.substr(colon));
}

contract::CommandDocument to_document(const PipelineCommand& command) {
  contract::CommandDocument document{.schema = std::string(contract::k_command_version),
                                     .model = command.model,
                                     .proof = command.proof,
                                     .targets = command.targets,
                                     .quantize = command.quantize,
                                     .no_simplify = command.no_simplify};
  ModelArguments& m = document.model;
  m.model = absolute_spec(m.model);
  m.data = absolute_spec(m.data);
  m.data_dir = absolute_path(m.data_dir);
  m.from_export = absolute_path(m.from_export);
  if (m.onnx) m.onnx = absolute_path(*m.onnx);
  if (m.python.find('/') != std::string::npos) m.python = absolute_path(m.python);
  return document;
}

// `run`: where the record lies. onnxproof.prove() hands the engine an export, not a spec (its
// record names neither): a repair proves the run's own export again.
PipelineCommand from_document(const contract::CommandDocument& document, const fs::path& run) {
  PipelineCommand command{.model = document.model,
                          .proof = document.proof,
                          .targets = document.targets,
                          .quantize = document.quantize,
                          .no_simplify = document.no_simplify};
  if (command.model.model.empty() && command.model.from_export.empty())
    command.model.from_export = fs::absolute(run).string();
  return command;
}

}  // namespace

Expected<void> write_command_record(const PipelineCommand& command, const fs::path& run) {
  const auto json = contract::write_command(to_document(command));
  return write_file_atomically(run / "command.json", json.dump(2) + "\n");
}

Expected<PipelineCommand> read_command_record(const fs::path& run) {
  const fs::path file = run / "command.json";
  ONNXPROOF_TRY_ASSIGN(const auto json, read_json_object(file, ErrorCode::usage));
  ONNXPROOF_TRY_ASSIGN(const auto document, contract::read_command(json, file, ErrorCode::usage));
  return from_document(document, run);
}

}  // namespace onnxproof
