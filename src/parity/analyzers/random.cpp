#include "analyzer.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

#include "onnxproof/core/source_framework.h"

namespace onnxproof::parity_analyzers {

// RANDOM_OUTPUT: one warning naming the outputs a random operator feeds, left unproved by value.
void add_random_findings(const AnalyzerInput& in) {
  const Reference& reference = in.reference;
  const ParityResult& result = in.result;
  std::vector<Finding>& findings = in.result.findings;
  std::vector<std::string> named;
  for (const auto& [output, cause] : reference.random_outputs) {
    const bool compared = std::any_of(result.rows.begin(), result.rows.end(),
                                      [&](const ParityRow& row) { return row.output == output && row.compared(); });
    if (compared) named.push_back(fmt::format("'{}' ({})", output, cause));
  }
  if (named.empty()) return;
  findings.push_back({FindingCode::random_output, Severity::warning, "parity",
                      fmt::format("output(s) {} depend on a random operator: ONNX Runtime and {} draw other numbers "
                                  "by construction, so they were checked for shape, dtype, NaN/Inf and value domain "
                                  "only and are not proved value by value; the other outputs are proved as usual",
                                  fmt::join(named, ", "), source_title(reference.framework)),
                      reference.random_outputs.begin()->first,
                      "to prove them, take the random values as an input of the model (sample outside it), or "
                      "check their distribution yourself"});
}

}  // namespace onnxproof::parity_analyzers
