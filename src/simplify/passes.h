#pragma once
// The graph passes. Each takes the model, changes it in place, and returns how many changes it
// made (0: nothing to do), so the manager can run them until a round changes nothing.

#include <onnx/onnx_pb.h>

#include "onnxproof/core/error.h"
#include "onnxproof/simplify/simplify.h"

namespace onnxproof::simplify {

/// Removes nodes whose outputs reach no graph output (in subgraphs too), unused initializers and
/// value_info of values that no longer exist.
int eliminate_dead_code(onnx::ModelProto& model);

/// Bypasses nodes that leave their input unchanged: Identity, Dropout (inference), Cast to the
/// same type, Reshape/Expand/Slice whose output shape equals the input's, Transpose with the
/// identity permutation, Pad with zero pads, Concat of one input, Add/Sub/Mul/Div/And/Or with
/// their identity element as a constant that does not broadcast x up; in subgraphs too. Needs
/// shape information.
int remove_no_ops(onnx::ModelProto& model);

/// Replaces Shape and Size of tensors whose shape is fully static, and Gathers or Slices of static
/// dimensions from any Shape, by constants; gives a Reshape whose shape is a Concat of constants
/// and sizes of its data's own symbolic dimensions a constant shape (0 = copy that dimension; one
/// computed size among positive constants: -1), and one whose shape is Shape(x) with a single
/// symbolic size x's sizes with -1 there;
/// decides Where(Equal(sizes, c), a, sizes) over such a Concat where c < 0 at every size read.
int fold_shapes(onnx::ModelProto& model);

/// Evaluates every node whose inputs are all constant with ONNX Runtime (the constant subgraph in
/// one run, per graph: If/Loop/Scan bodies too) and replaces it by initializers; never folds
/// random ops, subgraph ops, a body's outputs or tensors over the size cap.
/// What ONNX Runtime cannot evaluate stays as it is, with a note in `report`.
Expected<int> fold_constants(onnx::ModelProto& model, const SimplifyOptions& options, PassReport& report);

/// Fuses pairs of nodes in the main graph: Transpose into Transpose (composed permutation),
/// Reshape after a Reshape/Flatten/Squeeze/Unsqueeze (to a constant shape without 0), Cast after a
/// lossless widening Cast, two Unsqueezes into one, BatchNormalization into the Conv before it (float32 constants), and
/// MatMul + Add of a constant vector into Gemm (a matrix times a constant matrix); and
/// Reshape -> elementwise nodes -> Reshape back to the first one's input shape: both Reshapes go.
int fuse_nodes(onnx::ModelProto& model);

/// Merges nodes with the same operator, attributes and inputs (not random ops, not nodes with
/// subgraphs), in each graph; the later node's readers read the earlier one's outputs.
int merge_common_subexpressions(onnx::ModelProto& model);

/// Restores topological order (Kahn's algorithm, stable); returns 1 when the order changed.
int sort_topologically(onnx::ModelProto& model);

}  // namespace onnxproof::simplify
