// End-to-end tests of what the pipeline says beyond its verdict: --exporter both side by side,
// the module where the outputs first diverge (planted divergences, `onnxproof localize RUN`), and
// the ONNX Runtime optimizer behind a difference.
#include <gtest/gtest.h>

#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "chromium.h"
#include "cli_runner.h"
#include "pipeline_support.h"
#include "test_support.h"

using namespace onnxproof::testing;
using namespace onnxproof::testing::pipeline_support;
namespace fs = std::filesystem;
using nlohmann::json;

// --exporter both: each exporter's run in its own folder, proved, and side by side in report.md
// and report.json (the question "should I switch exporters?").
void expect_side_by_side(const fs::path& out, const std::vector<std::string>& model_args) {
  std::vector<std::string> args = {"pipeline", "--exporter", "both", "--samples", "1", "--out", out.string()};
  args.insert(args.end(), model_args.begin(), model_args.end());
  const auto result = onnxproof_cli(args);
  EXPECT_EQ(result.exit_code, 0) << result.out << result.err;
  const json report = read_json(out / "report.json");
  EXPECT_EQ(report["verdict"], "pass") << report.dump(2);
  ASSERT_EQ(report["exporters"].size(), 2U) << report.dump(2);
  for (const auto& row : report["exporters"]) {
    const std::string exporter = row["exporter"];
    EXPECT_EQ(row["verdict"], "pass") << row.dump();
    EXPECT_GT(row["nodes"].get<int>(), 10) << row.dump();
    EXPECT_GT(row["initializers"].get<int>(), 0) << row.dump();
    EXPECT_FALSE(row["max_error"].empty()) << row.dump();
    EXPECT_EQ(read_json(out / exporter / "report.json")["verdict"], "pass");
    EXPECT_EQ(read_json(out / exporter / "export.json")["exporter"], exporter);
  }
  EXPECT_GE(report["exporters"][0]["opset"].get<int>(), 18);  // dynamo
  EXPECT_LE(report["exporters"][1]["opset"].get<int>(), 20);  // torchscript
  const std::string md = read_text(out / "report.md");
  EXPECT_NE(md.find("## Exporters side by side"), std::string::npos) << md;
  EXPECT_NE(md.find("[dynamo](dynamo/report.md)"), std::string::npos) << md;
  EXPECT_NE(md.find("| nodes |"), std::string::npos) << md;
  EXPECT_TRUE(fs::is_regular_file(out / "dynamo" / "exporter_report.md"));
}

TEST(Pipeline, BothExportersOnResNet18AreProvedSideBySide) {
  TempDir out;
  expect_side_by_side(out.path() / "run", {"--model", "torchvision:resnet18", "--sweep", "batch=1,3"});
  // The dynamo side (torch.export, then ONNX Script): dynamic batch as a torch.export.Dim, the
  // dynamo exporter's newest opset with the reason, a model the checker accepts.
  const fs::path dynamo = out.path() / "run" / "dynamo";
  const json manifest = read_json(dynamo / "export.json");
  EXPECT_EQ(manifest["outputs"][0]["dynamic_axes"]["0"], "batch") << manifest.dump(1);
  EXPECT_NE(manifest["opset"]["chosen_by"].get<std::string>().find("dynamo exporter"), std::string::npos);
  EXPECT_EQ(onnxproof_cli({"check", (dynamo / "model.onnx").string()}).exit_code, 0);
}

TEST(Pipeline, BothExportersOnASmallBertAreProvedSideBySide) {
  TempDir out;
  expect_side_by_side(out.path() / "run", {"--model", "hf:BertModel", "--sweep", "batch=1,3", "--sweep", "sequence=5"});
}

TEST(Pipeline, BothIsForThePipelineOnly) {
  TempDir out;
  const auto result = onnxproof_cli({"export", "--model", k_traps + ":dict_output", "--input", "x=2x8:float32",
                                     "--exporter", "both", "--out", out.path().string()});
  EXPECT_EQ(result.exit_code, 2) << result.out << result.err;
  EXPECT_NE(result.err.find("--exporter both"), std::string::npos) << result.err;
}

