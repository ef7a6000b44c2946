// Reading a reference folder: ONNX-test-style data sets plus onnxproof's cases.json.
#include <algorithm>

#include <nlohmann/json.hpp>

#include "onnxproof/core/atomic_file.h"
#include "onnxproof/parity/parity.h"

namespace onnxproof {
namespace fs = std::filesystem;

namespace {

Expected<std::vector<NamedTensor>> read_numbered(const fs::path& folder, const std::string& prefix) {
  std::vector<NamedTensor> tensors;
  for (int k = 0;; ++k) {
    const fs::path file = folder / (prefix + std::to_string(k) + ".pb");
    if (!fs::exists(file)) break;
    ONNXPROOF_TRY_ASSIGN(auto tensor, read_tensor_pb(file));
    tensors.push_back(std::move(tensor));
  }
  return tensors;
}

// Sorts test_data_set_2 before test_data_set_10.
int data_set_number(const fs::path& folder) {
  const std::string name = folder.filename().string();
  return std::atoi(name.c_str() + std::string("test_data_set_").size());
}

}  // namespace

Expected<Reference> read_reference(const fs::path& dir) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return fail(ErrorCode::not_found, "no such reference folder: " + dir.string());
  std::vector<fs::path> folders;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    if (entry.is_directory() && entry.path().filename().string().starts_with("test_data_set_"))
      folders.push_back(entry.path());
  }
  std::sort(folders.begin(), folders.end(),
            [](const fs::path& a, const fs::path& b) { return data_set_number(a) < data_set_number(b); });
  if (folders.empty()) return fail(ErrorCode::invalid_input, dir.string() + " holds no test_data_set_* folder");

  Reference reference;
  nlohmann::json manifest = nlohmann::json::object();  // ONNX's own test folders have no cases.json
  if (fs::exists(dir / "cases.json")) {
    ONNXPROOF_TRY_ASSIGN(const std::string text, read_file(dir / "cases.json", uint64_t{64} << 20));
    try {
      manifest = nlohmann::json::parse(text);
      const nlohmann::json examples = manifest.value("dynamic_axes", nlohmann::json::object());
      for (const auto& [label, size] : examples.items()) reference.example_sizes[label] = size.get<int64_t>();
    } catch (const nlohmann::json::exception& error) {
      return fail(ErrorCode::invalid_input, (dir / "cases.json").string() + " is malformed: " + error.what());
    }
  }
  for (const auto& folder : folders) {
    ReferenceCase reference_case;
    reference_case.data_set = folder.filename().string();
    ONNXPROOF_TRY_ASSIGN(reference_case.inputs, read_numbered(folder, "input_"));
    ONNXPROOF_TRY_ASSIGN(reference_case.outputs, read_numbered(folder, "output_"));
    // A model may have no inputs (ONNX's Constant tests), never no outputs.
    if (reference_case.outputs.empty()) {
      return fail(ErrorCode::invalid_input, folder.string() + " lacks output_0.pb");
    }
    if (fs::exists(folder / "labels.pb")) {
      ONNXPROOF_TRY_ASSIGN(auto labels, read_tensor_pb(folder / "labels.pb"));
      reference_case.labels = std::move(labels.tensor);
    }
    const nlohmann::json cases = manifest.value("cases", nlohmann::json::array());
    for (const auto& entry : cases) {
      if (entry.value("data_set", "") != reference_case.data_set) continue;
      const nlohmann::json sizes = entry.value("sizes", nlohmann::json::object());
      for (const auto& [label, size] : sizes.items()) reference_case.sizes[label] = size.get<int64_t>();
      reference_case.sample = entry.value("sample", 0);
      reference_case.source = entry.value("source", "");
    }
    reference.cases.push_back(std::move(reference_case));
  }
  return reference;
}

}  // namespace onnxproof
