#pragma once
// Runs ONNX-test-style data sets (FOLDER/test_data_set_N/{input,output}_K.pb, the layout of ONNX's
// backend tests and of onnxproof's reference/) through the product's own parity path.

#include <filesystem>
#include <string>

namespace onnxproof::testing {

/// Reads FOLDER with read_reference() and proves the model on it with run_parity() (ONNX Runtime
/// on the CPU, one thread, all graph optimizations; default tolerances per dtype: float32 rtol
/// 1e-3 / atol 1e-5, integers exactly). Returns "" when the proof passes, else one line saying
/// what went wrong where (the first error finding, or the first row that did not pass).
std::string run_test_data_sets(const std::filesystem::path& model, const std::filesystem::path& folder);

}  // namespace onnxproof::testing
