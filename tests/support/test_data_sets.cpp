#include "test_data_sets.h"

#include "onnxproof/parity/parity.h"

namespace onnxproof::testing {

std::string run_test_data_sets(const std::filesystem::path& model, const std::filesystem::path& folder) {
  auto reference = read_reference(folder);
  if (!reference) return "reference: " + reference.error().describe();
  ParityOptions options;
  options.compare_optimization_off = false;
  options.intra_op_threads = 1;
  auto result = run_parity(model, *reference, options);
  if (!result) return "parity: " + result.error().describe();
  if (result->passed()) return "";
  for (const auto& provider : result->providers) {
    if (!provider.ran) return "provider " + provider.provider + " did not run: " + provider.reason;
  }
  for (const auto& row : result->rows) {
    if (!row.compared()) return row.data_set + ": " + std::string(row_status_name(row.status)) + ": " + row.note;
  }
  for (const auto& finding : result->findings) {
    if (finding.severity == Severity::error) return std::string(finding.code_name()) + ": " + finding.message;
  }
  return "the proof did not pass";
}

}  // namespace onnxproof::testing
