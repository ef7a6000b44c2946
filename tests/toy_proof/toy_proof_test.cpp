// Adding a proof is one folder and registry lines (docs/ARCHITECTURE.md, "Adding a proof"): this
// folder holds a toy proof, whole. Its step reads the Run (the reference), writes its own entry in
// the run folder (toy/), returns a typed result whose writers give report.json's figures and a
// section of report.md and report.html; register_proof() puts it in the pipeline before the golden
// step and its entry in the run-folder layout. Nothing in src/ names it.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <fstream>
#include <memory>
#include <sstream>

#include <nlohmann/json.hpp>

#include "cli_runner.h"
#include "onnxproof/core/run_folder.h"
#include "onnxproof/pipeline/pipeline.h"
#include "onnxproof/pipeline/proof.h"
#include "test_support.h"

namespace onnxproof::pipeline_run {
namespace {

namespace fs = std::filesystem;

// The toy proof's result: how many reference outputs hold only finite values.
struct ToyFigures final : StepResult {
  std::size_t finite_outputs = 0;
  std::size_t outputs = 0;
  [[nodiscard]] nlohmann::json to_json() const override {
    return {{"finite_outputs", finite_outputs}, {"outputs", outputs}};
  }
  [[nodiscard]] std::string markdown(const Report& /*report*/) const override {
    return "\n## Toy proof\n\n" + std::to_string(finite_outputs) + " of " + std::to_string(outputs) +
           " reference outputs are finite.\n";
  }
  [[nodiscard]] std::string html(const Report& /*report*/) const override {
    return "<h2>Toy proof</h2>\n<p>" + std::to_string(finite_outputs) + " of " + std::to_string(outputs) +
           " reference outputs are finite.</p>\n";
  }
};

constexpr std::array k_toy_entries = {RunEntry{"toy", true, RunEntryRole::proof}};

StepReport toy_step(Run& run) {
  StepReport step{.name = "toy"};
  if (!run.reference) return step_error(step, *run.reference_error);
  auto figures = std::make_shared<ToyFigures>();
  for (const auto& c : run.reference->cases) {
    for (const auto& output : c.outputs) {
      ++figures->outputs;
      bool finite = true;
      for (int64_t i = 0; i < output.tensor.size(); ++i)
        finite = finite && std::isfinite(output.tensor.value_as_double(i));
      figures->finite_outputs += finite ? 1 : 0;
    }
  }
  fs::create_directories(run.out / "toy");
  std::ofstream(run.out / "toy" / "finite.txt") << figures->finite_outputs << '\n';
  step.status = figures->finite_outputs == figures->outputs ? StepStatus::pass : StepStatus::fail;
  step.reason = std::to_string(figures->finite_outputs) + " finite outputs";
  step.result = figures;
  return step;
}

constexpr StepDefinition k_toy_proof{"toy", toy_step, "reference", "toy/", true, nullptr, k_toy_entries};

nlohmann::json read_json(const fs::path& path) { return nlohmann::json::parse(testing::read_text(path)); }

TEST(ToyProof, ARegisteredProofRunsWritesItsFolderAndHasItsReportSection) {
  testing::TempDir dir;
  const fs::path exported = dir.path() / "export";
  const auto export_run =
      testing::run_cli(ONNXPROOF_CLI, {"export", "--model", ONNXPROOF_TRAPS ":dict_output", "--input", "x=2x8:float32",
                                       "--samples", "1", "--out", exported.string()});
  ASSERT_EQ(export_run.exit_code, 0) << export_run.err;
  EXPECT_FALSE(is_run_folder_entry("toy", true));  // not in the layout before it is registered
  ASSERT_TRUE(register_proof(k_toy_proof));
  EXPECT_TRUE(is_run_folder_entry("toy", true));
  EXPECT_EQ(register_proof(k_toy_proof).error().code(), ErrorCode::usage);  // one step per name

  PipelineOptions options;
  options.export_options.from_export = exported;
  options.export_options.out = dir.path() / "run";
  options.parity.intra_op_threads = 1;
  std::ostringstream progress;
  const auto report = run_pipeline(options, progress);
  ASSERT_TRUE(report) << report.error().describe();
  EXPECT_EQ(report->verdict, Verdict::pass) << progress.str();

  const auto json = read_json(dir.path() / "run" / "report.json");
  std::vector<std::string> steps;
  for (const auto& step : json["steps"]) steps.push_back(step["name"]);
  ASSERT_GE(steps.size(), 2U);
  EXPECT_EQ(steps[steps.size() - 2], "toy");  // just before the golden step
  EXPECT_EQ(steps.back(), "golden");
  const auto& toy = json["steps"][steps.size() - 2];
  EXPECT_EQ(toy["status"], "pass");
  EXPECT_EQ(toy["finite_outputs"], toy["outputs"]);
  EXPECT_GT(toy["outputs"].get<int>(), 0);
  EXPECT_NE(testing::read_text(dir.path() / "run" / "report.md").find("## Toy proof"), std::string::npos);
  EXPECT_NE(testing::read_text(dir.path() / "run" / "report.html").find("<h2>Toy proof</h2>"), std::string::npos);
  EXPECT_TRUE(fs::is_regular_file(dir.path() / "run" / "toy" / "finite.txt"));

  // A second run replaces the first (the toy/ folder is the layout's), and once the proof is
  // gone, so is its entry: a run holding toy/ is no longer one onnxproof may replace.
  ASSERT_TRUE(run_pipeline(options, progress)) << progress.str();
  EXPECT_TRUE(unregister_proof("toy"));
  EXPECT_FALSE(is_run_folder_entry("toy", true));
  EXPECT_FALSE(require_replaceable_run_folder(dir.path() / "run"));
}

}  // namespace
}  // namespace onnxproof::pipeline_run
