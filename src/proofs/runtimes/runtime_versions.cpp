#include "onnxproof/pipeline/runtime_versions.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <regex>

#include "export/child_process.h"  // children of this binary are started as the front end is
#include "onnxproof/core/installation.h"
#include "onnxproof/core/json_file.h"

namespace onnxproof {
namespace fs = std::filesystem;

namespace {

constexpr std::string_view k_versioned_target = "ort-cpu";
constexpr std::string_view k_fetch_command = "scripts/fetch-onnxruntime-versions.sh";
constexpr std::string_view k_openvino_target = "openvino";
constexpr std::string_view k_openvino_fetch_command = "scripts/fetch-openvino.sh";

// OpenVINO releases live in the release cache's openvino/VERSION/lib (scripts/fetch-openvino.sh).
fs::path openvino_release_cache() { return runtime_release_cache() / "openvino"; }

bool holds_openvino(const fs::path& folder) {
  std::error_code ec;
  for (fs::directory_iterator it(folder, ec), end; !ec && it != end; it.increment(ec))
    if (it->path().filename().string().starts_with("libopenvino_c.so")) return true;
  return false;
}

// The cache folder of the release `wanted` names (X.Y.Z exactly, X.Y its newest patch); empty
// when none is fetched. OpenVINO's: the release's lib/ folder.
fs::path fetched_release(const std::string& wanted, bool openvino) {
  std::error_code ec;
  const fs::path cache = openvino ? openvino_release_cache() : runtime_release_cache();
  std::optional<std::vector<int>> best;
  fs::path found;
  for (const auto& entry : fs::directory_iterator(cache, ec)) {
    const std::string name = entry.path().filename().string();
    const auto numbers = release_version_numbers(name);
    const bool holds =
        openvino ? holds_openvino(entry.path() / "lib") : fs::is_regular_file(entry.path() / "libonnxruntime.so.1", ec);
    if (!numbers || !holds) continue;
    if (name != wanted && !name.starts_with(wanted + ".")) continue;
    if (!best || *numbers > *best) {
      best = numbers;
      found = entry.path();
    }
  }
  return found.empty() || !openvino ? found : found / "lib";
}

// This binary run with `arguments` and the release's library; its output lines and exit code.
struct ChildOutcome {
  int exit_code = 0;
  std::vector<std::string> lines;
};

Expected<ChildOutcome> run_on_release(const fs::path& library_folder, std::vector<std::string> arguments,
                                      double timeout_seconds, bool openvino = false) {
  std::error_code ec;
  const fs::path self = fs::read_symlink("/proc/self/exe", ec);
  if (ec) return fail(ErrorCode::runtime, "cannot find this program's own file: " + ec.message());
  ChildOutcome outcome;
  auto code = run_front_end(self.string(), "", std::move(arguments), k_both_streams,
                            [&](const std::string& line) {
                              if (outcome.lines.size() < 200) outcome.lines.push_back(line);
                            },
                            timeout_seconds,
                            {(openvino ? "ONNXPROOF_OPENVINO=" : "ONNXPROOF_ONNXRUNTIME=") + library_folder.string()});
  if (!code) return std::unexpected(code.error());
  outcome.exit_code = *code;
  return outcome;
}

// The child's one-line error (onnxproof: error: ...), else its last line.
std::string child_error(const ChildOutcome& outcome) {
  for (auto line = outcome.lines.rbegin(); line != outcome.lines.rend(); ++line) {
    if (line->starts_with(k_front_end_error_prefix)) return line->substr(k_front_end_error_prefix.size());
  }
  return outcome.lines.empty() ? fmt::format("exit code {}", outcome.exit_code) : outcome.lines.back();
}

// The children's findings, said of the release: its name leads `where`.
std::vector<Finding> findings_of(const nlohmann::json& document, const std::string& release, const fs::path& path) {
  std::vector<Finding> findings;
  if (!document.contains("findings") || !document["findings"].is_array()) return findings;
  for (const auto& json : document["findings"]) {
    auto finding = finding_from_json(json, path.string());
    if (!finding) continue;
    finding->where = finding->where.empty() ? release : release + ": " + finding->where;
    findings.push_back(std::move(*finding));
  }
  return findings;
}

std::string release_name(const RuntimeRelease& release) {
  return (release.openvino ? "OpenVINO " : "ONNX Runtime ") + release.version;
}

Finding refusal_finding(const RuntimeRelease& release, const std::string& reason) {
  return Finding{
      FindingCode::runtime_version_refuses,
      Severity::error,
      "runtimes",
      fmt::format("{} (--target {}) cannot load the model: {}", release_name(release), release.target, reason),
      release_name(release),
      release.openvino ? "export at an opset and with operators the release reads, or drop the release from --target"
                       : "export at an opset the release runs (give --target ort-cpu@" + release.version +
                             " to the export so the default opset fits it), or drop the release from --target"};
}

// X.Y as X.Y.0, the first patch PyPI has of it; X.Y.Z as it is.
std::string full_version(const std::string& wanted) {
  return std::count(wanted.begin(), wanted.end(), '.') == 1 ? wanted + ".0" : wanted;
}

// An OpenVINO release: found in the cache and started once (the driver's --version names it).
Expected<RuntimeRelease> find_openvino_release(const std::string& target, const std::string& wanted) {
  RuntimeRelease release{.target = target, .openvino = true, .library_folder = fetched_release(wanted, true)};
  if (release.library_folder.empty())
    return fail(ErrorCode::usage,
                fmt::format("--target {}: OpenVINO {} is not fetched into {}; fetch it once with {} {}/{} {}", target,
                            wanted, openvino_release_cache().string(), k_openvino_fetch_command,
                            openvino_release_cache().string(), full_version(wanted), full_version(wanted)));
  release.version = release.library_folder.parent_path().filename().string();
  auto outcome = run_on_release(release.library_folder, {"--version"}, 120, true);
  if (!outcome) return std::unexpected(outcome.error());
  const auto line = std::find_if(outcome->lines.begin(), outcome->lines.end(),
                                 [](const std::string& l) { return l.starts_with("openvino "); });
  if (line == outcome->lines.end() || line->find("not installed") != std::string::npos)
    return fail(ErrorCode::runtime, fmt::format("--target {}: OpenVINO {} in {} cannot start", target, release.version,
                                                release.library_folder.string()));
  return release;
}

}  // namespace

fs::path runtime_release_cache() { return installation().runtime_release_cache; }

std::optional<std::vector<int>> release_version_numbers(const std::string& text) {
  static const std::regex pattern(R"((\d{1,4})\.(\d{1,3})\.(\d{1,3}))");
  std::smatch match;
  if (!std::regex_match(text, match, pattern)) return std::nullopt;
  return std::vector<int>{std::stoi(match[1]), std::stoi(match[2]), std::stoi(match[3])};
}

std::vector<std::string> fetched_onnxruntime_releases() {
  std::vector<std::string> versions;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(runtime_release_cache(), ec)) {
    const std::string name = entry.path().filename().string();
    if (release_version_numbers(name) && fs::is_regular_file(entry.path() / "libonnxruntime.so.1", ec))
      versions.push_back(name);
  }
  std::sort(versions.begin(), versions.end(), [](const std::string& a, const std::string& b) {
    return *release_version_numbers(a) < *release_version_numbers(b);
  });
  return versions;
}

