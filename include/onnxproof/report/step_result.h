#pragma once
// What a step found, as a typed value. Each step returns a result of its own type; only the
// result's writers below turn it into report.json's figures, a section of report.md and
// report.html, and the files the report writes beside them (a plot). The report writer calls
// them in step order, so a new proof adds its section without touching report/.

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace onnxproof {

struct Report;

/// Where a step's section stands in report.md and report.html.
enum class SectionPlace {
  after_steps,   // under the steps table (simplify's rules, the generation proof)
  after_parity,  // under the parity table
};

/// A file the report writes beside report.md for one step: its name in the run folder (declared in
/// the run-folder layout, core/run_layout.h) and its content.
struct ReportFile {
  std::string name;
  std::string content;
};

class StepResult {
 public:
  StepResult() = default;
  StepResult(const StepResult&) = default;
  StepResult& operator=(const StepResult&) = default;
  virtual ~StepResult() = default;

  /// The step's figures in report.json, beside its name, status, seconds and reason.
  [[nodiscard]] virtual nlohmann::json to_json() const = 0;
  /// Its section of report.md and report.html; "" when it has none. `report` is the whole
  /// report (the source framework's name, the other steps).
  [[nodiscard]] virtual std::string markdown(const Report& /*report*/) const { return {}; }
  [[nodiscard]] virtual std::string html(const Report& /*report*/) const { return {}; }
  [[nodiscard]] virtual SectionPlace place() const { return SectionPlace::after_steps; }
  /// The files written beside the report for this step (none by default).
  [[nodiscard]] virtual std::vector<ReportFile> files(const Report& /*report*/) const { return {}; }
};

}  // namespace onnxproof