// Divergence localization: twelve identical blocks, one of whose activations has an ONNX
// translation that is not its forward (tests/fixtures/divergence_models.py), one model per
// exporter, and a NaN that only the ONNX translation produces, for the negative inputs.
struct PlantedDivergence {
  std::string factory;
  std::string exporter;
  std::string module;  // what the localization must name
  std::string code;    // the parity finding it explains
  std::string node;    // part of an ONNX node name it must name
};

class Localization : public ::testing::TestWithParam<PlantedDivergence> {};

int marked_line(const std::string& file, const std::string& marker) {
  const std::string text = read_text(file);
  const auto at = text.find(marker);
  return at == std::string::npos ? -1 : 1 + static_cast<int>(std::count(text.begin(), text.begin() + at, '\n'));
}

TEST_P(Localization, NamesTheModuleItsNodesAndItsSourceLine) {
  const auto& planted = GetParam();
  const std::string fixtures = std::string(ONNXPROOF_TEST_SOURCE_DIR) + "/fixtures/divergence_models.py";
  TempDir out;
  const auto result =
      onnxproof_cli({"pipeline", "--model", fixtures + ":" + planted.factory, "--input", "x=4x16:float32", "--dynamic",
                     "x:0=batch", "--exporter", planted.exporter, "--samples", "1", "--out", out.path().string()});
  ASSERT_EQ(result.exit_code, 1) << result.out << result.err;
  const json report = read_json(out / "report.json");
  EXPECT_TRUE(contains(codes(report["findings"]), planted.code)) << report["findings"].dump(1);
  ASSERT_TRUE(report["localization"].is_object()) << report["localization"].dump();
  EXPECT_EQ(report["localization"]["located"], planted.module);
  std::vector<std::string> located;
  for (const auto& finding : report["findings"]) {
    if (finding["code"] == "DIVERGENCE_LOCATED") located.push_back(finding["message"]);
  }
  ASSERT_EQ(located.size(), 1U);
  const std::string line = "divergence_models.py:" + std::to_string(marked_line(fixtures, "# LOCALIZED"));
  EXPECT_NE(located[0].find("'" + planted.module + "'"), std::string::npos) << located[0];
  EXPECT_NE(located[0].find(line), std::string::npos) << located[0];
  EXPECT_NE(located[0].find(planted.node), std::string::npos) << located[0];
  EXPECT_NE(located[0].find("its inputs match PyTorch's"), std::string::npos) << located[0];
  // Every module before the planted one agrees; the error grows from it on.
  for (const auto& module : report["localization"]["modules"]) {
    if (module["module"] == planted.module) break;
    if (module["matched"]) {
      EXPECT_TRUE(module["outputs_agree"].get<bool>()) << module.dump();
    }
  }
  EXPECT_NE(read_text(out / "report.md").find("## Where the outputs diverge"), std::string::npos);
  EXPECT_TRUE(read_text(out / "report-localize.svg").starts_with("<svg"));
  EXPECT_TRUE(fs::exists(out / "localize" / "modules.json"));
  // Node by node: the planted node is first divergent in node_errors.json, in Model Explorer's
  // overlay and in the report's drawing of the graph around it.
  bool first = false;
  for (const auto& node : read_json(out / "localize" / "node_errors.json"))
    if (node["node"] == planted.node) first = node["status"] == "first divergent";
  EXPECT_TRUE(first) << planted.node;
  const json overlay = read_json(out / "localize" / "model_explorer_node_data.json");
  ASSERT_EQ(overlay.size(), 1U) << overlay.dump();
  EXPECT_TRUE(overlay.begin().value()["results"][planted.node].contains("bgColor")) << overlay.dump();
  // The command that opens the whole graph names the file compared (the export, model.onnx).
  EXPECT_NE(read_text(out / "report.md").find("model-explorer RUN/model.onnx --extensions=model_explorer_onnx"),
            std::string::npos);
  const std::string html = read_text(out / "report.html");
  const auto marked = html.find("<g class=\"node first\"><title>" + planted.node + " (");
  EXPECT_NE(marked, std::string::npos) << "the report's graph view does not mark " << planted.node;
  // Opened in a browser with the network cut off, the report asks nothing of the network.
  if (const std::string chromium = find_chromium(); !chromium.empty()) {
    TempDir browser;
    EXPECT_EQ(page_requests(chromium, out / "report.html", browser.path()), std::vector<std::string>{});
  }

  // `onnxproof localize RUN` finds it again from the run folder alone: the TorchScript cases
  // capture the module outputs anew (a cold front end), the dynamo cases use the ones the run
  // kept (--captured: no Python starts).
  std::vector<std::string> localize = {"localize", out.path().string()};
  if (planted.exporter == "dynamo") localize.push_back("--captured");
  const auto again = onnxproof_cli(localize);
  EXPECT_EQ(again.exit_code, 0) << again.out << again.err;
  EXPECT_NE(again.out.find("'" + planted.module + "'"), std::string::npos) << again.out;
}

