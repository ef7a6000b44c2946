#pragma once
// The typed results of the pipeline's core steps (export, check, simplify, ops, parity): what each
// step found, and their writers (report.json's figures; simplify's rules section). The proofs in
// src/proofs/ declare their own results beside their steps.

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "onnxproof/ops/release_forecast.h"
#include "onnxproof/report/step_result.h"
#include "onnxproof/simplify/simplify.h"

namespace onnxproof {

struct ExportFigures final : StepResult {
  std::string exporter;
  std::string sha256;
  int reference_sets = 0;
  std::optional<double> front_end_peak_mib{};
  int64_t opset = 0;  // 0: unrecorded (not in report.json)
  [[nodiscard]] nlohmann::json to_json() const override;
};

struct CheckFigures final : StepResult {
  bool checker_passed = false;
  bool shape_inference_passed = false;
  std::size_t nodes = 0;
  std::size_t operator_types = 0;
  [[nodiscard]] nlohmann::json to_json() const override;
};

/// How the simplified model was proved: by simplify itself on the cases, or by the parity step
/// (the export kept where the simplified model alone failed).
enum class SimplifyProvedBy { simplify, parity };

struct SimplifyFigures final : StepResult {
  SimplifyOutcome outcome;
  SimplifyProvedBy proved_by = SimplifyProvedBy::simplify;
  std::optional<std::size_t> parity_cases{};  // the parity step proved it on these cases
  bool export_kept = false;                   // the parity step blamed it: the export is kept
  [[nodiscard]] nlohmann::json to_json() const override;
  /// "Simplify rules": the rules that changed something and their changes; "" when none did.
  [[nodiscard]] std::string markdown(const Report& report) const override;
  [[nodiscard]] std::string html(const Report& report) const override;
};

struct OpsFigures final : StepResult {
  std::vector<std::string> targets;  // "ort-cpu: ONNX Runtime 1.31.1 (CPU)"
  std::size_t operators = 0;
  std::vector<ReleaseForecast> releases;  // which ONNX Runtime releases would load it
  [[nodiscard]] nlohmann::json to_json() const override;
};

/// The float16 variant's file in the run (--precision fp16), proved and shipped in the export's place.
inline constexpr std::string_view k_float16_model = "model.fp16.onnx";

struct ParityFigures final : StepResult {
  std::size_t cases = 0;
  std::size_t rows = 0;
  std::map<std::string, std::size_t> analyzers;  // findings per analyzer kind
  /// --precision fp16: the converted model proved in the export's place, and what stayed float32.
  bool float16 = false;
  std::string kept_in_float32{};
  std::vector<std::string> nodes_kept_in_float32{};
  [[nodiscard]] nlohmann::json to_json() const override;
};

}  // namespace onnxproof
