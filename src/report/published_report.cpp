// report.json read back through the generated contract.
#include "onnxproof/report/published_report.h"

#include <algorithm>

#include "onnxproof/core/atomic_file.h"
#include "onnxproof/core/json_file.h"
#include "onnxproof/report/log_bar_chart.h"  // markup_escape
#include "onnxproof/report/markdown.h"
#include "onnxproof/report/ship_summary.h"

namespace onnxproof {
namespace fs = std::filesystem;

namespace {

void rename(nlohmann::json& entry, const char* old_name, const char* new_name) {
  if (!entry.is_object() || !entry.contains(old_name)) return;
  entry[new_name] = std::move(entry[old_name]);
  entry.erase(old_name);
}

void parity_rows_from_1(nlohmann::json& rows) {
  if (!rows.is_array()) return;
  for (auto& row : rows) {
    rename(row, "pytorch_error", "source_error");
    if (row.is_object() && row.contains("steps")) rename(row["steps"], "pytorch", "source");
  }
}

// Each element of `list` that is an array's (a missing or non-array list: none).
template <class Each>
void for_each_in(nlohmann::json& node, const char* list, Each each) {
  if (!node.is_object() || !node.contains(list) || !node[list].is_array()) return;
  for (auto& element : node[list]) each(element);
}

}  // namespace

void upgrade_report_from_1(nlohmann::json& report) {
  if (!report.is_object() || report.value("schema", "") != k_report_schema_1) return;
  if (report.contains("parity")) parity_rows_from_1(report["parity"]);
  for_each_in(report, "detections", [](nlohmann::json& row) {
    rename(row, "pytorch", "source");
    rename(row, "only_pytorch", "only_source");
  });
  if (report.contains("summary"))
    for_each_in(report["summary"], "accuracy", [](nlohmann::json& entry) {
      if (entry.is_object() && entry.contains("accuracy")) rename(entry["accuracy"], "pytorch", "source");
    });
  for_each_in(report, "steps", [](nlohmann::json& step) {
    if (step.is_object() && step.value("name", "") == "quantize" && step.contains("rows"))
      parity_rows_from_1(step["rows"]);
    for_each_in(step, "providers", [](nlohmann::json& provider) {
      for_each_in(provider, "table", [](nlohmann::json& row) { rename(row, "pytorch_tokens", "source_tokens"); });
    });
  });
  report["schema"] = contract::k_report_version;
}

Expected<PublishedReport> read_published_report(const fs::path& run, ErrorCode code) {
  const fs::path file = run / "report.json";
  if (!fs::is_regular_file(file))
    return fail(ErrorCode::usage, run.string() + " is not a run folder of onnxproof pipeline (no report.json)");
  ONNXPROOF_TRY_ASSIGN(auto json, read_json_object(file, code));
  upgrade_report_from_1(json);
  return contract::read_report(json, file, code);
}

ParityResult parity_rows_of(const PublishedReport& report) {
  ParityResult parity;
  for (const auto& row : report.parity) {
    ParityRow parsed;
    parsed.data_set = row.case_;
    parsed.provider = row.provider;
    // The schema admits only the names these parse.
    parsed.optimization = parse_optimization(row.optimization).value_or(GraphOptimization::all);
    parsed.status = parse_row_status(row.status).value_or(RowStatus::error);
    parsed.output = row.output;
    // A refused case has no figures; a difference that is not finite is written as null.
    parsed.comparison.max_abs = row.max_abs && *row.max_abs ? **row.max_abs : 0.0;
    parsed.comparison.nan_mismatches = row.nan_mismatch.value_or(0);
    if (row.argmax_flips && *row.argmax_flips) parsed.argmax = ArgmaxCheck{.flips = **row.argmax_flips};
    parity.rows.push_back(std::move(parsed));
  }
  return parity;
}

bool proves_float16(const PublishedReport& report) {
  return std::any_of(report.steps.begin(), report.steps.end(),
                     [](const auto& step) { return step.name == "parity" && step.precision == "fp16"; });
}

std::string shipped_model_of(const PublishedReport& report) {
  const auto parity = std::find_if(report.steps.begin(), report.steps.end(),
                                   [](const auto& step) { return step.name == "parity" && step.model; });
  const std::string shipped =
      shipped_file_name(parity == report.steps.end() ? std::nullopt : parity->model, report.onnx_model);
  return shipped.empty() ? "model.onnx" : shipped;
}

int64_t default_opset_of(const PublishedReport& report) {
  if (!report.signature) return 0;
  const auto& opsets = report.signature->opsets;
  const auto it = opsets.find("ai.onnx");
  return it == opsets.end() ? 0 : it->second;
}

Expected<void> replace_what_to_do_in_views(const fs::path& run, const std::string& shown, const std::string& now) {
  const auto replace_in = [&](const fs::path& file, const std::string& from, const std::string& to) -> Expected<void> {
    if (!fs::is_regular_file(file) || from == to) return {};
    ONNXPROOF_TRY_ASSIGN(std::string text, read_file(file, uint64_t{1} << 30));
    const auto at = text.find(from);
    if (at == std::string::npos) return {};
    text.replace(at, from.size(), to);
    return write_file_atomically(file, text);
  };
  ONNXPROOF_TRY(replace_in(run / "report.md", "**What to do:** " + markdown_text(shown),
                           "**What to do:** " + markdown_text(now)));
  return replace_in(run / "report.html", "<dt>What to do</dt><dd>" + markup_escape(shown) + "</dd>",
                    "<dt>What to do</dt><dd>" + markup_escape(now) + "</dd>");
}

}  // namespace onnxproof
