#include "onnxproof/report/step_figures.h"

#include <fmt/format.h>

#include "onnxproof/report/log_bar_chart.h"
#include "onnxproof/report/markdown.h"
#include "onnxproof/report/simplify_report.h"

namespace onnxproof {

nlohmann::json ExportFigures::to_json() const {
  nlohmann::json json = {{"exporter", exporter}, {"sha256", sha256}, {"reference_sets", reference_sets}};
  if (front_end_peak_mib) json["front_end_peak_mib"] = *front_end_peak_mib;
  if (opset > 0) json["opset"] = opset;
  return json;
}

nlohmann::json CheckFigures::to_json() const {
  return {{"checker", checker_passed ? "pass" : "fail"},
          {"shape_inference", shape_inference_passed ? "pass" : "fail"},
          {"nodes", nodes},
          {"operator_types", operator_types}};
}

nlohmann::json SimplifyFigures::to_json() const {
  nlohmann::json json = simplify_outcome_to_json(outcome);
  if (!outcome.culprit_pass.empty()) json["culprit_pass"] = outcome.culprit_pass;
  if (proved_by == SimplifyProvedBy::parity) {
    json["proof"] = {{"by", "parity"}};
    if (export_kept)
      json["proof"]["kept"] = "export";
    else if (parity_cases)
      json["proof"]["cases"] = *parity_cases;
  }
  return json;
}

std::string SimplifyFigures::markdown(const Report& /*report*/) const {
  const auto rules = changed_rules(outcome.result);
  if (rules.empty()) return {};
  std::string md = "\n## Simplify rules\n\n| rule | changes |\n| --- | ---: |\n";
  for (const auto& [rule, changes] : rules) md += fmt::format("| {} | {} |\n", markdown_text(rule), changes);
  return md;
}

std::string SimplifyFigures::html(const Report& /*report*/) const {
  const auto rules = changed_rules(outcome.result);
  if (rules.empty()) return {};
  std::string html = "<h2>Simplify rules</h2>\n<table><tr><th>rule</th><th>changes</th></tr>\n";
  for (const auto& [rule, changes] : rules)
    html += fmt::format("<tr><td>{}</td><td>{}</td></tr>\n", markup_escape(rule), changes);
  return html + "</table>\n";
}

nlohmann::json OpsFigures::to_json() const {
  return {{"targets", targets}, {"operators", operators}, {"releases", forecast_to_json(releases)}};
}

nlohmann::json ParityFigures::to_json() const {
  nlohmann::json json = {{"cases", cases}, {"rows", rows}, {"analyzers", analyzers}};
  if (float16) {
    json["precision"] = "fp16";
    json["model"] = k_float16_model;
    json["kept_in_float32"] = kept_in_float32;
    if (!nodes_kept_in_float32.empty()) json["nodes_kept_in_float32"] = nodes_kept_in_float32;
  }
  return json;
}

}  // namespace onnxproof
