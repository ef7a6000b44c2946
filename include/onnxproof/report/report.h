#pragma once
// The Report: one value the pipeline fills step by step and writes once at the end (and on
// failure): report.json (schema onnxproof.report/1) and report.md.

#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "onnxproof/core/error.h"
#include "onnxproof/core/finding.h"

namespace onnxproof {

struct StepReport {
  std::string name;
  std::string status = "skip";  // pass | fail | skip | error
  double seconds = 0.0;
  std::string reason;  // why skipped or errored
  nlohmann::json details = nlohmann::json::object();
};

/// One of MISSION.md's headline questions with its answer ("yes", "no" or "not checked").
struct HeadlineAnswer {
  std::string question;
  std::string answer;
  std::string evidence;
};

struct Report {
  std::string model;                 // the model spec
  std::filesystem::path onnx_model;  // OUT/model.onnx when exported
  std::vector<std::pair<std::string, std::string>> versions;
  std::vector<StepReport> steps;
  std::vector<Finding> findings;
  nlohmann::json parity = nlohmann::json::array();    // the parity rows
  nlohmann::json summary = nlohmann::json::object();  // providers, accuracy
  std::vector<HeadlineAnswer> headline;

  /// pass only when every step ran and passed; error when a step could not do its job;
  /// fail otherwise (DESIGN.md).
  std::string verdict() const;
};

/// report.json's content.
nlohmann::json report_to_json(const Report& report);

/// report.md's content: the headline questions, findings by severity, steps, the parity table.
std::string report_to_markdown(const Report& report);

/// report.html's content: the same as report.md in one self-contained page, the plot inline.
std::string report_to_html(const Report& report);

/// Writes OUT/report.json, OUT/report.md, OUT/report.html and, when parity ran,
/// OUT/report-parity.svg, each atomically.
Expected<void> write_report(const Report& report, const std::filesystem::path& out);

}  // namespace onnxproof
