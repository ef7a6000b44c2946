#pragma once
// The rules of each pass, one list per unit (registry.cpp puts them in order), the walk that
// dispatches node rules by operator type, and the two whole-model steps the manager calls itself.

#include <string>
#include <vector>

#include <onnx/onnx_pb.h>

#include "onnxproof/simplify/rules.h"
#include "onnxproof/simplify/simplify.h"

namespace onnxproof::simplify {

/// remove-dead-code: nodes whose outputs reach no graph output (in subgraphs too), unused
/// initializers and value_info of values that no longer exist.
std::vector<Rule> dead_code_rules();

/// Rules bypassing nodes that leave their input unchanged (Identity, inference Dropout, a Cast to
/// the same type, ...); in subgraphs too. They need shape information.
std::vector<Rule> no_op_rules();

/// Rules replacing shape computations over static dimensions by constants, and giving Reshapes
/// whose shape is built from their data's own sizes a constant shape.
std::vector<Rule> shape_folding_rules();

/// fold-constants: every node whose inputs are all constant, evaluated with ONNX Runtime.
std::vector<Rule> constant_folding_rules();

/// merge-common-subexpressions: nodes with the same operator, attributes and inputs.
std::vector<Rule> common_subexpression_rules();

/// Rules fusing pairs of nodes in the main graph (Transposes, Reshapes, Casts, BatchNormalization
/// into Conv, MatMul + Add into Gemm, ...), and the two whole-graph fusions.
std::vector<Rule> fusion_rules();
// The whole-graph fusions (fusions_graph.cpp), which fusion_rules() ends with.
std::vector<Rule> graph_fusion_rules();

/// One walk per graph (bodies first when a rule rewrites bodies) over the nodes: each node is
/// offered to the rules that target its operator, in order, until one changes it; then the walk's
/// removals, renames and initializers are applied. Adds each rule's changes to `changes` (indexed
/// like `rules`) and returns their sum.
int walk_node_rules(onnx::ModelProto& model, const std::vector<const Rule*>& rules, std::vector<int>& changes);

/// Removes what reaches no graph output (the manager's last sweep); returns the changes.
int eliminate_dead_code(onnx::ModelProto& model);

/// Restores topological order (Kahn's algorithm, stable); returns 1 when the order changed.
int sort_topologically(onnx::ModelProto& model);

}  // namespace onnxproof::simplify
