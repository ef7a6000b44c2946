#include "test_data_sets.h"

#include <algorithm>

#include "onnxproof/model/model_io.h"
#include "onnxproof/parity/compare.h"
#include "onnxproof/runtime/session.h"
#include "onnxproof/tensor/tensor_io.h"

namespace onnxproof::testing {
namespace fs = std::filesystem;

namespace {

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

}  // namespace

std::string run_test_data_sets(const fs::path& model_path, const fs::path& folder) {
  auto model = load_model(model_path);
  if (!model) return "load: " + model.error().describe();
  auto session = Session::open(model_path, SessionOptions{.intra_op_threads = 1});
  if (!session) return "session: " + session.error().describe();

  std::vector<fs::path> data_sets;
  for (const auto& entry : fs::directory_iterator(folder)) {
    if (entry.is_directory() && entry.path().filename().string().starts_with("test_data_set_"))
      data_sets.push_back(entry.path());
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
        if (value.name == name)
          inputs[i].tensor = as_bfloat16_if_stored_as_uint16(std::move(inputs[i].tensor), value.dtype);
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
          detail += " (expected " + format_shape(expected->tensor.shape()) + ", got " +
                    format_shape((*outputs)[k].shape()) + ")";
        } else if (!comparison.dtype_match) {
          detail +=
              " (expected " + dtype_name(expected->tensor.dtype()) + ", got " + dtype_name((*outputs)[k].dtype()) + ")";
        }
        return set_name + ": output " + std::to_string(k) + " '" + session->outputs()[k].name + "': " + detail;
      }
    }
  }
  return "";
}

}  // namespace onnxproof::testing
