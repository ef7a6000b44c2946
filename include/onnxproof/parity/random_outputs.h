#pragma once
// Outputs no parity comparison can prove value by value: those a random operator feeds. ONNX's
// random operators (Multinomial, RandomNormal[Like], RandomUniform[Like], Bernoulli) draw other
// numbers than PyTorch's generator by construction; so does a forward that differs on identical
// inputs (cases.json random_outputs, found by the front end).

#include <map>
#include <string>

#include <onnx/onnx_pb.h>

#include "onnxproof/parity/compare.h"
#include "onnxproof/parity/parity.h"
#include "onnxproof/tensor/tensor.h"

namespace onnxproof {

/// {graph output: why it is random} for the outputs of `model` that depend on a random operator,
/// through any chain of nodes and subgraphs ("Multinomial node 'sample'"). Empty when none do.
std::map<std::string, std::string> random_graph_outputs(const onnx::ModelProto& model);

/// Adds random_graph_outputs(model) to `reference.random_outputs`, whose other entries (the front
/// end's) are kept.
void mark_random_outputs(const onnx::ModelProto& model, Reference& reference);

/// A random output's check in place of values: shapes and dtypes equal, NaN or Inf only where
/// PyTorch shows them too, and integers non-negative where PyTorch's 16 or more are (indices, a
/// Multinomial's samples). Each element outside is a mismatch.
Comparison compare_domain(const Tensor& expected, const Tensor& actual);

}  // namespace onnxproof
