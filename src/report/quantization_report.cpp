#include "onnxproof/report/quantization_report.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <functional>
#include <vector>

#include "onnxproof/core/source_framework.h"
#include "onnxproof/report/log_bar_chart.h"
#include "onnxproof/report/markdown.h"
#include "onnxproof/report/parity_report.h"

namespace onnxproof {
namespace {

using Table = std::vector<std::vector<std::string>>;  // the header row first

// A figure of quantization.json: null where it was not finite (JSON has no NaN).
std::string figure(const nlohmann::json& entry, const char* key) {
  const auto found = entry.find(key);
  return found != entry.end() && found->is_number() ? fmt::format("{:.3g}", found->get<double>()) : "not finite";
}

// The step histograms and rounding audits of the run: model.onnx's parity, then the quantize step's.
struct Sources {
  std::vector<std::pair<std::string, nlohmann::json>> rows;      // (model, rows)
  std::vector<std::pair<std::string, nlohmann::json>> rounding;  // (model, audits)
  nlohmann::json errors = nlohmann::json::array();
};

Sources sources_of(const Report& report) {
  Sources sources;
  if (report.parity) {
    sources.rows.emplace_back("model.onnx", parity_rows_to_json(*report.parity));
    sources.rounding.emplace_back("model.onnx", parity_summary_to_json(*report.parity)["rounding"]);
  }
  for (const auto& step : report.steps) {
    const auto* quantize = step.result_as<QuantizeFigures>();
    if (quantize == nullptr) continue;
    sources.rows.emplace_back("model.quant.onnx", parity_rows_to_json(quantize->proof));
    sources.rounding.emplace_back("model.quant.onnx", parity_summary_to_json(quantize->proof)["rounding"]);
    sources.errors = quantize->quantization_error;
  }
  return sources;
}

std::string share(const nlohmann::json& count, const char* key) {
  const double elements = count.value("elements", 0.0);
  const double value = count.value(key, 0.0);
  return elements > 0 ? fmt::format("{:g} ({:.1f}%)", value, 100.0 * value / elements) : "-";
}

Table histogram_table(const Sources& sources) {
  Table table{{"model", "case", "provider", "graph opt", "output", "status", "at 0 steps", "at 1 step", "at 2 or more",
               "max", "off the grid", "allowed", "reference float32 vs its float64 twin (at 1 / 2 or more)"}};
  for (const auto& [model, rows] : sources.rows) {
    for (const auto& row : rows) {
      if (!row.is_object() || !row.contains("steps")) continue;
      const auto& steps = row["steps"];
      const auto& onnx = steps["onnx"];
      const auto& own = steps["source"];
      table.push_back(
          {model, row.value("case", ""), row.value("provider", ""), row.value("optimization", ""),
           row.value("output", ""), row.value("status", ""), share(onnx, "zero"), share(onnx, "one"),
           share(onnx, "over"), fmt::format("{:.3g}", onnx.value("max", 0.0)),
           fmt::format("{:.2g}", onnx.value("off_grid", 0.0)),
           fmt::format("{:g} step(s), {:.3g}% moved{}", steps.value("allowed_max", 0.0),
                       100.0 * steps.value("allowed_share", 0.0),
                       steps["allowed_over_share"].is_number()
                           ? fmt::format(", {:.3g}% at 2 or more", 100.0 * steps["allowed_over_share"].get<double>())
                           : ""),
           own.is_object() ? fmt::format("{} / {}", own.value("one", 0), own.value("over", 0)) : "no float64 run"});
    }
  }
  return table;
}

Table rounding_table(const Sources& sources) {
  Table table{{"model", "provider", "QuantizeLinear", "ties tried", "differ", "rounding", "first difference"}};
  for (const auto& [model, audits] : sources.rounding) {
    for (const auto& audit : audits) {
      const std::string error = audit.value("error", "");
      table.push_back({model, audit.value("provider", ""),
                       audit.value("input", "") + " to " + audit.value("output", ""),
                       std::to_string(audit.value("values", 0)), std::to_string(audit.value("mismatches", 0)),
                       error.empty() ? audit.value("mode", "") : "not run: " + error, audit.value("example", "")});
    }
  }
  return table;
}

Table error_table(const Sources& sources, const std::string& source) {
  Table table{{"output", "max |quantized - " + source + " float|", "mean", "scale", "top-1 agreement"}};
  for (const auto& entry : sources.errors) {
    if (!entry.is_object()) continue;
    const int rows = entry.value("rows", 0);
    table.push_back({entry.value("output", ""), figure(entry, "max_abs"), figure(entry, "mean_abs"),
                     figure(entry, "scale"), rows ? fmt::format("{} of {}", entry.value("top1_agree", 0), rows) : "-"});
  }
  return table;
}

using Render = std::function<std::string(const std::string& heading, const std::string& text, const Table&)>;

std::string render(const Report& report, const Render& section) {
  const Sources sources = sources_of(report);
  const std::string source = source_title(report.framework);
  const Table histogram = histogram_table(sources);
  const Table rounding = rounding_table(sources);
  if (histogram.size() < 2 && rounding.size() < 2) return "";
  std::string text = section("Quantization", "", {});
  if (rounding.size() > 1) {
    text += section("Rounding audit",
                    "Every tie x / scale = k + 0.5 of each QuantizeLinear type pair the model uses, both signs and "
                    "past both ends, through each provider's kernel alone; the rule is round half to even.",
                    rounding);
  }
  if (histogram.size() > 1) {
    text += section(
        "Steps from the reference",
        "|ONNX Runtime - reference| / scale for every quantized output (the reference: " + source +
            "'s fake-quant model for model.onnx, ONNX's reference evaluator for model.quant.onnx): the "
            "share at 0 steps, at 1 (a rounding tie) and at 2 or more. The allowance is twice the steps and the share "
            "the reference "
            "shows against its own float64 twin, at least 1 step and 5% of the elements moved (0.1% with optimizations "
            "off, where the share at 2 or more steps is judged apart too), with a binomial margin.",
        histogram);
  }
  if (sources.errors.size() > 0)
    text += section("The quantization's own error (reported, not judged)", "", error_table(sources, source));
  return text;
}

}  // namespace

nlohmann::json QuantizeFigures::to_json() const {
  return {{"model", "model.quant.onnx"},
          {"reference", "reference-quant"},
          {"rows", parity_rows_to_json(proof)},
          {"summary", parity_summary_to_json(proof)},
          {"quantization_error", quantization_error},
          {"quantize_nodes", quantize_nodes},
          {"dequantize_nodes", dequantize_nodes}};
}

std::string quantization_error_summary(const nlohmann::json& outputs, const std::string& source) {
  std::string text;
  for (const auto& entry : outputs) {
    if (!entry.is_object() || !entry.contains("output")) continue;
    const int rows = entry.value("rows", 0);
    const std::string agreement = rows > 0 ? fmt::format("top-1 agrees with {} float on {} of {} rows, ", source,
                                                         entry.value("top1_agree", 0), rows)
                                           : "";
    text += fmt::format("{}output '{}': {}max |difference| {} (scale {})", text.empty() ? "" : "; ",
                        entry.value("output", ""), agreement, figure(entry, "max_abs"), figure(entry, "scale"));
  }
  return text;
}

std::string quantization_to_markdown(const Report& report) {
  return render(report, [](const std::string& heading, const std::string& text, const Table& table) {
    std::string md = fmt::format("\n{} {}\n\n", heading == "Quantization" ? "##" : "###", markdown_text(heading));
    if (!text.empty()) md += markdown_text(text) + "\n\n";
    for (std::size_t r = 0; r < table.size(); ++r) {
      std::vector<std::string> cells;
      for (const auto& cell : table[r]) cells.push_back(markdown_text(cell));
      md += fmt::format("| {} |\n", fmt::join(cells, " | "));
      if (r == 0) md += fmt::format("|{}\n", fmt::join(std::vector<std::string>(table[r].size(), " --- |"), ""));
    }
    return md;
  });
}

std::string quantization_to_html(const Report& report) {
  return render(report, [](const std::string& heading, const std::string& text, const Table& table) {
    const char* level = heading == "Quantization" ? "h2" : "h3";
    std::string html = fmt::format("<{0}>{1}</{0}>\n", level, markup_escape(heading));
    if (!text.empty()) html += "<p>" + markup_escape(text) + "</p>\n";
    if (table.empty()) return html;
    html += "<table>";
    for (std::size_t r = 0; r < table.size(); ++r) {
      html += "<tr>";
      for (const auto& cell : table[r])
        html += fmt::format("<{0}>{1}</{0}>", r == 0 ? "th" : "td", markup_escape(cell));
      html += "</tr>\n";
    }
    return html + "</table>\n";
  });
}

}  // namespace onnxproof
