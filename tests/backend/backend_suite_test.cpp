// Runs ONNX's own backend test suite (libonnx-testdata: node, simple, pytorch-converted and
// pytorch-operator cases) through the library: load the model, read test_data_set_*/input_*.pb,
// run ONNX Runtime on the CPU, compare with output_*.pb (rtol 1e-3, atol 1e-5 for floats, exact
// otherwise). Cases ONNX Runtime or onnxproof cannot run are listed in skip_list.txt with a reason;
// a listed case still runs, and fails the test if it passes (the list must stay honest).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "onnxproof/model/model_io.h"
#include "onnxproof/parity/compare.h"
#include "onnxproof/runtime/session.h"
#include "onnxproof/tensor/tensor_io.h"

namespace fs = std::filesystem;
using namespace onnxproof;

namespace {

const char* const k_suites[] = {"node", "simple", "pytorch-converted", "pytorch-operator"};

fs::path data_root() {
  const char* env = std::getenv("ONNXPROOF_BACKEND_DATA");
  return env ? fs::path(env) : fs::path("/usr/share/libonnx-testdata/data");
}

struct SkipEntry {
  std::string category;
  std::string reason;
};

// skip_list.txt: "suite/case  category: reason", '#' comments.
const std::map<std::string, SkipEntry>& skip_list() {
  static const auto entries = [] {
    std::map<std::string, SkipEntry> result;
    std::ifstream in(ONNXPROOF_BACKEND_SKIP_LIST);
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
  }();
  return entries;
}

std::vector<std::string> list_cases() {
  std::vector<std::string> cases;
  for (const char* suite : k_suites) {
    const fs::path folder = data_root() / suite;
    if (!fs::is_directory(folder)) continue;
    for (const auto& entry : fs::directory_iterator(folder)) {
      if (fs::exists(entry.path() / "model.onnx")) cases.push_back(std::string(suite) + "/" + entry.path().filename().string());
    }
  }
  std::sort(cases.begin(), cases.end());
  return cases;
}

std::vector<fs::path> numbered_files(const fs::path& folder, const std::string& prefix) {
  std::vector<fs::path> files;
  for (int k = 0;; ++k) {
    const fs::path file = folder / (prefix + std::to_string(k) + ".pb");
    if (!fs::exists(file)) break;
    files.push_back(file);
  }
  return files;
}

// ONNX 1.12's generator (numpy, which has no bfloat16) stored bfloat16 tensors as uint16 bit
// patterns; read them back as the bfloat16 the model declares.
Tensor as_bfloat16_if_stored_as_uint16(Tensor tensor, DType declared) {
  if (declared != DType::bfloat16 || tensor.dtype() != DType::uint16) return tensor;
  std::vector<std::byte> bytes(tensor.bytes().begin(), tensor.bytes().end());
  return *Tensor::from_bytes(DType::bfloat16, tensor.shape(), std::move(bytes));
}

// Runs every data set of one case; returns "" on success, else what went wrong.
std::string run_case(const fs::path& folder) {
  const fs::path model_path = folder / "model.onnx";
  auto model = load_model(model_path);
  if (!model) return "load: " + model.error().describe();
  auto session = Session::open(model_path, SessionOptions{.intra_op_threads = 1});
  if (!session) return "session: " + session.error().describe();

  std::vector<fs::path> data_sets;
  for (const auto& entry : fs::directory_iterator(folder)) {
    if (entry.is_directory() && entry.path().filename().string().starts_with("test_data_set_")) data_sets.push_back(entry.path());
  }
  std::sort(data_sets.begin(), data_sets.end());
  if (data_sets.empty()) return "no test_data_set_* folder";

  for (const auto& data_set : data_sets) {
    const std::string set_name = data_set.filename().string();
    std::vector<NamedTensor> inputs;
    for (const auto& file : numbered_files(data_set, "input_")) {
      auto tensor = read_tensor_pb(file);
      if (!tensor) return set_name + ": " + tensor.error().describe();
      inputs.push_back(std::move(*tensor));
    }
    // Inputs are matched by the name stored in the file, or by position where it has none.
    std::vector<Feed> feeds;
    const auto& declared = session->inputs();
    for (std::size_t i = 0; i < inputs.size(); ++i) {
      std::string name = inputs[i].name;
      if (name.empty() && i < declared.size()) name = declared[i].name;
      for (const auto& value : declared) {
        if (value.name == name) inputs[i].tensor = as_bfloat16_if_stored_as_uint16(std::move(inputs[i].tensor), value.dtype);
      }
      feeds.push_back({name, &inputs[i].tensor});
    }
    auto outputs = session->run(feeds);
    if (!outputs) return set_name + ": " + outputs.error().describe();

    const auto expected_files = numbered_files(data_set, "output_");
    if (expected_files.size() != outputs->size()) {
      return set_name + ": " + std::to_string(expected_files.size()) + " expected outputs, ONNX Runtime gave " +
             std::to_string(outputs->size());
    }
    for (std::size_t k = 0; k < expected_files.size(); ++k) {
      auto expected = read_tensor_pb(expected_files[k]);
      if (!expected) return set_name + ": " + expected.error().describe();
      expected->tensor = as_bfloat16_if_stored_as_uint16(std::move(expected->tensor), (*outputs)[k].dtype());
      const Comparison comparison = compare_tensors(expected->tensor, (*outputs)[k], Tolerance{1e-3, 1e-5});
      if (!comparison.allclose) {
        std::string detail = comparison.describe();
        if (!comparison.shape_match) {
          detail += " (expected " + format_shape(expected->tensor.shape()) + ", got " + format_shape((*outputs)[k].shape()) + ")";
        } else if (!comparison.dtype_match) {
          detail += " (expected " + dtype_name(expected->tensor.dtype()) + ", got " + dtype_name((*outputs)[k].dtype()) + ")";
        }
        return set_name + ": output " + std::to_string(k) + " '" + session->outputs()[k].name + "': " + detail;
      }
    }
  }
  return "";
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
  const std::string problem = run_case(data_root() / name);
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
  ASSERT_FALSE(cases.empty()) << "no backend test data under " << data_root() << " (install libonnx-testdata)";
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
