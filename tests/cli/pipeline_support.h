#pragma once
// What the pipeline's end-to-end tests share (pipeline_test.cpp, localization_test.cpp): the
// fixture models, running the CLI, reading a run's JSON, and the clean run many tests start from.

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli_runner.h"

namespace onnxproof::testing::pipeline_support {

namespace fs = std::filesystem;
using nlohmann::json;

inline const std::string k_traps = std::string(ONNXPROOF_TEST_SOURCE_DIR) + "/fixtures/trap_models.py";

inline CliResult onnxproof_cli(const std::vector<std::string>& args) { return run_cli(ONNXPROOF_CLI, args); }

inline json read_json(const fs::path& path) {
  const std::string text = read_text(path);
  return text.empty() ? json() : json::parse(text);
}

inline std::vector<std::string> codes(const json& findings, const std::string& severity = "error") {
  std::vector<std::string> result;
  for (const auto& f : findings) {
    if (f["severity"] == severity) result.push_back(f["code"]);
  }
  return result;
}

inline bool contains(const std::vector<std::string>& values, const std::string& value) {
  return std::find(values.begin(), values.end(), value) != values.end();
}

inline CliResult pipeline(const fs::path& out, const std::string& factory, const std::string& input,
                          std::vector<std::string> extra = {}) {
  std::vector<std::string> args = {"pipeline",  "--model", k_traps + ":" + factory,
                                   "--input",   input,     "--dynamic",
                                   "x:0=batch", "--out",   out.string()};
  if (std::find(extra.begin(), extra.end(), "--samples") == extra.end()) extra.insert(extra.end(), {"--samples", "1"});
  args.insert(args.end(), extra.begin(), extra.end());
  return onnxproof_cli(args);
}

// The clean run many tests start from (dict_output, the default options above): made once per
// ctest run by the pipeline_clean_run fixture (tests/CMakeLists.txt sets ONNXPROOF_CLEAN_RUN) and
// copied into `out`, which each test then owns; made here when the binary runs on its own. One
// cold front end costs 5-10 s, most of it importing torch and the exporter.
inline ::testing::AssertionResult clean_run(const fs::path& out) {
  const char* shared = std::getenv("ONNXPROOF_CLEAN_RUN");
  if (shared != nullptr && fs::exists(fs::path(shared) / "report.json")) {
    std::error_code error;
    fs::copy(shared, out, fs::copy_options::recursive | fs::copy_options::overwrite_existing, error);
    if (error) return ::testing::AssertionFailure() << "copying " << shared << ": " << error.message();
    return ::testing::AssertionSuccess();
  }
  const auto result = pipeline(out, "dict_output", "x=2x8:float32");
  if (result.exit_code != 0) return ::testing::AssertionFailure() << result.out << result.err;
  return ::testing::AssertionSuccess();
}

}  // namespace onnxproof::testing::pipeline_support
