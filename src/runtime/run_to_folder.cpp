#include "onnxproof/runtime/run_to_folder.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "onnxproof/core/atomic_file.h"
#include "onnxproof/core/numbered_name.h"
#include "onnxproof/model/model_io.h"
#include "onnxproof/runtime/session.h"
#include "onnxproof/tensor/tensor_io.h"

namespace onnxproof {
namespace fs = std::filesystem;

namespace {

void remove_stale_outputs(const fs::path& folder, std::size_t written, const std::string& format) {
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(folder, ec)) {
    const std::string ext = entry.path().extension().string();
    const auto index = number_after(entry.path().stem().string(), "output_");
    if (!index || (ext != ".pb" && ext != ".npy") || !entry.is_regular_file()) continue;
    if (*index >= written || ext != "." + format) fs::remove(entry.path(), ec);
  }
}

}  // namespace

Expected<std::vector<WrittenOutput>> run_to_folder(const RunToFolderOptions& options) {
  if (options.format != "pb" && options.format != "npy")
    return fail(ErrorCode::usage, "--format must be pb or npy, not '" + options.format + "'");
  ONNXPROOF_TRY(load_model(options.model));
  std::vector<NamedTensor> tensors;
  for (const auto& [name, file] : options.inputs) {
    auto tensor = read_tensor_file(file);
    if (!tensor) return std::unexpected(tensor.error().add_context("input '" + name + "'"));
    tensors.push_back({name, std::move(tensor->tensor)});
  }
  std::vector<Feed> feeds;
  for (const auto& input : tensors) feeds.push_back({input.name, &input.tensor});
  ONNXPROOF_TRY_ASSIGN(auto session, Session::open(options.model, SessionOptions{.provider = options.provider}));
  auto outputs = session.run(feeds);
  if (!outputs) return std::unexpected(outputs.error().add_context(options.model.string()));

  std::error_code ec;
  fs::create_directories(options.output_dir, ec);
  if (ec) return fail(ErrorCode::io, "cannot create " + options.output_dir.string() + ": " + ec.message());
  std::vector<WrittenOutput> written;
  nlohmann::json index = nlohmann::json::array();
  for (std::size_t i = 0; i < outputs->size(); ++i) {
    const auto& name = session.outputs()[i].name;
    const auto& tensor = (*outputs)[i];
    const fs::path file = options.output_dir / fmt::format("output_{}.{}", i, options.format);
    auto saved = options.format == "pb" ? write_tensor_pb(file, tensor, name) : write_npy(file, tensor);
    if (!saved) return std::unexpected(saved.error().add_context("output '" + name + "'"));
    written.push_back({name, tensor.dtype(), tensor.shape(), file});
    index.push_back({{"name", name},
                     {"dtype", dtype_name(tensor.dtype())},
                     {"shape", tensor.shape()},
                     {"file", file.filename().string()}});
  }
  ONNXPROOF_TRY(write_file_atomically(options.output_dir / "outputs.json",
                                      index.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n"));
  remove_stale_outputs(options.output_dir, written.size(), options.format);
  return written;
}

}  // namespace onnxproof
