#pragma once
// The pipeline's side of the command record and repair (repair_workflow.cpp): what a run adds
// before it publishes (RUN/command.json, so `onnxproof repair RUN` can prove changes of it, and
// `pipeline --repair`'s repair).

#include <ostream>

#include "onnxproof/pipeline/attached_front_end.h"
#include "onnxproof/pipeline/pipeline.h"
#include "onnxproof/report/report.h"
#include "onnxproof/workflow/options.h"

namespace onnxproof {

/// PipelineOptions::before_publish of a pipeline run: RUN/command.json into the staged run and,
/// for `pipeline --repair` after a failure, the repair within the command's budget in the staged
/// run's repair/, the report pointed at its result (true: the report changed). `export_again` is
/// set for an attached front end. A repair that cannot run is said on `progress`; the run stands.
bool before_pipeline_publishes(const PipelineCommand& command, const PipelineOptions& options, Report& report,
                               const StagedRun& run, const ExportAgain& export_again, std::ostream& progress);

}  // namespace onnxproof
