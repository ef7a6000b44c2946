#include "onnxproof/runtime/run_to_folder.h"

#include <fmt/format.h>

#include <algorithm>

#include <nlohmann/json.hpp>

#include "onnxproof/core/atomic_file.h"
#include "onnxproof/core/numbered_name.h"
#include "onnxproof/core/ownership.h"
#include "onnxproof/model/model_io.h"
#include "onnxproof/runtime/session.h"
#include "onnxproof/tensor/tensor_io.h"

namespace onnxproof {
namespace fs = std::filesystem;

namespace {

// output_K.pb or output_K.npy: a name `run` writes.
bool is_output_file_name(const fs::path& name) {
  const std::string ext = name.extension().string();
  return name == name.filename() && (ext == ".pb" || ext == ".npy") &&
         number_after(name.stem().string(), "output_").has_value();
}

// The output files an earlier `run` wrote into `folder`, as its outputs.json lists them. A folder
// holding output files no outputs.json lists (a reference data set: PyTorch's output_0.pb) is
// refused: they are not onnxproof's to replace or remove.
Expected<std::vector<fs::path>> earlier_outputs(const fs::path& folder) {
  std::error_code ec;
  if (!fs::is_directory(folder, ec)) return std::vector<fs::path>{};
  std::vector<fs::path> listed;
  if (fs::exists(fs::symlink_status(folder / "outputs.json", ec))) {
    ONNXPROOF_TRY_ASSIGN(const std::string text, read_file(folder / "outputs.json", uint64_t{64} << 20));
    const auto index = nlohmann::json::parse(text, nullptr, false);
    for (const auto& entry : index.is_array() ? index : nlohmann::json::array()) {
      const auto file = entry.is_object() ? entry.find("file") : entry.end();
      if (file != entry.end() && file->is_string() && is_output_file_name(file->get<std::string>()))
        listed.push_back(folder / file->get<std::string>());
    }
  }
  for (const auto& entry : fs::directory_iterator(folder, ec)) {
    if (!is_output_file_name(entry.path().filename())) continue;
    if (std::find(listed.begin(), listed.end(), entry.path()) != listed.end()) continue;
    return fail(ErrorCode::usage, "refusing to write into " + folder.string() + " (--output-dir): it holds " +
                                      entry.path().filename().string() +
                                      ", which no outputs.json of onnxproof run lists; give a new or empty folder");
  }
  return listed;
}

// Removes what the earlier run wrote and this one did not (a higher index or the other format):
// only files its outputs.json listed, never anyone else's.
void remove_stale_outputs(const std::vector<fs::path>& earlier, const std::vector<WrittenOutput>& written) {
  for (const fs::path& file : earlier) {
    const bool rewritten =
        std::any_of(written.begin(), written.end(), [&](const WrittenOutput& output) { return output.file == file; });
    std::error_code ec;
    if (!rewritten && fs::is_regular_file(fs::symlink_status(file, ec))) fs::remove(file, ec);
  }
}

// The model's files and the input files: what the outputs may not replace.
Expected<CommandInputs> read_inputs(const RunToFolderOptions& options, std::vector<NamedTensor>& tensors) {
  ONNXPROOF_TRY_ASSIGN(const auto model, load_model(options.model));
  CommandInputs read = model_inputs(model);
  for (const auto& [name, file] : options.inputs) {
    auto tensor = read_tensor_file(file);
    if (!tensor) return std::unexpected(tensor.error().add_context("input '" + name + "'"));
    tensors.push_back({name, std::move(tensor->tensor)});
    read.files.push_back(file);
  }
  return read;
}

}  // namespace

Expected<std::vector<WrittenOutput>> run_to_folder(const RunToFolderOptions& options) {
  if (options.format != "pb" && options.format != "npy")
    return fail(ErrorCode::usage, "--format must be pb or npy, not '" + options.format + "'");
  std::vector<NamedTensor> tensors;
  ONNXPROOF_TRY_ASSIGN(const CommandInputs read, read_inputs(options, tensors));
  ONNXPROOF_TRY(require_output_apart(options.output_dir, read, "--output-dir", OutputKind::into_folder));
  if (std::error_code ec;
      fs::exists(fs::symlink_status(options.output_dir, ec)) && !fs::is_directory(fs::status(options.output_dir, ec)))
    return fail(ErrorCode::usage, "--output-dir " + options.output_dir.string() + " is not a folder");
  ONNXPROOF_TRY_ASSIGN(const auto earlier, earlier_outputs(options.output_dir));
  std::vector<Feed> feeds;
  for (const auto& input : tensors) feeds.push_back({input.name, &input.tensor});
  ONNXPROOF_TRY_ASSIGN(auto session, Session::open(options.model, SessionOptions{.provider = options.provider}));
  auto outputs = session.run(feeds);
  if (!outputs) return std::unexpected(outputs.error().add_context(options.model.string()));

  const auto file_of = [&](std::size_t i) {
    return options.output_dir / fmt::format("output_{}.{}", i, options.format);
  };
  // Every file is checked before the first is written: --input x=DIR/output_0.pb stays intact.
  ONNXPROOF_TRY(require_output_apart(options.output_dir / "outputs.json", read, "--output-dir"));
  for (std::size_t i = 0; i < outputs->size(); ++i)
    ONNXPROOF_TRY(require_output_apart(file_of(i), read, "--output-dir"));
  std::error_code ec;
  fs::create_directories(options.output_dir, ec);
  if (ec) return fail(ErrorCode::io, "cannot create " + options.output_dir.string() + ": " + ec.message());
  std::vector<WrittenOutput> written;
  nlohmann::json index = nlohmann::json::array();
  for (std::size_t i = 0; i < outputs->size(); ++i) {
    const auto& name = session.outputs()[i].name;
    const auto& tensor = (*outputs)[i];
    const fs::path file = file_of(i);
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
  remove_stale_outputs(earlier, written);
  return written;
}

}  // namespace onnxproof
