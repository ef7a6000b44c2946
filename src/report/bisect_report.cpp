#include "onnxproof/report/bisect_report.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cctype>

#include "onnxproof/report/markdown.h"

namespace onnxproof {

namespace {

// A row's number as the tables print it; "-" where there is none (null, Inf written as null).
std::string figure(const nlohmann::json& row, const char* key) {
  const auto found = row.find(key);
  return found != row.end() && found->is_number() ? fmt::format("{:.3g}", found->get<double>()) : "-";
}

std::string outcome_cell(const BisectedRelease& release) {
  if (release.outcome.empty()) return "not proved (the bisection did not need it)";
  std::string cell = release.outcome;
  if (release.rows > 0) cell += fmt::format(", {} of {} rows pass", release.rows_passed, release.rows);
  if (!release.reason.empty()) cell += ": " + release.reason;
  return cell;
}

std::string releases_table(const ReleaseBisectResult& result) {
  const auto& b = result.bisection;
  std::string text = "| ONNX Runtime | outcome | proved by | evidence |\n| --- | --- | --- | --- |\n";
  for (std::size_t i = 0; i < b.releases.size(); ++i) {
    const auto& r = b.releases[i];
    std::string marker = i == b.last_good ? " (last pass)" : i == b.first_bad ? " (first fail)" : "";
    if (!b.regression()) marker = i == b.last_good ? " (first pass)" : i == b.first_bad ? " (last fail)" : "";
    const std::string by = r.outcome.empty() ? "-" : r.recorded ? "the run (--target)" : "the bisection";
    text += fmt::format("| {}{} | {} | {} | {} |\n", r.version, marker, markdown_text(outcome_cell(r)), by,
                        r.evidence.empty() ? "-" : markdown_code(r.evidence));
  }
  return text;
}

std::string optimizer_section(const ReleaseBisectResult& result) {
  const auto& o = result.optimizer;
  const std::string& bad = result.bisection.releases[result.bisection.first_bad].version;
  std::string text = "## The optimizer on " + bad + "\n\n";
  if (!o.error.empty()) return text + "The search could not run: " + markdown_text(o.error) + "\n";
  if (o.fails_unoptimized)
    return text +
           "It fails with ONNX Runtime's graph optimizations disabled too: no optimizer is to blame, the "
           "release computes differently (a kernel).\n";
  if (o.optimizers.empty())
    return text + fmt::format(
                      "Disabling every named optimizer does not make it pass ({} proofs): what the "
                      "optimization level changes otherwise (layouts, kernel choice) does.\n",
                      o.sessions);
  const auto advised = advised_optimizers(o);
  const std::string names = fmt::format("{}", fmt::join(advised, ", "));
  text += fmt::format(
      "Disabling {}{} makes it pass (found in {} parity proofs on the release): session option "
      "`optimization.disable_specified_optimizers={}`. Evidence: {}.\n",
      markdown_code(names), o.together ? " together" : "", o.sessions, fmt::join(advised, ";"),
      o.evidence.empty() ? "its proof could not be written" : markdown_code(o.evidence));
  if (o.optimizers.size() > 1 && !o.together)
    text += fmt::format(
        "\nDisabling {} alone makes it pass too: it runs before {} (whose rewrite it feeds), so "
        "disabling {} keeps more of the optimizations.\n",
        markdown_code(fmt::format("{}", fmt::join(o.optimizers.begin(), o.optimizers.end() - 1, ", "))),
        markdown_code(o.optimizers.back()), markdown_code(o.optimizers.back()));
  return text;
}

std::string evidence_table(const ReleaseBisectResult& result) {
  if (result.evidence_rows.empty()) return "";
  const bool without = !result.optimizer.optimizers.empty();
  std::string text =
      "\n| case | output | max abs | error / budget | status |" +
      (without ? fmt::format(" with {} disabled |", fmt::join(advised_optimizers(result.optimizer), ", "))
               : std::string()) +
      "\n| --- | --- | --- | --- | --- |" + std::string(without ? " --- |" : "") + "\n";
  for (const auto& row : result.evidence_rows) {
    text += fmt::format("| {} | {} | {} | {} | {} |", markdown_text(row.value("case", "")),
                        markdown_text(row.value("output", "")), figure(row, "max_abs"), figure(row, "error_ratio"),
                        row.value("status", ""));
    if (without) text += " " + row.value("status_without", std::string("-")) + " |";
    text += "\n";
  }
  return text;
}

}  // namespace

std::string release_bisect_to_markdown(const ReleaseBisectResult& result) {
  const auto& b = result.bisection;
  std::string text = "# Since when: ONNX Runtime releases bisected\n\n";
  std::string sentence = release_regression_finding(result).message;
  if (!sentence.empty()) sentence[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(sentence[0])));
  text += markdown_text(sentence) + ".\n\n";
  text += "**What to do:** " + markdown_text(result.what_to_do) + "\n\n";
  text += releases_table(result) + "\n";
  text += optimizer_section(result);
  text += evidence_table(result);
  const auto& o = result.optimizer;
  if (!o.config_added.empty() || !o.config_removed.empty())
    text += fmt::format(
        "\nThe session-config beside {} differs from {}'s: it sets {}{}.\n", b.releases[b.first_bad].version,
        b.releases[b.last_good].version,
        o.config_added.empty() ? "nothing new" : markdown_code(fmt::format("{}", fmt::join(o.config_added, ", "))),
        o.config_removed.empty()
            ? ""
            : "; it no longer sets " + markdown_code(fmt::format("{}", fmt::join(o.config_removed, ", "))));
  text += fmt::format("\n{} release{} proved by the bisection in {:.1f} s.\n", b.proved.size(),
                      b.proved.size() == 1 ? "" : "s", result.seconds);
  return text;
}

}  // namespace onnxproof
