#pragma once
// The simplify rules, in the shape of ONNX Runtime's RewriteRule: a name, the operator types it
// rewrites, a cheap condition and an apply step. Node rules are dispatched by operator type in one
// walk over a graph's nodes; whole-model rules (dead code, constant folding, ...) take the model.
// The registry is a plain list: the built-in rules in the order a round runs them, and whatever a
// caller adds (SimplifyOptions::extra_rules), never a global that anyone can change.

#include <functional>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include <onnx/onnx_pb.h>

#include "onnxproof/core/error.h"

namespace onnxproof {

struct SimplifyOptions;
namespace simplify {
struct GraphIndex;
}

/// One walk of the node rules of a pass over one graph. Rules read the graph through `index`
/// (built once before the walk: stale for what this walk changed), and leave structural changes
/// (nodes removed, values renamed, initializers added) here; the walk applies them at its end.
struct RuleContext {
  onnx::GraphProto& graph;
  const simplify::GraphIndex& index;
  int node_index = 0;                                      // the node the rule is looking at
  bool in_body = false;                                    // an If/Loop/Scan body, not the main graph
  std::vector<bool> removed{};                             // indexed like the graph's nodes
  std::unordered_map<std::string, std::string> renamed{};  // removed output -> the value that replaces it
  std::vector<onnx::TensorProto> constants{};              // values of removed nodes' outputs (added before `added`)
  std::vector<onnx::TensorProto> added{};                  // new initializers the rewritten nodes read
  std::set<int> rewritten{};                               // nodes a rule changed in this walk
};

struct Rule {
  /// Kebab-case, unique: what `--skip-rule` and the report say.
  std::string name;
  /// The pass (group) it belongs to: `--skip-pass NAME` skips every rule of the pass.
  std::string pass;
  /// Operator types (default domain) the rule rewrites; empty: a whole-model rule (`run`).
  std::vector<std::string> targets{};
  /// A round runs the rule only when the model holds one of these; empty: one of `targets`, or
  /// always for a whole-model rule without targets.
  std::vector<std::string> needs{};
  /// Node rules also rewrite If/Loop/Scan bodies; otherwise the main graph only.
  bool in_bodies = false;
  /// Node rule: whether it applies to this node (cheap, no change).
  std::function<bool(const RuleContext&, const onnx::NodeProto&)> condition{};
  /// Node rule: rewrites; returns how many changes it made (0: it could not, after all).
  std::function<int(RuleContext&, onnx::NodeProto&)> apply{};
  /// Whole-model rule: rewrites the model; returns its changes, adds to `notes` what it could
  /// not do and why.
  std::function<Expected<int>(onnx::ModelProto&, const SimplifyOptions&, std::vector<std::string>& notes)> run{};
};

/// The built-in rules, in the order one round runs them (grouped by pass).
const std::vector<Rule>& builtin_rules();

/// The passes (groups) of the built-in rules, in order: dead-code, no-ops, shape-folding,
/// constant-folding, common-subexpressions, fusions.
std::vector<std::string> pass_names();

}  // namespace onnxproof
