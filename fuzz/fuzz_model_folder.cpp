// A model folder on disk: the model, two external data files beside it (one in a subfolder), a
// link that leads out of the folder, and a secret file outside it. The input is framed as
// [u32 model length][model][u32 data length][weights.bin][rest: sub/more.bin] (little-endian).
// The loader reads the external data, the model is saved with external data into an output
// folder, and two oracles abort when the sanitizers would not: a loaded tensor holding the secret
// file's bytes (a read outside the model's folder) and a file appearing anywhere but the output
// folder (a write outside it).
#include <algorithm>
#include <cstring>
#include <filesystem>
#include <set>

#include "fuzz_support.h"
#include "onnxproof/check/check_model.h"
#include "onnxproof/model/model_io.h"

namespace {

namespace fs = std::filesystem;
constexpr std::string_view k_secret = "ONNXPROOF-FUZZ-SECRET-OUTSIDE-THE-MODEL-FOLDER";

// Takes a length-prefixed piece off the front of `bytes`; the whole rest when the prefix is short.
std::string_view take_piece(std::string_view& bytes) {
  if (bytes.size() < 4) return std::exchange(bytes, {});
  uint32_t length = 0;
  std::memcpy(&length, bytes.data(), 4);
  bytes.remove_prefix(4);
  const auto piece = bytes.substr(0, std::min<size_t>(length, bytes.size()));
  bytes.remove_prefix(piece.size());
  return piece;
}

// Every file under the scratch folder except the output folder's: what must never change.
std::set<fs::path> files_outside_output(const fs::path& root, const fs::path& output) {
  std::set<fs::path> files;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(root, ec); !ec && it != fs::recursive_directory_iterator();
       it.increment(ec)) {
    if (it->path() == output) {
      it.disable_recursion_pending();
      continue;
    }
    files.insert(it->path());
  }
  return files;
}

const fs::path& prepare_folders() {
  static const fs::path root = [] {
    const auto scratch = onnxproof::fuzz::scratch_folder();
    fs::create_directories(scratch / "model" / "sub");
    fs::create_directories(scratch / "outside");
    std::string secret;
    while (secret.size() < 1 << 16) secret += k_secret;
    onnxproof::fuzz::write_input("outside/secret.bin", secret);
    fs::create_symlink("../outside/secret.bin", scratch / "model" / "link.bin");
    fs::create_directory_symlink("../outside", scratch / "model" / "away");
    return scratch;
  }();
  return root;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace onnxproof;
  const auto& root = prepare_folders();
  auto bytes = fuzz::as_text(data, size);
  // The secret may be read only where the input itself holds it (the fuzzer can learn the string).
  const bool input_holds_secret = bytes.find(k_secret.substr(0, 16)) != std::string_view::npos;
  const auto model_bytes = take_piece(bytes);
  const auto weights = take_piece(bytes);
  fuzz::write_input("model/model.onnx", model_bytes);
  fuzz::write_input("model/weights.bin", weights);
  fuzz::write_input("model/sub/more.bin", bytes);
  const auto output = root / "out";
  std::error_code ec;
  fs::remove_all(output, ec);
  fs::create_directory(output);
  const auto before = files_outside_output(root, output);

  auto model = load_model(root / "model" / "model.onnx", LoadOptions{.load_external_data = true});
  if (model) {
    for_each_tensor(model->proto, [&](const onnx::TensorProto& tensor) {
      if (!input_holds_secret && tensor.raw_data().find(k_secret.substr(0, 16)) != std::string::npos) std::abort();
    });
    (void)summarize_model(model->proto);
    (void)save_model(model->proto, output / "saved.onnx", SaveOptions{.external = SaveOptions::External::always});
    (void)load_model(output / "saved.onnx", LoadOptions{.load_external_data = true});
  }
  if (files_outside_output(root, output) != before) std::abort();
  return 0;
}
