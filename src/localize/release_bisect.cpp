// Since when: bisecting ONNX Runtime releases between a passing and a failing one
// (localize/release_bisect.h), and the words the run's reports say it in.
#include "onnxproof/localize/release_bisect.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

namespace onnxproof {

namespace {

// The releases strictly between `a` and `b` (either order) that can still be judged, from `a` on.
std::vector<std::size_t> judgeable_between(const std::vector<BisectedRelease>& releases, std::size_t a, std::size_t b) {
  std::vector<std::size_t> between;
  const std::size_t low = std::min(a, b), high = std::max(a, b);
  for (std::size_t i = low + 1; i < high; ++i) {
    const std::string& outcome = releases[i].outcome;
    if (outcome.empty() || outcome == "pass" || outcome == "fail") between.push_back(i);
  }
  if (a > b) std::reverse(between.begin(), between.end());
  return between;
}

// The session option that disables the optimizers advised.
std::string option_of(const ReleaseOptimizer& optimizer) {
  const auto advised = advised_optimizers(optimizer);
  return advised.empty() ? "" : fmt::format("optimization.disable_specified_optimizers={}", fmt::join(advised, ";"));
}

}  // namespace

std::vector<std::string> advised_optimizers(const ReleaseOptimizer& optimizer) {
  if (optimizer.optimizers.empty() || optimizer.together) return optimizer.optimizers;
  return {optimizer.optimizers.back()};
}

ReleaseBisection bisect_releases(std::vector<BisectedRelease> releases, std::size_t good, std::size_t bad,
                                 const ProveRelease& prove) {
  ReleaseBisection bisection{.releases = std::move(releases), .last_good = good, .first_bad = bad, .proved = {}};
  for (;;) {
    const auto between = judgeable_between(bisection.releases, bisection.last_good, bisection.first_bad);
    if (between.empty()) break;
    const std::size_t middle = between[between.size() / 2];
    auto& release = bisection.releases[middle];
    if (release.outcome.empty()) {
      release = prove(release.version);
      if (release.outcome.empty()) release.outcome = "error";  // never proved again
      bisection.proved.push_back(middle);
    }
    if (release.outcome == "pass") bisection.last_good = middle;
    if (release.outcome == "fail") bisection.first_bad = middle;
    // refused or error: judgeable_between leaves it out from now on.
  }
  return bisection;
}

Finding release_regression_finding(const ReleaseBisectResult& result) {
  const auto& b = result.bisection;
  const std::string& good = b.releases[b.last_good].version;
  const std::string& bad = b.releases[b.first_bad].version;
  const std::size_t between = b.regression() ? b.first_bad - b.last_good - 1 : b.last_good - b.first_bad - 1;
  std::string message = b.regression()
                            ? fmt::format("the model passes on ONNX Runtime {} and fails from {} on", good, bad)
                            : fmt::format("the model fails on ONNX Runtime {} and passes from {} on", bad, good);
  message += fmt::format(" (bisected: {} release{} proved; {} fetched in between", b.proved.size(),
                         b.proved.size() == 1 ? "" : "s", b.releases.size() - 2);
  if (between > 0) message += fmt::format("; {} between them could not be judged", between);
  message += ")";
  const auto& optimizer = result.optimizer;
  if (optimizer.together) {
    message +=
        fmt::format("; on {} disabling {} together makes it pass", bad, fmt::join(optimizer.optimizers, " and "));
  } else if (!optimizer.optimizers.empty()) {
    message += fmt::format("; on {} disabling {} makes it pass", bad, optimizer.optimizers.back());
    if (optimizer.optimizers.size() > 1)
      message += fmt::format(" (so does disabling {}, which runs before it)",
                             fmt::join(optimizer.optimizers.begin(), optimizer.optimizers.end() - 1, " or "));
  } else if (optimizer.fails_unoptimized) {
    message += fmt::format("; on {} it fails with graph optimizations disabled too: a kernel, not an optimizer", bad);
  }
  if (!optimizer.config_added.empty())
    message += fmt::format("; the session-config beside {} sets {}, which {}'s does not", bad,
                           fmt::join(optimizer.config_added, ", "), good);
  return Finding{FindingCode::runtime_release_regression,
                 Severity::error,
                 "runtimes",
                 std::move(message),
                 "ONNX Runtime " + bad,
                 release_what_to_do(result)};
}

std::string release_what_to_do(const ReleaseBisectResult& result) {
  const auto& b = result.bisection;
  const std::string& good = b.releases[b.last_good].version;
  const std::string& bad = b.releases[b.first_bad].version;
  if (!b.regression()) return fmt::format("deploy ONNX Runtime {} or later, where the model passes", good);
  std::string said = fmt::format("deploy ONNX Runtime {} (the last release that passes)", good);
  if (!result.optimizer.optimizers.empty())
    said += fmt::format(", or on {} and later set the session option {}", bad, option_of(result.optimizer));
  return said;
}

nlohmann::json release_bisect_to_json(const ReleaseBisectResult& result) {
  const auto& b = result.bisection;
  nlohmann::json releases = nlohmann::json::array();
  for (const auto& r : b.releases)
    releases.push_back({{"version", r.version},
                        {"outcome", r.outcome.empty() ? "not_proved" : r.outcome},
                        {"reason", r.reason},
                        {"evidence", r.evidence},
                        {"recorded", r.recorded},
                        {"rows", r.rows},
                        {"rows_passed", r.rows_passed}});
  nlohmann::json proved = nlohmann::json::array();
  for (const auto index : b.proved) proved.push_back(b.releases[index].version);
  const auto& o = result.optimizer;
  return {{"releases", releases},
          {"proved", proved},
          {"direction", b.regression() ? "regression" : "fix"},
          {"last_good", b.releases[b.last_good].version},
          {"first_bad", b.releases[b.first_bad].version},
          {"optimizer",
           {{"optimizers", o.optimizers},
            {"together", o.together},
            {"session_option", option_of(o)},
            {"session_config_added", o.config_added},
            {"session_config_removed", o.config_removed},
            {"fails_unoptimized", o.fails_unoptimized},
            {"proofs", o.sessions},
            {"evidence", o.evidence},
            {"error", o.error}}},
          {"evidence_rows", result.evidence_rows},
          {"what_to_do", result.what_to_do},
          {"seconds", result.seconds}};
}

}  // namespace onnxproof
