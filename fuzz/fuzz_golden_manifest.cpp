// A golden folder's manifest.json is untrusted input: arbitrary bytes as the manifest of a folder
// holding one small data set. Entries may never lead outside the folder, open anything but
// regular files, or crash the checks; tolerances must stay within the cap.
#include "fuzz_support.h"
#include "onnxproof/golden/golden.h"
#include "onnxproof/tensor/tensor_io.h"

namespace {

const std::filesystem::path& golden_folder() {
  static const std::filesystem::path folder = [] {
    const auto path = onnxproof::fuzz::scratch_folder() / "golden";
    std::filesystem::create_directories(path / "test_data_set_0");
    auto tensor = onnxproof::Tensor::zeros(onnxproof::DType::float32, {2});
    (void)onnxproof::write_tensor_pb(path / "test_data_set_0" / "input_0.pb", *tensor, "x");
    (void)onnxproof::write_tensor_pb(path / "test_data_set_0" / "output_0.pb", *tensor, "y");
    return path;
  }();
  return folder;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace onnxproof;
  const auto& folder = golden_folder();
  {
    std::ofstream(folder / "manifest.json", std::ios::binary | std::ios::trunc)
        .write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  }
  const auto manifest = read_golden_manifest(folder, ToleranceOptions{});
  if (manifest) {
    for (const auto& [output, tolerance] : manifest->tolerance.per_output) {
      if (!(tolerance.rtol >= 0 && tolerance.rtol <= 0.5 && tolerance.atol >= 0 && tolerance.atol <= 1)) std::abort();
    }
  }
  return 0;
}
