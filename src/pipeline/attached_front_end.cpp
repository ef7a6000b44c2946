#include "onnxproof/pipeline/attached_front_end.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <initializer_list>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>

#include "onnxproof/core/run_folder.h"
#include "onnxproof/core/verdict.h"
#include "onnxproof/ops/opset_limits.h"

namespace onnxproof {
namespace fs = std::filesystem;

namespace {

// The two streams to the front end, one JSON object a line. Once the front end has gone away
// (end of input, a malformed line, a failed write) every later exchange fails at once: the run
// must never wait on a front end that will not answer. Its input may be gone while the output
// still takes the error that says so.
class FrontEndChannel {
 public:
  FrontEndChannel(std::istream& from_front_end, std::ostream& to_front_end)
      : m_in(from_front_end), m_out(to_front_end) {}

  /// Sends one message; ErrorCode::io when the front end cannot be written to.
  Expected<void> send(const nlohmann::json& message) {
    if (m_output_gone) return fail(ErrorCode::io, "the front end went away");
    m_out << message.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << '\n' << std::flush;
    if (m_out) return {};
    m_output_gone = true;
    return fail(ErrorCode::io, "the front end went away: the engine cannot write to it");
  }

  /// The next message, whose "event" must be one of `events`; ErrorCode::invalid_input when the
  /// input ends (mid-line too), a line is longer than k_max_attach_line_bytes (read no further),
  /// is not a JSON object with an "event", or the event is another.
  Expected<nlohmann::json> receive(std::initializer_list<std::string_view> events) {
    const std::string awaited = fmt::format("{}", fmt::join(events, " or "));
    if (gone()) return fail(ErrorCode::invalid_input, "the front end went away before sending " + awaited);
    std::string line;
    ONNXPROOF_TRY(read_line(line, awaited));
    auto message = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (!message.is_object() || !message.contains("event") || !message["event"].is_string())
      return lost("the front end sent a malformed line where " + awaited + " was expected: " + excerpt(line));
    const std::string event = message["event"];
    for (const auto expected : events) {
      if (event == expected) return message;
    }
    return lost(fmt::format("the front end sent {} where {} was expected", excerpt(event), awaited));
  }

  bool gone() const { return m_input_gone || m_output_gone; }

 private:
  // One line into `line`, without its newline. Never holds more than the limit: a longer line
  // is refused as soon as it is, without waiting for its end (a front end may send no newline
  // ever). A last line cut off by the end of input is a truncated message, not a message.
  Expected<void> read_line(std::string& line, const std::string& awaited) {
    std::streambuf* in = m_in.rdbuf();
    while (true) {
      const auto c = in == nullptr ? std::char_traits<char>::eof() : in->sbumpc();
      if (c == std::char_traits<char>::eof()) {
        if (line.empty()) return lost("the front end went away (end of input) before sending " + awaited);
        return lost("the front end went away mid-line (a line without its end) where " + awaited +
                    " was expected: " + excerpt(line));
      }
      if (c == '\n') return {};
      if (line.size() >= k_max_attach_line_bytes)
        return lost(fmt::format("the front end sent a line longer than {} bytes where {} was expected",
                                k_max_attach_line_bytes, awaited));
      line.push_back(std::char_traits<char>::to_char_type(c));
    }
  }

  // The start of a front end's text for an error message, as printable text.
  static std::string excerpt(const std::string& text) {
    const std::string start = text.substr(0, 200);
    return nlohmann::json(start).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  }

  std::unexpected<Error> lost(std::string reason) {
    m_input_gone = true;
    return fail(ErrorCode::invalid_input, std::move(reason));
  }

