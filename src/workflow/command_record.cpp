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
  document.run = contract::CommandRun{.out = absolute_path(command.out),
                                      .no_localize = command.no_localize,
                                      .golden = absolute_path(command.golden),
                                      .no_golden = command.no_golden,
                                      .repair = command.repair,
                                      .repair_budget = command.repair_budget};
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

Expected<PipelineCommand> attached_command(const nlohmann::json& document) {
  ONNXPROOF_TRY_ASSIGN(const auto read, contract::read_command(document, "the front end's command", ErrorCode::usage));
  PipelineCommand command{.model = read.model,
                          .proof = read.proof,
                          .targets = read.targets,
                          .attach = true,
                          .quantize = read.quantize,
                          .no_simplify = read.no_simplify};
  if (read.run) {
    command.out = read.run->out;
    command.no_localize = read.run->no_localize;
    command.golden = read.run->golden;
    command.no_golden = read.run->no_golden;
    command.repair = read.run->repair;
    command.repair_budget = read.run->repair_budget;
  }
  return command;
}

bool has_options_besides_attach(const PipelineCommand& command) {
  PipelineCommand bare{.attach = true};
  PipelineCommand given = command;
  given.attach = true;
  return contract::write_command(to_document(given)) != contract::write_command(to_document(bare));
}

Expected<PipelineCommand> read_command_record(const fs::path& run) {
  const fs::path file = run / "command.json";
  ONNXPROOF_TRY_ASSIGN(const auto json, read_json_object(file, ErrorCode::usage));
  ONNXPROOF_TRY_ASSIGN(const auto document, contract::read_command(json, file, ErrorCode::usage));
  return from_document(document, run);
}

}  // namespace onnxproof
