// The bisection of ONNX Runtime releases (localize/release_bisect.h) on made-up outcomes: which
// releases it proves, and where it ends, when some refuse the model, when the run proved some
// already, and when a later release fixes what an earlier one broke.
#include "onnxproof/localize/release_bisect.h"

#include <gtest/gtest.h>

#include <cmath>
#include <map>

namespace onnxproof {
namespace {

// Releases 1.10.0 ... 1.(10+count-1).0, the ends' outcomes set.
std::vector<BisectedRelease> releases(std::size_t count, std::size_t good, std::size_t bad) {
  std::vector<BisectedRelease> list;
  for (std::size_t i = 0; i < count; ++i) list.push_back({.version = "1." + std::to_string(10 + i) + ".0"});
  list[good].outcome = "pass";
  list[bad].outcome = "fail";
  return list;
}

// A prover that answers from `truth` by version and counts what it was asked.
struct Oracle {
  std::map<std::string, std::string> truth;
  std::vector<std::string> asked;
  ProveRelease prover() {
    return [this](const std::string& version) {
      asked.push_back(version);
      return BisectedRelease{.version = version, .outcome = truth.at(version)};
    };
  }
};

Oracle regression_at(const std::vector<BisectedRelease>& list, std::size_t first_bad) {
  Oracle oracle;
  for (std::size_t i = 0; i < list.size(); ++i) oracle.truth[list[i].version] = i < first_bad ? "pass" : "fail";
  return oracle;
}

TEST(ReleaseBisect, FindsEveryBoundaryInLogarithmicallyManyProofs) {
  for (std::size_t first_bad = 1; first_bad < 17; ++first_bad) {
    auto list = releases(17, 0, 16);
    auto oracle = regression_at(list, first_bad);
    const auto found = bisect_releases(list, 0, 16, oracle.prover());
    EXPECT_EQ(found.first_bad, first_bad);
    EXPECT_EQ(found.last_good, first_bad - 1);
    EXPECT_TRUE(found.regression());
    EXPECT_LE(oracle.asked.size(), 4u) << "15 releases between need at most 4 proofs";
    EXPECT_EQ(found.proved.size(), oracle.asked.size());
  }
}

TEST(ReleaseBisect, ReleasesThatRefuseTheModelLeaveTheRangeAndTheNextMiddleIsTried) {
  auto list = releases(9, 0, 8);
  auto oracle = regression_at(list, 6);
  oracle.truth["1.14.0"] = "refused";  // the first middle
  oracle.truth["1.16.0"] = "error";
  const auto found = bisect_releases(list, 0, 8, oracle.prover());
  EXPECT_EQ(found.releases[found.first_bad].version, "1.17.0");  // 1.16.0 could not be judged
  EXPECT_EQ(found.releases[found.last_good].version, "1.15.0");
  EXPECT_EQ(found.releases[4].outcome, "refused");
}

TEST(ReleaseBisect, OutcomesTheRunRecordedAreUsedNotProvedAgain) {
  auto list = releases(9, 0, 8);
  list[4].outcome = "pass";
  list[4].recorded = true;
  auto oracle = regression_at(list, 7);
  const auto found = bisect_releases(list, 0, 8, oracle.prover());
  EXPECT_EQ(found.first_bad, 7u);
  for (const auto& version : oracle.asked) EXPECT_NE(version, "1.14.0");
}

TEST(ReleaseBisect, AFixIsFoundFromTheFailingOlderReleaseOn) {
  auto list = releases(8, 7, 0);  // fails on the oldest, passes on the newest
  Oracle oracle;
  for (std::size_t i = 0; i < list.size(); ++i) oracle.truth[list[i].version] = i < 3 ? "fail" : "pass";
  const auto found = bisect_releases(list, 7, 0, oracle.prover());
  EXPECT_FALSE(found.regression());
  EXPECT_EQ(found.last_good, 3u);
  EXPECT_EQ(found.first_bad, 2u);
  ReleaseBisectResult result{.bisection = found};
  EXPECT_EQ(release_what_to_do(result), "deploy ONNX Runtime 1.13.0 or later, where the model passes");
}

TEST(ReleaseBisect, TheFindingAdvisesTheLastOptimizerAndQuotesTheDeploymentsOption) {
  auto list = releases(5, 0, 4);
  auto oracle = regression_at(list, 2);
  ReleaseBisectResult result{.bisection = bisect_releases(list, 0, 4, oracle.prover())};
  result.optimizer.optimizers = {"GeluFusion", "GeluApproximation"};
  result.optimizer.config_added = {"optimization.enable_gelu_approximation=1"};
  const Finding finding = release_regression_finding(result);
  EXPECT_EQ(finding.code, FindingCode::runtime_release_regression);
  EXPECT_EQ(finding.where, "ONNX Runtime 1.12.0");
  EXPECT_NE(finding.message.find("passes on ONNX Runtime 1.11.0 and fails from 1.12.0 on"), std::string::npos);
  EXPECT_NE(finding.message.find("disabling GeluApproximation makes it pass (so does disabling GeluFusion"),
            std::string::npos);
  EXPECT_NE(finding.message.find("sets optimization.enable_gelu_approximation=1, which 1.11.0's does not"),
            std::string::npos);
  EXPECT_NE(release_what_to_do(result).find("optimization.disable_specified_optimizers=GeluApproximation"),
            std::string::npos);
  const auto json = release_bisect_to_json(result);
  EXPECT_EQ(json["first_bad"], "1.12.0");
  EXPECT_EQ(json["releases"][4]["outcome"], "fail");
  EXPECT_EQ(json["releases"][3]["outcome"], "not_proved");
}

TEST(ReleaseBisect, OptimizersOnlyDisabledTogetherAreAdvisedTogether) {
  auto list = releases(3, 0, 2);
  ReleaseBisectResult result{.bisection = bisect_releases(list, 0, 2, regression_at(list, 2).prover())};
  result.optimizer.optimizers = {"ConvAddFusion", "ConvActivationFusion"};
  result.optimizer.together = true;
  EXPECT_NE(release_regression_finding(result).message.find(
                "disabling ConvAddFusion and ConvActivationFusion together makes it pass"),
            std::string::npos);
  EXPECT_NE(release_what_to_do(result).find("disable_specified_optimizers=ConvAddFusion;ConvActivationFusion"),
            std::string::npos);
}

TEST(ReleaseBisect, AProofThatSaysNothingEndsAsAnErrorNotALoop) {
  auto list = releases(5, 0, 4);
  int asked = 0;
  const auto found = bisect_releases(list, 0, 4, [&](const std::string& version) {
    ++asked;
    return BisectedRelease{.version = version};  // no outcome
  });
  EXPECT_EQ(asked, 3);
  EXPECT_EQ(found.last_good, 0U);
  EXPECT_EQ(found.first_bad, 4U);
  EXPECT_EQ(found.releases[2].outcome, "error");
}

}  // namespace
}  // namespace onnxproof
