// numpy .npy files (https://numpy.org/doc/stable/reference/generated/numpy.lib.format.html):
// magic "\x93NUMPY", version, header length, then a Python-literal dict with descr,
// fortran_order and shape, padded so the data starts on a 64-byte boundary.
#include <algorithm>
#include <array>
#include <cstring>
#include <fstream>

#include "onnxproof/core/atomic_file.h"
#include "onnxproof/tensor/tensor_io.h"

namespace onnxproof {
namespace {

constexpr std::string_view k_magic = "\x93NUMPY";

struct NpyDescr {
  std::string_view code;  // without the byte-order character
  DType dtype;
};

constexpr std::array k_descrs = {
    NpyDescr{"f4", DType::float32},
    NpyDescr{"f8", DType::float64},
    NpyDescr{"f2", DType::float16},
    NpyDescr{"i1", DType::int8},
    NpyDescr{"i2", DType::int16},
    NpyDescr{"i4", DType::int32},
    NpyDescr{"i8", DType::int64},
    NpyDescr{"u1", DType::uint8},
    NpyDescr{"u2", DType::uint16},
    NpyDescr{"u4", DType::uint32},
    NpyDescr{"u8", DType::uint64},
    NpyDescr{"b1", DType::boolean},
    NpyDescr{"c8", DType::complex64},
    NpyDescr{"c16", DType::complex128},
    // numpy has no bfloat16; an ml_dtypes bfloat16 array saves as 2-byte voids.
    NpyDescr{"V2", DType::bfloat16},
};

struct NpyHeader {
  DType dtype = DType::undefined;
  bool big_endian = false;
  bool fortran_order = false;
  std::vector<int64_t> shape;
};

// Finds the value text after 'key': in the header dict.
std::optional<std::string_view> dict_value(std::string_view header, std::string_view key) {
  const std::string quoted = "'" + std::string(key) + "'";
  const auto at = header.find(quoted);
  if (at == std::string_view::npos) return std::nullopt;
  auto rest = header.substr(at + quoted.size());
  const auto colon = rest.find(':');
  if (colon == std::string_view::npos) return std::nullopt;
  rest = rest.substr(colon + 1);
  while (!rest.empty() && rest.front() == ' ') rest.remove_prefix(1);
  return rest;
}

Expected<NpyHeader> parse_header(std::string_view header) {
  NpyHeader parsed;
  const auto descr = dict_value(header, "descr");
  if (!descr || descr->empty() || descr->front() != '\'') return fail(ErrorCode::invalid_input, "header has no descr");
  const auto end = descr->find('\'', 1);
  if (end == std::string_view::npos) return fail(ErrorCode::invalid_input, "malformed descr");
  std::string_view code = descr->substr(1, end - 1);
  if (!code.empty() && (code.front() == '<' || code.front() == '>' || code.front() == '|' || code.front() == '=')) {
    parsed.big_endian = code.front() == '>';
    code.remove_prefix(1);
  }
  for (const auto& known : k_descrs) {
    if (known.code == code) parsed.dtype = known.dtype;
  }
  if (parsed.dtype == DType::undefined) {
    return fail(ErrorCode::unsupported, "unsupported numpy dtype '" + std::string(code) + "'");
  }

  const auto fortran = dict_value(header, "fortran_order");
  if (!fortran) return fail(ErrorCode::invalid_input, "header has no fortran_order");
  parsed.fortran_order = fortran->starts_with("True");

  const auto shape = dict_value(header, "shape");
  if (!shape || shape->empty() || shape->front() != '(') return fail(ErrorCode::invalid_input, "header has no shape");
  const auto close = shape->find(')');
  if (close == std::string_view::npos) return fail(ErrorCode::invalid_input, "malformed shape");
  std::string_view dims = shape->substr(1, close - 1);
  while (!dims.empty()) {
    const auto comma = dims.find(',');
    std::string_view item = dims.substr(0, comma);
    while (!item.empty() && item.front() == ' ') item.remove_prefix(1);
    while (!item.empty() && item.back() == ' ') item.remove_suffix(1);
    if (!item.empty()) {
      int64_t value = 0;
      for (const char c : item) {
        if (c < '0' || c > '9' || value > (int64_t{1} << 55)) {
          return fail(ErrorCode::invalid_input, "malformed shape dimension '" + std::string(item) + "'");
        }
        value = value * 10 + (c - '0');
      }
      parsed.shape.push_back(value);
    }
    if (comma == std::string_view::npos) break;
    dims.remove_prefix(comma + 1);
  }
  return parsed;
}

void swap_bytes(std::span<std::byte> data, std::size_t item) {
  for (std::size_t i = 0; i + item <= data.size(); i += item) std::reverse(data.begin() + i, data.begin() + i + item);
}

// Reorders column-major element bytes into row-major.
std::vector<std::byte> fortran_to_c(std::span<const std::byte> data, const std::vector<int64_t>& shape,
                                    std::size_t item) {
  std::vector<std::byte> out(data.size());
  const std::size_t rank = shape.size();
  std::vector<int64_t> index(rank, 0);
  const std::size_t count = item == 0 ? 0 : data.size() / item;
  for (std::size_t c_offset = 0; c_offset < count; ++c_offset) {
    std::size_t f_offset = 0;
    std::size_t stride = 1;
    for (std::size_t axis = 0; axis < rank; ++axis) {
      f_offset += static_cast<std::size_t>(index[axis]) * stride;
      stride *= static_cast<std::size_t>(shape[axis]);
    }
    std::memcpy(out.data() + c_offset * item, data.data() + f_offset * item, item);
    for (std::size_t axis = rank; axis-- > 0;) {  // advance the row-major index
      if (++index[axis] < shape[axis]) break;
      index[axis] = 0;
    }
  }
  return out;
}

std::string descr_for(DType dtype) {
  for (const auto& known : k_descrs) {
    if (known.dtype == dtype) {
      const bool one_byte = dtype_size(dtype) == 1 || dtype == DType::bfloat16;
      return std::string(one_byte ? "|" : "<") + std::string(known.code);
    }
  }
  return {};
}

}  // namespace

Expected<Tensor> read_npy(const std::filesystem::path& path, uint64_t max_bytes) {
  const auto bad = [&](const std::string& why) { return fail(ErrorCode::invalid_input, path.string() + ": " + why); };
  ONNXPROOF_TRY_ASSIGN(const uint64_t file_size, readable_file_size(path, max_bytes));
  std::ifstream in(path, std::ios::binary);
  if (!in) return fail(ErrorCode::io, "cannot open " + path.string());

  // The header is read first; the data goes straight into the tensor's buffer.
  char prefix_bytes[12] = {};
  in.read(prefix_bytes, 10);
  const std::string_view prefix_view(prefix_bytes, static_cast<std::size_t>(in.gcount()));
  if (prefix_view.size() < 10 || prefix_view.substr(0, k_magic.size()) != k_magic)
    return bad("not a .npy file (wrong magic)");
  const auto major = static_cast<uint8_t>(prefix_bytes[6]);
  std::size_t header_len = 0;
  std::size_t prefix = 10;
  if (major == 1) {
    header_len =
        static_cast<uint8_t>(prefix_bytes[8]) | (static_cast<std::size_t>(static_cast<uint8_t>(prefix_bytes[9])) << 8);
  } else if (major == 2 || major == 3) {
    in.read(prefix_bytes + 10, 2);
    if (in.gcount() != 2) return bad("truncated .npy header");
    for (int i = 3; i >= 0; --i) header_len = (header_len << 8) | static_cast<uint8_t>(prefix_bytes[8 + i]);
    prefix = 12;
  } else {
    return bad("unsupported .npy format version " + std::to_string(major));
  }
  if (file_size < prefix + header_len) return bad("truncated .npy header");
  std::string header_text(header_len, '\0');
  in.read(header_text.data(), static_cast<std::streamsize>(header_len));
  auto header = parse_header(header_text);
  if (!header) return std::unexpected(std::move(header.error().add_context(path.string())));

  const std::size_t item = dtype_size(header->dtype);
  auto count = element_count(header->shape);
  if (!count) return std::unexpected(std::move(count.error()).add_context(path.string()));
  const uint64_t available = file_size - prefix - header_len;
  if (static_cast<uint64_t>(*count) > available / item || static_cast<uint64_t>(*count) * item != available) {
    return bad("shape " + format_shape(header->shape) + " of " + dtype_name(header->dtype) + " needs " +
               std::to_string(static_cast<uint64_t>(*count) * item) + " data bytes, file has " +
               std::to_string(available));
  }
  std::vector<std::byte> bytes(static_cast<std::size_t>(available));
  in.read(reinterpret_cast<char*>(bytes.data()), static_cast<std::streamsize>(available));
  if (static_cast<uint64_t>(in.gcount()) != available) return bad("file changed while reading");
  if (header->big_endian && item > 1) {
    // complex values swap each of their two halves
    const bool complex = header->dtype == DType::complex64 || header->dtype == DType::complex128;
    swap_bytes(bytes, complex ? item / 2 : item);
  }
  if (header->fortran_order && header->shape.size() > 1) bytes = fortran_to_c(bytes, header->shape, item);
  return Tensor::from_bytes(header->dtype, std::move(header->shape), std::move(bytes));
}

Expected<void> write_npy(const std::filesystem::path& path, const Tensor& tensor) {
  const std::string descr = descr_for(tensor.dtype());
  if (descr.empty()) {
    return fail(ErrorCode::unsupported,
                path.string() + ": " + dtype_name(tensor.dtype()) + " tensors cannot be written as .npy");
  }
  // Python tuple syntax: "()", "(5,)", "(2, 3)".
  std::string shape = "(";
  for (std::size_t i = 0; i < tensor.rank(); ++i) {
    if (i > 0) shape += ", ";
    shape += std::to_string(tensor.shape()[i]);
  }
  shape += tensor.rank() == 1 ? ",)" : ")";
  std::string header = "{'descr': '" + descr + "', 'fortran_order': False, 'shape': " + shape + ", }";
  const std::size_t unpadded = k_magic.size() + 4 + header.size() + 1;
  header.append((64 - unpadded % 64) % 64, ' ');
  header += '\n';
  std::string prefix(k_magic);
  prefix += '\x01';
  prefix += '\x00';
  prefix += static_cast<char>(header.size() & 0xFF);
  prefix += static_cast<char>((header.size() >> 8) & 0xFF);

  ONNXPROOF_TRY_ASSIGN(auto file, AtomicFile::create(path));
  ONNXPROOF_TRY(file.write(prefix));
  ONNXPROOF_TRY(file.write(header));
  ONNXPROOF_TRY(file.write(tensor.bytes()));
  return file.commit();
}

}  // namespace onnxproof
