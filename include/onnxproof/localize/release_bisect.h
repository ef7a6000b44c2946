#pragma once
// Since when: the ONNX Runtime release at which a model's proof turns from pass to fail (or back),
// found by bisecting the releases between one that passes and one that fails, and on that release
// the optimizer whose disabling makes it pass (`onnxproof bisect-release RUN`, docs/cli.md).
// This file holds the search and its result; the workflow (workflow/bisect_workflow.cpp) proves
// each release in a child of the engine started with the release's library.

#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "onnxproof/core/finding.h"

namespace onnxproof {

/// One release's place in the bisection: its outcome as proved (or recorded by the run).
struct BisectedRelease {
  std::string version;    // "1.22.1"
  std::string outcome;    // "pass", "fail", "refused", "error"; "" when not proved
  std::string reason;     // why refused or error
  std::string evidence;   // the folder holding its proof, relative to the run ("bisect/1.22.1")
  bool recorded = false;  // the run proved it already (its runtimes/ step), not the bisection
  std::size_t rows = 0;   // its parity rows, and how many passed
  std::size_t rows_passed = 0;
};

/// Proves the release `version` and returns it with its outcome ("pass", "fail", ...).
using ProveRelease = std::function<BisectedRelease(const std::string& version)>;

/// The bisection between the releases at `good` (passes) and `bad` (fails) of `releases` (oldest
/// first; their outcomes set): each step proves the middle one of the releases still between the
/// nearest pass and the nearest fail; a release that refuses the model or cannot be run says
/// nothing about the change and leaves the range, and the next middle is tried. Ends with the
/// pass and the fail next to each other among the releases that could be judged.
struct ReleaseBisection {
  std::vector<BisectedRelease> releases;  // oldest first, every release of the range
  std::size_t last_good = 0;              // index: the passing end of the boundary
  std::size_t first_bad = 0;              // index: the failing end (older than last_good for a fix)
  std::vector<std::size_t> proved;        // the indices proved by the bisection, in order
  bool regression() const { return first_bad > last_good; }
};
ReleaseBisection bisect_releases(std::vector<BisectedRelease> releases, std::size_t good, std::size_t bad,
                                 const ProveRelease& prove);

/// On the first failing release: what its optimized and unoptimized rows say, and the optimizer
/// search when the unoptimized ones pass.
struct ReleaseOptimizer {
  bool fails_unoptimized = false;  // the rows fail with graph optimizations disabled too
  /// Each of these, disabled alone, makes it pass (empty: none named), in ONNX Runtime's order:
  /// the last runs latest, so disabling it keeps the rewrites before it (the one advised).
  std::vector<std::string> optimizers;
  bool together = false;  // `optimizers` make it pass only disabled together (the halving could not split them)
  /// The lines of the session-config beside the first failing release that the last passing
  /// one's lacks (an application's option set from that release on), and the reverse.
  std::vector<std::string> config_added;
  std::vector<std::string> config_removed;
  int sessions = 0;      // parity proofs the search ran
  std::string evidence;  // the passing proof with them disabled, relative to the run
  std::string error;     // the search could not run: why
};

/// What `onnxproof bisect-release RUN` found.
struct ReleaseBisectResult {
  ReleaseBisection bisection;
  ReleaseOptimizer optimizer;
  /// The first failing release's failing rows (case, output, level, max_abs, error_ratio) and,
  /// with `status_without`, each row's status with the optimizers named disabled.
  nlohmann::json evidence_rows = nlohmann::json::array();
  std::vector<Finding> findings;
  std::string what_to_do;  // the run's "What to do", as the bisection has it now
  double seconds = 0;
};

/// The optimizers the session option disables: the last of those that each alone make it pass,
/// or all of them when only disabling them together does.
std::vector<std::string> advised_optimizers(const ReleaseOptimizer& optimizer);

/// The finding that names the change (RUNTIME_RELEASE_REGRESSION) and the words of "What to do".
Finding release_regression_finding(const ReleaseBisectResult& result);
std::string release_what_to_do(const ReleaseBisectResult& result);

/// bisect/bisect.json: the releases with their outcomes, the boundary, the optimizer, the figures.
nlohmann::json release_bisect_to_json(const ReleaseBisectResult& result);

}  // namespace onnxproof
