#pragma once
// The pipeline's side of repair (repair_workflow.cpp): the command a run was made with, kept in
// RUN/command.json so `onnxproof repair RUN` can prove changes of it, and `pipeline --repair`.

#include <filesystem>
#include <ostream>

#include "onnxproof/core/error.h"
#include "onnxproof/pipeline/attached_front_end.h"
#include "onnxproof/pipeline/pipeline.h"
#include "onnxproof/report/report.h"
#include "onnxproof/workflow/options.h"

namespace onnxproof {

/// Writes RUN/command.json (onnxproof.command/1): the pipeline command with its paths made
/// absolute, so a repair from another folder exports the same model.
Expected<void> write_command_record(const PipelineCommand& command, const std::filesystem::path& run);

/// `pipeline --repair` after a failed run in `run`: the repair within the command's budget, the
/// run's reports pointed at its result (report.repair_advice too). `export_again` is set for an
/// attached front end. A repair that cannot run is said on `progress`; the run stands as it is.
void repair_after_pipeline(const PipelineCommand& command, const PipelineOptions& options, Report& report,
                           const std::filesystem::path& run, const ExportAgain& export_again, std::ostream& progress);

}  // namespace onnxproof
