#include "analyzer.h"

#include <fmt/format.h>

#include <algorithm>

namespace onnxproof::parity_analyzers {

namespace {

// The labels whose size differs from the export example's (all of them when none does): what a
// refused case says about the model.
std::map<std::string, int64_t> changed_sizes(const std::map<std::string, int64_t>& sizes, const Reference& reference) {
  std::map<std::string, int64_t> changed;
  for (const auto& [label, size] : sizes) {
    const auto example = reference.example_sizes.find(label);
    if (example == reference.example_sizes.end() || example->second != size) changed[label] = size;
  }
  return changed.empty() ? sizes : changed;
}

}  // namespace

void add_rejected_findings(const AnalyzerInput& in) {
  const auto& [reference, groups, result, locate] = in;
  const auto& rejected = groups.rejected;
  // When ONNX Runtime fails at the traced sizes themselves, no shape is to blame: every failure
  // is then RUN_FAILED (the graph cannot run as written), not SHAPE_REJECTED.
  const bool fails_as_traced = std::any_of(rejected.begin(), rejected.end(), [&](const auto& entry) {
    const auto& sizes = entry.second->sizes;
    return entry.second->status == RowStatus::rejected &&
           std::all_of(sizes.begin(), sizes.end(), [&](const auto& size) {
             const auto example = reference.example_sizes.find(size.first);
             return example != reference.example_sizes.end() && example->second == size.second;
           });
  });
  // A case that ran with ONNX Runtime's graph optimizations disabled and fails with them on is
  // not the export's failure as written: one of the optimizer's rewrites cannot run it (measured:
  // ReshapeFusion writing a Reshape's shape as {0,-1}, which no empty tensor can take).
  const auto runs_unoptimized = [&](const ParityRow& failed) {
    if (failed.optimization == GraphOptimization::disabled) return false;
    const bool in_rows = std::any_of(result.rows.begin(), result.rows.end(), [&](const ParityRow& other) {
      return other.optimization == GraphOptimization::disabled && other.data_set == failed.data_set &&
             other.provider == failed.provider && other.compared();
    });
    return in_rows || std::any_of(result.detections.begin(), result.detections.end(), [&](const DetectionRow& other) {
             return other.optimization == GraphOptimization::disabled && other.data_set == failed.data_set &&
                    other.provider == failed.provider && other.note.empty();
           });
  };
  for (const auto& [key, row] : rejected) {
    if (runs_unoptimized(*row)) {
      result.findings.push_back(
          {FindingCode::run_failed,
           Severity::error,
           "parity",
           fmt::format("{} on {} with graph optimizations {}: {}", row->data_set, row->provider,
                       optimization_name(row->optimization), row->note),
           row->data_set,
           "ONNX Runtime runs this case with its graph optimizations disabled and fails with them on: one of "
           "its optimizer's rewrites of the node named cannot run it (a Reshape to a shape holding 0 and -1 on an "
           "empty tensor is ReshapeFusion's); a session with default options fails the same way, so deploy with "
           "that optimizer disabled (SessionOptions' disabled_optimizers) or the optimization level that runs "
           "it, or change the model so the node does not take this form, and report it to ONNX Runtime",
           {.sizes = row->sizes}});
      continue;
    }
    const bool refused = row->status == RowStatus::rejected && !fails_as_traced;
    const auto changed = changed_sizes(row->sizes, reference);
    result.findings.push_back(
        {refused ? FindingCode::shape_rejected : FindingCode::run_failed,
         Severity::error,
         "parity",
         refused ? fmt::format("ONNX Runtime refuses {} ({}): {}", describe_sizes(changed), row->data_set, row->note)
                 : fmt::format("{} on {}: {}", row->data_set, row->provider, row->note),
         row->data_set,
         refused ? "the model does not accept a shape production sends: export with that axis dynamic (--dynamic) and "
                   "without Python ints taken from shapes"
         : fails_as_traced ? "ONNX Runtime cannot run the graph even at the sizes it was traced at: the node "
                             "named fails as the exporter wrote it; try another --opset or --exporter"
                           : "",
         {.sizes = refused ? changed : row->sizes}});
  }
}

}  // namespace onnxproof::parity_analyzers
