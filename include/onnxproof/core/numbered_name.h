#pragma once
// Names that end in a number onnxproof chose: test_data_set_N, output_K, .NAME.tmp-PID.

#include <cstdint>
#include <optional>
#include <string_view>

namespace onnxproof {

/// The decimal number that follows `prefix` and ends `name` ("test_data_set_12" after
/// "test_data_set_" is 12). nullopt when `name` does not start with `prefix`, when nothing or
/// anything but digits follows, or when the number does not fit in 64 bits.
std::optional<uint64_t> number_after(std::string_view name, std::string_view prefix);

}  // namespace onnxproof
