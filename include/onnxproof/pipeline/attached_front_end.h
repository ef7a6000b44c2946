#pragma once
// The pipeline driven by a front end attached over two streams (`onnxproof pipeline --attach`,
// started by onnxproof.prove): the front end exports in its own process, with the user's model
// object, and this engine process does everything else, once per prove().
//
// The protocol, onnxproof.attach/2: one JSON object per line, each with an "event".
//   front end -> engine, first
//     {"event": "command", "protocol": "onnxproof.attach/2", "command": {onnxproof.command/1}}
//                                                         the whole pipeline command (schemas/
//                                                         command.schema.json, its "run" part
//                                                         naming the run folder); the engine
//                                                         checks it as the command line's options
//                                                         and answers an "error" when it refuses it
//   engine -> front end (the engine's stdout; progress stays on stderr)
//     {"event": "opset_limit", "protocol": "onnxproof.attach/2", "opset": N, "reason": "...",
//      "op_limits": {op: opset}}                          then: the export's opset ceiling
//     {"event": "capture", "folder": RUN, "model_file": "model.onnx", "case": "test_data_set_N"}
//                                                         localization needs PyTorch's module outputs
//     {"event": "export_again", "folder": DIR, "exporter": "dynamo", "opset": N}
//                                                         repair (--repair) needs another export into DIR
//                                                         ("" / 0: as the first export)
//     {"event": "outcome", "verdict": "pass|fail|error", "report": "OUT/report.json", "error": "..."}
//                                                         last, when the run was written
//     {"event": "error", "code": "usage|...", "message": "..."}
//                                                         last, when it could not be
//   front end -> engine (the engine's stdin)
//     {"event": "export_ready", "folder": STAGING} or {"event": "abort", "reason": "..."}
//     {"event": "captured"} or {"event": "capture_failed", "reason": "..."}   (answers "capture")
//     {"event": "export_ready", "folder": DIR} or {"event": "export_failed", "reason": "..."}
//                                                                            (answers "export_again")
// End of input or a malformed line means the front end went away: the run ends with an error
// (or, during a capture, the localization does, and the run is written as after any error of it).
//
// Limits, both ways: a line is at most k_max_attach_line_bytes (1 MiB) before its newline; a
// longer one is refused as soon as it is that long, without reading on. A line must be UTF-8 JSON
// holding one object with a text "event"; a last line without its newline (the writer ended
// mid-line) is truncated, not a message. Each side sends only what the other awaits, one message
// at a time, and the engine's messages are small (an "error" event's text is cut at
// k_max_attach_error_bytes, a front end's reason at 1000 bytes): a pipe's buffer holds any of
// them, so the engine never blocks writing to a front end that has stopped reading (it ends
// with its message still in the pipe). The export_ready folder must be a folder, not a
// link, holding export.json. Every breach ends the engine with exit 3 and one "onnxproof: error:"
// line (and an "error" event while its output is open); the front end raises its own error and
// ends the engine (python/onnxproof/core/attached.py). The engine's stderr (progress) must be read
// as it comes: an engine whose stderr is full waits, as any process does.

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <istream>
#include <nlohmann/json.hpp>
#include <ostream>
#include <string>
#include <string_view>

#include "onnxproof/core/error.h"
#include "onnxproof/pipeline/pipeline.h"
#include "onnxproof/report/report.h"

namespace onnxproof {

inline constexpr std::string_view k_attach_protocol = "onnxproof.attach/2";

/// The longest line either side of onnxproof.attach/2 may send, its newline not counted.
inline constexpr std::size_t k_max_attach_line_bytes = std::size_t{1} << 20;

/// The most of an error's text the engine's "error" event carries (its stderr line has it all,
/// but for a front end's reason, cut to its first 1000 bytes).
inline constexpr std::size_t k_max_attach_error_bytes = 4096;

/// Asks the attached front end for another export of its model into `folder` (an export folder),
/// with `exporter` and `opset` ("" and 0: as the first); ErrorCode::invalid_input with its reason
/// when it could not.
using ExportAgain =
    std::function<Expected<void>(const std::string& exporter, int64_t opset, const std::filesystem::path& folder)>;

/// What runs once the attached run is proved, before it publishes (PipelineOptions::before_publish:
/// the command record, pipeline --repair): it may add to the staged run and its report, and ask
/// the front end for more exports. True when it changed the report.
using BeforeAttachedPublish =
    std::function<bool(Report& report, const StagedRun& run, const ExportAgain& export_again)>;

/// The front end's command (its "command" document) made the pipeline's options, with the
/// export to come from the front end; ErrorCode::usage with the reason when it is refused.
using AttachedCommand = std::function<Expected<PipelineOptions>(const nlohmann::json& command)>;

/// Runs the pipeline for an attached front end: receives its command (`command` makes it the
/// options), sends the opset limit of the options' targets, waits
/// for the export, proves it as run_pipeline() does for --from-export (options.export_options.out
/// is the run folder), asks the front end to capture module outputs when the pipeline localizes,
/// runs `before_publish` when set, and sends the outcome. Returns the report. Fails as run_pipeline() does, and with
/// ErrorCode::invalid_input when the front end aborts, goes away or breaks the protocol; every
/// failure is also sent as an "error" event while the channel is open.
Expected<Report> run_attached_pipeline(const AttachedCommand& command, std::istream& from_front_end,
                                       std::ostream& to_front_end, std::ostream& progress,
                                       const BeforeAttachedPublish& before_publish = {});

}  // namespace onnxproof
