// `onnxproof bisect-release RUN` (docs/cli.md): since when a run's model fails on ONNX Runtime.
// The run's model and reference proved on the cached releases between one that passes and one
// that fails, each in a child of this binary with the release's library (pipeline/runtime_versions.h),
// by bisection (localize/release_bisect.h); on the first failing release the optimizer search
// runs as parity children with optimizers disabled. Written to RUN/bisect/ in a staged copy of
// the run that replaces it, as localize and repair do.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <chrono>
#include <map>

#include "command_record.h"
#include "export/child_process.h"  // the fetch script runs as the front end does
#include "onnxproof/core/atomic_file.h"
#include "onnxproof/core/folder_lock.h"
#include "onnxproof/core/installation.h"
#include "onnxproof/core/json_file.h"
#include "onnxproof/core/ownership.h"
#include "onnxproof/core/run_folder.h"
#include "onnxproof/core/staging.h"
#include "onnxproof/model/model_io.h"
#include "onnxproof/ops/release_forecast.h"
#include "onnxproof/pipeline/runtime_versions.h"
#include "onnxproof/report/bisect_report.h"
#include "onnxproof/report/published_report.h"
#include "onnxproof/runtime/session.h"
#include "onnxproof/workflow/workflows.h"

namespace onnxproof {
namespace fs = std::filesystem;

namespace {

using Outcomes = std::map<std::string, BisectedRelease>;  // version -> as the run recorded it

bool older(const std::string& a, const std::string& b) {
  return *release_version_numbers(a) < *release_version_numbers(b);
}

// The ONNX Runtime releases the run's runtimes step proved, by version.
Outcomes recorded_outcomes(const PublishedReport& report) {
  Outcomes outcomes;
  for (const auto& step : report.steps) {
    if (step.name != "runtimes" || !step.extra.contains("releases") || !step.extra["releases"].is_array()) continue;
    for (const auto& entry : step.extra["releases"]) {
      if (!entry.value("target", std::string()).starts_with("ort-cpu@")) continue;
      const std::string version = entry.value("version", std::string());
      if (!release_version_numbers(version)) continue;
      outcomes[version] = {.version = version,
                           .outcome = entry.value("outcome", std::string()),
                           .reason = entry.value("reason", std::string()),
                           .evidence = "runtimes/" + version,
                           .recorded = true,
                           .rows = entry.value("rows", std::size_t{0}),
                           .rows_passed = entry.value("rows_passed", std::size_t{0})};
    }
  }
  return outcomes;
}

// The pair to bisect between: the releases given (X.Y: the newest patch fetched), else two of the
// run's releases next to each other by version whose proofs passed and failed, a regression first.
Expected<std::pair<std::string, std::string>> ends_of(const BisectReleaseCommand& command, const Outcomes& recorded) {
  if (!command.good.empty() || !command.bad.empty()) {
    if (command.good.empty() || command.bad.empty())
      return fail(ErrorCode::usage, "--good and --bad go together (or neither: the run's --target releases)");
    ONNXPROOF_TRY_ASSIGN(const auto good, find_runtime_release("ort-cpu@" + command.good));
    ONNXPROOF_TRY_ASSIGN(const auto bad, find_runtime_release("ort-cpu@" + command.bad));
    if (good.version == bad.version)
      return fail(ErrorCode::usage, "--good and --bad name the same release " + good.version);
    return std::pair{good.version, bad.version};
  }
  std::vector<std::string> judged;
  for (const auto& [version, release] : recorded)
    if (release.outcome == "pass" || release.outcome == "fail") judged.push_back(version);
  std::sort(judged.begin(), judged.end(), older);
  std::optional<std::pair<std::string, std::string>> fix;
  for (std::size_t i = 0; i + 1 < judged.size(); ++i) {
    const auto& a = recorded.at(judged[i]);
    const auto& b = recorded.at(judged[i + 1]);
    if (a.outcome == "pass" && b.outcome == "fail") return std::pair{a.version, b.version};
    if (a.outcome == "fail" && b.outcome == "pass" && !fix) fix = std::pair{b.version, a.version};
  }
  if (fix) return *fix;
  return fail(ErrorCode::usage,
              "the run proved no ONNX Runtime release that passes beside one that fails (--target "
              "ort-cpu@A,ort-cpu@B): name them with --good and --bad");
}

// The minor releases of data/onnxruntime-releases.csv strictly between `a` and `b` that no
// fetched release shares X.Y with.
std::vector<std::string> missing_between(const std::string& a, const std::string& b) {
  const auto fetched = fetched_onnxruntime_releases();
  const auto minor = [](const std::string& v) { return v.substr(0, v.rfind('.')); };
  std::vector<std::string> missing;
  for (const auto& listed : forecast_releases(0, 0)) {  // the table's releases, oldest first
    const std::string& version = listed.version;
    if (!release_version_numbers(version)) continue;
    if (!(older(std::min(a, b, older), version) && older(version, std::max(a, b, older)))) continue;
    const bool have =
        std::any_of(fetched.begin(), fetched.end(), [&](const auto& f) { return minor(f) == minor(version); });
    if (!have) missing.push_back(minor(version));
  }
  return missing;
}

// --fetch: scripts/fetch-onnxruntime-versions.sh of the source tree fetches them into the cache.
Expected<void> fetch_releases(const std::vector<std::string>& versions, std::ostream& progress) {
  const fs::path script = installation().data_dir.parent_path() / "scripts" / "fetch-onnxruntime-versions.sh";
  if (!fs::is_regular_file(script))
    return fail(ErrorCode::usage, fmt::format("--fetch needs {} (onnxproof's source tree); fetch the releases with "
                                              "it: fetch-onnxruntime-versions.sh {}",
                                              script.string(), fmt::join(versions, " ")));
  progress << fmt::format("onnxproof bisect-release: fetching ONNX Runtime {}\n", fmt::join(versions, ", "))
           << std::flush;
  ONNXPROOF_TRY_ASSIGN(const int code,
                       run_front_end(
                           "/bin/bash", "",
                           [&] {
                             std::vector<std::string> args{script.string()};
                             args.insert(args.end(), versions.begin(), versions.end());
                             return args;
                           }(),
                           k_both_streams, [&](const std::string& line) { progress << line << '\n'; }, 3600));
  if (code != 0)
    return fail(ErrorCode::runtime, fmt::format("{} ended with exit code {}", script.filename().string(), code));
  return {};
}

// A row's number, or null where the document has none (an error ratio without PyTorch noise, an
// infinite difference): never an exception after the proofs ran.
nlohmann::json number_in(const nlohmann::json& row, const char* key) {
  const auto found = row.find(key);
  return found != row.end() && found->is_number() ? *found : nlohmann::json(nullptr);
}

// A parity document's rows (none when it cannot be read).
nlohmann::json rows_in(const fs::path& parity_json) {
  auto document = read_json_object(parity_json, ErrorCode::runtime);
  if (!document || !document->contains("parity") || !(*document)["parity"].is_array()) return nlohmann::json::array();
  return (*document)["parity"];
}

// What one release's parity document says: its rows and how many passed.
void count_rows(const fs::path& parity_json, BisectedRelease& release) {
  for (const auto& row : rows_in(parity_json)) {
    ++release.rows;
    release.rows_passed += row.value("status", "") == "pass";
  }
}

struct BisectContext {
  fs::path run;    // the staged copy
  fs::path model;  // the run's proved model in it
  int opset = 0;
  int ir_version = 0;
  ReleaseProofOptions options;
  std::ostream& progress;
  /// The releases found so far, by version: each is asked for its limits once (a child of the
  /// engine with its library), not again by the optimizer search or the session-config comparison.
  mutable std::map<std::string, RuntimeRelease> found{};
};

Expected<RuntimeRelease> release_of(const BisectContext& context, const std::string& version) {
  if (const auto known = context.found.find(version); known != context.found.end()) return known->second;
  ONNXPROOF_TRY_ASSIGN(auto release, find_runtime_release("ort-cpu@" + version));
  return context.found.emplace(version, std::move(release)).first->second;
}

BisectedRelease prove_release(const BisectContext& context, const std::string& version) {
  BisectedRelease proved{.version = version, .evidence = "bisect/" + version};
  auto release = release_of(context, version);
  if (!release) {
    proved.outcome = "error";
    proved.reason = release.error().message();
    return proved;
  }
  context.progress << fmt::format("onnxproof bisect-release: proving on ONNX Runtime {}\n", version) << std::flush;
  const auto proof =
      prove_on_release(*release, context.model, context.opset, context.ir_version, context.run / "reference",
                       context.run / "bisect" / version, context.options, context.progress);
  proved.outcome = proof.outcome;
  proved.reason = proof.reason;
  count_rows(context.run / "bisect" / version / "parity.json", proved);
  return proved;
}

// On the first failing release: the failing rows, and the optimizer whose disabling makes them pass.
void search_optimizer(const BisectContext& context, ReleaseBisectResult& result) {
  const auto& bad = result.bisection.releases[result.bisection.first_bad];
  const nlohmann::json rows = rows_in(context.run / bad.evidence / "parity.json");
  bool unoptimized_fail = false, unoptimized_seen = false;
  for (const auto& row : rows) {
    const bool failed = row.value("status", "") != "pass";
    if (row.value("optimization", "") == "disabled") {
      unoptimized_seen = true;
      unoptimized_fail = unoptimized_fail || failed;
    } else if (failed) {
      result.evidence_rows.push_back({{"case", row.value("case", "")},
                                      {"output", row.value("output", "")},
                                      {"max_abs", number_in(row, "max_abs")},
                                      {"error_ratio", number_in(row, "error_ratio")},
                                      {"status", row.value("status", "")}});
    }
  }
  auto& optimizer = result.optimizer;
  if (unoptimized_seen && unoptimized_fail) {
    optimizer.fails_unoptimized = true;
    return;
  }
  auto release = release_of(context, bad.version);
  if (!release) {
    optimizer.error = release.error().message();
    return;
  }
  const fs::path folder = context.run / "bisect" / bad.version / "optimizers";
  std::error_code ec;
  fs::create_directories(folder, ec);
  context.progress << fmt::format("onnxproof bisect-release: on {}, looking for the optimizer\n", bad.version)
                   << std::flush;
  // Every optimizer that, disabled alone, makes it pass: each search keeps those found on.
  int proof = 0;
  const auto matches = [&](const std::vector<std::string>& disabled) {
    return release_matches_without(*release, context.model, context.run / "reference", disabled,
                                   folder / fmt::format("{:02}.json", ++proof), context.options);
  };
  for (std::vector<std::string> found; found.size() < 3;) {
    auto search = find_optimizer_by(matches, found);
    if (!search) {
      optimizer.error = search.error().message();
      return;
    }
    optimizer.sessions += search->sessions;
    if (search->unnamed || search->optimizers.size() != 1) {
      // Optimizers that only make it pass disabled together (the halving could not split them).
      if (found.empty() && !search->unnamed) {
        optimizer.optimizers = search->optimizers;
        optimizer.together = true;
      }
      break;
    }
    found.push_back(search->optimizers.front());
    optimizer.optimizers = in_onnxruntime_order(found);
  }
  if (optimizer.optimizers.empty()) return;
  // The evidence: the failing rows proved again with the advised ones disabled, in a file of its own.
  const auto advised = advised_optimizers(optimizer);
  const std::string evidence = fmt::format("without-{}.json", fmt::join(advised, "-"));
  auto written = release_matches_without(*release, context.model, context.run / "reference", advised, folder / evidence,
                                         context.options);
  if (!written) return;
  optimizer.evidence = "bisect/" + bad.version + "/optimizers/" + evidence;
  std::map<std::pair<std::string, std::string>, std::string> without;
  for (const auto& row : rows_in(folder / evidence))
    without[{row.value("case", ""), row.value("output", "")}] = row.value("status", "");
  for (auto& row : result.evidence_rows) row["status_without"] = without[{row["case"], row["output"]}];
}

// The KEY=VALUE lines of the session-config beside a release's library (runtime/session.h),
// none when it has none or it cannot be read (the release's own proof says why).
std::vector<std::string> session_config_of(const BisectContext& context, const std::string& version) {
  std::vector<std::string> lines;
  auto release = release_of(context, version);
  if (!release) return lines;
  auto entries = read_session_config(release->library_folder);
  if (!entries) return lines;
  for (const auto& [key, value] : *entries) lines.push_back(key + "=" + value);
  return lines;
}

// What the application's session options changed between the last passing and the first failing release.
void compare_session_configs(const BisectContext& context, ReleaseBisectResult& result) {
  const auto& b = result.bisection;
  const auto good = session_config_of(context, b.releases[b.last_good].version);
  const auto bad = session_config_of(context, b.releases[b.first_bad].version);
  for (const auto& line : bad)
    if (std::find(good.begin(), good.end(), line) == good.end()) result.optimizer.config_added.push_back(line);
  for (const auto& line : good)
    if (std::find(bad.begin(), bad.end(), line) == bad.end()) result.optimizer.config_removed.push_back(line);
}

// The releases of the range, oldest first: the ends and every fetched one in between, with the
// outcomes the run recorded.
std::vector<BisectedRelease> range_of(const std::string& good, const std::string& bad, const Outcomes& recorded) {
  std::vector<BisectedRelease> releases;
  const std::string& low = older(good, bad) ? good : bad;
  const std::string& high = older(good, bad) ? bad : good;
  for (const auto& version : fetched_onnxruntime_releases()) {
    if (older(version, low) || older(high, version)) continue;
    const auto known = recorded.find(version);
    releases.push_back(known != recorded.end() ? known->second : BisectedRelease{.version = version});
  }
  return releases;
}

// Where `version` is in the range; a usage error when the cache no longer holds it (the run
// proved it on a machine whose cache differs, or it was removed since).
Expected<std::size_t> index_in(const std::vector<BisectedRelease>& releases, const std::string& version) {
  const auto found =
      std::find_if(releases.begin(), releases.end(), [&](const auto& r) { return r.version == version; });
  if (found == releases.end())
    return fail(ErrorCode::usage, fmt::format("ONNX Runtime {} is not fetched into {}; fetch it once with "
                                              "scripts/fetch-onnxruntime-versions.sh {}",
                                              version, runtime_release_cache().string(), version));
  return static_cast<std::size_t>(found - releases.begin());
}

// The ends proved first where the run did not prove them; each must be what it is said to be.
Expected<void> check_ends(const BisectContext& context, ReleaseBisection& range, std::size_t good, std::size_t bad) {
  for (const auto [index, wanted] : {std::pair{good, "pass"}, std::pair{bad, "fail"}}) {
    auto& release = range.releases[index];
    if (release.outcome.empty()) {
      release = prove_release(context, release.version);
      range.proved.push_back(index);
    }
    if (release.outcome != wanted)
      return fail(ErrorCode::usage,
                  fmt::format("--{} {}: the model {} on ONNX Runtime {}{} (bisect-release needs one release that "
                              "passes and one that fails)",
                              index == good ? "good" : "bad", release.version,
                              release.outcome == "pass"   ? "passes"
                              : release.outcome == "fail" ? "fails"
                                                          : "is " + release.outcome,
                              release.version, release.reason.empty() ? "" : ": " + release.reason));
  }
  return {};
}

// The run's "What to do", said again with what the bisection found (the words before it kept in
// bisect.json as what_to_do_before).
constexpr std::string_view k_said_by_bisect = " (onnxproof bisect-release: ";
Expected<void> say_in_reports(const fs::path& staged, const ReleaseBisectResult& result, nlohmann::json& document) {
  ONNXPROOF_TRY_ASSIGN(auto report, read_published_report(staged, ErrorCode::invalid_input));
  if (!report.ship) return {};
  const std::string shown = report.ship->what_to_do;
  // An earlier bisection's words are replaced, not added to.
  const std::string before = shown.substr(0, shown.find(k_said_by_bisect));
  const std::string now = before + std::string(k_said_by_bisect) + result.what_to_do + "; bisect/bisect.md)";
  document["what_to_do_before"] = before;
  report.ship->what_to_do = now;
  ONNXPROOF_TRY(write_file_atomically(staged / "report.json", contract::write_report(report).dump(2) + "\n"));
  return replace_what_to_do_in_views(staged, shown, now);
}

Expected<void> require_a_run_to_bisect(const fs::path& run) {
  if (!fs::is_regular_file(run / "report.json"))
    return fail(ErrorCode::usage, run.string() + " is not a run folder of onnxproof pipeline (no report.json)");
  for (const char* own : {"report.json", "reference", "command.json"})
    ONNXPROOF_TRY(require_not_a_link(run / own, "a run folder"));
  if (fs::is_symlink(run / "bisect"))
    return fail(ErrorCode::usage, "refusing to write into " + (run / "bisect").string() +
                                      ": it is a symbolic link; onnxproof writes bisect/ only as a folder of the run");
  return require_replaceable_run_folder(
      run, "bisect-release replaces the run as a whole: move what onnxproof did not write out of it first");
}

}  // namespace

Expected<Outcome<BisectedRun>> bisect_release_workflow(const BisectReleaseCommand& command, std::ostream& progress) {
  const auto started = std::chrono::steady_clock::now();
  ONNXPROOF_TRY(require_a_run_to_bisect(command.run));
  ONNXPROOF_TRY_ASSIGN(const auto report, read_published_report(command.run, ErrorCode::usage));
  const Outcomes recorded = recorded_outcomes(report);
  ONNXPROOF_TRY_ASSIGN(const auto ends, ends_of(command, recorded));
  const auto& [good, bad] = ends;
  if (const auto missing = missing_between(good, bad); !missing.empty()) {
    if (command.fetch) {
      ONNXPROOF_TRY(fetch_releases(missing, progress));
    } else {
      progress << fmt::format(
          "onnxproof bisect-release: ONNX Runtime {} between {} and {} not fetched (--fetch "
          "fetches them)\n",
          fmt::join(missing, ", "), good, bad);
    }
  }
  ReleaseProofOptions options;
  if (fs::exists(command.run / "command.json")) {
    ONNXPROOF_TRY_ASSIGN(const auto recorded_command, read_command_record(command.run));
    options.parity_arguments = release_parity_arguments(recorded_command.proof);
  }
  ONNXPROOF_TRY_ASSIGN(const FolderLock lock, FolderLock::take(command.run, "onnxproof bisect-release"));
  ONNXPROOF_TRY_ASSIGN(auto staging, StagingFolder::create(command.run));
  const FolderIdentity copied = identity_of(command.run);
  ONNXPROOF_TRY(link_folder_contents(command.run, staging.path(), {"bisect"}));
  const fs::path model =
      staging.path() / fs::path(report.onnx_model.empty() ? "model.onnx" : report.onnx_model).filename();
  ONNXPROOF_TRY_ASSIGN(const auto loaded, load_model(model));
  const BisectContext context{.run = staging.path(),
                              .model = model,
                              .opset = static_cast<int>(default_domain_opset(loaded.proto)),
                              .ir_version = static_cast<int>(loaded.proto.ir_version()),
                              .options = options,
                              .progress = progress};
  ReleaseBisectResult result;
  result.bisection.releases = range_of(good, bad, recorded);
  ONNXPROOF_TRY_ASSIGN(const auto good_index, index_in(result.bisection.releases, good));
  ONNXPROOF_TRY_ASSIGN(const auto bad_index, index_in(result.bisection.releases, bad));
  ONNXPROOF_TRY(check_ends(context, result.bisection, good_index, bad_index));
  auto proved_ends = result.bisection.proved;
  result.bisection = bisect_releases(std::move(result.bisection.releases), good_index, bad_index,
                                     [&](const std::string& version) { return prove_release(context, version); });
  result.bisection.proved.insert(result.bisection.proved.begin(), proved_ends.begin(), proved_ends.end());
  search_optimizer(context, result);
  compare_session_configs(context, result);
  result.what_to_do = release_what_to_do(result);
  result.findings.push_back(release_regression_finding(result));
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  nlohmann::json document = release_bisect_to_json(result);
  ONNXPROOF_TRY(say_in_reports(staging.path(), result, document));
  ONNXPROOF_TRY(write_file_atomically(staging.path() / "bisect" / "bisect.json", document.dump(2) + "\n"));
  ONNXPROOF_TRY(write_file_atomically(staging.path() / "bisect" / "bisect.md", release_bisect_to_markdown(result)));
  ONNXPROOF_TRY(staging.publish_over(copied));
  Outcome<BisectedRun> outcome{.findings = result.findings};
  outcome.verdict = verdict_from(true, true);
  outcome.artifacts = {command.run / "bisect" / "bisect.md", command.run / "bisect" / "bisect.json"};
  outcome.result = {std::move(result), command.run / "bisect" / "bisect.md"};
  return outcome;
}

}  // namespace onnxproof
