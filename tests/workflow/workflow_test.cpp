// The workflows as library calls: one typed Outcome each, the verdict decided by core/verdict,
// errors as values with the exit code DESIGN.md gives them. Real models, real ONNX Runtime.
#include <gtest/gtest.h>

#include <sstream>

#include "onnxproof/model/model_io.h"
#include "onnxproof/workflow/present.h"
#include "test_support.h"

namespace onnxproof {
namespace {

using testing::TempDir;

std::filesystem::path saved_matmul_model(const TempDir& dir) {
  onnx::ModelProto model = testing::matmul_model(4, 2);
  const auto path = dir / "model.onnx";
  EXPECT_TRUE(save_model(model, path).has_value());
  return path;
}

TEST(Verdict, OneFunctionDecidesEveryWorkflowsVerdict) {
  const std::vector<Finding> error = {{FindingCode::parity_mismatch, Severity::error, "parity", "differs"}};
  EXPECT_EQ(verdict_from(true, true), Verdict::pass);
  EXPECT_EQ(verdict_from(true, false), Verdict::fail);
  EXPECT_EQ(verdict_from(true, true, error), Verdict::fail);
  EXPECT_EQ(verdict_from(false, true), Verdict::error);
  const std::vector<StepStatus> passed = {StepStatus::pass, StepStatus::pass};
  EXPECT_EQ(verdict_from(passed, {}), Verdict::pass);
  EXPECT_EQ(verdict_from(passed, error), Verdict::fail);  // a merged finding still fails the run
  EXPECT_EQ(status_from(Verdict::error), StepStatus::error);
  EXPECT_EQ(exit_code(Error(ErrorCode::usage, "bad option")), 2);
  EXPECT_EQ(exit_code(Error(ErrorCode::not_found, "no file")), 3);
}

TEST(Workflow, CheckReturnsItsOutcomeAndWritesTheJsonItNames) {
  TempDir dir;
  const auto model = saved_matmul_model(dir);
  CheckCommand command{.model = model, .json_path = dir / "check.json"};
  const auto outcome = check_workflow(command);
  ASSERT_TRUE(outcome.has_value()) << outcome.error().describe();
  EXPECT_EQ(outcome->verdict, Verdict::pass);
  ASSERT_EQ(outcome->artifacts.size(), 1U);
  EXPECT_TRUE(std::filesystem::is_regular_file(outcome->artifacts.front()));
  EXPECT_TRUE(outcome->result.check.checker_passed);
  std::ostringstream out;
  print_outcome(out, *outcome);
  EXPECT_NE(out.str().find("model            " + model.string()), std::string::npos) << out.str();
}

TEST(Workflow, ErrorsAreValuesWithTheirExitCode) {
  TempDir dir;
  const auto missing = check_workflow(CheckCommand{.model = dir / "none.onnx"});
  ASSERT_FALSE(missing.has_value());
  EXPECT_EQ(exit_code(missing.error()), 3);
  const auto bad_list = ops_workflow(OpsCommand{.model = saved_matmul_model(dir), .targets = "ort-cpu,"});
  ASSERT_FALSE(bad_list.has_value());
  EXPECT_EQ(exit_code(bad_list.error()), 2);
  const auto no_run = localize_workflow(LocalizeCommand{.run = dir.path()}, std::cerr);
  ASSERT_FALSE(no_run.has_value());
  EXPECT_NE(no_run.error().describe().find("not a run folder"), std::string::npos);
}

TEST(Workflow, SimplifyPassesWhenTheProvedModelIsWritten) {
  TempDir dir;
  SimplifyCommand command{.model = saved_matmul_model(dir), .output = dir / "model.sim.onnx"};
  const auto outcome = simplify_workflow(command);
  ASSERT_TRUE(outcome.has_value()) << outcome.error().describe();
  EXPECT_EQ(outcome->verdict, Verdict::pass);
  ASSERT_EQ(outcome->artifacts.size(), 1U);
  EXPECT_EQ(outcome->artifacts.front(), command.output);
  EXPECT_TRUE(load_model(command.output).has_value());
  std::ostringstream out;
  print_outcome(out, *outcome);
  EXPECT_NE(out.str().find("verdict          pass"), std::string::npos) << out.str();
}

}  // namespace
}  // namespace onnxproof