bool is_release_target(const std::string& target) { return target.find('@') != std::string::npos; }

Expected<RuntimeRelease> find_runtime_release(const std::string& target) {
  const auto at = target.find('@');
  const std::string name = target.substr(0, at);
  const std::string wanted = target.substr(at + 1);
  if (name != k_versioned_target && name != k_openvino_target)
    return fail(ErrorCode::usage, fmt::format("--target {}: only {} and {} take a release (ort-cpu@1.22, "
                                              "openvino@2025.4); the other targets are support tables",
                                              target, k_versioned_target, k_openvino_target));
  static const std::regex pattern(R"(\d{1,4}\.\d{1,3}(\.\d{1,3})?)");
  if (!std::regex_match(wanted, pattern))
    return fail(ErrorCode::usage, fmt::format("--target {}: '{}' is no {} version (X.Y or X.Y.Z)", target, wanted,
                                              name == k_openvino_target ? "OpenVINO" : "ONNX Runtime"));
  if (name == k_openvino_target) return find_openvino_release(target, wanted);
  RuntimeRelease release{.target = target, .library_folder = fetched_release(wanted, false)};
  if (release.library_folder.empty())
    return fail(ErrorCode::usage,
                fmt::format("--target {}: ONNX Runtime {} is not fetched into {}; fetch it once with {} {}", target,
                            wanted, runtime_release_cache().string(), k_fetch_command, wanted));
  release.version = release.library_folder.filename().string();
  auto outcome = run_on_release(release.library_folder, {"ops", "opset"}, 120);
  if (!outcome) return std::unexpected(outcome.error());
  nlohmann::json limits;
  if (outcome->exit_code == 0 && !outcome->lines.empty())
    limits = nlohmann::json::parse(outcome->lines.back(), nullptr, /*allow_exceptions=*/false);
  if (!limits.is_object() || !limits.contains("onnxruntime"))
    return fail(ErrorCode::runtime,
                fmt::format("--target {}: ONNX Runtime {} in {} cannot start: {}", target, release.version,
                            release.library_folder.string(), child_error(*outcome)));
  release.newest_opset = limits["onnxruntime"].value("newest_opset", 0);
  release.newest_ir_version = limits["onnxruntime"].value("newest_ir_version", 0);
  return release;
}

