#include "onnxproof/report/generation_report.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "onnxproof/core/source_framework.h"
#include "onnxproof/report/log_bar_chart.h"
#include "onnxproof/report/markdown.h"

namespace onnxproof {

namespace {

nlohmann::json optional_step(const std::optional<int>& step) { return step ? nlohmann::json(*step) : nlohmann::json(); }

nlohmann::json step_to_json(const GenerationStep& step) {
  const char* status = step.passed() ? (step.near_tie ? "near tie" : "pass") : "fail";
  nlohmann::json row{{"step", step.step},
                     {"past_length", step.past_length},
                     {"pytorch_tokens", step.pytorch_tokens},
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
std::vector<std::vector<std::string>> table_cells(const nlohmann::json& provider) {
  std::vector<std::vector<std::string>> rows;
  for (const auto& row : provider.value("table", nlohmann::json::array())) {
    const auto pytorch = row.value("pytorch_tokens", std::vector<int64_t>{});
    const auto onnx = row.value("onnx_tokens", std::vector<int64_t>{});
    rows.push_back({std::to_string(row.value("step", 0)), std::to_string(row.value("past_length", int64_t{0})),
                    fmt::format("{}", fmt::join(pytorch, " ")),
                    pytorch == onnx ? "same" : fmt::format("{}", fmt::join(onnx, " ")),
                    fmt::format("{:.3g}", row.value("max_abs", 0.0)), fmt::format("{:.3g}", row.value("error", 0.0)),
                    fmt::format("{:.3g}", row.value("budget", 0.0)), row.value("status", "")});
  }
  return rows;
}

// "cpu, batch 2, source 16 tokens, last row padded (optimization disabled)": which table this is.
std::string title_of(const nlohmann::json& provider) {
  const std::string run = provider.value("run", "");
  const std::string level = provider.value("optimization", "");
  return provider.value("provider", "") + (run.empty() ? "" : ", " + run) +
         (level == "disabled" ? " (graph optimizations disabled)" : "");
}

std::string summary_of(const nlohmann::json& provider) {
  const auto& first = provider["first_failure"];
  std::string encoder;
  for (const auto& output : provider.value("encoder", nlohmann::json::array())) {
    if (!output.value("passed", true)) {
      encoder = fmt::format("; encoder output {} outside the budget ({:.3g} > {:.3g})", output.value("name", ""),
                            output.value("error", 0.0), output.value("budget", 0.0));
      break;
    }
  }
  if (encoder.empty() && !provider.value("encoder", nlohmann::json::array()).empty()) {
    encoder = fmt::format("; the encoder's {} outputs within the budget", provider["encoder"].size());
  }
  return fmt::format("{}: {} of {} steps with identical tokens (rule {}); {}{}", title_of(provider),
                     provider.value("identical_steps", 0), provider.value("table", nlohmann::json::array()).size(),
                     provider.value("rule", ""),
                     first.is_number() ? fmt::format("first wrong at step {}", first.get<int>()) : "every step passed",
                     encoder);
}

// The table's columns, the reference named by its source framework's title ("PyTorch").
std::vector<std::string> table_columns(const std::string& source) {
  return {"step",   "past length", source + " tokens", "ONNX Runtime tokens", "max abs vs " + source, "error",
          "budget", "status"};
}

}  // namespace

nlohmann::json generation_to_json(int steps, const std::vector<GenerationResult>& results) {
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

std::string generation_to_markdown(const nlohmann::json& details, const std::string& framework) {
  if (!details.contains("providers")) return "";
  const std::string source = source_title(framework);
  std::string md =
      "\n## Generation (greedy, cache fed back)\n\n![error by step](report-generate.svg)\n\n"
      "ONNX Runtime is fed " +
      markdown_text(source) +
      "'s token at each step; `error` is what the rule "
      "bounds (|ONNX Runtime - float64| when calibrated).\n";
  for (const auto& provider : details["providers"]) {
    md += "\n" + markdown_text(summary_of(provider)) + "\n\n| " +
          fmt::format("{}", fmt::join(table_columns(source), " | ")) +
          " |\n| ---: | ---: | --- | --- | ---: | ---: | ---: | --- |\n";
    for (const auto& cells : table_cells(provider)) {
      std::vector<std::string> escaped;
      for (const auto& cell : cells) escaped.push_back(markdown_text(cell));
      md += fmt::format("| {} |\n", fmt::join(escaped, " | "));
    }
  }
  return md;
}

std::string generation_to_html(const nlohmann::json& details, const std::string& framework) {
  if (!details.contains("providers")) return "";
  std::string html = "<h2>Generation (greedy, cache fed back)</h2>\n" + generation_plot_svg(details, framework);
  for (const auto& provider : details["providers"]) {
    html += "<p>" + markup_escape(summary_of(provider)) + "</p>\n<table><tr>";
    for (const auto& column : table_columns(source_title(framework)))
      html += fmt::format("<th>{}</th>", markup_escape(column));
    html += "</tr>\n";
    for (const auto& cells : table_cells(provider)) {
      html += "<tr>";
      for (const auto& cell : cells) html += "<td>" + markup_escape(cell) + "</td>";
      html += "</tr>\n";
    }
    html += "</table>\n";
  }
  return html;
}

std::string generation_plot_svg(const nlohmann::json& details, const std::string& framework) {
  ChartSpec chart{.title = "Logit error per generation step (red: the step fails)",
                  .x_label = "logit error against " + source_title(framework) + " (log scale)",
                  .limit_legend = "budget"};
  for (const auto& provider : details.value("providers", nlohmann::json::array())) {
    ChartPanel panel{.name = title_of(provider) + ", rule " + provider.value("rule", "")};
    for (const auto& row : provider.value("table", nlohmann::json::array())) {
      const double budget = row.value("budget", 0.0);
      panel.bars.push_back({.label = fmt::format("step {}", row.value("step", 0)),
                            .value = row.value("error", 0.0),
                            .kind = row.value("status", "") == "fail" ? BarKind::outside : BarKind::within,
                            .limit = budget > 0 ? budget : NAN});
    }
    chart.panels.push_back(std::move(panel));
  }
  return log_bar_chart_svg(chart);
}

}  // namespace onnxproof
