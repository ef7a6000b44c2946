#include "onnxproof/core/sha256.h"

#include <openssl/evp.h>

#include <array>
#include <fstream>
#include <memory>

#include "onnxproof/core/ownership.h"

namespace onnxproof {
namespace {

using DigestContext = std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)>;

std::string to_hex(const unsigned char* digest, unsigned length) {
  static constexpr char k_hex[] = "0123456789abcdef";
  std::string text;
  for (unsigned i = 0; i < length; ++i) {
    text += k_hex[digest[i] >> 4];
    text += k_hex[digest[i] & 0xF];
  }
  return text;
}

DigestContext new_context() {
  DigestContext context(EVP_MD_CTX_new(), &EVP_MD_CTX_free);
  EVP_DigestInit_ex(context.get(), EVP_sha256(), nullptr);
  return context;
}

std::string finish(EVP_MD_CTX* context) {
  std::array<unsigned char, EVP_MAX_MD_SIZE> digest{};
  unsigned length = 0;
  EVP_DigestFinal_ex(context, digest.data(), &length);
  return to_hex(digest.data(), length);
}

}  // namespace

Expected<std::string> sha256_file(const std::filesystem::path& path) {
  ONNXPROOF_TRY(require_regular_file(path));  // a FIFO named model.onnx would block the open
  std::ifstream in(path, std::ios::binary);
  if (!in) return fail(ErrorCode::not_found, "cannot read " + path.string());
  auto context = new_context();
  std::array<char, 1 << 16> buffer{};
  while (in) {
    in.read(buffer.data(), buffer.size());
    EVP_DigestUpdate(context.get(), buffer.data(), static_cast<std::size_t>(in.gcount()));
  }
  if (in.bad()) return fail(ErrorCode::io, "cannot read " + path.string());
  return finish(context.get());
}

std::string sha256_bytes(std::string_view bytes) {
  auto context = new_context();
  EVP_DigestUpdate(context.get(), bytes.data(), bytes.size());
  return finish(context.get());
}

}  // namespace onnxproof
