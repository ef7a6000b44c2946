#pragma once
// Runs the onnxproof binary for end-to-end tests and checks its one-line errors.

#include <filesystem>
#include <string>
#include <vector>

namespace onnxproof::testing {

struct CliResult {
  int exit_code = -1;
  std::string out;
  std::string err;
};

/// Runs `binary args...` with stdin from /dev/null; captures stdout, stderr and the exit code.
CliResult run_cli(const std::string& binary, const std::vector<std::string>& args);

/// The whole content of a text file ("" when missing).
std::string read_text(const std::filesystem::path& path);

/// Checks the exit code and that stderr is exactly one line "onnxproof: error: ..." holding
/// `fragment`.
void expect_one_line_error(const CliResult& result, int exit_code, const std::string& fragment);

/// Like expect_one_line_error, but progress lines may come first: exactly one error line, the last.
void expect_error_after_progress(const CliResult& result, int exit_code, const std::string& fragment);

}  // namespace onnxproof::testing
