#pragma once
// --exporter both: one run folder per exporter (OUT/dynamo, OUT/torchscript), and the figures that
// answer "should I switch exporters?" side by side in OUT/report.json and OUT/report.md.

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "onnxproof/core/verdict.h"

namespace onnxproof {

struct ExporterSummary {
  std::string exporter;    // "dynamo" | "torchscript"
  std::string run_folder;  // relative to OUT: the exporter's name
  Verdict verdict = Verdict::error;
  bool exported = false;
  int64_t opset = 0;
  int64_t nodes = 0;  // in the exported model (subgraphs included), as check counts them
  int64_t initializers = 0;
  uint64_t initializer_bytes = 0;
  double export_seconds = 0.0;
  double total_seconds = 0.0;
  /// The largest absolute and relative error per output over every case and provider compared.
  std::map<std::string, std::pair<double, double>> max_error;
  std::vector<std::string> error_codes;  // the error findings' codes, each once
  std::string shipped_model{};           // the file its run ships (ship_summary.h), in run_folder
  int warnings = 0;
};

nlohmann::json exporter_comparison_to_json(const std::vector<ExporterSummary>& summaries);

/// The side-by-side table (one column per exporter) in Markdown, with links to each run's report.
std::string exporter_comparison_to_markdown(const std::vector<ExporterSummary>& summaries);

/// The same table in HTML, each cell passed through `escape`.
std::string exporter_comparison_to_html(const std::vector<ExporterSummary>& summaries,
                                        const std::function<std::string(const std::string&)>& escape);

}  // namespace onnxproof
