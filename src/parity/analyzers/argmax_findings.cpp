#include "analyzer.h"

#include <fmt/format.h>

#include <algorithm>

#include "onnxproof/core/source_framework.h"

namespace onnxproof::parity_analyzers {

void add_flip_findings(const AnalyzerInput& in) {
  const auto& [reference, groups, result, locate] = in;
  const auto& flipped = groups.flipped;
  const std::string source = source_title(reference.framework);
  for (const auto& [key, rows] : flipped) {
    int64_t flips = 0;
    int64_t total = 0;
    double margin = rows.front()->argmax->min_margin;
    for (const auto* row : rows) {
      flips += row->argmax->flips;
      total += row->argmax->rows;
      margin = std::min(margin, row->argmax->min_margin);
    }
    const auto* first = rows.front();
    result.findings.push_back(
        {FindingCode::argmax_flip, Severity::error, "parity",
         fmt::format("output '{}' on {}: {} of {} rows predict another class than {} "
                     "(smallest {} margin among them {:.3g}{}); first in {} row {}",
                     first->output, run_setting(*first), flips, total, source,
                     first->exact ? "exact (float64)" : source, margin,
                     first->exact ? ", larger than both sides' float noise" : "", first->data_set,
                     first->argmax->first_flip_row),
         first->output,
         first->exact ? "the class changes by more than float noise explains: find where ONNX Runtime departs "
                        "from " +
                            source + " (the localization below, or onnxproof localize)"
                      : "close logits near a tie flip; check the numeric drift above, or accept it with a "
                        "documented tolerance"});
  }
}

// Argmax differences inside the float noise, one info line per output: no flip, said.
void add_tie_findings(const AnalyzerInput& in) {
  const ParityResult& result = in.result;
  std::vector<Finding>& findings = in.result.findings;
  const std::string source = source_title(in.reference.framework);
  std::map<std::string, std::pair<int64_t, int64_t>> ties;  // output -> (tied rows, rows)
  for (const auto& row : result.rows) {
    if (row.optimization != GraphOptimization::all || !row.argmax || row.argmax->ties == 0) continue;
    if (result.advisory(row.provider)) continue;  // RUNTIME_DEFAULT_PRECISION counts those
    auto& [tied, total] = ties[row.output + " on " + row.provider];
    tied += row.argmax->ties;
    total += row.argmax->rows;
  }
  for (const auto& [where, counts] : ties) {
    findings.push_back({FindingCode::argmax_tie, Severity::info, "parity",
                        fmt::format("output {}: {} of {} rows pick another class than {} where the two classes "
                                    "are tied within float noise (not counted as flips)",
                                    where, counts.first, counts.second, source),
                        where.substr(0, where.find(" on ")), ""});
  }
}

}  // namespace onnxproof::parity_analyzers
