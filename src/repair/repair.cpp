// Trying the candidates: each a pipeline run of its own in RUN/repair/NN-NAME, within the budget.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <chrono>
#include <set>

#include "onnxproof/core/atomic_file.h"
#include "onnxproof/core/json_file.h"
#include "onnxproof/core/run_layout.h"
#include "onnxproof/core/sha256.h"
#include "onnxproof/repair/repair.h"
#include "outputs.h"
#include "same_model.h"

namespace onnxproof {
namespace fs = std::filesystem;

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

// RUN/repair/ as a fresh folder of the run: never a link to somewhere else, emptied of an earlier repair.
Expected<void> fresh_repair_folder(const fs::path& folder) {
  std::error_code ec;
  const auto status = fs::symlink_status(folder, ec);
  if (fs::exists(status) && !fs::is_directory(status))
    return fail(ErrorCode::usage, "refusing to write into " + folder.string() + ": it is " +
                                      (fs::is_symlink(status) ? "a symbolic link" : "not a folder") +
                                      "; onnxproof writes repair/ only as a folder of the run");
  fs::remove_all(folder, ec);
  if (ec) return fail(ErrorCode::io, "cannot remove the earlier repair " + folder.string() + ": " + ec.message());
  fs::create_directories(folder, ec);
  if (ec) return fail(ErrorCode::io, "cannot create " + folder.string() + ": " + ec.message());
  return {};
}

// What the run holds besides its export: its proof's results and report (the run-folder layout's
// proof and report entries, core/run_layout.h), which a copy of the export leaves out.
bool is_proof_output(const fs::directory_entry& entry) {
  std::error_code ec;
  const auto known = find_run_entry(entry.path().filename().string(), entry.is_directory(ec));
  return known && (known->role == RunEntryRole::proof || known->role == RunEntryRole::report);
}

// The run's export (export.json, the models, reference/) in `folder`, by hard links: what a
// candidate without a new export proves again. A pipeline never writes inside the export it reads,
// so the candidates' folders cannot lie in the run's own.
Expected<void> copy_export(const fs::path& run, const fs::path& folder) {
  std::error_code ec;
  fs::create_directories(folder, ec);
  if (ec) return fail(ErrorCode::io, "cannot create " + folder.string() + ": " + ec.message());
  for (const auto& entry : fs::directory_iterator(run, ec)) {
    if (entry.is_symlink() || is_proof_output(entry)) continue;
    ONNXPROOF_TRY(copy_by_hard_links(entry.path(), folder / entry.path().filename()));
  }
  if (ec) return fail(ErrorCode::io, "cannot read " + run.string() + ": " + ec.message());
  return {};
}

// The run's export with model.onnx rewritten (export.json's sha256 follows), in `folder`.
Expected<std::vector<ReshapeRewrite>> rewritten_export(const fs::path& run, const RepairCandidate& candidate,
                                                       const fs::path& folder) {
  std::error_code ec;
  ONNXPROOF_TRY(copy_export(run, folder));
  fs::remove(folder / "model.onnx", ec);  // a hard link: the rewrite writes a file of its own
  ONNXPROOF_TRY_ASSIGN(const auto frozen, frozen_shape_options_beside(run));
  ONNXPROOF_TRY_ASSIGN(auto rewrites, rewrite_frozen_reshapes(run / "model.onnx", candidate.reshapes, frozen.dynamic,
                                                              folder / "model.onnx"));
  ONNXPROOF_TRY_ASSIGN(auto manifest, read_json_object(run / "export.json", ErrorCode::invalid_input));
  ONNXPROOF_TRY_ASSIGN(const std::string sha, sha256_file(folder / "model.onnx"));
  manifest["onnx_model"] = {
      {"path", "model.onnx"}, {"bytes", fs::file_size(folder / "model.onnx", ec)}, {"sha256", sha}};
  // The export's own finding that these nodes froze the axis is what the rewrite answers; the
  // proof at every swept size says whether it did.
  auto& findings = manifest["findings"];
  findings.erase(std::remove_if(findings.begin(), findings.end(),
                                [&](const nlohmann::json& finding) {
                                  return finding.value("code", "") == "FROZEN_DIMENSION" &&
                                         std::any_of(rewrites.begin(), rewrites.end(), [&](const ReshapeRewrite& r) {
                                           return r.node == finding.value("where", "");
                                         });
                                }),
                 findings.end());
  ONNXPROOF_TRY(write_file_atomically(folder / "export.json", manifest.dump(2) + "\n"));
  return rewrites;
}

// The reference cases the run failed on (facts.failing_cases), for the float32 search.
Expected<Reference> failing_cases(const fs::path& run, const RepairFacts& facts) {
  ONNXPROOF_TRY_ASSIGN(Reference reference, read_reference(run / "reference"));
  std::erase_if(reference.cases, [&](const ReferenceCase& c) { return !facts.failing_cases.contains(c.data_set); });
  if (reference.cases.empty()) return fail(ErrorCode::invalid_input, "the run's report holds no failing parity case");
  return reference;
}

// The float32 block, found before the candidate's run; ErrorCode::invalid_input when none helps.
Expected<std::vector<std::string>> float32_block(const RepairOptions& options, const RepairFacts& facts,
                                                 const fs::path& scratch, std::ostream& progress) {
  Float32BlockSearch search;
  search.model = options.run / (facts.simplified ? "model.sim.onnx" : "model.onnx");
  search.parity = options.base.parity;
  search.python = front_end_interpreter(options.base.export_options.python, facts.framework);
  search.timeout_seconds = options.base.export_options.timeout_seconds;
  ONNXPROOF_TRY_ASSIGN(search.reference, failing_cases(options.run, facts));
  search.parity.progress = nullptr;
  search.parity.keep_cpu_outputs = false;
  progress << "onnxproof repair: looking for the block that breaks in float16 (" << search.reference.cases.size()
           << " failing cases)\n"
           << std::flush;
  std::error_code ec;
  fs::create_directories(scratch, ec);
  ONNXPROOF_TRY_ASSIGN(const auto block, find_float32_block(search, scratch));
  if (block.nodes.empty())
    return fail(ErrorCode::invalid_input,
                fmt::format("no block short of the whole model passes in float32 ({} conversions)", block.conversions));
  progress << fmt::format("onnxproof repair: {} node(s) kept in float32 after {} conversions\n", block.nodes.size(),
                          block.conversions)
           << std::flush;
  return block.nodes;
}

// The first error finding of a sub-run, or the step that could not run: why the candidate failed.
std::string why_it_failed(const Report& report) {
  if (const auto* step = first_error_step(report)) return step->name + " step: " + step->reason;
  for (const auto& finding : report.findings) {
    if (finding.severity == Severity::error) {
      std::string why = std::string(finding.code_name()) + ": " + finding.message;
      return why.size() > 300 ? why.substr(0, 300) + "..." : why;
    }
  }
  return "";
}

// The candidate's pipeline options: the failed run's, changed as the candidate says, into `out`.
Expected<PipelineOptions> candidate_options(const RepairOptions& options, const RepairCandidate& candidate,
                                            const fs::path& out, double seconds_left) {
  PipelineOptions changed = options.base;
  changed.before_publish = {};  // the failed run's own (its command record, this repair)
  changed.golden = false;       // a proof, not a release: the golden set stays the run's business
  changed.golden_folder.clear();
  changed.localize = false;
  changed.export_options.out = out;
  changed.export_options.timeout_seconds =
      std::min(changed.export_options.timeout_seconds, std::max(60.0, seconds_left));
  changed.parity.disabled_optimizers.insert(changed.parity.disabled_optimizers.end(),
                                            candidate.disabled_optimizers.begin(), candidate.disabled_optimizers.end());
  for (const auto& name : candidate.disabled_optimizers)  // the releases' children run without it too
    changed.release_proof.parity_arguments.insert(changed.release_proof.parity_arguments.end(),
                                                  {"--disable-optimizer", name});
  if (candidate.openvino_float32)  // the same rows, compiled in float32
    std::replace(changed.parity.providers.begin(), changed.parity.providers.end(), std::string("openvino:default"),
                 std::string("openvino:f32"));
  if (!candidate.reexport) {
    changed.export_options.from_export = options.run / "repair" / ".export";
  } else if (!options.reexport) {
    if (changed.export_options.model.empty())
      return fail(ErrorCode::usage, "the run proved a finished export (--from-export): no model to export again");
    changed.export_options.from_export.clear();
    if (candidate.exporter) changed.export_options.exporter = *candidate.exporter;
    if (candidate.opset) changed.export_options.opset = *candidate.opset;
  }
  return changed;
}

// The folder the repaired run is published as.
fs::path shown_run(const RepairOptions& options) { return options.shown_as.empty() ? options.run : options.shown_as; }

// A candidate's scratch folder (its rewritten or new export, the float32 search's conversions),
// removed however the candidate ends.
struct CandidateScratch {
  fs::path path;
  ~CandidateScratch() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

// One candidate, proved in RUN/NN-NAME (`attempt.folder`).
void try_candidate(const RepairOptions& options, const RepairFacts& facts, RepairAttempt& attempt, double seconds_left,
                   std::ostream& progress) {
  const RepairCandidate candidate = attempt.candidate;
  const fs::path out = options.run / attempt.folder;
  const CandidateScratch scratch_folder{options.run / "repair" / ("." + attempt.folder.filename().string())};
  const fs::path& scratch = scratch_folder.path;
  auto changed = candidate_options(options, candidate, out, seconds_left);
  const auto give_up = [&](const Error& error) {
    attempt.status = "error";
    attempt.why = error.describe();
  };
  if (!changed) return give_up(changed.error());
  std::error_code ec;
  if (candidate.kind.starts_with("rewrite")) {
    auto rewrites = rewritten_export(options.run, candidate, scratch);
    if (!rewrites) return give_up(rewrites.error());
    attempt.rewrites = std::move(*rewrites);
    changed->export_options.from_export = scratch;
  }
  if (candidate.keep_float32) {
    auto block = float32_block(options, facts, scratch, progress);
    if (!block) {
      attempt.status = "fail";
      attempt.why = block.error().describe();
      return;
    }
    attempt.kept_in_float32 = *block;
    attempt.candidate.change = fmt::format("the float16 conversion keeps {} in float32 (--keep-float32 {})",
                                           fmt::join(*block, ", "), fmt::join(*block, " --keep-float32 "));
    changed->keep_float32 = std::move(*block);
  }
  if (candidate.reexport && options.reexport) {
    fs::create_directories(scratch, ec);
    if (auto exported = options.reexport(candidate, scratch); !exported) return give_up(exported.error());
    changed->export_options.from_export = scratch;
  }
  changed->shown_as = shown_run(options) / attempt.folder;
  auto report = run_pipeline(*changed, progress);
  if (!report) return give_up(report.error());
  attempt.status = std::string(verdict_name(report->verdict));
  attempt.why = report->verdict == Verdict::pass ? "" : why_it_failed(*report);
  if (candidate.reexport && report->verdict == Verdict::pass) {
    auto other = another_model_than_the_run(options.run / "reference", out / "reference");
    if (!other) return give_up(other.error());
    if (*other) {
      attempt.status = "fail";
      attempt.why = **other;
    }
  }
}

}  // namespace

Expected<RepairResult> repair_run(const RepairOptions& options, std::ostream& progress) {
  const bool can_reexport = static_cast<bool>(options.reexport) || !options.base.export_options.model.empty();
  ONNXPROOF_TRY_ASSIGN(const RepairFacts facts, read_repair_facts(options.run, can_reexport));
  if (facts.verdict != "fail")
    return fail(ErrorCode::usage,
                fmt::format("{}'s verdict is {}: only a failed run is repaired", shown_run(options).string(),
                            facts.verdict.empty() ? "missing" : facts.verdict));
  ONNXPROOF_TRY(fresh_repair_folder(options.run / "repair"));
  const auto candidates = plan_repair(facts);
  if (std::any_of(candidates.begin(), candidates.end(), [](const auto& c) { return !c.reexport; }))
    ONNXPROOF_TRY(copy_export(options.run, options.run / "repair" / ".export"));
  RepairResult result;
  result.frozen_at = frozen_source_line(facts);
  const auto start = Clock::now();
  for (std::size_t i = 0; i < candidates.size(); ++i) {
    RepairAttempt attempt;
    attempt.candidate = candidates[i];
    attempt.folder = fs::path("repair") / fmt::format("{:02}-{}", i + 1, candidates[i].name);
    const double left = options.budget_seconds - seconds_since(start);
    if (left <= 0 || (result.repaired && !options.every_candidate)) {
      attempt.status = "not_tried";
      attempt.why = result.repaired ? "a change before it repaired the run"
                                    : fmt::format("the repair budget ({:.0f} s) was spent", options.budget_seconds);
      result.budget_spent = result.budget_spent || !result.repaired;
      result.attempts.push_back(std::move(attempt));
      continue;
    }
    progress << fmt::format("onnxproof repair: [{}/{}] {}\n", i + 1, candidates.size(), candidates[i].change)
             << std::flush;
    const auto tried = Clock::now();
    try_candidate(options, facts, attempt, left, progress);
    attempt.seconds = seconds_since(tried);
    progress << fmt::format("onnxproof repair: [{}/{}] {} in {:.1f} s{}\n", i + 1, candidates.size(), attempt.status,
                            attempt.seconds, attempt.why.empty() ? "" : ": " + attempt.why)
             << std::flush;
    if (attempt.status == "pass" && !result.repaired) result.repaired = result.attempts.size();
    result.attempts.push_back(std::move(attempt));
  }
  std::error_code ec;
  fs::remove_all(options.run / "repair" / ".export", ec);
  result.seconds = seconds_since(start);
  if (result.repaired) result.diff = repair_diff(options.run, facts, result.attempts[*result.repaired]);
  ONNXPROOF_TRY(write_repair(options.run, shown_run(options), facts, result));
  return result;
}

}  // namespace onnxproof
