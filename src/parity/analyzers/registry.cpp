// The order the analyzers run in, and the loop that runs them. Adding a kind of parity finding is
// a file in this folder and a line here.
#include "analyzer.h"

#include <array>

#include "../detection_parity.h"

namespace onnxproof::parity_analyzers {

// Detection sets are compared as matched sets (detection_parity.cpp), whose findings it makes.
void add_detection_set_findings(const AnalyzerInput& in) {
  detail::add_detection_findings(in.result, in.result.findings);
}

namespace {

constexpr std::array k_analyzers = {
    FindingAnalyzer{"mismatch", add_mismatch_findings},
    FindingAnalyzer{"argmax-flip", add_flip_findings},
    FindingAnalyzer{"argmax-tie", add_tie_findings},
    FindingAnalyzer{"non-finite", add_nan_findings},
    FindingAnalyzer{"silent", add_silent_findings},
    FindingAnalyzer{"rejected", add_rejected_findings},
    FindingAnalyzer{"evidence", add_evidence_findings},
    FindingAnalyzer{"random-output", add_random_findings},
    FindingAnalyzer{"detection-sets", add_detection_set_findings},
    FindingAnalyzer{"default-precision", add_default_precision_findings},
};

}  // namespace

std::span<const FindingAnalyzer> finding_analyzers() { return k_analyzers; }

std::vector<LocateRequest> analyze_rows(const Reference& reference, const std::set<std::string>& skipped,
                                        ParityResult& result) {
  const RowGroups groups = group_rows(result);
  std::vector<LocateRequest> requests;
  const AnalyzerInput input{reference, groups, result, requests};
  for (const auto& analyzer : k_analyzers) {
    if (skipped.contains(std::string(analyzer.name))) continue;
    const std::size_t before = result.findings.size();
    analyzer.run(input);
    result.analyzer_findings[std::string(analyzer.name)] = result.findings.size() - before;
  }
  return requests;
}

}  // namespace onnxproof::parity_analyzers

namespace onnxproof {

std::vector<std::string_view> parity_analyzer_names() {
  std::vector<std::string_view> names;
  for (const auto& analyzer : parity_analyzers::finding_analyzers()) names.push_back(analyzer.name);
  return names;
}

}  // namespace onnxproof
