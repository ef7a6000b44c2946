// Reading a reference folder: ONNX-test-style data sets plus onnxproof's cases.json.
#include <algorithm>

#include <nlohmann/json.hpp>

#include "onnxproof/contract/cases.h"
#include "onnxproof/core/atomic_file.h"
#include "onnxproof/core/json_file.h"
#include "onnxproof/core/numbered_name.h"
#include "onnxproof/parity/parity.h"

namespace onnxproof {
namespace fs = std::filesystem;

static_assert(k_cases_schema == contract::k_cases_version, "parity.h names another version than schemas/ holds");

namespace {

// Every PREFIXk.pb of a data set, numbered from 0. Evidence that would go unread is refused: a
// file past a gap in the numbers, or a second file carrying a tensor name another file has (only
// one of the two would be compared, and the verdict could pass on the other).
Expected<std::vector<NamedTensor>> read_numbered(const fs::path& folder, const std::string& prefix) {
  std::vector<NamedTensor> tensors;
  std::vector<fs::path> files;
  std::error_code ec;
  for (int k = 0;; ++k) {
    const fs::path file = folder / (prefix + std::to_string(k) + ".pb");
    if (!fs::exists(fs::symlink_status(file, ec))) break;
    ONNXPROOF_TRY_ASSIGN(auto tensor, read_tensor_pb(file));
    for (std::size_t j = 0; j < tensors.size(); ++j) {
      if (!tensor.name.empty() && tensors[j].name == tensor.name)
        return fail(ErrorCode::invalid_input, files[j].string() + " and " + file.string() + " both hold '" +
                                                  tensor.name + "'; only one of them would be compared");
    }
    tensors.push_back(std::move(tensor));
    files.push_back(file);
  }
  for (const auto& entry : fs::directory_iterator(folder, ec)) {
    const auto number = number_after(entry.path().stem().string(), prefix);
    if (entry.path().extension() == ".pb" && number && *number >= tensors.size())
      return fail(ErrorCode::invalid_input, entry.path().string() + " would never be read: " + prefix +
                                                std::to_string(tensors.size()) +
                                                ".pb is missing (a data set numbers its files from 0 without gaps)");
  }
  return tensors;
}

// Sorts test_data_set_2 before test_data_set_10.
int data_set_number(const fs::path& folder) {
  const std::string name = folder.filename().string();
  return std::atoi(name.c_str() + std::string("test_data_set_").size());
}

}  // namespace

Expected<CasesManifest> read_cases_manifest(const fs::path& path) {
  ONNXPROOF_TRY_ASSIGN(const nlohmann::json json, read_json_object(path, ErrorCode::invalid_input));
  // Folders frozen before the schema field existed have none; any other version is not ours.
  ONNXPROOF_TRY_ASSIGN(const contract::CasesDocument read, contract::read_cases(json, path, ErrorCode::invalid_input));
  CasesManifest manifest;
  manifest.example_sizes = read.dynamic_axes.value_or(std::map<std::string, int64_t>{});
  for (const auto& entry : read.cases.value_or(std::vector<contract::CasesEntry>{})) {
    manifest.cases.push_back({entry.data_set, entry.sizes.value_or(std::map<std::string, int64_t>{}),
                              static_cast<int>(entry.sample.value_or(0)), entry.source.value_or("")});
  }
  for (const auto& set : read.detections.value_or(std::vector<contract::CasesDetectionSet>{})) {
    manifest.detection_sets.push_back({set.boxes, set.scores, set.labels, set.extra, set.score_threshold});
  }
  for (const auto& name : read.random_outputs.value_or(std::vector<std::string>{}))
    manifest.random_outputs.emplace(name, "random by the reference (cases.json random_outputs)");
  return manifest;
}

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
  CasesManifest manifest;  // ONNX's own test folders have no cases.json
  if (fs::exists(dir / "cases.json")) {
    ONNXPROOF_TRY_ASSIGN(manifest, read_cases_manifest(dir / "cases.json"));
    reference.example_sizes = manifest.example_sizes;
    reference.detection_sets = manifest.detection_sets;
    reference.random_outputs = manifest.random_outputs;
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
    for (std::size_t k = 0; k < reference_case.outputs.size(); ++k) {
      const fs::path file = folder / ("exact_output_" + std::to_string(k) + ".pb");
      std::optional<Tensor> exact;
      if (fs::exists(file)) {
        ONNXPROOF_TRY_ASSIGN(auto tensor, read_tensor_pb(file));
        exact = std::move(tensor.tensor);
      }
      reference_case.exact_outputs.push_back(std::move(exact));
    }
    if (fs::exists(folder / "labels.pb")) {
      ONNXPROOF_TRY_ASSIGN(auto labels, read_tensor_pb(folder / "labels.pb"));
      reference_case.labels = std::move(labels.tensor);
    }
    for (const auto& entry : manifest.cases) {
      if (entry.data_set != reference_case.data_set) continue;
      reference_case.sizes = entry.sizes;
      reference_case.sample = entry.sample;
      reference_case.source = entry.source;
    }
    reference.cases.push_back(std::move(reference_case));
  }
  return reference;
}

const Tensor* exact_output(const ReferenceCase& c, const std::string& name, std::size_t index) {
  for (std::size_t k = 0; k < c.outputs.size() && k < c.exact_outputs.size(); ++k) {
    const bool same = c.outputs[k].name.empty() ? k == index : c.outputs[k].name == name;
    if (same && c.exact_outputs[k]) return &*c.exact_outputs[k];
  }
  return nullptr;
}

const ReferenceCase* find_case(const Reference& reference, std::string_view data_set) {
  for (const auto& c : reference.cases) {
    if (c.data_set == data_set) return &c;
  }
  return nullptr;
}

}  // namespace onnxproof
