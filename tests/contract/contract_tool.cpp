// The engine's side of tests/python/test_contract.py, through the generated contract code:
//   contract_tool digests              -> "NAME VERSION SHA256" per schema the engine was generated from
//   contract_tool read NAME FILE       -> "ok", or the reader's error (exit 1)
//   contract_tool report FILE          -> writes the report.json of a small finished Report
#include <iostream>
#include <string>

#include "onnxproof/contract/contracts.h"
#include "onnxproof/core/atomic_file.h"
#include "onnxproof/core/json_file.h"
#include "onnxproof/report/report.h"

namespace {

using namespace onnxproof;

Expected<void> read_document(const std::string& name, const std::filesystem::path& file) {
  ONNXPROOF_TRY_ASSIGN(const nlohmann::json json, read_json_object(file, ErrorCode::invalid_input));
  const auto check = [](const auto& read) -> Expected<void> {
    if (!read) return std::unexpected(read.error());
    return {};
  };
  if (name == "config") return check(contract::read_config(json, file, ErrorCode::invalid_input));
  if (name == "export") return check(contract::read_export(json, file, ErrorCode::invalid_input));
  if (name == "cases") return check(contract::read_cases(json, file, ErrorCode::invalid_input));
  if (name == "localize") return check(contract::read_localize(json, file, ErrorCode::invalid_input));
  if (name == "generation") return check(contract::read_generation(json, file, ErrorCode::invalid_input));
  if (name == "report") return check(contract::read_report(json, file, ErrorCode::invalid_input));
  return fail(ErrorCode::usage, "no schema " + name);
}

// A report with a step, a finding and a headline, as the pipeline finishes one.
Report small_report() {
  Report report;
  report.model = "tests/contract";
  report.versions = {{"onnxproof", "test"}};
  StepReport step;
  step.name = "check";
  step.status = StepStatus::pass;
  report.steps.push_back(step);
  report.findings.push_back(
      Finding{FindingCode::exporter_fallback, Severity::info, "export", "fell back", "", "a hint"});
  report.headline.push_back({"Is the model valid ONNX?", "yes", "checker"});
  finish_report(report);
  return report;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string command = argc > 1 ? argv[1] : "";
  if (command == "digests" && argc == 2) {
    for (const auto& schema : contract::k_schemas)
      std::cout << schema.name << ' ' << schema.version << ' ' << schema.sha256 << '\n';
    return 0;
  }
  if (command == "read" && argc == 4) {
    const auto read = read_document(argv[2], argv[3]);
    std::cout << (read ? std::string("ok") : read.error().describe()) << '\n';
    return read ? 0 : 1;
  }
  if (command == "report" && argc == 3) {
    const auto written = write_file_atomically(argv[2], report_to_json(small_report()).dump(2) + "\n");
    if (!written) std::cerr << written.error().describe() << '\n';
    return written ? 0 : 1;
  }
  std::cerr << "usage: contract_tool digests | read NAME FILE | report FILE\n";
  return 2;
}
