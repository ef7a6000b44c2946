#pragma once
// The parity findings as analyzers: each kind of finding is a named function over the comparison
// rows, grouped as findings report them (one per provider, level and output), in a file of its
// own; registry.cpp lists them in the order they run. ParityOptions::skipped_analyzers turns one
// off (tests), ParityResult::analyzer_findings counts what each added.

#include <map>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "onnxproof/parity/parity.h"
#include "onnxproof/parity/silent_failures.h"

namespace onnxproof::parity_analyzers {

// What findings group rows by: one finding per provider, optimization level and output.
// Ordered by the level's name, so findings keep the report's order ("all" before "disabled").
struct RowKey {
  std::string provider;
  GraphOptimization optimization;
  std::string output;
  bool operator<(const RowKey& other) const {
    return std::tuple(provider, optimization_name(optimization), output) <
           std::tuple(other.provider, optimization_name(other.optimization), other.output);
  }
};

RowKey key_of(const ParityRow& row);

// An output's name in the reference, "#k" for an unnamed one: what per-output figures are keyed by.
std::string output_key(const ReferenceCase& c, std::size_t k);

// Where a row ran, as findings say it: "cpu (all optimizations)", "openvino (f32)".
std::string run_setting(const ParityRow& row);

// The same provider and output at another optimization level.
RowKey at_level(const ParityRow& row, GraphOptimization level);

// The parity rows grouped the way findings report them: by (provider, optimization, output), and
// refused or failed runs by sizes (the model's problem, whatever the provider). Advisory rows
// (ProviderStatus::advisory) are left out: default_precision.cpp reads them.
struct RowGroups {
  std::map<RowKey, std::vector<const ParityRow*>> failed;
  std::map<RowKey, std::vector<const ParityRow*>> flipped;
  std::map<RowKey, std::vector<const ParityRow*>> nan_rows;
  std::map<RowKey, std::vector<const ParityRow*>> zero_rows;       // failed, all zeros where PyTorch's is not
  std::map<RowKey, std::vector<const ParityRow*>> saturated_rows;  // failed, saturated where PyTorch's is not
  std::map<std::pair<std::string, std::string_view>, const ParityRow*> rejected;  // (sizes, status name)
  std::set<std::pair<std::string, std::string>> disabled_passes;  // (data_set, output) that match unoptimized
};

RowGroups group_rows(const ParityResult& result);

// A silent-failure finding whose first node a later run of the intermediates may name.
struct LocateRequest {
  std::size_t finding = 0;  // index into ParityResult::findings
  const ParityRow* row = nullptr;
  SilentSign sign = SilentSign::non_finite;
};

// What an analyzer reads and where it writes: the reference, the grouped rows, the result whose
// findings it appends to, and the silent failures a later run may locate.
struct AnalyzerInput {
  const Reference& reference;
  const RowGroups& groups;
  ParityResult& result;
  std::vector<LocateRequest>& locate;
};

struct FindingAnalyzer {
  std::string_view name;  // kebab-case, as --skip-rule names simplify's rules
  void (*run)(const AnalyzerInput&);
};

// One per file of this folder.
void add_mismatch_findings(const AnalyzerInput& in);           // PARITY_MISMATCH (mismatch.cpp)
void add_flip_findings(const AnalyzerInput& in);               // ARGMAX_FLIP (argmax_findings.cpp)
void add_tie_findings(const AnalyzerInput& in);                // ARGMAX_TIE (argmax_findings.cpp)
void add_nan_findings(const AnalyzerInput& in);                // NAN_OR_INF (non_finite.cpp)
void add_silent_findings(const AnalyzerInput& in);             // OUTPUT_ALL_ZEROS, OUTPUT_SATURATED (silent.cpp)
void add_rejected_findings(const AnalyzerInput& in);           // SHAPE_REJECTED, RUN_FAILED (rejected.cpp)
void add_evidence_findings(const AnalyzerInput& in);           // EVIDENCE_WEAK (evidence.cpp)
void add_random_findings(const AnalyzerInput& in);             // RANDOM_OUTPUT (random.cpp)
void add_detection_set_findings(const AnalyzerInput& in);      // detection sets (detection_parity.cpp)
void add_default_precision_findings(const AnalyzerInput& in);  // RUNTIME_DEFAULT_PRECISION (default_precision.cpp)

/// The analyzers in the order they run.
std::span<const FindingAnalyzer> finding_analyzers();

/// Runs every analyzer not in `skipped` over `result`'s rows, counting each one's findings in
/// result.analyzer_findings; returns the silent failures whose first node may be located.
std::vector<LocateRequest> analyze_rows(const Reference& reference, const std::set<std::string>& skipped,
                                        ParityResult& result);

/// The first node whose output shows each silent failure of `requests`, added to its finding.
void locate_silent_failures(const std::filesystem::path& model, const Reference& reference,
                            const ParityOptions& options, const std::vector<LocateRequest>& requests,
                            ParityResult& result);

}  // namespace onnxproof::parity_analyzers
