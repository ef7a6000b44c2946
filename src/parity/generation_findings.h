#pragma once
// The findings of one generation run (generation.cpp calls it): the encoder's outputs outside the
// rule, the first failing step, and the near ties.

#include <string>

#include "onnxproof/parity/generation.h"

namespace onnxproof::detail {

/// " (batch 2, source 16 tokens)": the run a message is about ('' for an unnamed run).
std::string run_context(const GenerationResult& result);

/// Sets `result`'s first failure and first token difference and adds its findings; `source` is
/// what the reference's framework is called ("PyTorch").
void add_generation_findings(GenerationResult& result, const std::string& source);

}  // namespace onnxproof::detail
