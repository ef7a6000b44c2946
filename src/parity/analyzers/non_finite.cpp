#include "analyzer.h"

#include <fmt/format.h>

#include <algorithm>

#include "onnxproof/core/source_framework.h"

namespace onnxproof::parity_analyzers {

void add_nan_findings(const AnalyzerInput& in) {
  const auto& [reference, groups, result, requests] = in;
  const auto& nan_rows = groups.nan_rows;
  for (const auto& [key, rows] : nan_rows) {
    const auto* first = rows.front();
    // One finding per output and provider: the disabled level's only when "all" has none.
    if (first->optimization == GraphOptimization::disabled &&
        nan_rows.contains(at_level(*first, GraphOptimization::all)))
      continue;
    int64_t positions = 0;
    for (const auto* row : rows) positions += row->comparison.nan_mismatches;
    const auto showing =
        std::find_if(rows.begin(), rows.end(), [](const ParityRow* row) { return row->silent.non_finite > 0; });
    if (showing != rows.end()) requests.push_back({result.findings.size(), *showing, SilentSign::non_finite});
    result.findings.push_back(
        {FindingCode::nan_or_inf, Severity::error, "parity",
         fmt::format("output '{}' on {}: {} NaN/Inf positions differ from {}'s across {} "
                     "cases",
                     first->output, run_setting(*first), positions, source_title(reference.framework), rows.size()),
         rows.front()->output, "look for log/div/sqrt of zero or overflow in float16 in one runtime only"});
  }
}

}  // namespace onnxproof::parity_analyzers
