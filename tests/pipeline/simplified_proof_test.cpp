// Who is to blame when the simplified model fails the parity proof (src/pipeline/simplified_proof.cpp):
// onnxproof's simplifier where the export passes what the simplified model fails, the export itself
// where both fail alike.
#include <gtest/gtest.h>

#include "run.h"

namespace onnxproof::pipeline_run {
namespace {

ParityRow row(std::string data_set, RowStatus status) {
  ParityRow parity_row;
  parity_row.data_set = std::move(data_set);
  parity_row.provider = "cpu";
  parity_row.output = "y";
  parity_row.status = status;
  return parity_row;
}

// A result on the CPU provider with these rows; a failing row brings its error finding.
ParityResult result(const std::vector<ParityRow>& rows) {
  ParityResult parity;
  parity.providers.push_back({"cpu", true, ""});
  parity.rows = rows;
  for (const auto& r : rows) {
    if (r.status != RowStatus::pass)
      parity.findings.push_back({FindingCode::parity_mismatch, Severity::error, "parity", "mismatch", r.data_set, ""});
  }
  return parity;
}

TEST(SimplifiedProof, APassingSimplifiedModelIsNeverBlamed) {
  const auto simplified = result({row("a", RowStatus::pass)});
  EXPECT_FALSE(simplified_fails_where_export_passes(simplified, result({row("a", RowStatus::fail)})));
}

TEST(SimplifiedProof, FailingWhereTheExportPassesBlamesTheSimplifier) {
  const auto simplified = result({row("a", RowStatus::fail), row("b", RowStatus::pass)});
  EXPECT_TRUE(
      simplified_fails_where_export_passes(simplified, result({row("a", RowStatus::pass), row("b", RowStatus::pass)})));
  // Both fail, but on a case the export passes: the simplifier broke that one.
  const auto both = result({row("a", RowStatus::fail), row("b", RowStatus::fail)});
  const auto blame =
      simplified_fails_where_export_passes(both, result({row("a", RowStatus::fail), row("b", RowStatus::pass)}));
  ASSERT_TRUE(blame);
  EXPECT_NE(blame->find("'y' of b"), std::string::npos) << *blame;
}

TEST(SimplifiedProof, FailingAlikeIsTheExportsOwnFailure) {
  const auto simplified = result({row("a", RowStatus::fail), row("b", RowStatus::pass)});
  EXPECT_FALSE(
      simplified_fails_where_export_passes(simplified, result({row("a", RowStatus::fail), row("b", RowStatus::pass)})));
}

}  // namespace
}  // namespace onnxproof::pipeline_run
