// Runs ONNX's own backend test suite of the pinned onnx (1.23.2: the node cases generated from
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
#include "onnxproof/parity/parity.h"
#include "onnxproof/simplify/simplify.h"
#include "test_data_sets.h"
#include "test_support.h"

namespace fs = std::filesystem;
using namespace onnxproof;
using onnxproof::testing::run_test_data_sets;
using onnxproof::testing::TempDir;

namespace {

// node-constant: the node cases with every input after the first a constant (what exporters write
// for starts, steps, pads, shapes), so the rules that read constants see them; shape-keeping:
// onnxproof's own cases of nodes that keep the shape and change the values (a reversing Slice,
// a shifting Pad), expected outputs from numpy (tests/backend/shape_keeping_cases.py).
const char* const k_suites[] = {"node",   "node-constant",     "shape-keeping",
                                "simple", "pytorch-converted", "pytorch-operator"};

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

// A node-constant case is the node case with constants: what ONNX Runtime cannot run there it
// cannot run here. Returns the entry that applies (its own first), or nullptr.
const SkipEntry* skip_entry(const std::string& name) {
  if (const auto own = skip_list().find(name); own != skip_list().end()) return &own->second;
  const std::string prefix = "node-constant/";
  if (name.rfind(prefix, 0) != 0) return nullptr;
  const auto inherited = skip_list().find("node/" + name.substr(prefix.size()));
  return inherited == skip_list().end() ? nullptr : &inherited->second;
}

bool inherits_skip(const std::string& name) { return !skip_list().contains(name) && skip_entry(name) != nullptr; }

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
  if (const SkipEntry* skip = skip_entry(name)) {
    // An inherited entry may not hold for the variant (a constant ONNX Runtime folds at load):
    // only a case's own entry must keep failing.
    if (problem.empty() && !inherits_skip(name)) {
      ++tally().failed;
      FAIL() << name << " passes now: remove it from skip_list.txt (" << skip->category << ")";
    }
    ++tally().skipped_by_category[skip->category];
    GTEST_SKIP() << skip->category << ": " << skip->reason << " [" << problem << "]";
  }
  if (problem.empty()) {
    ++tally().passed;
  } else {
    ++tally().failed;
    FAIL() << problem;
  }
}

// Whether the case's model, as given, fails the checker or strict shape inference: a model the
// simplifier cannot be blamed for leaving invalid.
bool invalid_before_simplification(const fs::path& model_path) {
  auto original = load_model(model_path);
  if (!original) return true;
  auto check = check_model(*original);
  return check && (!check->checker_passed || !check->shape_inference_passed);
}

// The simplified model against the original, both run by ONNX Runtime on the case's inputs: the
// proof `onnxproof simplify --reference` makes. "" when it holds; "unprovable: ..." when ONNX
// Runtime cannot run the original or onnxproof cannot read the data (the simplified model was
// still checked valid).
std::string prove_against_original(const fs::path& original, const fs::path& simplified, const fs::path& folder) {
  auto reference = read_reference(folder);
  if (!reference) return "unprovable: " + reference.error().describe();
  auto proof = prove_simplification(original, simplified, &*reference, {});
  if (!proof) return "unprovable: " + proof.error().describe();
  if (proof->cases == 0) return "unprovable: the original runs no case";
  for (const auto& finding : proof->findings) {
    if (finding.severity == Severity::error) return finding.message;
  }
  return "";
}

// The simplifier on every case of the suites: the passes run, the checker and strict shape
// inference accept the result; a case that passes as given must still match ONNX's expected
// outputs, and every case ONNX Runtime can run at all (the skip list's mismatches included) must
// match the original's outputs. Known gaps are in simplify_skip_list.txt, each with its reason.
TEST_P(BackendCase, StillMatchesAfterSimplification) {
  const std::string& name = GetParam();
  const fs::path original = data_root() / name / "model.onnx";
  auto model = load_model(original, LoadOptions{.load_external_data = true});
  ASSERT_TRUE(model) << model.error().describe();
  auto result = simplify_model(model->proto);
  // The simplifier names an input the checker or strict shape inference rejects (invalid_input);
  // either way the model was invalid before any pass ran.
  if (!result &&
      (result.error().code() == ErrorCode::invalid_input ||
       result.error().describe().find("the simplified model is invalid") != std::string::npos) &&
      invalid_before_simplification(original))
    GTEST_SKIP() << "invalid before simplification";
  TempDir dir;
  std::string problem = result ? "" : result.error().describe();
  if (result && !save_model(model->proto, dir / "model.onnx")) problem = "cannot save the simplified model";
  if (problem.empty() && !skip_entry(name)) problem = run_test_data_sets(dir / "model.onnx", data_root() / name);
  if (problem.empty() && result && result->changed()) {
    problem = prove_against_original(original, dir / "model.onnx", data_root() / name);
    if (problem.rfind("unprovable: ", 0) == 0) problem.clear();  // checked valid: all that can be shown
  }
  const auto known_gap = simplify_skip_list().find(name);
  if (known_gap != simplify_skip_list().end()) {
    if (problem.empty()) FAIL() << name << " simplifies correctly now: remove it from simplify_skip_list.txt";
    GTEST_SKIP() << known_gap->second.category << ": " << known_gap->second.reason << " [" << problem << "]";
  }
  EXPECT_EQ(problem, "");
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
  for (const auto& [name, entry] : simplify_skip_list()) {
    EXPECT_TRUE(std::find(cases.begin(), cases.end(), name) != cases.end())
        << "simplify skip list names unknown case " << name;
    EXPECT_FALSE(entry.reason.empty()) << name << " has no reason in the simplify skip list";
  }
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
