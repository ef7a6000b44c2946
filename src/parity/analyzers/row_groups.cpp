#include "analyzer.h"

#include <tuple>

namespace onnxproof::parity_analyzers {

std::string output_key(const ReferenceCase& c, std::size_t k) {
  return c.outputs[k].name.empty() ? "#" + std::to_string(k) : c.outputs[k].name;
}

RowKey key_of(const ParityRow& row) { return {row.provider, row.optimization, row.output}; }

std::string run_setting(const ParityRow& row) {
  // OpenVINO has no optimization levels; what it computed in is what tells its rows apart.
  if (!row.precision.empty()) return row.provider + " (" + row.precision + ")";
  return row.provider + " (" + std::string(optimization_name(row.optimization)) + " optimizations)";
}

RowKey at_level(const ParityRow& row, GraphOptimization level) { return {row.provider, level, row.output}; }

RowGroups group_rows(const ParityResult& result) {
  RowGroups groups;
  for (const auto& row : result.rows) {
    if (result.advisory(row.provider)) continue;
    const RowKey key = key_of(row);
    if (!row.compared()) {
      groups.rejected.emplace(std::pair(describe_sizes(row.sizes), row_status_name(row.status)), &row);
      continue;
    }
    if (!row.comparison.allclose) groups.failed[key].push_back(&row);
    if (row.argmax && row.argmax->flips > 0) groups.flipped[key].push_back(&row);
    if (row.comparison.nan_mismatches > 0) groups.nan_rows[key].push_back(&row);
    // Zeros and saturation count only where the comparison failed: a tiny true answer that
    // ONNX Runtime rounds to zero within the budget is no silent failure.
    if (!row.comparison.allclose && row.silent.all_zeros) groups.zero_rows[key].push_back(&row);
    if (!row.comparison.allclose && row.silent.saturated > 0) groups.saturated_rows[key].push_back(&row);
    if (row.optimization == GraphOptimization::disabled && row.status == RowStatus::pass)
      groups.disabled_passes.emplace(row.data_set, row.output);
  }
  return groups;
}

}  // namespace onnxproof::parity_analyzers
