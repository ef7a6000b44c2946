// The answer first: which finding is the cause, what follows from it, and the verdict, where and
// what to do a shipper reads before anything else.

#include "onnxproof/report/ship_summary.h"

#include <gtest/gtest.h>

#include <sstream>

#include "onnxproof/report/report.h"
#include "onnxproof/report/report_sections.h"

namespace onnxproof {
namespace {

Finding finding(FindingCode code, Severity severity, std::string where = "", Evidence evidence = {}) {
  return {.code = code,
          .severity = severity,
          .step = "parity",
          .message = std::string(finding_code_name(code)) + " message",
          .where = std::move(where),
          .hint = std::string(finding_code_info(code).hint),
          .evidence = std::move(evidence)};
}

Finding at_batch(FindingCode code, int64_t batch) {
  return finding(code, Severity::error, "", {.sizes = {{"batch", batch}, {"sequence", 5}}});
}

TEST(ShipSummary, OneFrozenAxisIsOneItemWithEveryRefusedSizeUnderIt) {
  const std::vector<Finding> findings = {
      finding(FindingCode::frozen_dimension, Severity::error, "/Reshape", {.axis = "batch"}),
      at_batch(FindingCode::shape_rejected, 1), at_batch(FindingCode::shape_rejected, 3),
      at_batch(FindingCode::run_failed, 8),
      // A failure on another axis is not the frozen batch's doing.
      finding(FindingCode::parity_mismatch, Severity::error, "", {.sizes = {{"sequence", 9}}})};
  const auto groups = group_findings(findings);
  ASSERT_EQ(groups.size(), 2U);
  EXPECT_EQ(groups[0].cause.code, FindingCode::frozen_dimension);
  EXPECT_EQ(groups[0].follow_ons.size(), 3U);
  EXPECT_EQ(groups[1].cause.code, FindingCode::parity_mismatch);
  EXPECT_TRUE(groups[1].follow_ons.empty());
}

TEST(ShipSummary, AnArgmaxFlipFromABranchIsNotAdvisedToLoosenTheTolerance) {
  std::vector<Finding> findings = {finding(FindingCode::argmax_flip, Severity::error),
                                   finding(FindingCode::data_dependent_control_flow, Severity::error, "model.py:12")};
  ASSERT_NE(findings[0].hint.find("tolerance"), std::string::npos);  // the registry's generic advice
  point_follow_ons_at_causes(findings);
  EXPECT_EQ(findings[0].hint.find("tolerance"), std::string::npos) << findings[0].hint;
  EXPECT_TRUE(findings[0].hint.starts_with("follows from DATA_DEPENDENT_CONTROL_FLOW at model.py:12: fix that first"))
      << findings[0].hint;
  // The cause keeps its own hint.
  EXPECT_EQ(findings[1].hint, finding_code_info(FindingCode::data_dependent_control_flow).hint);
}

TEST(ShipSummary, ALocatedDivergenceAnswersWhereAndWhatToDo) {
  Report report;
  report.findings = {finding(FindingCode::parity_mismatch, Severity::error),
                     finding(FindingCode::divergence_located, Severity::info, "blocks.5 (model.py:40)")};
  Localization localization;
  ModuleComparison module;
  module.module = "blocks.5";
  module.source = "model.py:40";
  module.matched = true;
  localization.modules = {module};
  localization.located = 0;
  report.localization = localization;
  report.verdict = Verdict::fail;
  const ShipSummary summary = summarize_for_shipping(report);
  EXPECT_EQ(summary.where, "module blocks.5 (model.py:40)");
  EXPECT_EQ(summary.what_to_do, finding_code_info(FindingCode::divergence_located).hint);
  EXPECT_NE(summary.answer.find("do not ship"), std::string::npos);
  EXPECT_NE(summary.answer.find("PARITY_MISMATCH"), std::string::npos) << summary.answer;
  // The terminal says it first, and shows the located module although it is info.
  std::ostringstream out;
  print_report_summary(out, report, "/run");
  const std::string text = out.str();
  EXPECT_TRUE(text.starts_with("verdict          fail: do not ship")) << text;
  EXPECT_EQ(text.find("where            module blocks.5 (model.py:40)\nwhat to do       "), text.find('\n') + 1)
      << text;
  EXPECT_NE(text.find("    follows: error   PARITY_MISMATCH"), std::string::npos) << text;
}

TEST(ShipSummary, TheWholeModelIsNoPlaceBesideAFrozenNode) {
  Report report;
  report.findings = {finding(FindingCode::frozen_dimension, Severity::error, "/Reshape", {.axis = "batch"}),
                     at_batch(FindingCode::parity_mismatch, 1)};
  Localization localization;
  ModuleComparison model;  // module "": the model itself
  model.source = "model.py:17";
  model.matched = true;
  localization.modules = {model};
  localization.located = 0;
  report.localization = localization;
  report.verdict = Verdict::fail;
  EXPECT_EQ(summarize_for_shipping(report).where, "/Reshape");
  report.localization->modules[0].module = "blocks.2";
  EXPECT_EQ(summarize_for_shipping(report).where,
            "/Reshape; the outputs first diverge in module blocks.2 (model.py:17)");
}

TEST(ShipSummary, ADivergenceThatNamedNoModuleExplainsNothing) {
  const std::vector<Finding> findings = {finding(FindingCode::parity_mismatch, Severity::error),
                                         finding(FindingCode::divergence_located, Severity::info)};
  EXPECT_FALSE(follows_from(findings[0], findings[1]));
  EXPECT_EQ(group_findings(findings).size(), 2U);
}

TEST(ShipSummary, APassSaysShipItAndANotProvedRunNamesTheStep) {
  Report report;
  report.verdict = Verdict::pass;
  EXPECT_TRUE(summarize_for_shipping(report).answer.starts_with("ship it")) << summarize_for_shipping(report).answer;
  report.verdict = Verdict::error;
  report.steps = {{.name = "parity", .status = StepStatus::error, .reason = "ONNX Runtime could not load the model"}};
  const ShipSummary error = summarize_for_shipping(report);
  EXPECT_NE(error.answer.find("not proved: the parity step could not run: ONNX Runtime"), std::string::npos)
      << error.answer;
}

}  // namespace
}  // namespace onnxproof
