// The tensor readers on arbitrary bytes: TensorProto .pb files (with the narrow dtypes) and numpy
// .npy files, the formats reference and golden folders hold.
#include "fuzz_support.h"
#include "onnxproof/tensor/tensor_io.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace onnxproof;
  if (size == 0) return 0;
  // The first byte picks the reader, so one corpus covers both formats.
  const auto bytes = fuzz::as_text(data + 1, size - 1);
  if (data[0] & 1) {
    (void)read_tensor_pb(fuzz::write_input("input_0.pb", bytes), uint64_t{1} << 26);
  } else {
    (void)read_npy(fuzz::write_input("input_0.npy", bytes), uint64_t{1} << 26);
  }
  return 0;
}
