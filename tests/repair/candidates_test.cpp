// The repair's plan: which changes a failed run's findings point at, in what order.
#include <gtest/gtest.h>

#include <algorithm>

#include "onnxproof/repair/repair.h"

namespace onnxproof {
namespace {

RepairFacts failed_run(std::vector<RepairFacts::FindingFact> findings) {
  RepairFacts facts;
  facts.verdict = "fail";
  facts.framework = "torch";
  facts.exporter = "torchscript";
  facts.opset = 20;
  facts.has_model = true;
  facts.can_reexport = true;
  facts.failing_cases = {"test_data_set_0"};
  facts.findings = std::move(findings);
  return facts;
}

std::vector<std::string> names(const std::vector<RepairCandidate>& candidates) {
  std::vector<std::string> out;
  for (const auto& c : candidates) out.push_back(c.name);
  return out;
}

const RepairFacts::FindingFact k_mismatch{"PARITY_MISMATCH", "error", "output", "output 'output' misses", "parity"};

TEST(RepairPlan, APassingRunOrAModelsOwnFailureHasNothingToTry) {
  RepairFacts passed = failed_run({k_mismatch});
  passed.verdict = "pass";
  EXPECT_TRUE(plan_repair(passed).empty());
  // Nondeterminism and golden drift are the model's or the user's: no export change answers them.
  EXPECT_TRUE(plan_repair(failed_run({{"NONDETERMINISTIC_FORWARD", "error", "", ""},
                                      {"GOLDEN_DRIFT", "error", "", ""},
                                      {"EVIDENCE_WEAK", "warning", "", ""}}))
                  .empty());
}

TEST(RepairPlan, ChangesWithoutANewExportComeFirstThenExporterThenOpsetsThenPairs) {
  const auto plan = plan_repair(
      failed_run({k_mismatch, {"RUNTIME_OPTIMIZATION_CHANGED_OUTPUTS", "error", "ConvAddFusion", "...", "localize"}}));
  const auto planned = names(plan);
  EXPECT_EQ(planned, (std::vector<std::string>{"optimizer-ConvAddFusion", "exporter-dynamo", "opset-19", "opset-18",
                                               "opset-17", "optimizer-ConvAddFusion+exporter-dynamo",
                                               "exporter-dynamo+opset-19", "exporter-dynamo+opset-18"}));
  EXPECT_EQ(plan[0].disabled_optimizers, std::vector<std::string>{"ConvAddFusion"});
  EXPECT_FALSE(plan[0].reexport);
  EXPECT_TRUE(plan[1].reexport);
  EXPECT_EQ(plan[1].exporter, "dynamo");
  EXPECT_EQ(plan[2].opset, 19);
  EXPECT_EQ(plan[2].exporter, "torchscript");  // a lower opset keeps the exporter that made the run
  // Pairs: the dynamo exporter writes no opset below 18, so exporter-dynamo+opset-17 is not tried.
  EXPECT_EQ(std::count(planned.begin(), planned.end(), "exporter-dynamo+opset-17"), 0);
}

// A branch the trace froze fails at every opset: only the other exporter is tried for it.
TEST(RepairPlan, APythonBranchGetsNoOpsetSearch) {
  const auto plan = plan_repair(
      failed_run({{"DATA_DEPENDENT_CONTROL_FLOW", "error", "model.py:11", "a Python if on a tensor's value", "export"},
                  k_mismatch}));
  EXPECT_EQ(names(plan), std::vector<std::string>{"exporter-dynamo"});
}

TEST(RepairPlan, ARunWithoutANewExportTriesOnlyItsOwnModel) {
  RepairFacts facts =
      failed_run({k_mismatch, {"RUNTIME_OPTIMIZATION_CHANGED_OUTPUTS", "error", "A, B", "...", "localize"}});
  facts.can_reexport = false;  // a --from-export run, or prove()'s without its front end
  const auto plan = plan_repair(facts);
  ASSERT_EQ(names(plan), std::vector<std::string>{"optimizer-A-B"});
  EXPECT_EQ(plan[0].disabled_optimizers, (std::vector<std::string>{"A", "B"}));
  // A file the user made (--onnx): no exporter or opset makes it; only its own model is changed.
  facts.can_reexport = true;
  facts.exporter = "file";
  EXPECT_EQ(names(plan_repair(facts)), std::vector<std::string>{"optimizer-A-B"});
}

TEST(RepairPlan, AFrozenReshapeGetsTheRewriteAndAFloat16FailureTheFloat32Block) {
  auto frozen = plan_repair(failed_run(
      {{"FROZEN_DIMENSION", "error", "/Reshape", "Reshape input 1 (shape) is the constant [2, -1], which holds 2"},
       {"SHAPE_REJECTED", "error", "", ""}}));
  ASSERT_FALSE(frozen.empty());
  EXPECT_EQ(frozen[0].kind, "rewrite");
  EXPECT_EQ(frozen[0].reshapes, std::vector<std::string>{"/Reshape"});

  RepairFacts half = failed_run({k_mismatch});
  half.float16 = true;
  half.simplified = true;
  const auto plan = plan_repair(half);
  ASSERT_GE(plan.size(), 2U);
  EXPECT_EQ(plan[0].name, "keep-float32");  // the pipeline itself keeps the export when simplify is to blame
  EXPECT_TRUE(plan[0].keep_float32);
  // A float32 block names this export's nodes: never paired with a new export.
  for (const auto& c : plan) EXPECT_FALSE(c.keep_float32 && c.reexport) << c.name;
}

TEST(RepairPlan, NothingIsPlannedThatNoProofCouldConfirm) {
  // Golden drift beside another error: candidates verify no golden set, so the drift would stand.
  EXPECT_TRUE(plan_repair(failed_run({k_mismatch, {"GOLDEN_DRIFT", "error", "", ""}})).empty());
  // A frozen Reshape without a failing case: nothing would prove the rewrite (the trace trap alone).
  RepairFacts trap = failed_run({{"FROZEN_DIMENSION", "error", "/Reshape", "Reshape input 1 is the constant [2, -1]"}});
  trap.failing_cases.clear();
  for (const auto& c : plan_repair(trap)) EXPECT_NE(c.kind, "rewrite");
  // The generation proof's optimizer finding names a step, not an optimizer.
  for (const auto& c : plan_repair(failed_run(
           {k_mismatch, {"RUNTIME_OPTIMIZATION_CHANGED_OUTPUTS", "error", "generation step 3", "...", "generate"}})))
    EXPECT_NE(c.kind, "optimizer") << c.name;
}

TEST(RepairPlan, AfterAnExporterFallbackTheOtherExporterIsNotTriedAlone) {
  RepairFacts facts = failed_run({k_mismatch, {"EXPORTER_FALLBACK", "info", "", ""}});
  facts.exporter = "torchscript";
  const auto plan = names(plan_repair(facts));
  EXPECT_EQ(std::count(plan.begin(), plan.end(), "exporter-dynamo"), 0);
  EXPECT_EQ(plan.front(), "opset-19");
}

TEST(RepairPlan, TensorFlowSwitchesBetweenItsOwnExporters) {
  RepairFacts facts = failed_run({k_mismatch});
  facts.framework = "tensorflow";
  facts.exporter = "tf2onnx";
  facts.opset = 18;
  const auto plan = plan_repair(facts);
  ASSERT_FALSE(plan.empty());
  EXPECT_EQ(plan[0].name, "exporter-keras");
}

}  // namespace
// OpenVINO's default configuration proved as the deployment and failed: compiling in float32 is
// tried first, alone (no export changes with it), and says the line that sets it.
TEST(RepairPlan, OpenvinosDefaultPrecisionFailingIsTriedInFloat32First) {
  RepairFacts facts = failed_run({k_mismatch});
  facts.failing_providers = {"openvino:default"};
  const auto plan = plan_repair(facts);
  ASSERT_FALSE(plan.empty());
  EXPECT_EQ(plan[0].name, "openvino-f32");
  EXPECT_TRUE(plan[0].openvino_float32);
  EXPECT_FALSE(plan[0].reexport);
  EXPECT_NE(plan[0].change.find("ov::hint::inference_precision(ov::element::f32)"), std::string::npos);
  for (const auto& candidate : plan) EXPECT_EQ(candidate.name.find("openvino-f32+"), std::string::npos);
  // Rows on ONNX Runtime alone: no such candidate.
  facts.failing_providers = {"cpu"};
  const auto without = names(plan_repair(facts));
  EXPECT_EQ(std::count(without.begin(), without.end(), "openvino-f32"), 0);
}

}  // namespace onnxproof
