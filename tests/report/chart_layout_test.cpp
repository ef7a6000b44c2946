// The report's plots at 1, 3 and 40 cases: no text box overlaps another, nothing leaves the
// picture, the title is whole, refused cases are drawn. Checked twice: with the boxes the writer
// computed, and in headless Chromium with the boxes the browser computed (getBBox of every text),
// which also leaves a screenshot of every chart in the test's folder for a person to look at.

#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdlib>
#include <fstream>

#include <fmt/format.h>

#include "chromium.h"
#include "cli_runner.h"
#include "onnxproof/report/localize_report.h"
#include "onnxproof/report/parity_plot.h"
#include "test_support.h"

namespace onnxproof {
namespace {

using testing::TempDir;

// `cases` cases of one provider; every third refused with the runtime's long message, every
// fifth outside its tolerance, the labels as long as a real sweep's.
std::vector<ParityRow> parity_rows(int cases) {
  std::vector<ParityRow> rows;
  for (int i = 0; i < cases; ++i) {
    ParityRow row;
    row.data_set = fmt::format("test_data_set_{}", i);
    row.sizes = {{"batch", 1 + i}, {"sequence", 7 + 3 * i}};
    row.provider = "cpu";
    row.output = "logits";
    if (i % 3 == 2) {
      row.status = RowStatus::rejected;
      row.note =
          "[ONNXRuntimeError] : 2 : INVALID_ARGUMENT : Got invalid dimensions for input: x for the following "
          "indices index: 0 Got: 3 Expected: 2 Please fix either the inputs/outputs or the model.";
    } else {
      row.status = i % 5 == 4 ? RowStatus::fail : RowStatus::pass;
      row.comparison.max_abs = i % 5 == 4 ? 0.3 : 1e-7 * (1 + i);
      row.exact = ExactDeviation{.onnx = row.comparison.max_abs, .pytorch = 1e-7, .budget = 1e-5};
      row.rule = ToleranceRule::calibrated;
    }
    rows.push_back(std::move(row));
  }
  return rows;
}

Localization localization(int modules) {
  Localization result{.data_set = "test_data_set_0", .provider = "cpu"};
  for (int i = 0; i < modules; ++i) {
    ModuleComparison module;
    module.module = fmt::format("encoder.layers.{}.attention.output.dense", i);
    module.matched = true;
    module.output_error = i < modules / 2 ? 1e-7 : 0.05 * i;
    module.outputs_agree = i < modules / 2;
    result.modules.push_back(std::move(module));
  }
  result.located = static_cast<std::size_t>(modules / 2);
  return result;
}

bool overlap(const TextBox& a, const TextBox& b) {
  return a.x < b.x + b.width && b.x < a.x + a.width && a.y < b.y + b.height && b.y < a.y + a.height;
}

void expect_clean_layout(const ChartLayout& layout, const std::string& name) {
  ASSERT_FALSE(layout.svg.empty()) << name;
  for (std::size_t i = 0; i < layout.texts.size(); ++i) {
    const TextBox& a = layout.texts[i];
    EXPECT_GE(a.x, 0) << name << ": " << a.text;
    EXPECT_LE(a.x + a.width, layout.width) << name << ": " << a.text;
    EXPECT_LE(a.y + a.height, layout.height) << name << ": " << a.text;
    for (std::size_t j = i + 1; j < layout.texts.size(); ++j)
      EXPECT_FALSE(overlap(a, layout.texts[j])) << name << ": '" << a.text << "' and '" << layout.texts[j].text << "'";
  }
}

std::map<std::string, ChartLayout> charts() {
  std::map<std::string, ChartLayout> all;
  for (int cases : {1, 3, 40})
    all[fmt::format("parity-{}", cases)] = lay_out_log_bar_chart(parity_chart(parity_rows(cases)));
  for (int modules : {1, 3, 40}) {
    all[fmt::format("localize-{}", modules)] = lay_out_log_bar_chart(localization_chart(localization(modules)));
  }
  return all;
}

TEST(ChartLayout, NoTextOverlapsOrLeavesThePictureAtOneThreeAndFortyCases) {
  for (const auto& [name, layout] : charts()) expect_clean_layout(layout, name);
}

TEST(ChartLayout, EveryCaseIsDrawnTheRefusedOnesMarkedWithTheirReason) {
  const ChartSpec spec = parity_chart(parity_rows(3));
  ASSERT_EQ(spec.panels.size(), 1U);
  ASSERT_EQ(spec.panels[0].bars.size(), 3U);
  EXPECT_EQ(spec.panels[0].bars[2].kind, BarKind::rejected);
  EXPECT_NE(spec.panels[0].bars[2].note.find("Got invalid dimensions"), std::string::npos);
  const std::string svg = log_bar_chart_svg(spec);
  EXPECT_NE(svg.find("not run: Got invalid dimensions"), std::string::npos);  // the runtime's prefix dropped
  EXPECT_NE(svg.find("class=\"limit\""), std::string::npos);                  // the tolerance tick
  EXPECT_NE(svg.find("(log scale"), std::string::npos);                       // the axis says what it measures
}

TEST(ChartLayout, TheFirstDivergentModuleStandsApartFromWhatFollows) {
  const ChartSpec spec = localization_chart(localization(6));
  std::vector<BarKind> kinds;
  for (const auto& bar : spec.panels.at(0).bars) kinds.push_back(bar.kind);
  EXPECT_EQ(kinds, (std::vector<BarKind>{BarKind::within, BarKind::within, BarKind::within, BarKind::first,
                                         BarKind::outside, BarKind::outside}));
}

TEST(ChartLayout, WidthFollowsTheLabelsAndTheTitleIsWhole) {
  const ChartLayout one = lay_out_log_bar_chart(parity_chart(parity_rows(1)));
  const ChartLayout long_labels = lay_out_log_bar_chart(localization_chart(localization(3)));
  EXPECT_LT(one.width, long_labels.width);
  std::string title;
  for (const auto& box : long_labels.texts) {
    if (box.y < 40) title += box.text + " ";
  }
  EXPECT_NE(title.find("execution order"), std::string::npos) << title;  // wrapped, not cut
  EXPECT_EQ(title.find("\u2026"), std::string::npos) << title;
}

// The browser measures every text of every chart and writes what it found into the page:
// "OK n" or one line per problem (overlapping texts, text outside the picture).
constexpr const char* k_measure = R"(<script>
const problems = []; let count = 0;
for (const svg of document.querySelectorAll('svg')) {
  const w = svg.width.baseVal.value, h = svg.height.baseVal.value;
  const boxes = [...svg.querySelectorAll('text')].map(t => [t.textContent, t.getBBox()]);
  count += boxes.length;
  for (let i = 0; i < boxes.length; ++i) {
    const [ta, a] = boxes[i];
    if (a.x < -0.5 || a.y < -0.5 || a.x + a.width > w + 0.5 || a.y + a.height > h + 0.5)
      problems.push(svg.id + ': outside: ' + ta);
    for (let j = i + 1; j < boxes.length; ++j) {
      const [tb, b] = boxes[j];
      const apart = a.x >= b.x + b.width - 0.5 || b.x >= a.x + a.width - 0.5 ||
                         a.y >= b.y + b.height - 0.5 || b.y >= a.y + a.height - 0.5;
      if (!apart)
        problems.push(svg.id + ': overlap: ' + ta + ' | ' + tb);
    }
  }
}
document.getElementById('result').textContent = problems.length ? problems.join('\n') : 'OK ' + count;
</script>)";

TEST(ChartLayout, ChromiumMeasuresNoOverlapAtOneThreeAndFortyCases) {
  const std::string chromium = testing::find_chromium();
  if (chromium.empty())
    GTEST_SKIP() << "Chromium is not installed (scripts/setup.sh installs it): the layout is "
                    "checked only with the writer's own text boxes";
  TempDir dir;
  std::string page = "<!DOCTYPE html><html><body style=\"margin:0\">\n";
  for (const auto& [name, layout] : charts()) {
    std::string svg = layout.svg;
    svg.insert(4, fmt::format(" id=\"{}\"", name));
    page += "<div>" + svg + "</div>\n";
  }
  page += "<pre id=\"result\">not measured</pre>\n" + std::string(k_measure) + "</body></html>\n";
  std::ofstream(dir.path() / "charts.html") << page;
  const std::vector<std::string> common = {"--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                                           "--user-data-dir=" + (dir.path() / "profile").string()};
  auto args = common;
  args.insert(args.end(), {"--dump-dom", "file://" + (dir.path() / "charts.html").string()});
  const auto result = testing::run_cli(chromium, args);
  ASSERT_EQ(result.exit_code, 0) << result.err;
  const auto start = result.out.find("<pre id=\"result\">");
  ASSERT_NE(start, std::string::npos) << result.out.substr(0, 400);
  const std::string found = result.out.substr(start + 17, result.out.find("</pre>", start) - start - 17);
  EXPECT_TRUE(found.starts_with("OK ")) << found;
  // A screenshot for a person: where the test's folder is kept (ONNXPROOF_KEEP_SCREENSHOTS=DIR).
  if (const char* keep = std::getenv("ONNXPROOF_KEEP_SCREENSHOTS")) {
    args = common;
    args.insert(args.end(), {fmt::format("--screenshot={}/charts.png", keep), "--window-size=1000,3000",
                             "file://" + (dir.path() / "charts.html").string()});
    EXPECT_EQ(testing::run_cli(chromium, args).exit_code, 0);
  }
}

}  // namespace
}  // namespace onnxproof
