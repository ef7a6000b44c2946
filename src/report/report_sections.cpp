#include "onnxproof/report/report_sections.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "onnxproof/core/source_framework.h"
#include "onnxproof/parity/calibrated.h"
#include "onnxproof/report/check_report.h"
#include "onnxproof/report/log_bar_chart.h"
#include "onnxproof/report/markdown.h"
#include "onnxproof/report/ship_summary.h"

namespace onnxproof {

const char* const k_report_css =
    "body{font-family:sans-serif;margin:1.2em 2em;max-width:1200px}table{border-collapse:collapse;margin:1em 0}"
    "td,th{border:1px solid #ccc;padding:4px 8px;text-align:left;vertical-align:top}th{background:#f4f4f4}"
    ".yes,.pass{color:#1a7f37;font-weight:bold}.no,.fail,.error{color:#cf222e;font-weight:bold}"
    ".warning{color:#9a6700;font-weight:bold}.info,.skip{color:#57606a}code{background:#f4f4f4;padding:1px 3px}"
    "h1{font-size:1.5em;margin:0.3em 0}.ship{border:3px solid;border-radius:6px;padding:0.6em 1em;margin:0.8em 0}"
    ".ship.pass{border-color:#1a7f37;background:#f0fff4;color:inherit;font-weight:normal}"
    ".ship.fail,.ship.error{border-color:#cf222e;background:#fff5f5;color:inherit;font-weight:normal}"
    ".ship .answer{font-size:1.25em;font-weight:bold;margin:0.2em 0 0.5em}.ship dl{margin:0;display:grid;"
    "grid-template-columns:max-content 1fr;gap:0.3em 1em}.ship dt{font-weight:bold}.ship dd{margin:0}"
    ".follow td:first-child{padding-left:2em}svg{max-width:100%;height:auto}";

namespace {

std::string dims_text(const SignatureValue& value) {
  return value.dims ? fmt::format("[{}]", fmt::join(*value.dims, ", ")) : "rank unknown";
}

std::string opsets_text(const ModelSignature& model) {
  std::vector<std::string> opsets;
  for (const auto& [domain, version] : model.opsets) opsets.push_back(fmt::format("{} {}", domain, version));
  return fmt::format("{}", fmt::join(opsets, ", "));
}

// Which rules decided the compared rows, with counts ("12 calibrated, 3 fixed").
std::string rules_text(const Report& report) {
  std::map<std::string, int> by_rule;
  if (report.parity) {
    for (const auto& row : report.parity->rows)
      if (row.compared()) ++by_rule[rule_name(row.rule)];
  }
  std::vector<std::string> rules;
  for (const auto& [rule, count] : by_rule) rules.push_back(fmt::format("{} rows by rule '{}'", count, rule));
  return rules.empty() ? "no row compared" : fmt::format("{}", fmt::join(rules, ", "));
}

std::vector<std::string> accuracy_lines(const Report& report) {
  std::vector<std::string> lines;
  if (!report.parity) return lines;
  for (const auto& accuracy : report.parity->accuracy) {
    // The source framework's first ("source"): the figure ONNX Runtime's are read against.
    std::vector<std::string> parts;
    if (accuracy.accuracy.contains("source"))
      parts.push_back(
          fmt::format("{} {:.1f}%", source_title(report.framework), 100.0 * accuracy.accuracy.at("source")));
    for (const auto& [who, value] : accuracy.accuracy)
      if (who != "source") parts.push_back(fmt::format("ONNX Runtime {} {:.1f}%", who, 100.0 * value));
    lines.push_back(fmt::format("output '{}': {} on {} labelled samples; {} predictions flipped", accuracy.output,
                                fmt::join(parts, ", "), accuracy.samples, accuracy.flipped));
  }
  return lines;
}

// A given file (--onnx): which file was proved, and how each of its inputs and outputs was bound.
std::vector<std::string> given_file_lines(const GivenFile& given) {
  std::vector<std::string> lines{fmt::format(
      "The file proved is {} (sha256 {}), as given: model.onnx is its byte-for-byte copy.", given.path, given.sha256)};
  if (!given.folder.empty())
    lines.push_back(
        "It is the step decoder of the generation folder " + given.folder +
        "; the files beside it are copied byte for byte into components/ and proved by the generation loop.");
  for (const auto& [kind, list] : {std::pair{"input", &given.inputs}, std::pair{"output", &given.outputs}}) {
    for (const auto& name : *list)
      lines.push_back(
          fmt::format("{} {} {} the model's {} (by {}{})", kind, name.file,
                      kind == std::string_view("input") ? "is fed" : "is compared with", name.model, name.by,
                      (name.cast.empty() ? "" : ", " + name.cast) + (name.layout.empty() ? "" : ", " + name.layout)));
  }
  return lines;
}

std::string verdict_word(Verdict verdict) {
  return verdict == Verdict::pass ? "PASS" : verdict == Verdict::fail ? "FAIL" : "NOT PROVED";
}

}  // namespace

nlohmann::json ship_summary_to_json(const Report& report) {
  const ShipSummary s = summarize_for_shipping(report);
  nlohmann::json ship = {
      {"answer", s.answer}, {"where", s.where}, {"what_to_do", s.what_to_do}, {"cause", s.cause_code}};
  if (report.repair) {
    const RepairPointer& r = *report.repair;
    ship["repair"] = {{"before", r.before}, {"found", r.found}, {"summary", "repair/repair.md"}};
    if (r.found) ship["repair"]["folder"] = r.folder;
  }
  return ship;
}

nlohmann::json given_file_to_json(const GivenFile& given) {
  const auto names = [](const std::vector<BoundName>& list) {
    nlohmann::json out = nlohmann::json::array();
    for (const auto& name : list) {
      out.push_back({{"file", name.file}, {"model", name.model}, {"by", name.by}});
      if (!name.cast.empty()) out.back()["cast"] = name.cast;
      if (!name.layout.empty()) out.back()["layout"] = name.layout;
    }
    return out;
  };
  nlohmann::json json = {{"path", given.path},
                         {"sha256", given.sha256},
                         {"inputs", names(given.inputs)},
                         {"outputs", names(given.outputs)}};
  if (!given.folder.empty()) json["folder"] = given.folder;
  return json;
}

nlohmann::json signature_to_json(const Report& report) {
  if (!report.signature) return nullptr;
  const ModelSignature& model = *report.signature;
  nlohmann::json opsets = nlohmann::json::object();
  for (const auto& [domain, version] : model.opsets) opsets[domain] = version;
  const auto values = [](const std::vector<SignatureValue>& list) {
    nlohmann::json out = nlohmann::json::array();
    for (const auto& value : list) {
      // A dimension is its size (a number) or its name (a dynamic one); null for an unknown one.
      nlohmann::json dims = nlohmann::json::array();
      for (const auto& dim : value.dims.value_or(std::vector<std::string>{})) {
        if (dim == "?")
          dims.push_back(nullptr);
        else if (dim.find_first_not_of("0123456789") == std::string::npos)
          dims.push_back(std::stoll(dim));
        else
          dims.push_back(dim);
      }
      out.push_back({{"name", value.name}, {"dtype", value.dtype}, {"shape", value.dims ? dims : nlohmann::json()}});
    }
    return out;
  };
  return {{"exporter", model.exporter}, {"ir_version", model.ir_version}, {"opsets", opsets},
          {"producer", model.producer}, {"inputs", values(model.inputs)}, {"outputs", values(model.outputs)}};
}

std::string ship_summary_to_markdown(const Report& report) {
  const ShipSummary s = summarize_for_shipping(report);
  std::string md = fmt::format("> **{}: {}**\n", verdict_word(s.verdict), markdown_text(s.answer));
  if (!s.where.empty()) md += fmt::format(">\n> **Where:** {}\n", markdown_code(s.where));
  if (!s.what_to_do.empty()) md += fmt::format(">\n> **What to do:** {}\n", markdown_text(s.what_to_do));
  return md + "\n";
}

std::string signature_to_markdown(const Report& report) {
  std::string md;
  if (report.signature) {
    const ModelSignature& model = *report.signature;
    md += fmt::format(
        "## What ships\n\nOpset {}; exporter {}; IR version {}. A name in a shape is a dynamic "
        "dimension.\n\n| | name | dtype | shape |\n| --- | --- | --- | --- |\n",
        markdown_text(opsets_text(model)), markdown_text(model.exporter.empty() ? "unknown" : model.exporter),
        model.ir_version);
    for (const auto& [kind, list] : {std::pair{"input", &model.inputs}, std::pair{"output", &model.outputs}}) {
      for (const auto& value : *list)
        md += fmt::format("| {} | {} | {} | {} |\n", kind, markdown_code(value.name), markdown_text(value.dtype),
                          markdown_code(dims_text(value)));
    }
    md += "\n";
  }
  if (report.given_file) {
    const auto lines = given_file_lines(*report.given_file);
    md += markdown_text(lines.front()) + "\n\n";
    for (std::size_t i = 1; i < lines.size(); ++i) md += "- " + markdown_text(lines[i]) + "\n";
    md += "\n";
  }
  if (report.parity) {
    md += fmt::format("Tolerance: {} ({}).\n\n", markdown_text(rule_sentence(report.framework)),
                      markdown_text(rules_text(report)));
    for (const auto& line : accuracy_lines(report)) md += fmt::format("Accuracy: {}.\n\n", markdown_text(line));
  }
  return md;
}

std::string findings_to_markdown(const Report& report) {
  std::string md = "\n## Findings\n\n";
  if (report.findings.empty()) return md + "None.\n";
  const auto line = [](const Finding& f, const std::string& indent) {
    std::string text = fmt::format("{}- **{}** {} ({}): {}", indent, severity_name(f.severity),
                                   markdown_code(f.code_name()), markdown_text(f.step), markdown_text(f.message));
    if (!f.where.empty()) text += fmt::format("  \n{}  where: {}", indent, markdown_code(f.where));
    if (!f.hint.empty()) text += fmt::format("  \n{}  hint: {}", indent, markdown_text(f.hint));
    return text + "\n";
  };
  for (const auto& group : group_findings(report.findings)) {
    md += line(group.cause, "");
    for (const auto& follow : group.follow_ons) md += line(follow, "  ");
  }
  return md;
}

std::string ship_summary_to_html(const Report& report) {
  const ShipSummary s = summarize_for_shipping(report);
  const std::string_view css = verdict_name(s.verdict);
  std::string html = fmt::format(
      "<div class=\"ship {0}\" id=\"ship\"><p class=\"answer\"><span class=\"{0}\">{1}</span>: {2}</p>\n<dl>", css,
      verdict_word(s.verdict), markup_escape(s.answer));
  if (!s.where.empty()) html += fmt::format("<dt>Where</dt><dd><code>{}</code></dd>", markup_escape(s.where));
  if (!s.what_to_do.empty()) html += fmt::format("<dt>What to do</dt><dd>{}</dd>", markup_escape(s.what_to_do));
  if (!s.cause_code.empty())
    html += fmt::format("<dt>Cause</dt><dd><code>{}</code> (below, with what follows from it)</dd>", s.cause_code);
  return html + "</dl></div>\n";
}

std::string signature_to_html(const Report& report) {
  std::string html;
  if (report.signature) {
    const ModelSignature& model = *report.signature;
    html += fmt::format(
        "<h2>What ships</h2>\n<p>Opset {}; exporter {}; IR version {}. A name in a shape is a dynamic dimension.</p>\n"
        "<table><tr><th></th><th>name</th><th>dtype</th><th>shape</th></tr>\n",
        markup_escape(opsets_text(model)), markup_escape(model.exporter.empty() ? "unknown" : model.exporter),
        model.ir_version);
    for (const auto& [kind, list] : {std::pair{"input", &model.inputs}, std::pair{"output", &model.outputs}}) {
      for (const auto& value : *list)
        html += fmt::format("<tr><td>{}</td><td><code>{}</code></td><td>{}</td><td><code>{}</code></td></tr>\n", kind,
                            markup_escape(value.name), markup_escape(value.dtype), markup_escape(dims_text(value)));
    }
    html += "</table>\n";
  }
  if (report.given_file) {
    const auto lines = given_file_lines(*report.given_file);
    html += "<p>" + markup_escape(lines.front()) + "</p>\n<ul>";
    for (std::size_t i = 1; i < lines.size(); ++i) html += "<li>" + markup_escape(lines[i]) + "</li>";
    html += "</ul>\n";
  }
  if (report.parity) {
    html += fmt::format("<p><b>Tolerance:</b> {} ({}).</p>\n", markup_escape(rule_sentence(report.framework)),
                        markup_escape(rules_text(report)));
    for (const auto& line : accuracy_lines(report))
      html += fmt::format("<p><b>Accuracy:</b> {}.</p>\n", markup_escape(line));
  }
  return html;
}

std::string findings_to_html(const Report& report) {
  std::string html = "<h2>Findings</h2>\n";
  if (report.findings.empty()) return html + "<p>None.</p>\n";
  html += "<table><tr><th>severity</th><th>code</th><th>step</th><th>message</th><th>where</th><th>hint</th></tr>\n";
  const auto row = [](const Finding& f, bool follow) {
    return fmt::format(
        "<tr{0}><td class=\"{1}\">{2}{1}</td><td><code>{3}</code></td><td>{4}</td><td>{5}</td><td><code>{6}</code></td>"
        "<td>{7}</td></tr>\n",
        follow ? " class=\"follow\"" : "", severity_name(f.severity), follow ? "&#8627; " : "",
        markup_escape(std::string(f.code_name())), markup_escape(f.step), markup_escape(f.message),
        markup_escape(f.where), markup_escape(f.hint));
  };
  for (const auto& group : group_findings(report.findings)) {
    html += row(group.cause, false);
    for (const auto& follow : group.follow_ons) html += row(follow, true);
  }
  return html + "</table>\n";
}

void print_ship_summary(std::ostream& out, const Report& report) {
  const ShipSummary s = summarize_for_shipping(report);
  out << fmt::format("verdict          {}: {}\n", verdict_name(s.verdict), s.answer);
  if (!s.where.empty()) out << fmt::format("where            {}\n", s.where);
  if (!s.what_to_do.empty()) out << fmt::format("what to do       {}\n", s.what_to_do);
}

void print_grouped_findings(std::ostream& out, const Report& report) {
  std::vector<FindingGroup> shown;
  std::size_t count = 0;
  for (auto& group : group_findings(report.findings)) {
    // An info finding shows only as the cause of something that is not info (a located divergence).
    if (group.cause.severity == Severity::info && group.follow_ons.empty()) continue;
    count += 1 + group.follow_ons.size();
    shown.push_back(std::move(group));
  }
  if (shown.empty()) {
    out << "findings         none\n";
    return;
  }
  out << fmt::format("findings         {} ({} cause{})\n", count, shown.size(), shown.size() == 1 ? "" : "s");
  for (const auto& group : shown) {
    print_findings_lines(out, group.cause, "  ");
    for (const auto& follow : group.follow_ons) print_findings_lines(out, follow, "    follows: ");
  }
}

}  // namespace onnxproof
