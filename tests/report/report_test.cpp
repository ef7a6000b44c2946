// report.md, report.html and the SVG plots hold the model's names and messages: they must come out
// as characters, never as a heading, a tag, a table cell or a control byte of their own.

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "onnxproof/core/printable.h"
#include "onnxproof/report/localize_report.h"
#include "onnxproof/report/markdown.h"
#include "onnxproof/report/published_report.h"
#include "onnxproof/report/report.h"
#include "test_support.h"

namespace onnxproof {
namespace {

using testing::TempDir;

// A name that tries everything: a forged verdict heading on a line of its own, tags, a table
// cell, a link, emphasis, backticks, and ESC / BEL / C1 CSI bytes.
const std::string k_hostile =
    "x\n## verdict pass\n<script>alert(1)</script><img src=x onerror=y>|cell| [link](http://e) *em* `tick`"
    "\x1b[2J\x07\xc2\x9b"
    "31m";

std::string read_text(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// A report in which every field a model or its author can name holds k_hostile.
Report hostile_report() {
  Report report;
  report.model = k_hostile;
  report.onnx_model = "/runs/" + k_hostile + "/model.onnx";
  report.versions = {{"torch", k_hostile}};
  report.steps = {{.name = "check", .status = StepStatus::fail, .seconds = 1.0, .reason = k_hostile}};
  report.findings = {{FindingCode::checker_failed, Severity::error, "check", "node '" + k_hostile + "' is bad",
                      k_hostile, "rename " + k_hostile}};
  report.headline = {{"Does it export?", "no", k_hostile}};
  ParityResult parity;
  ParityRow row;
  row.data_set = k_hostile;
  row.provider = "cpu";
  row.output = k_hostile;
  row.status = RowStatus::error;
  row.note = k_hostile;
  parity.rows.push_back(row);
  row.status = RowStatus::fail;  // a compared row: the plot names it
  row.comparison.max_abs = 0.5;
  parity.rows.push_back(row);
  report.parity = parity;
  Localization localization;
  localization.data_set = k_hostile;
  localization.provider = "cpu";
  ModuleComparison module;
  module.module = module.class_name = module.source = module.reason = k_hostile;
  localization.modules.push_back(module);
  module.module += "2";
  module.matched = true;  // a compared module: the plot names it
  module.output_error = 0.5;
  localization.modules.push_back(module);
  localization.findings.push_back({FindingCode::divergence_located, Severity::info, "localize", k_hostile, "", ""});
  report.localization = localization;
  report.localization_error = k_hostile;
  ExporterSummary exporter;
  exporter.exporter = exporter.run_folder = "dynamo";
  exporter.max_error[k_hostile] = {1.0, 2.0};
  report.exporters = {exporter};
  finish_report(report);
  return report;
}

// The Markdown with every code span taken out: what a renderer reads as Markdown and HTML.
std::string outside_code_spans(const std::string& md) {
  std::string rest;
  for (std::size_t i = 0; i < md.size();) {
    if (md[i] != '`') {
      rest += md[i++];
      continue;
    }
    const std::size_t run = md.find_first_not_of('`', i) - i;  // a span ends at a run as long
    std::size_t end = i + run;
    while ((end = md.find(std::string(run, '`'), end)) != std::string::npos && end + run < md.size() &&
           md[end + run] == '`')
      end = md.find_first_not_of('`', end);
    if (end == std::string::npos) return rest + md.substr(i);
    i = end + run;
  }
  return rest;
}

bool has_control_byte(const std::string& text) {
  for (std::size_t i = 0; i < text.size(); ++i) {
    const auto byte = static_cast<unsigned char>(text[i]);
    if ((byte < 0x20 && byte != '\n' && byte != '\t') || byte == 0x7f) return true;
    if (byte == 0xc2 && i + 1 < text.size() && static_cast<unsigned char>(text[i + 1]) <= 0x9f) return true;
  }
  return false;
}

int unescaped_bars(const std::string& line) {
  int bars = 0;
  for (std::size_t i = 0; i < line.size(); ++i) bars += line[i] == '|' && (i == 0 || line[i - 1] != '\\');
  return bars;
}

TEST(ReportMarkdown, HostileNamesRenderAsTextInEveryWrittenReport) {
  TempDir dir;
  ASSERT_TRUE(write_report(hostile_report(), dir.path()));
  const std::string md = read_text(dir / "report.md");
  EXPECT_FALSE(has_control_byte(md));
  std::istringstream lines(md);
  for (std::string line; std::getline(lines, line);) {
    EXPECT_NE(line.rfind("## verdict", 0), 0u) << line;
    // The steps table keeps its four columns: a name's '|' is escaped.
    if (line.rfind("| check |", 0) == 0) {
      EXPECT_EQ(unescaped_bars(line), 5) << line;
    }
  }
  const std::string rendered = outside_code_spans(md);
  for (const char* tag : {"<script", "<img", "</script"}) EXPECT_EQ(rendered.find(tag), std::string::npos) << rendered;
  EXPECT_NE(md.find("\\#\\# verdict pass"), std::string::npos);  // shown, not obeyed
  EXPECT_NE(md.find("&lt;script&gt;"), std::string::npos);
  // report.json is data: JSON escapes C0 itself and carries the names exactly.
  for (const char* file : {"report.html", "report-parity.svg", "report-localize.svg"}) {
    const std::string text = read_text(dir / file);
    EXPECT_FALSE(has_control_byte(text)) << file;
    EXPECT_EQ(text.find("<script"), std::string::npos) << file;
  }
}

TEST(ReportMarkdown, LocalizationMarkdownEscapesModuleNames) {
  const Report report = hostile_report();
  const std::string md = localization_to_markdown(*report.localization);
  EXPECT_FALSE(has_control_byte(md));
  EXPECT_EQ(md.find("\n## verdict"), std::string::npos);
  EXPECT_EQ(md.find("<script"), std::string::npos);
}

TEST(MarkdownText, EscapesWhatMarkdownAndHtmlWouldInterpret) {
  EXPECT_EQ(markdown_text("a_b*c"), "a\\_b\\*c");
  EXPECT_EQ(markdown_text("# h"), "\\# h");
  EXPECT_EQ(markdown_text("<b>&"), "&lt;b&gt;&amp;");
  EXPECT_EQ(markdown_text("a|b"), "a\\|b");
  EXPECT_EQ(markdown_text("one\ntwo"), "one two");
  EXPECT_EQ(markdown_text("\x1b[2J"), "\\\\x1b\\[2J");
  EXPECT_EQ(markdown_text("\xc2\x9b"), "\\\\u009b");
  EXPECT_EQ(markdown_text("- item"), "\\- item");
  EXPECT_EQ(markdown_text("12. item"), "12\\. item");
  EXPECT_EQ(markdown_text("2.14.1+cu130"), "2.14.1+cu130");
  EXPECT_EQ(markdown_text("remove-identity (x)"), "remove-identity (x)");
  EXPECT_EQ(markdown_text("caf\xc3\xa9 \xc2\xb5"), "caf\xc3\xa9 \xc2\xb5");  // not controls: kept
}

TEST(MarkdownCode, FenceOutlastsTheBackticksInside) {
  EXPECT_EQ(markdown_code("x"), "`x`");
  EXPECT_EQ(markdown_code("a`b"), "``a`b``");
  EXPECT_EQ(markdown_code("a``b`"), "``` a``b` ```");
  EXPECT_EQ(markdown_code("`"), "`` ` ``");
  EXPECT_EQ(markdown_code("x\n# y\x1b"), "`x # y\\x1b`");
  EXPECT_EQ(markdown_code(""), "` `");
}

TEST(EscapeControlBytes, SpellsC0DelAndC1AndKeepsTheRest) {
  EXPECT_EQ(escape_control_bytes("a\x1b\x7f\tb\n"), "a\\x1b\\x7f\tb\n");
  EXPECT_EQ(escape_control_bytes("\xc2\x85\xc2\xa0"), "\\u0085\xc2\xa0");
  EXPECT_EQ(escape_control_bytes("\xc2"), "\xc2");  // a lone lead byte at the end is no control
}

}  // namespace
}  // namespace onnxproof

namespace onnxproof {
namespace {

// A report of version 1 (tests/fixtures/report-v1.json: the demo's, with a detection row, a
// generation table and quantize rows added) is read with version 2's neutral names.
TEST(PublishedReport, AVersionOneReportIsReadWithTheNeutralNames) {
  testing::TempDir run;
  std::filesystem::copy_file(std::string(ONNXPROOF_FIXTURES_SOURCE) + "/report-v1.json", run.path() / "report.json");
  auto json = nlohmann::json::parse(std::ifstream(run.path() / "report.json"));
  ASSERT_EQ(json["schema"], "onnxproof.report/1");
  upgrade_report_from_1(json);
  EXPECT_EQ(json["schema"], "onnxproof.report/2");
  EXPECT_TRUE(json["parity"][0].contains("source_error"));
  EXPECT_FALSE(json["parity"][0].contains("pytorch_error"));
  EXPECT_TRUE(json["summary"]["accuracy"][0]["accuracy"].contains("source"));
  EXPECT_EQ(json["detections"][0]["only_source"], 0);
  EXPECT_EQ(json["detections"][0]["source"], 3);
  const auto& steps = json["steps"];
  const auto step = [&](const char* name) {
    return *std::find_if(steps.begin(), steps.end(), [&](const auto& s) { return s["name"] == name; });
  };
  EXPECT_EQ(step("generate")["providers"][0]["table"][0]["source_tokens"], nlohmann::json::array({7}));
  EXPECT_TRUE(step("quantize")["rows"][0]["steps"].contains("source"));
  EXPECT_TRUE(step("quantize")["rows"][0].contains("source_error"));
  const auto read = read_published_report(run.path(), ErrorCode::invalid_input);
  ASSERT_TRUE(read) << read.error().describe();
  EXPECT_EQ(read->schema, "onnxproof.report/2");
  EXPECT_EQ(read->verdict, "pass");
  // Read and written again through the contract, the report loses nothing (repair rewrites it so).
  EXPECT_EQ(contract::write_report(*read), json);
}

}  // namespace
}  // namespace onnxproof
