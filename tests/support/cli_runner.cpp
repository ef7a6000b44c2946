#include "cli_runner.h"

#include <gtest/gtest.h>
#include <sys/wait.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "test_support.h"

namespace onnxproof::testing {
namespace {

std::string quote(const std::string& arg) {
  std::string quoted = "'";
  for (const char c : arg) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return quoted + "'";
}

int count_lines(const std::string& text) { return static_cast<int>(std::count(text.begin(), text.end(), '\n')); }

constexpr std::string_view k_prefix = "onnxproof: error: ";

}  // namespace

std::string read_text(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

CliResult run_cli(const std::string& binary, const std::vector<std::string>& args) {
  TempDir capture;
  std::string command = quote(binary);
  for (const auto& arg : args) command += " " + quote(arg);
  command += " >" + quote((capture / "out").string()) + " 2>" + quote((capture / "err").string()) + " </dev/null";
  const int status = std::system(command.c_str());
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, read_text(capture / "out"), read_text(capture / "err")};
}

void expect_one_line_error(const CliResult& result, int exit_code, const std::string& fragment) {
  EXPECT_EQ(result.exit_code, exit_code) << result.err;
  EXPECT_EQ(count_lines(result.err), 1) << result.err;
  EXPECT_TRUE(result.err.starts_with(k_prefix)) << result.err;
  EXPECT_NE(result.err.find(fragment), std::string::npos) << result.err;
}

void expect_error_after_progress(const CliResult& result, int exit_code, const std::string& fragment) {
  EXPECT_EQ(result.exit_code, exit_code) << result.err;
  int error_lines = 0;
  std::string last;
  std::istringstream lines(result.err);
  for (std::string line; std::getline(lines, line);) {
    if (line.starts_with(k_prefix)) ++error_lines;
    last = line;
  }
  EXPECT_EQ(error_lines, 1) << result.err;
  EXPECT_TRUE(last.starts_with(k_prefix)) << result.err;
  EXPECT_NE(last.find(fragment), std::string::npos) << result.err;
}

}  // namespace onnxproof::testing
