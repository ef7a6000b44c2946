#pragma once
// The generation proof's result: its figures in report.json (the generate step's object), its
// per-step table in report.md and report.html, and the error by step (report-generate.svg).

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "onnxproof/parity/generation.h"
#include "onnxproof/report/step_result.h"

namespace onnxproof {

struct GenerationFigures final : StepResult {
  int steps = 0;                          // greedy steps asked for (or run)
  std::vector<GenerationResult> results;  // one per request, provider and level run

  /// {"steps", "providers": [{provider, rule, passed, identical_steps, first_token_difference,
  /// first_failure, ..., "table": [one object per step]}]}.
  [[nodiscard]] nlohmann::json to_json() const override;
  /// The per-step tables under a heading (the heading alone when no run was made). The reference is named by the
  /// report's source framework (Report::framework; empty: PyTorch).
  [[nodiscard]] std::string markdown(const Report& report) const override;
  [[nodiscard]] std::string html(const Report& report) const override;
  /// report-generate.svg: the error by step, one panel per run (red: a failing step).
  [[nodiscard]] std::vector<ReportFile> files(const Report& report) const override;
  [[nodiscard]] std::string plot_svg(const std::string& framework) const;
};

}  // namespace onnxproof