INSTANTIATE_TEST_SUITE_P(
    Planted, Localization,
    ::testing::Values(
        PlantedDivergence{"shifted_torchscript", "torchscript", "blocks.7.act", "PARITY_MISMATCH", "/blocks.7/act/Add"},
        PlantedDivergence{"shifted_dynamo", "dynamo", "blocks.7.act", "PARITY_MISMATCH", "node_shifted_silu"},
        PlantedDivergence{"nan_torchscript", "torchscript", "blocks.4.act", "NAN_OR_INF", "/blocks.4/act/Sqrt"},
        PlantedDivergence{"nan_dynamo", "dynamo", "blocks.4.act", "NAN_OR_INF", "node_sqrt_abs"}),
    [](const auto& test) { return test.param.factory; });

// Real networks with the planted activation (TorchScript): torchvision's ResNet-18, whose
// top-level conv1/bn1/relu share their names with every block's and whose blocks call one ReLU
// twice, and a 2-layer BERT. The module named is the planted one, its nodes are marked first in
// the report's graph view, and the report opens offline with no request.
struct PlantedNetwork {
  std::string factory;
  std::string input;
  std::string module;
  std::string node_scope;  // what the planted module's ONNX node names start with
};

class FailedNetwork : public ::testing::TestWithParam<PlantedNetwork> {};

TEST_P(FailedNetwork, TheGraphViewMarksThePlantedModuleAndTheReportFetchesNothing) {
  const auto& planted = GetParam();
  const std::string fixtures = std::string(ONNXPROOF_TEST_SOURCE_DIR) + "/fixtures/divergence_models.py";
  TempDir out;
  const auto result =
      onnxproof_cli({"pipeline", "--model", fixtures + ":" + planted.factory, "--input", planted.input, "--exporter",
                     "torchscript", "--samples", "1", "--no-golden", "--out", out.path().string()});
  ASSERT_EQ(result.exit_code, 1) << result.out << result.err;
  const json report = read_json(out / "report.json");
  ASSERT_TRUE(report["localization"].is_object()) << report["localization"].dump();
  EXPECT_EQ(report["localization"]["located"], planted.module);
  std::vector<std::string> first;
  for (const auto& node : read_json(out / "localize" / "node_errors.json"))
    if (node["status"] == "first divergent") first.push_back(node["node"]);
  ASSERT_FALSE(first.empty());
  for (const auto& node : first) EXPECT_TRUE(node.starts_with(planted.node_scope)) << node;
  // The view's nodes carry the ONNX graph's own float64 run (operators without a float64 kernel
  // in ONNX Runtime, Conv, Gelu, run in float32 there and are named).
  const json& float64 = report["localization"]["float64_graph"];
  EXPECT_TRUE(float64["ran"].get<bool>()) << float64.dump();
  EXPECT_FALSE(float64["float32_ops"].empty()) << float64.dump();
  for (const auto& node : report["localization"]["graph_view"]["nodes"]) {
    if (node["status"] != "first divergent" || node["op_type"] == "Constant") continue;
    ASSERT_TRUE(node.contains("float64_rel")) << node.dump();
    EXPECT_GT(node["float64_rel"].get<double>(), 0.0) << node.dump();   // float32 rounds; float64 less
    EXPECT_LT(node["float64_rel"].get<double>(), 1e-4) << node.dump();  // a planted shift is in both runs
  }
  const std::string html = read_text(out / "report.html");
  EXPECT_NE(html.find("<g class=\"node first\"><title>" + first.front() + " ("), std::string::npos);
  const std::string chromium = find_chromium();
  if (chromium.empty()) GTEST_SKIP() << "Chromium is not installed (scripts/setup.sh installs it)";
  TempDir browser;
  EXPECT_EQ(page_requests(chromium, out / "report.html", browser.path()), std::vector<std::string>{});
}

