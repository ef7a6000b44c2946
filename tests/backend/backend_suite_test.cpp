// Runs ONNX's own backend test suite of the pinned onnx (1.23.1: the node cases generated from
// the wheel's case definitions, and the simple, pytorch-converted and pytorch-operator suites it
// ships; tests/backend/generate_node_data.py) through the product's parity path: read_reference()
// and run_parity(), as `onnxproof parity MODEL --reference CASE` does (ONNX Runtime on the CPU,
// default tolerances per dtype). Cases ONNX Runtime or onnxproof cannot run are listed in
// skip_list.txt with a reason; a listed case still runs, and fails the test if it passes (the
// list must stay honest).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "onnxproof/check/check_model.h"
#include "onnxproof/model/model_io.h"
#include "onnxproof/simplify/simplify.h"
#include "test_data_sets.h"
#include "test_support.h"

namespace fs = std::filesystem;
using namespace onnxproof;
using onnxproof::testing::run_test_data_sets;
using onnxproof::testing::TempDir;

namespace {

const char* const k_suites[] = {"node", "simple", "pytorch-converted", "pytorch-operator"};

fs::path data_root() {
  const char* env = std::getenv("ONNXPROOF_BACKEND_DATA");
  return env ? fs::path(env) : fs::path(ONNXPROOF_BACKEND_DATA_DIR);
}

struct SkipEntry {
  std::string category;
  std::string reason;
};

// skip_list.txt and simplify_skip_list.txt: "suite/case  category: reason", '#' comments.
std::map<std::string, SkipEntry> read_skip_list(const fs::path& path) {
  std::map<std::string, SkipEntry> result;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream fields(line);
    std::string name;
    fields >> name;
    std::string rest;
    std::getline(fields, rest);
    rest.erase(0, rest.find_first_not_of(' '));
    const auto colon = rest.find(':');
    result[name] = {rest.substr(0, colon), colon == std::string::npos ? "" : rest.substr(colon + 2)};
  }
  return result;
}

const std::map<std::string, SkipEntry>& skip_list() {
  static const auto entries = read_skip_list(ONNXPROOF_BACKEND_SKIP_LIST);
  return entries;
}

// Cases that pass as exported but not once simplified: known simplifier gaps, each with a reason.
const std::map<std::string, SkipEntry>& simplify_skip_list() {
  static const auto entries = read_skip_list(ONNXPROOF_BACKEND_SIMPLIFY_SKIP_LIST);
  return entries;
}

std::vector<std::string> list_cases() {
  std::vector<std::string> cases;
  for (const char* suite : k_suites) {
    const fs::path folder = data_root() / suite;
    if (!fs::is_directory(folder)) continue;
    for (const auto& entry : fs::directory_iterator(folder)) {
      if (fs::exists(entry.path() / "model.onnx"))
        cases.push_back(std::string(suite) + "/" + entry.path().filename().string());
    }
  }
  std::sort(cases.begin(), cases.end());
  return cases;
}

struct Tally {
  int passed = 0;
  int failed = 0;
  std::map<std::string, int> skipped_by_category;
};

Tally& tally() {
  static Tally t;
  return t;
}

class BackendCase : public ::testing::TestWithParam<std::string> {};

TEST_P(BackendCase, MatchesExpectedOutputs) {
  const std::string& name = GetParam();
  const std::string problem = run_test_data_sets(data_root() / name / "model.onnx", data_root() / name);
  // For reviewing the skip list: every case's problem, one "suite/case<TAB>problem" line each.
  if (const char* path = std::getenv("ONNXPROOF_BACKEND_PROBLEMS"); path && !problem.empty()) {
    std::string line = problem.substr(0, problem.find('\n'));
    std::ofstream(path, std::ios::app) << name << '\t' << line << '\n';
  }
  const auto skip = skip_list().find(name);
  if (skip != skip_list().end()) {
    if (problem.empty()) {
      ++tally().failed;
      FAIL() << name << " passes now: remove it from skip_list.txt (" << skip->second.category << ")";
    }
    ++tally().skipped_by_category[skip->second.category];
    GTEST_SKIP() << skip->second.category << ": " << skip->second.reason << " [" << problem << "]";
  }
  if (problem.empty()) {
    ++tally().passed;
  } else {
    ++tally().failed;
    FAIL() << problem;
  }
}

