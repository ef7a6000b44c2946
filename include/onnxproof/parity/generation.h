#pragma once
// The generation proof: N greedy steps of a decoder with a key/value cache through ONNX Runtime,
// each step's `present` outputs fed back as the next step's `past_key_values` inputs, compared
// step by step with PyTorch's run of the same loop (reference/generation/, written by the front
// end's generation.py; onnxproof.generation/2). An encoder-decoder's encoder (encoder.onnx beside
// the decoder, seq2seq.py) runs first on each run's request: its outputs are judged against
// PyTorch's, and ONNX Runtime's own (the cross-attention cache) are fed to every decoder step.
//
// ONNX Runtime is fed PyTorch's token at every step (teacher forcing): until the first step whose
// token differs this is exactly ONNX Runtime's own greedy loop, and after it the logits stay
// comparable, so the table covers every step. A differing token is a divergence unless it is a
// near tie: the step's logits are within the budget and the exact margin between the two tokens
// is within ONNX Runtime's budget plus PyTorch's own noise (either side could have picked either
// token); a near tie is a GENERATION_NEAR_TIE warning, reported with its margin, never a silent
// pass. A real divergence is GENERATION_DIVERGED, logits outside the budget
// GENERATION_LOGITS_OUTSIDE, at the first step; an encoder output outside ENCODER_MISMATCH.

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "onnxproof/core/error.h"
#include "onnxproof/core/finding.h"
#include "onnxproof/parity/tolerance.h"
#include "onnxproof/runtime/session.h"

namespace onnxproof {

/// The version of reference/generation/generation.json this engine reads.
inline constexpr std::string_view k_generation_schema = "onnxproof.generation/2";

/// One greedy step on one provider.
struct GenerationStep {
  int step = 0;
  int64_t past_length = 0;              // cached tokens the step starts from
  std::vector<int64_t> pytorch_tokens;  // one per batch row
  std::vector<int64_t> onnx_tokens;     // ONNX Runtime's argmax of the same step
  double max_abs = 0.0;                 // max |ONNX Runtime - PyTorch float32| over the step's logits
  double error = 0.0;                   // what the rule bounds: |ONNX Runtime - exact| (calibrated) or max_abs
  double budget = 0.0;                  // the most `error` may be (fixed rule: atol + rtol * max |PyTorch|)
  int64_t mismatches = 0;               // logits outside the budget
  bool near_tie = false;                // tokens differ within the budget (see above)
  std::optional<double> tie_margin;     // the exact margin of the first differing row
  std::string shape_problem;            // ONNX Runtime's logits have another shape ('' when not)
  bool tokens_equal() const { return pytorch_tokens == onnx_tokens; }
  bool passed() const { return mismatches == 0 && (tokens_equal() || near_tie); }
};

/// One encoder output of an encoder-decoder against PyTorch's.
struct EncoderOutputCheck {
  std::string name;
  double max_abs = 0.0;  // max |ONNX Runtime - PyTorch float32|
  double error = 0.0;    // what the rule bounds
  double budget = 0.0;
  int64_t mismatches = 0;
  std::string shape_problem;  // ONNX Runtime's output has another shape or type ('' when not)
  bool passed() const { return mismatches == 0 && shape_problem.empty(); }
};

/// The generation proof of one run (one request) on one provider and optimization level.
struct GenerationResult {
  std::string provider;
  std::string optimization;                 // ONNX Runtime's graph optimization level ("all", "disabled")
  std::string run;                          // what the request is ("batch 2, source 16 tokens, last row padded")
  bool padded = false;                      // some row of the encoder's mask is padded
  std::vector<EncoderOutputCheck> encoder;  // an encoder-decoder's encoder outputs, judged first
  int batch = 0;
  int64_t prompt_length = 0;
  std::string rule;  // "calibrated" (float64 logits) or "fixed" / "user"
  std::string exact_missing_reason;
  std::vector<GenerationStep> steps;
  std::optional<int> first_token_difference;  // first step whose token differs (near tie or not)
  std::optional<int> first_failure;           // first step that fails (divergence or logits outside)
  std::vector<Finding> findings;
  bool passed() const {
    return !first_failure && !steps.empty() &&
           std::all_of(encoder.begin(), encoder.end(), [](const auto& output) { return output.passed(); });
  }
  /// Steps whose tokens are identical for every batch row.
  int identical_steps() const;
};

/// Reads `reference_folder`/generation.json and checks what it names (run folders run_N, an
/// encoder file in the run folder) without reading any tensor: a recorded generation that breaks
/// the contract is refused before a pipeline starts (ErrorCode::invalid_input).
Expected<void> check_generation_reference(const std::filesystem::path& reference_folder);

/// Whether an encoder must still be the file the reference was recorded with (generation.json's
/// sha256): yes for the export's own proof; a golden set verifies whatever encoder lies beside a
/// new export.
enum class EncoderDigest { check, ignore };

/// Runs the greedy loop of each run of `reference_folder` (RUN/reference/generation) through
/// `model` on the provider and level of `options`, an encoder the document names read from
/// `run_folder`; one result per run. The findings name the reference by its source `framework`
/// (core/source_framework.h; empty: PyTorch). Errors: ErrorCode::invalid_input for a reference
/// folder that breaks the contract, ErrorCode::runtime when ONNX Runtime fails,
/// ErrorCode::invalid_input when the model lacks an input or output the reference names.
Expected<std::vector<GenerationResult>> prove_generation(
    const std::filesystem::path& model, const std::filesystem::path& run_folder,
    const std::filesystem::path& reference_folder, const SessionOptions& options, const ToleranceOptions& tolerance,
    const std::string& framework, EncoderDigest digest = EncoderDigest::check);

}  // namespace onnxproof