INSTANTIATE_TEST_SUITE_P(Planted, FailedNetwork,
                         ::testing::Values(PlantedNetwork{"planted_resnet18", "x=1x3x64x64:float32", "layer2.0.relu",
                                                          "/layer2/layer2.0/relu"},
                                           PlantedNetwork{"planted_bert", "input_ids=1x16:int64:0..999",
                                                          "bert.encoder.layer.0.intermediate.intermediate_act_fn",
                                                          "/bert/encoder/layer.0/intermediate/intermediate_act_fn/"}),
                         [](const auto& test) { return test.param.factory; });

// The probe above sees a page's own request (else its silence would prove nothing).
TEST(Localization, TheRequestProbeSeesAPageThatFetches) {
  const std::string chromium = find_chromium();
  if (chromium.empty()) GTEST_SKIP() << "Chromium is not installed (scripts/setup.sh installs it)";
  TempDir dir;
  std::ofstream(dir.path() / "page.html") << "<html><body><img src=\"http://example.invalid/x.png\"></body></html>\n";
  EXPECT_EQ(page_requests(chromium, dir.path() / "page.html", dir.path()),
            std::vector<std::string>{"http://example.invalid/x.png"});
}

TEST(Localization, ARunThatPassedHasNothingToLocalize) {
  TempDir out;
  ASSERT_TRUE(clean_run(out.path()));
  const auto result = onnxproof_cli({"localize", out.path().string()});
  EXPECT_EQ(result.exit_code, 2) << result.err;
  EXPECT_NE(result.err.find("nothing to localize"), std::string::npos) << result.err;
  EXPECT_EQ(onnxproof_cli({"localize", (out / "missing").string()}).exit_code, 2);
  const auto no_case = onnxproof_cli({"localize", out.path().string(), "--case", "test_data_set_99"});
  EXPECT_EQ(no_case.exit_code, 2) << no_case.err;
  EXPECT_NE(no_case.err.find("no reference case test_data_set_99"), std::string::npos) << no_case.err;
  const auto level =
      onnxproof_cli({"localize", out.path().string(), "--case", "test_data_set_0", "--optimization", "fast"});
  EXPECT_EQ(level.exit_code, 2) << level.err;
  EXPECT_NE(level.err.find("--optimization must be all or disabled"), std::string::npos) << level.err;
  // RUN/localize is written into: never through a link to another folder.
  TempDir elsewhere;
  fs::create_directory_symlink(elsewhere.path(), out / "localize");
  expect_one_line_error(onnxproof_cli({"localize", out.path().string(), "--case", "test_data_set_0"}), 2,
                        "refusing to write into " + (out / "localize").string() + ": it is a symbolic link");
  EXPECT_TRUE(fs::is_empty(elsewhere.path()));
}

// A difference that only ONNX Runtime's optimizations make (tests/fixtures/runtime_models.py: its
// ConvAddFusion folds an Add into a Conv's bias and skips a rounding PyTorch does) is traced to
// the optimizer by name, with either exporter.
class RuntimeOptimization : public ::testing::TestWithParam<std::string> {};

