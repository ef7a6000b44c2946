#pragma once
// Runs ONNX-test-style data sets (FOLDER/test_data_set_N/{input,output}_K.pb, the layout of ONNX's
// backend tests and of onnxproof's reference/) through the library and ONNX Runtime on the CPU.

#include <filesystem>
#include <string>

namespace onnxproof::testing {

/// Loads the model, feeds every data set's inputs (matched by the name stored in the file, or by
/// position), and compares each output (rtol 1e-3, atol 1e-5 for floats, exact otherwise).
/// Returns "" when every data set matches, else a line saying what went wrong where.
std::string run_test_data_sets(const std::filesystem::path& model, const std::filesystem::path& folder);

}  // namespace onnxproof::testing
