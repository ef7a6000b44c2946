// Reading a reference folder: ONNX-test-style data sets plus onnxproof's cases.json.
#include <algorithm>

#include <nlohmann/json.hpp>

#include "onnxproof/core/json_file.h"

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

Expected<CasesManifest> cases_manifest_fields(const nlohmann::json& json, const fs::path& path) {
  const auto bad = [&](const std::string& field, const std::string& what) {
    return std::unexpected(field_error(path, ErrorCode::invalid_input, field, what));
  };
  // Folders frozen before the schema field existed have none; any other schema is not ours.
  if (json.contains("schema") && json["schema"] != k_cases_schema) return bad("schema", std::string(k_cases_schema));
  const auto sizes_of = [](const nlohmann::json& value, std::map<std::string, int64_t>& sizes) {
    if (!value.is_object()) return false;
    for (const auto& [label, size] : value.items()) {
      if (!size.is_number_integer()) return false;
      sizes[label] = size.get<int64_t>();
    }
    return true;
  };
  CasesManifest manifest;
  if (json.contains("dynamic_axes") && !sizes_of(json["dynamic_axes"], manifest.example_sizes))
    return bad("dynamic_axes", "an object of label -> integer size");
  const auto cases = json.value("cases", nlohmann::json::array());
  if (!cases.is_array()) return bad("cases", "a list");
  for (std::size_t i = 0; i < cases.size(); ++i) {
    const auto& entry = cases[i];
    const std::string field = "cases[" + std::to_string(i) + "]";
    CasesManifest::Entry parsed;
    if (!entry.is_object() || !entry.contains("data_set") || !entry["data_set"].is_string())
      return bad(field + ".data_set", "a string");
    parsed.data_set = entry["data_set"].get<std::string>();
    if (entry.contains("sizes") && !sizes_of(entry["sizes"], parsed.sizes))
      return bad(field + ".sizes", "an object of label -> integer size");
    if (entry.contains("sample") && !entry["sample"].is_number_integer()) return bad(field + ".sample", "an integer");
    if (entry.contains("source") && !entry["source"].is_string()) return bad(field + ".source", "a string");
    parsed.sample = entry.value("sample", 0);
    parsed.source = entry.value("source", "");
    manifest.cases.push_back(std::move(parsed));
  }
  return manifest;
}

}  // namespace

Expected<CasesManifest> read_cases_manifest(const fs::path& path) {
  ONNXPROOF_TRY_ASSIGN(const nlohmann::json json, read_json_object(path, ErrorCode::invalid_input));
  try {
    return cases_manifest_fields(json, path);
  } catch (const nlohmann::json::exception& error) {  // a field of a type no check above expected
    return fail(ErrorCode::invalid_input, path.string() + " is malformed: " + error.what());
  }
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
