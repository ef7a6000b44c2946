#pragma once
// A picture of the parity proof: one bar per case (its worst output), per provider and
// optimization level, on a log scale, each with the error its rule allowed; failures in red and
// cases that never ran (a refused shape) as grey bands. Written beside report.md as an SVG.

#include <string>
#include <vector>

#include "onnxproof/parity/parity.h"
#include "onnxproof/report/log_bar_chart.h"

namespace onnxproof {

/// The parity rows as a chart: every case, compared or not.
ChartSpec parity_chart(const std::vector<ParityRow>& rows);

/// The SVG of parity_chart(rows); empty when there are no rows.
std::string parity_plot_svg(const std::vector<ParityRow>& rows);

}  // namespace onnxproof
