#pragma once
// Graph simplification: named rules (rules.h) grouped in passes, run by a small manager until
// nothing changes (with a step limit), then proved: the original and the simplified model run on the same
// inputs and must agree, or the simplified model is not the result.

#include <cstdint>
#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <onnx/onnx_pb.h>

#include "onnxproof/core/error.h"
#include "onnxproof/core/finding.h"
#include "onnxproof/parity/parity.h"
#include "onnxproof/simplify/rules.h"

namespace onnxproof {

struct SimplifyOptions {
  /// Folded tensors larger than this stay computed (Tile/Expand/ConstantOfShape can blow up a file).
  uint64_t max_fold_bytes = uint64_t{64} << 20;
  /// Passes run in rounds until a round changes nothing, at most this many rounds.
  int max_rounds = 10;
  /// Passes not to run (--skip-pass NAME): dead-code, no-ops, shape-folding, constant-folding, common-subexpressions,
  /// fusions; each skips all its rules.
  std::set<std::string> skip_passes{};
  /// Rules not to run (--skip-rule NAME), by name (rules.h).
  std::set<std::string> skip_rules{};
  /// Rules run after the built-in ones of their pass (a new pass runs last); for tests.
  std::vector<Rule> extra_rules{};
  /// simplify_file writes the simplified model without running it: its caller proves it. The
  /// pipeline's parity step runs it against the reference anyway, and running both models here
  /// first was two more ONNX Runtime sessions and every case twice (on a large model, most of
  /// the proof's cost beyond a bare export's).
  bool proved_by_caller = false;
};

/// What one pass did over the whole run.
struct PassReport {
  std::string name;
  int changes = 0;
  std::vector<std::string> notes{};  // what the pass could not do, and why (never dropped silently)
};

/// What one rule did over the whole run.
struct RuleReport {
  std::string name;
  std::string pass;
  int changes = 0;
};

struct SimplifyResult {
  std::vector<PassReport> passes;  // the totals of each pass's rules, and its notes
  std::vector<RuleReport> rules;   // every rule run, in order
  int rounds = 0;
  std::map<std::string, int> ops_before;  // op type -> count, subgraphs included
  std::map<std::string, int> ops_after;
  uint64_t bytes_before = 0;  // serialized size of the model
  uint64_t bytes_after = 0;
  double seconds = 0.0;
  bool changed() const;
  int nodes_before() const;
  int nodes_after() const;
};

/// Simplifies `model` in place (it must hold its tensor bytes). The result passes the ONNX
/// checker and strict shape inference, or an Error says which pass broke it (ErrorCode::internal).
/// When the result is invalid and so is the input (the checker or strict shape inference rejects
/// it too), ErrorCode::invalid_input: the model's problem, not a pass's. A name in
/// `skip_passes` or `skip_rules` that is no pass or rule is a usage error listing the names.
Expected<SimplifyResult> simplify_model(onnx::ModelProto& model, const SimplifyOptions& options = {});

/// The proof: runs both models on the reference cases (or, without them, on generated inputs for
/// the declared shapes, symbolic dimensions at 1 and 3) with ONNX Runtime and compares every
/// output. Differences beyond tolerance are SIMPLIFY_CHANGED_OUTPUTS findings.
struct SimplifyProof {
  int cases = 0;
  double max_abs = 0.0;
  std::vector<Finding> findings;
};
Expected<SimplifyProof> prove_simplification(const std::filesystem::path& original,
                                             const std::filesystem::path& simplified, const Reference* reference,
                                             const ToleranceOptions& tolerance);

struct SimplifyOutcome {
  SimplifyResult result;
  SimplifyProof proof;
  bool written = false;  // false: the proof failed (see proof.findings), or nothing changed and no copy was asked for
  /// After a failed proof: the rule whose skipping alone makes it hold, found by bisecting the
  /// rules that changed something (the findings name it); empty when none does alone. (A rule
  /// name, under the field's old name: report.json's key is `culprit_pass`.)
  std::string culprit_pass{};
  /// The data files of the input the written model refers to for the weights no rule changed (it
  /// was written into the input's folder: SaveOptions::shared_sources), by their names there.
  std::vector<std::string> shared_data{};
};

/// The whole job on files: loads `input` with its external data, simplifies, saves into a private
/// folder beside `output` (external data as "<output name>.data" when over 2 GiB), frees the
/// model, proves the saved file against `input` (unless options.proved_by_caller), and only then
/// moves it (data file first) to `output`. Nothing is written when the proof fails; when nothing
/// changed, `output` is a copy of the model if `copy_when_unchanged`, else not written. An input
/// with external data is saved with external data. Never modifies `input`; `output` must not be
/// `input`.
Expected<SimplifyOutcome> simplify_file(const std::filesystem::path& input, const std::filesystem::path& output,
                                        const SimplifyOptions& options, const Reference* reference,
                                        const ToleranceOptions& tolerance, bool copy_when_unchanged);

}  // namespace onnxproof