ReleaseProof prove_on_release(const RuntimeRelease& release, const fs::path& model, int model_opset,
                              int model_ir_version, const fs::path& reference, const fs::path& folder,
                              const ReleaseProofOptions& options, std::ostream& progress) {
  ReleaseProof proof{.release = release};
  const std::string name = release_name(release);
  const auto refuse = [&](std::string reason) {
    proof.outcome = "refused";
    proof.reason = std::move(reason);
    proof.findings.push_back(refusal_finding(release, proof.reason));
    return proof;
  };
  // What the release loads, known without running it: the loader checks these first.
  if (!release.openvino && model_ir_version > release.newest_ir_version)
    return refuse(fmt::format("IR version {} is above the {} it reads", model_ir_version, release.newest_ir_version));
  if (!release.openvino && model_opset > release.newest_opset)
    return refuse(fmt::format("opset {} is above the {} it runs", model_opset, release.newest_opset));

  std::error_code ec;
  fs::create_directories(folder, ec);
  const auto error = [&](std::string reason) {
    proof.outcome = "error";
    proof.reason = std::move(reason);
    return proof;
  };
  if (ec) return error("cannot create " + folder.string() + ": " + ec.message());

  progress << fmt::format("onnxproof pipeline: {}: auditing the operators on the release itself\n", name) << std::flush;
  const fs::path audit_path = folder / "ops.json";
  // ONNX Runtime's operators probed one by one; OpenVINO's frontend and plugin read the model.
  auto audit =
      release.openvino
          ? run_on_release(release.library_folder,
                           {"ops", model.string(), "--target", "openvino", "--json", audit_path.string()},
                           options.timeout_seconds, true)
          : run_on_release(release.library_folder, {"ops", model.string(), "--probe", "--json", audit_path.string()},
                           options.timeout_seconds);
  if (!audit) return error(audit.error().describe());
  auto audit_json = read_json_object(audit_path, ErrorCode::runtime);
  if (!audit_json) return error("its operator audit did not finish: " + child_error(*audit));
  auto audited = findings_of(*audit_json, name, audit_path);
  proof.findings.insert(proof.findings.end(), audited.begin(), audited.end());

  progress << fmt::format("onnxproof pipeline: {}: proving parity\n", name) << std::flush;
  const fs::path parity_path = folder / "parity.json";
  std::vector<std::string> arguments = {"parity",      model.string(),
                                        "--reference", reference.string(),
                                        "--provider",  release.openvino ? "openvino:f32" : "cpu",
                                        "--json",      parity_path.string()};
  arguments.insert(arguments.end(), options.parity_arguments.begin(), options.parity_arguments.end());
  auto parity = run_on_release(release.library_folder, std::move(arguments), options.timeout_seconds, release.openvino);
  if (!parity) return error(parity.error().describe());
  auto parity_json = read_json_object(parity_path, ErrorCode::runtime);
  if (!parity_json) return error("its parity proof did not finish: " + child_error(*parity));
  proof.parity = std::move(*parity_json);
  auto compared = findings_of(proof.parity, name, parity_path);
  // A session the release cannot make is the release refusing the model (an operator, a type).
  const auto run_failed = std::find_if(compared.begin(), compared.end(),
                                       [](const Finding& f) { return f.code == FindingCode::run_failed; });
  if (run_failed != compared.end()) return refuse(run_failed->message);
  proof.findings.insert(proof.findings.end(), compared.begin(), compared.end());
  proof.outcome = has_errors(proof.findings) ? "fail" : "pass";
  return proof;
}

