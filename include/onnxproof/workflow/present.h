#pragma once
// The command line's summary of each workflow's outcome (what `onnxproof COMMAND` prints on
// stdout), the outcome's error excepted: the caller says that on stderr.

#include <ostream>

#include "onnxproof/workflow/workflows.h"

namespace onnxproof {

void print_outcome(std::ostream& out, const Outcome<VersionsResult>& outcome);
void print_outcome(std::ostream& out, const Outcome<CheckedModel>& outcome);
void print_outcome(std::ostream& out, const Outcome<std::vector<WrittenOutput>>& outcome);
void print_outcome(std::ostream& out, const Outcome<OpsAudit>& outcome);
void print_outcome(std::ostream& out, const Outcome<OpsetLimit>& outcome);
void print_outcome(std::ostream& out, const Outcome<ProbeReport>& outcome);
void print_outcome(std::ostream& out, const Outcome<SimplifiedModel>& outcome);
void print_outcome(std::ostream& out, const Outcome<ParityResult>& outcome);
void print_outcome(std::ostream& out, const Outcome<FreezeResult>& outcome);
void print_outcome(std::ostream& out, const Outcome<VerifyResult>& outcome);
void print_outcome(std::ostream& out, const Outcome<ExportResult>& outcome);
void print_outcome(std::ostream& out, const Outcome<Report>& outcome);
void print_outcome(std::ostream& out, const Outcome<DemoRun>& outcome);
void print_outcome(std::ostream& out, const Outcome<LocalizedRun>& outcome);
void print_outcome(std::ostream& out, const Outcome<RepairedRun>& outcome);
void print_outcome(std::ostream& out, const Outcome<BisectedRun>& outcome);

}  // namespace onnxproof