// The simplifier on the same suite: every case that passes must still pass after simplification
// (the passes run, the checker and strict shape inference accept the result, ONNX Runtime's
// outputs still match ONNX's expected ones).
TEST_P(BackendCase, StillMatchesAfterSimplification) {
  const std::string& name = GetParam();
  if (skip_list().contains(name)) GTEST_SKIP() << "on the skip list";
  const auto known_gap = simplify_skip_list().find(name);
  if (known_gap != simplify_skip_list().end()) {
    auto model = load_model(data_root() / name / "model.onnx", LoadOptions{.load_external_data = true});
    ASSERT_TRUE(model);
    auto result = simplify_model(model->proto);
    TempDir dir;
    if (result && save_model(model->proto, dir / "model.onnx") &&
        run_test_data_sets(dir / "model.onnx", data_root() / name).empty()) {
      FAIL() << name << " simplifies correctly now: remove it from simplify_skip_list.txt";
    }
    GTEST_SKIP() << known_gap->second.category << ": " << known_gap->second.reason;
  }
  auto model = load_model(data_root() / name / "model.onnx", LoadOptions{.load_external_data = true});
  ASSERT_TRUE(model) << model.error().describe();
  auto result = simplify_model(model->proto);
  if (!result && result.error().describe().find("the simplified model is invalid") != std::string::npos) {
    // Models the checker rejects before simplifying are not the simplifier's to fix.
    auto original = load_model(data_root() / name / "model.onnx");
    ASSERT_TRUE(original);
    auto check = check_model(*original);
    if (check && (!check->checker_passed || !check->shape_inference_passed))
      GTEST_SKIP() << "invalid before simplification";
  }
  ASSERT_TRUE(result) << result.error().describe();
  TempDir dir;
  ASSERT_TRUE(save_model(model->proto, dir / "model.onnx"));
  EXPECT_EQ(run_test_data_sets(dir / "model.onnx", data_root() / name), "");
}

std::string test_name(const ::testing::TestParamInfo<std::string>& info) {
  std::string name = info.param;
  for (char& c : name) {
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  }
  return name;
}

INSTANTIATE_TEST_SUITE_P(OnnxBackend, BackendCase, ::testing::ValuesIn(list_cases()), test_name);

TEST(BackendSuite, SkipListNamesExistingCases) {
  const auto cases = list_cases();
  ASSERT_FALSE(cases.empty()) << "no backend test data under " << data_root()
                              << " (the backend_data test generates it)";
  for (const auto& [name, entry] : skip_list()) {
    EXPECT_TRUE(std::find(cases.begin(), cases.end(), name) != cases.end()) << "skip list names unknown case " << name;
    EXPECT_FALSE(entry.reason.empty()) << name << " has no reason in the skip list";
  }
}

// Prints the closing count and writes it where `make test` shows it.
class SummaryPrinter : public ::testing::Environment {
 public:
  void TearDown() override {
    const Tally& t = tally();
    int skipped = 0;
    std::ostringstream by_reason;
    for (const auto& [category, count] : t.skipped_by_category) {
      skipped += count;
      by_reason << "  skipped, " << category << ": " << count << "\n";
    }
    std::ostringstream text;
    text << "ONNX backend suite: " << t.passed << " passed, " << t.failed << " failed, " << skipped << " skipped\n"
         << by_reason.str();
    std::cout << text.str();
    if (const char* path = std::getenv("ONNXPROOF_BACKEND_SUMMARY")) std::ofstream(path) << text.str();
  }
};

const auto* const k_summary = ::testing::AddGlobalTestEnvironment(new SummaryPrinter);

}  // namespace
