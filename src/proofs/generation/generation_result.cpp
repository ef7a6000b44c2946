#include "generation_result.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "onnxproof/core/source_framework.h"
#include "onnxproof/report/log_bar_chart.h"
#include "onnxproof/report/markdown.h"
#include "onnxproof/report/report.h"

namespace onnxproof {

namespace {

nlohmann::json optional_step(const std::optional<int>& step) { return step ? nlohmann::json(*step) : nlohmann::json(); }

const char* status_of(const GenerationStep& step) {
  return step.passed() ? (step.near_tie ? "near tie" : "pass") : "fail";
}

nlohmann::json step_to_json(const GenerationStep& step) {
  const char* status = status_of(step);
  nlohmann::json row{{"step", step.step},
                     {"past_length", step.past_length},
                     {"source_tokens", step.pytorch_tokens},
                     {"onnx_tokens", step.onnx_tokens},
                     {"max_abs", step.max_abs},
                     {"error", step.error},
                     {"budget", step.budget},
                     {"mismatches", step.mismatches},
                     {"status", status}};
  if (step.tie_margin) row["margin"] = *step.tie_margin;
  return row;
}

// The table's rows as cells: step, past length, tokens (the reference's / ONNX Runtime's), error, budget, status.
std::vector<std::vector<std::string>> table_cells(const GenerationResult& result) {
  std::vector<std::vector<std::string>> rows;
  for (const auto& step : result.steps) {
    rows.push_back(
        {std::to_string(step.step), std::to_string(step.past_length),
         fmt::format("{}", fmt::join(step.pytorch_tokens, " ")),
         step.pytorch_tokens == step.onnx_tokens ? "same" : fmt::format("{}", fmt::join(step.onnx_tokens, " ")),
         fmt::format("{:.3g}", step.max_abs), fmt::format("{:.3g}", step.error), fmt::format("{:.3g}", step.budget),
         status_of(step)});
  }
  return rows;
}

// "cpu, batch 2, source 16 tokens, last row padded (optimization disabled)": which table this is.
std::string title_of(const GenerationResult& result) {
  return result.provider + (result.run.empty() ? "" : ", " + result.run) +
         (result.optimization == "disabled" ? " (graph optimizations disabled)" : "");
}

std::string summary_of(const GenerationResult& result) {
  std::string encoder;
  for (const auto& output : result.encoder) {
    if (!output.passed()) {
      encoder = fmt::format("; encoder output {} outside the budget ({:.3g} > {:.3g})", output.name, output.error,
                            output.budget);
      break;
    }
  }
  if (encoder.empty() && !result.encoder.empty())
    encoder = fmt::format("; the encoder's {} outputs within the budget", result.encoder.size());
  return fmt::format(
      "{}: {} of {} steps with identical tokens (rule {}); {}{}", title_of(result), result.identical_steps(),
      result.steps.size(), result.rule,
      result.first_failure ? fmt::format("first wrong at step {}", *result.first_failure) : "every step passed",
      encoder);
}

// The table's columns, the reference named by its source framework's title ("PyTorch").
std::vector<std::string> table_columns(const std::string& source) {
  return {"step",   "past length", source + " tokens", "ONNX Runtime tokens", "max abs vs " + source, "error",
          "budget", "status"};
}

}  // namespace

nlohmann::json GenerationFigures::to_json() const {
  nlohmann::json providers = nlohmann::json::array();
  for (const auto& result : results) {
    nlohmann::json table = nlohmann::json::array();
    for (const auto& step : result.steps) table.push_back(step_to_json(step));
    nlohmann::json encoder = nlohmann::json::array();
    for (const auto& output : result.encoder) {
      encoder.push_back({{"name", output.name},
                         {"max_abs", output.max_abs},
                         {"error", output.error},
                         {"budget", output.budget},
                         {"mismatches", output.mismatches},
                         {"passed", output.passed()}});
    }
    providers.push_back({{"provider", result.provider},
                         {"optimization", result.optimization},
                         {"run", result.run},
                         {"padded", result.padded},
                         {"encoder", std::move(encoder)},
                         {"rule", result.rule},
                         {"passed", result.passed()},
                         {"batch", result.batch},
                         {"prompt_length", result.prompt_length},
                         {"identical_steps", result.identical_steps()},
                         {"first_token_difference", optional_step(result.first_token_difference)},
                         {"first_failure", optional_step(result.first_failure)},
                         {"exact_missing_reason", result.exact_missing_reason},
                         {"table", std::move(table)}});
  }
  return {{"steps", steps}, {"providers", std::move(providers)}};
}

std::string GenerationFigures::markdown(const Report& report) const {
  const std::string source = source_title(report.framework);
  std::string md =
      "\n## Generation (greedy, cache fed back)\n\n![error by step](report-generate.svg)\n\n"
      "ONNX Runtime is fed " +
      markdown_text(source) +
      "'s token at each step; `error` is what the rule "
      "bounds (|ONNX Runtime - float64| when calibrated).\n";
  for (const auto& result : results) {
    md += "\n" + markdown_text(summary_of(result)) + "\n\n| " +
          fmt::format("{}", fmt::join(table_columns(source), " | ")) +
          " |\n| ---: | ---: | --- | --- | ---: | ---: | ---: | --- |\n";
    for (const auto& cells : table_cells(result)) {
      std::vector<std::string> escaped;
      for (const auto& cell : cells) escaped.push_back(markdown_text(cell));
      md += fmt::format("| {} |\n", fmt::join(escaped, " | "));
    }
  }
  return md;
}

std::string GenerationFigures::html(const Report& report) const {
  std::string html = "<h2>Generation (greedy, cache fed back)</h2>\n" + plot_svg(report.framework);
  for (const auto& result : results) {
    html += "<p>" + markup_escape(summary_of(result)) + "</p>\n<table><tr>";
    for (const auto& column : table_columns(source_title(report.framework)))
      html += fmt::format("<th>{}</th>", markup_escape(column));
    html += "</tr>\n";
    for (const auto& cells : table_cells(result)) {
      html += "<tr>";
      for (const auto& cell : cells) html += "<td>" + markup_escape(cell) + "</td>";
      html += "</tr>\n";
    }
    html += "</table>\n";
  }
  return html;
}

std::string GenerationFigures::plot_svg(const std::string& framework) const {
  ChartSpec chart{.title = "Logit error per generation step (red: the step fails)",
                  .x_label = "logit error against " + source_title(framework) + " (log scale)",
                  .limit_legend = "budget"};
  for (const auto& result : results) {
    ChartPanel panel{.name = title_of(result) + ", rule " + result.rule};
    for (const auto& step : result.steps) {
      panel.bars.push_back({.label = fmt::format("step {}", step.step),
                            .value = step.error,
                            .kind = step.passed() ? BarKind::within : BarKind::outside,
                            .limit = step.budget > 0 ? step.budget : NAN});
    }
    chart.panels.push_back(std::move(panel));
  }
  return log_bar_chart_svg(chart);
}

std::vector<ReportFile> GenerationFigures::files(const Report& report) const {
  std::string svg = plot_svg(report.framework);
  if (svg.empty()) return {};
  return {{"report-generate.svg", std::move(svg)}};
}

}  // namespace onnxproof