Expected<bool> release_matches_without(const RuntimeRelease& release, const fs::path& model, const fs::path& reference,
                                       const std::vector<std::string>& disabled, const fs::path& json,
                                       const ReleaseProofOptions& options) {
  std::vector<std::string> arguments = {"parity",     model.string(), "--reference", reference.string(),
                                        "--provider", "cpu",          "--json",      json.string()};
  arguments.insert(arguments.end(), options.parity_arguments.begin(), options.parity_arguments.end());
  // Only the optimized level is asked about; the run's own arguments may say so already.
  if (std::find(arguments.begin(), arguments.end(), "--no-optimization-check") == arguments.end())
    arguments.emplace_back("--no-optimization-check");
  for (const auto& name : disabled) arguments.insert(arguments.end(), {"--disable-optimizer", name});
  ONNXPROOF_TRY_ASSIGN(const auto outcome,
                       run_on_release(release.library_folder, std::move(arguments), options.timeout_seconds));
  auto document = read_json_object(json, ErrorCode::runtime);
  if (!document || !document->contains("parity") || !(*document)["parity"].is_array())
    return fail(ErrorCode::runtime,
                fmt::format("{}: its parity proof did not finish: {}", release_name(release), child_error(outcome)));
  const auto& rows = (*document)["parity"];
  return !rows.empty() && std::all_of(rows.begin(), rows.end(),
                                      [](const nlohmann::json& row) { return row.value("status", "") == "pass"; });
}

void fit_opset_limit_to_releases(OpsetLimit& limit, const std::vector<RuntimeRelease>& releases) {
  for (const auto& release : releases) {
    if (release.openvino) continue;  // its frontend reads opsets as it reads the model
    limit.reason += fmt::format("; ONNX Runtime {} (--target {}) runs up to {}", release.version, release.target,
                                release.newest_opset);
    limit.opset = std::min(limit.opset, release.newest_opset);
  }
}

nlohmann::json release_proof_to_json(const ReleaseProof& proof) {
  nlohmann::json rows = nlohmann::json::array();
  if (proof.parity.contains("parity")) rows = proof.parity["parity"];
  std::size_t passed = 0;
  for (const auto& row : rows) passed += row.value("status", "") == "pass";
  return {{"target", proof.release.target},
          {"version", proof.release.version},
          {"library", proof.release.library_folder.string()},
          {"newest_opset", proof.release.newest_opset},
          {"newest_ir_version", proof.release.newest_ir_version},
          {"outcome", proof.outcome},
          {"reason", proof.reason},
          {"rows", rows.size()},
          {"rows_passed", passed},
          {"parity", rows}};
}

}  // namespace onnxproof
