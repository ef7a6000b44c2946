// What a new user meets first (issue 62): a typo in --model is a usage error that names the fix,
// before any run folder is made, and the line a passing run ends with names the file it proved
// and the golden set only where there is one.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "cli_runner.h"
#include "test_support.h"

using namespace onnxproof::testing;
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

const std::string k_trap_models = std::string(ONNXPROOF_TEST_SOURCE_DIR) + "/fixtures/trap_models.py";

CliResult onnxproof_cli(const std::vector<std::string>& args) { return run_cli(ONNXPROOF_CLI, args); }

// The terminal's "what to do" line, without its label.
std::string what_to_do(const CliResult& result) {
  const auto at = result.out.find("what to do");
  EXPECT_NE(at, std::string::npos) << result.out;
  if (at == std::string::npos) return "";
  const auto line = result.out.substr(at, result.out.find('\n', at) - at);
  return line.substr(line.find_first_not_of(' ', std::string("what to do").size()));
}

TEST(FirstHour, AMisspelledFamilyPrefixIsAUsageErrorThatSpellsItRight) {
  TempDir dir;
  const fs::path run = dir / "run";
  expect_one_line_error(onnxproof_cli({"pipeline", "--model", "torchvison:resnet18", "--out", run.string()}), 2,
                        "no model family 'torchvison:'; did you mean torchvision:resnet18?");
  expect_one_line_error(onnxproof_cli({"export", "--model", "kears:MobileNetV3Small", "--out", run.string()}), 2,
                        "did you mean keras:MobileNetV3Small?");
  EXPECT_FALSE(fs::exists(run));
}

TEST(FirstHour, AModelFileThatDoesNotExistIsExit2BeforeAnyRunFolder) {
  TempDir dir;
  const fs::path run = dir / "run";
  const std::string script = (dir / "modle.py").string();
  expect_one_line_error(
      onnxproof_cli({"pipeline", "--model", script + ":build", "--input", "x=1x4:float32", "--out", run.string()}), 2,
      "no such file " + script);
  expect_one_line_error(onnxproof_cli({"pipeline", "--model", (dir / "model.pt").string(), "--input", "x=1x4:float32",
                                       "--out", run.string()}),
                        2, "no such file");
  expect_one_line_error(
      onnxproof_cli({"export", "--model", "saved_model:" + (dir / "gone").string(), "--out", run.string()}), 2,
      "no such SavedModel folder");
  EXPECT_FALSE(fs::exists(run));
}

// The file the ship line names is the one the run proved, in the run folder, and the golden set
// is named only when the run froze or verified one.
TEST(FirstHour, TheShipLineNamesTheProvedFileAndGoldenOnlyWhereThereIsOne) {
  TempDir dir;
  const std::vector<std::string> model = {"pipeline", "--model",       k_trap_models + ":dict_output",
                                          "--input",  "x=2x8:float32", "--samples",
                                          "1",        "--exporter",    "torchscript"};
  auto with = [&](std::vector<std::string> extra) {
    std::vector<std::string> args = model;
    args.insert(args.end(), extra.begin(), extra.end());
    return onnxproof_cli(args);
  };
  const auto no_golden = with({"--no-golden", "--out", (dir / "a").string()});
  ASSERT_EQ(no_golden.exit_code, 0) << no_golden.out << no_golden.err;
  const std::string proved = json::parse(read_text(dir / "a" / "report.json"))["onnx_model"];
  EXPECT_EQ(what_to_do(no_golden), "ship " + proved);
  EXPECT_TRUE(fs::is_regular_file(proved));

  const auto golden = with({"--out", (dir / "b").string()});
  ASSERT_EQ(golden.exit_code, 0) << golden.out << golden.err;
  const std::string proved_b = json::parse(read_text(dir / "b" / "report.json"))["onnx_model"];
  EXPECT_EQ(what_to_do(golden), "ship " + proved_b + "; keep golden/ and re-verify it on every re-export");

  // --exporter both leaves no OUT/model.onnx: each exporter's proved file, in its folder.
  std::vector<std::string> both = {"pipeline", "--model",       k_trap_models + ":dict_output",
                                   "--input",  "x=2x8:float32", "--samples",
                                   "1",        "--no-golden",   "--exporter",
                                   "both",     "--out",         (dir / "c").string()};
  const auto compared = onnxproof_cli(both);
  ASSERT_EQ(compared.exit_code, 0) << compared.out << compared.err;
  const std::string line = what_to_do(compared);
  for (const char* exporter : {"dynamo", "torchscript"}) {
    const std::string file = json::parse(read_text(dir / "c" / exporter / "report.json"))["onnx_model"];
    EXPECT_NE(line.find(std::string(exporter) + "/" + fs::path(file).filename().string()), std::string::npos) << line;
  }
  EXPECT_FALSE(fs::exists(dir / "c" / "model.onnx"));
}

// Ctrl-C during an export: one line, the shell's 130, no run folder and no staging folder left,
// and no front end still running the model.
TEST(FirstHour, CtrlCSaysSoInOneLineAndLeavesNothing) {
  TempDir dir;
  write_bytes(dir / "slow.py",
              "import time\nimport torch\n\n\nclass Slow(torch.nn.Module):\n    def forward(self, x):\n"
              "        time.sleep(120)\n        return x * 2\n\n\ndef build():\n    return Slow()\n");
  const std::string model = (dir / "slow.py").string() + ":build";
  const std::string script = std::string(ONNXPROOF_CLI) + " pipeline --model '" + model +
                             "' --input x=1x4:float32 --no-golden --out '" + (dir / "run").string() +
                             "' & pid=$!; sleep 6; kill -INT $pid; wait $pid; echo rc=$?";
  const auto result = run_cli("/bin/sh", {"-c", script});
  EXPECT_NE(result.out.find("rc=130"), std::string::npos) << result.out << result.err;
  EXPECT_NE(result.err.find("onnxproof: interrupted: nothing was published; an earlier run is as it was\n"),
            std::string::npos)
      << result.err;
  EXPECT_FALSE(fs::exists(dir / "run"));
  for (const auto& entry : fs::directory_iterator(dir.path()))
    EXPECT_EQ(entry.path().filename().string().find(".tmp-"), std::string::npos) << entry.path();
  // "[s]low.py": the pattern does not match the command line of the shell run_cli starts pgrep from.
  const auto left = run_cli("/usr/bin/pgrep", {"-f", (dir / "[s]low.py:build").string()});
  EXPECT_EQ(left.out, "") << "a front end outlived the interrupted run";
}

}  // namespace
