#pragma once
// RUN/command.json (schemas/command.schema.json, onnxproof.command/1): the pipeline command a run
// was made with, written into the run before it publishes and read back by `onnxproof repair RUN`;
// the same document is the command onnxproof.prove() sends its attached engine.
// The one place a command record is turned into a PipelineCommand and back; its JSON is the
// generated contract's (build/include/onnxproof/contract/command.h).

#include <filesystem>

#include <nlohmann/json.hpp>

#include "onnxproof/core/error.h"
#include "onnxproof/workflow/options.h"

namespace onnxproof {

/// Writes RUN/command.json: the command with its paths made absolute, so a repair from another
/// folder exports the same model. A command without a model spec (onnxproof.prove()'s, whose
/// model is an object in the caller's process) names none: read back, it proves the run's own
/// export again, wherever the run folder has moved.
Expected<void> write_command_record(const PipelineCommand& command, const std::filesystem::path& run);

/// RUN/command.json back as the command; ErrorCode::usage naming the file and the field.
Expected<PipelineCommand> read_command_record(const std::filesystem::path& run);

/// The command an attached front end sent (onnxproof.attach/2's first message): the whole
/// document, its run options too (run folder, localization, golden, repair), as an attached
/// command; ErrorCode::usage naming the field the contract refuses.
Expected<PipelineCommand> attached_command(const nlohmann::json& document);

/// Whether `command` holds anything besides --attach (an attached engine takes its command from
/// the front end only).
bool has_options_besides_attach(const PipelineCommand& command);

}  // namespace onnxproof
