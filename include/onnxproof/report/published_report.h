#pragma once
// The one reader of a run's report.json in the engine: the generated contract's (schemas/
// report.schema.json, build/include/onnxproof/contract/report.h), and the facts later commands
// take from it (`onnxproof localize RUN`, `onnxproof repair RUN`), each with one meaning.

#include <filesystem>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "onnxproof/contract/report.h"
#include "onnxproof/core/error.h"
#include "onnxproof/parity/parity.h"

namespace onnxproof {

using PublishedReport = contract::ReportDocument;

/// The report version before the source framework's keys were neutral.
inline constexpr std::string_view k_report_schema_1 = "onnxproof.report/1";

/// An onnxproof.report/1 document given version 2's names, in place: version 1 keyed the source
/// framework's figures "pytorch" whatever the framework (parity rows' pytorch_error and
/// steps.pytorch, detections' pytorch and only_pytorch, accuracy's pytorch, the generation
/// table's pytorch_tokens); version 2 says "source". Any other document is left as it is. The
/// Python package reads old reports the same way (core/report.py upgraded_from_1).
void upgrade_report_from_1(nlohmann::json& report);

/// RUN/report.json (version 1 upgraded), every field the schema types checked; ErrorCode::usage naming the file when
/// RUN holds none, `code` naming the file and the field when it breaks the schema.
Expected<PublishedReport> read_published_report(const std::filesystem::path& run, ErrorCode code);

/// The report's parity rows as ParityRows, with the fields the choice of a case to localize reads
/// (case, provider, level, output, status, largest difference, NaN mismatches, argmax flips).
ParityResult parity_rows_of(const PublishedReport& report);

/// The run's parity step proved its float16 conversion (--precision fp16).
bool proves_float16(const PublishedReport& report);

/// The file the run ships, relative to the run: the float16 copy a --precision fp16 proof
/// proved, else the proved model (model.sim.onnx or model.onnx).
std::string shipped_model_of(const PublishedReport& report);

/// The proved model's ai.onnx opset, 0 when the report has no signature (the export failed).
int64_t default_opset_of(const PublishedReport& report);

/// Rewrites "What to do" in RUN's report.md and report.html from `shown` to `now` (the words
/// report_sections.cpp wrote them with), each file atomically; report.json is the caller's.
Expected<void> replace_what_to_do_in_views(const std::filesystem::path& run, const std::string& shown,
                                           const std::string& now);

}  // namespace onnxproof