  std::istream& m_in;
  std::ostream& m_out;
  bool m_input_gone = false;
  bool m_output_gone = false;
};

// A front end's free text (a reason) as it goes into an error: its start, ending "..." when cut.
std::string reason_excerpt(const std::string& text) {
  constexpr std::size_t k_most = 1000;
  return text.size() <= k_most ? text : text.substr(0, k_most) + "...";
}

// A string field of a front end's message; ErrorCode::invalid_input when absent or not a string.
Expected<std::string> text_field(const nlohmann::json& message, const char* field) {
  const auto it = message.find(field);
  if (it == message.end() || !it->is_string())
    return fail(ErrorCode::invalid_input, fmt::format("the front end's {} message has no \"{}\" text",
                                                      message["event"].get<std::string>(), field));
  return it->get<std::string>();
}

// The folder an export_ready names: the front end's own staging folder, a real folder (never a
// link to one elsewhere) holding an export.json; ErrorCode::invalid_input otherwise (the front
// end broke the protocol: nothing the user typed names it).
Expected<fs::path> export_folder(const std::string& named) {
  const std::string said = "the front end's export_ready names " +
                           nlohmann::json(named).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  if (named.empty()) return fail(ErrorCode::invalid_input, said + ", no folder");
  const fs::path folder = named;
  std::error_code ec;
  const auto status = fs::symlink_status(folder, ec);
  if (fs::is_symlink(status))
    return fail(ErrorCode::invalid_input, said + ", a link: an export folder is never followed");
  if (!fs::exists(status)) return fail(ErrorCode::invalid_input, said + ", which does not exist");
  if (!fs::is_directory(status)) return fail(ErrorCode::invalid_input, said + ", which is not a folder");
  if (!fs::is_regular_file(fs::symlink_status(folder / "export.json", ec)))
    return fail(ErrorCode::invalid_input, said + ", which holds no export.json: not an export");
  return folder;
}

// The front end's half of localization, asked over the channel: it captures with hooks on the
// model object it holds, in RUN/localize/, and answers.
CaptureModuleOutputs capture_by_front_end(FrontEndChannel& channel) {
  return [&channel](const fs::path& run, const std::string& model_file, const std::string& data_set) -> Expected<void> {
    ONNXPROOF_TRY(
        channel.send({{"event", "capture"}, {"folder", run.string()}, {"model_file", model_file}, {"case", data_set}}));
    ONNXPROOF_TRY_ASSIGN(const nlohmann::json answer, channel.receive({"captured", "capture_failed"}));
    if (answer["event"] == "captured") return {};
    ONNXPROOF_TRY_ASSIGN(const std::string reason, text_field(answer, "reason"));
    return fail(ErrorCode::invalid_input,
                "the front end could not capture the module outputs: " + reason_excerpt(reason));
  };
}

// Another export, asked over the channel: the front end exports the model it holds into `folder`.
ExportAgain export_by_front_end(FrontEndChannel& channel) {
  return [&channel](const std::string& exporter, int64_t opset, const fs::path& folder) -> Expected<void> {
    ONNXPROOF_TRY(channel.send(
        {{"event", "export_again"}, {"folder", folder.string()}, {"exporter", exporter}, {"opset", opset}}));
    ONNXPROOF_TRY_ASSIGN(const nlohmann::json answer, channel.receive({"export_ready", "export_failed"}));
    if (answer["event"] == "export_ready") {
      ONNXPROOF_TRY_ASSIGN(const std::string named, text_field(answer, "folder"));
      ONNXPROOF_TRY_ASSIGN(const fs::path ready, export_folder(named));
      if (fs::weakly_canonical(ready) != fs::weakly_canonical(folder))
        return fail(ErrorCode::invalid_input,
                    "the front end's export_ready names " + named + ", not " + folder.string());
      return {};
    }
    ONNXPROOF_TRY_ASSIGN(const std::string reason, text_field(answer, "reason"));
    return fail(ErrorCode::invalid_input, "the front end could not export again: " + reason_excerpt(reason));
  };
}

// The front end's first message: its command, in the protocol this engine speaks, made the
// pipeline's options (a refusal is the front end's caller's usage error).
Expected<PipelineOptions> receive_command(FrontEndChannel& channel, const AttachedCommand& command) {
  ONNXPROOF_TRY_ASSIGN(const nlohmann::json message, channel.receive({"command"}));
  const auto protocol = message.find("protocol");
  if (protocol == message.end() || !protocol->is_string() || *protocol != k_attach_protocol)
    return fail(ErrorCode::invalid_input,
                fmt::format("the front end speaks {}, this engine {}: reinstall onnxproof",
                            protocol == message.end() ? "no protocol" : protocol->dump(), k_attach_protocol));
  if (!message.contains("command"))
    return fail(ErrorCode::invalid_input, "the front end's command message holds no \"command\"");
  return command(message["command"]);
}

// Sends the opset limit, waits for the export, runs the pipeline on it.
Expected<Report> run_with_front_end(PipelineOptions options, FrontEndChannel& channel, std::ostream& progress,
                                    const BeforeAttachedPublish& before_publish) {
  // Refused before the front end spends minutes on an export the run could not publish.
  ONNXPROOF_TRY(require_replaceable_run_folder(options.export_options.out));
  OpsetLimit limit = newest_supported_opset(options.targets);
  fit_opset_limit_to_releases(limit, options.releases);
  ONNXPROOF_TRY(channel.send({{"event", "opset_limit"},
                              {"protocol", k_attach_protocol},
                              {"opset", limit.opset},
                              {"reason", limit.reason},
                              {"op_limits", limit.op_limits},
                              {"portable", limit.portable},
                              {"portable_reason", limit.portable_reason}}));
  ONNXPROOF_TRY_ASSIGN(const nlohmann::json ready, channel.receive({"export_ready", "abort"}));
  if (ready["event"] == "abort") {
    ONNXPROOF_TRY_ASSIGN(const std::string reason, text_field(ready, "reason"));
    return fail(ErrorCode::invalid_input, "the front end gave up the export: " + reason_excerpt(reason));
  }
  ONNXPROOF_TRY_ASSIGN(const std::string named, text_field(ready, "folder"));
  ONNXPROOF_TRY_ASSIGN(options.export_options.from_export, export_folder(named));
  options.capture = capture_by_front_end(channel);
  if (before_publish)
    options.before_publish = [&](Report& report, const StagedRun& run) {
      return before_publish(report, run, export_by_front_end(channel));
    };
  ONNXPROOF_TRY_ASSIGN(Report report, run_pipeline(options, progress));
  // A front end that went away during the capture: the run is written, without its localization.
  if (channel.gone()) return fail(ErrorCode::invalid_input, "the front end went away during the run");
  return report;
}

}  // namespace

Expected<Report> run_attached_pipeline(const AttachedCommand& command, std::istream& from_front_end,
                                       std::ostream& to_front_end, std::ostream& progress,
                                       const BeforeAttachedPublish& before_publish) {
  FrontEndChannel channel{from_front_end, to_front_end};
  auto options = receive_command(channel, command);
  const fs::path report_path = options ? options->export_options.out / "report.json" : fs::path();
  auto report = options ? run_with_front_end(std::move(*options), channel, progress, before_publish)
                        : Expected<Report>(std::unexpected(options.error()));
  if (!report) {
    const std::string kind = report.error().code() == ErrorCode::usage ? "usage" : "error";
    // Small enough for any pipe's buffer: a front end that does not read it never blocks the engine's exit.
    (void)channel.send({{"event", "error"},
                        {"code", kind},
                        {"message", report.error().describe().substr(0, k_max_attach_error_bytes)}});
    return report;
  }
  const StepReport* failed_step = first_error_step(*report);
  ONNXPROOF_TRY(channel.send(
      {{"event", "outcome"},
       {"verdict", verdict_name(report->verdict)},
       {"report", (report->run_folder.empty() ? report_path : report->run_folder / "report.json").string()},
       {"error", failed_step ? failed_step->name + " step: " + failed_step->reason : ""}}));
  return report;
}

}  // namespace onnxproof