TEST_P(RuntimeOptimization, TheOptimizerThatChangesTheOutputsIsNamed) {
  const std::string fixtures = std::string(ONNXPROOF_TEST_SOURCE_DIR) + "/fixtures/runtime_models.py";
  TempDir out;
  // The fixed rule: the fusion moves ONNX Runtime away from PyTorch (though not from the exact
  // answer, which the calibrated rule judges by: see the test below).
  const auto result = onnxproof_cli(
      {"pipeline", "--model", fixtures + ":large_bias_conv", "--input", "x=2x3x16x16:float32", "--dynamic", "x:0=batch",
       "--exporter", GetParam(), "--samples", "1", "--rtol", "1e-3", "--atol", "1e-5", "--out", out.path().string()});
  ASSERT_EQ(result.exit_code, 1) << result.out << result.err;
  const json report = read_json(out / "report.json");
  // The premise: it passes with optimizations disabled. PyTorch's and ONNX Runtime's convolutions
  // round at the 1e5 bias in their own orders, which on some machines and loads differs by a step
  // at 1e5 even without the fusion; then there is no optimizer to name (the calibrated rule,
  // below, passes either way).
  for (const auto& row : report["parity"]) {
    if (row["optimization"] == "disabled" && row["status"] != "pass") {
      GTEST_SKIP() << "without optimizations ONNX Runtime already differs from PyTorch here: " << row.dump();
    }
  }
  std::vector<json> named;
  for (const auto& finding : report["findings"]) {
    if (finding["code"] == "RUNTIME_OPTIMIZATION_CHANGED_OUTPUTS") named.push_back(finding);
  }
  ASSERT_EQ(named.size(), 1U) << report["findings"].dump(1);
  EXPECT_EQ(named[0]["where"], "ConvAddFusion");
  EXPECT_NE(named[0]["message"].get<std::string>().find("optimizer ConvAddFusion changes the outputs"),
            std::string::npos);
  EXPECT_NE(named[0]["hint"].get<std::string>().find("optimization.disable_specified_optimizers=ConvAddFusion"),
            std::string::npos);
}

// TorchScript only: the dynamo export of this fixture rounds at 1e5 in another order even with
// the optimizations off (it differs from PyTorch by ~0.03 there too), so the premise that only an
// optimizer changes the outputs does not hold for it under the fixed rule.
INSTANTIATE_TEST_SUITE_P(TorchScript, RuntimeOptimization, ::testing::Values("torchscript"),
                         [](const auto& test) { return test.param; });

// The calibrated rule asks how far each side is from the float64 answer: ConvAddFusion skips a
// rounding at 1e5 that PyTorch makes, so ONNX Runtime differs from PyTorch by ~4e-3 yet is no
// farther from exact than PyTorch is. No false alarm.
TEST(RuntimeOptimization, AFusionThatIsNoFartherFromExactThanPyTorchPasses) {
  const std::string fixtures = std::string(ONNXPROOF_TEST_SOURCE_DIR) + "/fixtures/runtime_models.py";
  TempDir out;
  const auto result = onnxproof_cli({"pipeline", "--model", fixtures + ":large_bias_conv", "--input",
                                     "x=2x3x16x16:float32", "--dynamic", "x:0=batch", "--exporter", "torchscript",
                                     "--samples", "1", "--out", out.path().string()});
  EXPECT_EQ(result.exit_code, 0) << result.out << result.err;
  const json report = read_json(out / "report.json");
  for (const auto& row : report["parity"]) {
    EXPECT_EQ(row["status"], "pass") << row.dump();
    EXPECT_TRUE(row["rule"] == "calibrated" || row["rule"] == "pooled") << row.dump();
    EXPECT_LT(row["error_ratio"].get<double>(), 8.0) << row.dump();  // no farther from exact than 8x PyTorch
  }
}
