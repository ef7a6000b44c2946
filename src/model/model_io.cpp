#include "onnxproof/model/model_io.h"

#include <fcntl.h>
#include <unistd.h>

#include <fstream>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <vector>

#include <google/protobuf/descriptor.h>
#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl.h>
#include <google/protobuf/wire_format_lite.h>

#include "onnxproof/core/atomic_file.h"
#include "onnxproof/tensor/dtype.h"

namespace onnxproof {
namespace fs = std::filesystem;

namespace {

constexpr uint64_t k_protobuf_limit = (uint64_t{1} << 31) - 1;

struct ExternalRef {
  std::string location;
  uint64_t offset = 0;
  std::optional<uint64_t> length;
};

Expected<ExternalRef> parse_external_ref(const onnx::TensorProto& tensor) {
  ExternalRef ref;
  for (const auto& entry : tensor.external_data()) {
    const auto parse_number = [&](uint64_t& out) -> bool {
      if (entry.value().empty()) return false;
      out = 0;
      for (const char c : entry.value()) {
        if (c < '0' || c > '9' || out > std::numeric_limits<uint64_t>::max() / 10 - 10) return false;
        out = out * 10 + static_cast<uint64_t>(c - '0');
      }
      return true;
    };
    if (entry.key() == "location") {
      ref.location = entry.value();
    } else if (entry.key() == "offset") {
      if (!parse_number(ref.offset))
        return fail(ErrorCode::invalid_input, "bad external data offset '" + entry.value() + "'");
    } else if (entry.key() == "length") {
      uint64_t length = 0;
      if (!parse_number(length))
        return fail(ErrorCode::invalid_input, "bad external data length '" + entry.value() + "'");
      ref.length = length;
    }
  }
  if (ref.location.empty()) return fail(ErrorCode::invalid_input, "external data without a location");
  return ref;
}

// Resolves an external data location inside `folder` (canonical), refusing anything that could
// read outside it: absolute paths, ".." components, and symlinks that lead out.
Expected<fs::path> resolve_inside(const fs::path& folder, const std::string& location) {
  const fs::path relative(location);
  if (relative.is_absolute() || relative.has_root_name() || relative.has_root_directory()) {
    return fail(ErrorCode::invalid_input, "external data location '" + location + "' is an absolute path");
  }
  for (const auto& part : relative) {
    if (part == "..")
      return fail(ErrorCode::invalid_input, "external data location '" + location + "' escapes the model's folder");
  }
  std::error_code ec;
  const fs::path resolved = fs::weakly_canonical(folder / relative, ec);
  if (ec) return fail(ErrorCode::invalid_input, "external data location '" + location + "': " + ec.message());
  const auto [folder_end, resolved_it] = std::mismatch(folder.begin(), folder.end(), resolved.begin(), resolved.end());
  if (folder_end != folder.end()) {
    return fail(ErrorCode::invalid_input, "external data location '" + location +
                                              "' leaves the model's folder (resolves to " + resolved.string() + ")");
  }
  return resolved;
}

// Checks one external tensor and, when asked, reads its bytes into raw_data.
Expected<uint64_t> resolve_external(onnx::TensorProto& tensor, const fs::path& folder, bool load,
                                    std::map<fs::path, uint64_t>& file_sizes) {
  ONNXPROOF_TRY_ASSIGN(const ExternalRef ref, parse_external_ref(tensor));
  ONNXPROOF_TRY_ASSIGN(const fs::path file, resolve_inside(folder, ref.location));
  auto size_it = file_sizes.find(file);
  if (size_it == file_sizes.end()) {
    std::error_code ec;
    if (!fs::is_regular_file(file, ec)) {
      return fail(ErrorCode::not_found, "external data file '" + ref.location + "' is missing or not a regular file");
    }
    size_it = file_sizes.emplace(file, fs::file_size(file, ec)).first;
  }
  const uint64_t file_size = size_it->second;
  if (ref.offset > file_size)
    return fail(ErrorCode::invalid_input, "external data offset is past the end of '" + ref.location + "'");
  const uint64_t length = ref.length.value_or(file_size - ref.offset);
  if (length > file_size - ref.offset) {
    return fail(ErrorCode::invalid_input, "external data '" + ref.location + "' is shorter than offset + length (" +
                                              std::to_string(ref.offset) + " + " + std::to_string(length) + " > " +
                                              std::to_string(file_size) + ")");
  }
  const auto dtype = dtype_from_onnx(tensor.data_type());
  if (dtype && dtype_storage_bytes(*dtype, 1) > 0) {
    uint64_t count = 1;
    for (const int64_t dim : tensor.dims()) count *= static_cast<uint64_t>(std::max<int64_t>(dim, 0));
    if (dtype_storage_bytes(*dtype, count) != length) {
      return fail(ErrorCode::invalid_input, "external data length " + std::to_string(length) +
                                                " does not match its dims (" +
                                                std::to_string(dtype_storage_bytes(*dtype, count)) + " bytes)");
    }
  }
  if (load) {
    std::ifstream in(file, std::ios::binary);
    std::string bytes(static_cast<std::size_t>(length), '\0');
    in.seekg(static_cast<std::streamoff>(ref.offset));
    in.read(bytes.data(), static_cast<std::streamsize>(length));
    if (!in) return fail(ErrorCode::io, "cannot read external data '" + ref.location + "'");
    tensor.set_raw_data(std::move(bytes));
    tensor.clear_external_data();
    tensor.clear_data_location();
  }
  return length;
}

// Whether the messages in `input` (a ModelProto) nest deeper than `limit`, followed through the
// message fields ONNX declares and through groups, with a stack of our own instead of recursion:
// any depth is measured without exhausting ours. Stops once past the limit; false when the
// bytes end or stop being wire format before that.
bool nests_deeper_than(google::protobuf::io::ZeroCopyInputStream* input, int limit) {
  using google::protobuf::FieldDescriptor;
  using google::protobuf::internal::WireFormatLite;
  google::protobuf::io::CodedInputStream stream(input);
  stream.SetTotalBytesLimit(std::numeric_limits<int>::max());
  struct Level {
    const google::protobuf::Descriptor* type;  // nullptr inside an unknown group
    int group = 0;                             // the field number of an open group, or 0
    google::protobuf::io::CodedInputStream::Limit end = 0;
  };
  std::vector<Level> levels = {{onnx::ModelProto::descriptor()}};
  while (static_cast<int>(levels.size()) - 1 <= limit) {
    const uint32_t tag = stream.ReadTag();
    const Level level = levels.back();
    if (tag == 0) {  // the end of a nested message, of the input, or no tag at all
      if (levels.size() == 1 || level.group != 0 || stream.BytesUntilLimit() != 0) return false;
      stream.PopLimit(level.end);
      levels.pop_back();
      continue;
    }
    const int number = WireFormatLite::GetTagFieldNumber(tag);
    if (number == 0) return false;  // no field has number 0; an end-group of it would pop the root
    const auto* field = level.type ? level.type->FindFieldByNumber(number) : nullptr;
    const auto* type = field ? field->message_type() : nullptr;  // nullptr unless a message or group
    switch (WireFormatLite::GetTagWireType(tag)) {
      case WireFormatLite::WIRETYPE_START_GROUP:
        levels.push_back({field && field->type() == FieldDescriptor::TYPE_GROUP ? type : nullptr, number});
        break;
      case WireFormatLite::WIRETYPE_END_GROUP:
        if (level.group != number) return false;
        levels.pop_back();
        break;
      case WireFormatLite::WIRETYPE_LENGTH_DELIMITED: {
        if (!field || field->type() != FieldDescriptor::TYPE_MESSAGE) {
          if (!WireFormatLite::SkipField(&stream, tag)) return false;
          break;
        }
        uint32_t length = 0;
        if (!stream.ReadVarint32(&length) || length > static_cast<uint32_t>(std::numeric_limits<int>::max()))
          return false;
        levels.push_back({type, 0, stream.PushLimit(static_cast<int>(length))});
        break;
      }
      default:
        if (!WireFormatLite::SkipField(&stream, tag)) return false;
    }
  }
  return true;
}

// Parses a ModelProto from a fresh stream of `open_stream()`; when that fails, measures the
// nesting, to tell messages nested past protobuf's recursion limit (kept, so a hostile model
// cannot exhaust the stack) from a damaged file.
Expected<void> parse_model_from(
    onnx::ModelProto& model,
    const std::function<std::unique_ptr<google::protobuf::io::ZeroCopyInputStream>()>& open_stream,
    const std::string& what) {
  constexpr int k_nesting_limit = 100;  // protobuf's default
  auto input = open_stream();
  if (!input) return fail(ErrorCode::io, "cannot open " + what);
  {
    google::protobuf::io::CodedInputStream stream(input.get());
    stream.SetTotalBytesLimit(std::numeric_limits<int>::max());
    stream.SetRecursionLimit(k_nesting_limit);
    if (model.ParseFromCodedStream(&stream) && stream.ConsumedEntireMessage()) return {};
  }
  model.Clear();
  input = open_stream();
  if (input && nests_deeper_than(input.get(), k_nesting_limit)) {
    return fail(ErrorCode::unsupported, what + ": its messages (subgraphs in subgraphs) nest deeper than " +
                                            std::to_string(k_nesting_limit) +
                                            " levels, protobuf's limit, which onnxproof keeps");
  }
  return fail(ErrorCode::invalid_input,
              what + ": not a valid ONNX model (protobuf parse failed; truncated or not a model file)");
}

}  // namespace

Expected<onnx::ModelProto> parse_model(std::string_view bytes, const std::string& what) {
  onnx::ModelProto model;
  ONNXPROOF_TRY(parse_model_from(
      model,
      [&] {
        return std::make_unique<google::protobuf::io::ArrayInputStream>(bytes.data(), static_cast<int>(bytes.size()));
      },
      what));
  if (!model.has_graph() || model.ir_version() <= 0) {
    return fail(ErrorCode::invalid_input, what + ": not an ONNX model (no graph or IR version)");
  }
  return model;
}

std::vector<fs::path> model_files(const LoadedModel& model) {
  std::vector<fs::path> files = {model.path};
  files.insert(files.end(), model.external_files.begin(), model.external_files.end());
  return files;
}

Expected<LoadedModel> load_model(const fs::path& path, const LoadOptions& options) {
  LoadedModel loaded;
  loaded.path = path;
  const uint64_t limit = std::min(options.max_model_bytes, k_protobuf_limit);
  auto size = readable_file_size(path, limit);
  if (!size) {
    if (size.error().code() == ErrorCode::limit_exceeded && limit == k_protobuf_limit) {
      size.error().add_context("models over 2 GiB must keep their weights in external data");
    }
    return std::unexpected(std::move(size.error()));
  }
  loaded.file_bytes = *size;
  std::error_code ec;
  loaded.folder = fs::canonical(fs::absolute(path).parent_path(), ec);
  if (ec) return fail(ErrorCode::io, "cannot resolve the folder of " + path.string() + ": " + ec.message());

  // Parse straight from the file descriptor: no second copy of the bytes in memory.
  ONNXPROOF_TRY(parse_model_from(
      loaded.proto,
      [&]() -> std::unique_ptr<google::protobuf::io::ZeroCopyInputStream> {
        const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
        if (fd < 0) return nullptr;
        auto stream = std::make_unique<google::protobuf::io::FileInputStream>(fd);
        stream->SetCloseOnDelete(true);
        return stream;
      },
      path.string()));
  if (!loaded.proto.has_graph() || loaded.proto.ir_version() <= 0) {
    return fail(ErrorCode::invalid_input, path.string() + ": not an ONNX model (no graph or IR version)");
  }

  std::map<fs::path, uint64_t> file_sizes;
  std::optional<Error> first_error;
  for_each_tensor(loaded.proto, [&](onnx::TensorProto& tensor) {
    if (first_error || tensor.data_location() != onnx::TensorProto::EXTERNAL) return;
    const auto source = parse_external_ref(tensor);  // read before loading clears it
    auto length = resolve_external(tensor, loaded.folder, options.load_external_data, file_sizes);
    if (length && source && !tensor.name().empty())
      loaded.external_sources.try_emplace(tensor.name(), ExternalSource{source->location, source->offset, *length});
    if (!length) {
      first_error = std::move(length.error());
      first_error->add_context("tensor '" + tensor.name() + "'");
      return;
    }
    loaded.external_bytes += *length;
    ++loaded.external_tensors;
    if (loaded.external_bytes > options.max_external_bytes) {
      first_error = Error(ErrorCode::limit_exceeded, "external data exceeds the limit of " +
                                                         std::to_string(options.max_external_bytes) + " bytes");
    }
  });
  if (first_error) return std::unexpected(std::move(first_error->add_context(path.string())));
  for (const auto& entry : file_sizes) loaded.external_files.push_back(entry.first);
  return loaded;
}

onnx::ModelProto copy_without_large_tensors(const onnx::ModelProto& model, uint64_t threshold) {
  // The model is logically const: every byte moved out below is moved back before returning.
  auto& mutable_model = const_cast<onnx::ModelProto&>(model);
  std::vector<std::pair<onnx::TensorProto*, std::string>> moved;
  for (auto& initializer : *mutable_model.mutable_graph()->mutable_initializer()) {
    if (initializer.raw_data().size() > threshold) {
      moved.emplace_back(&initializer, std::string());
      moved.back().second.swap(*initializer.mutable_raw_data());
    }
  }
  onnx::ModelProto copy = model;
  for (auto& [tensor, bytes] : moved) tensor->mutable_raw_data()->swap(bytes);
  return copy;
}

namespace {

// Whether `bytes` are the `source`'s bytes in `folder` (read in chunks, compared as they come).
bool same_bytes(const fs::path& folder, const ExternalSource& source, const std::string& bytes) {
  if (source.length != bytes.size()) return false;
  auto file = resolve_inside(folder, source.location);
  if (!file) return false;
  std::ifstream in(*file, std::ios::binary);
  in.seekg(static_cast<std::streamoff>(source.offset));
  constexpr std::size_t k_chunk = std::size_t{16} << 20;
  std::string chunk(std::min(k_chunk, bytes.size()), '\0');
  for (std::size_t at = 0; at < bytes.size(); at += chunk.size()) {
    const std::size_t count = std::min(chunk.size(), bytes.size() - at);
    if (!in.read(chunk.data(), static_cast<std::streamsize>(count)) ||
        std::memcmp(chunk.data(), bytes.data() + at, count) != 0)
      return false;
  }
  return true;
}

// The source `tensor`'s bytes may be referred to in place of a copy (SaveOptions::shared_sources),
// or nullptr.
const ExternalSource* shared_source(const onnx::TensorProto& tensor, const std::string& bytes, const fs::path& path,
                                    const SaveOptions& options) {
  if (!options.shared_sources || options.shared_folder.empty()) return nullptr;
  std::error_code ec;
  if (!fs::equivalent(fs::absolute(path).parent_path(), options.shared_folder, ec)) return nullptr;
  const auto found = options.shared_sources->find(tensor.name());
  if (found == options.shared_sources->end() || !same_bytes(options.shared_folder, found->second, bytes))
    return nullptr;
  return &found->second;
}

// `model` serialized into a new AtomicFile at `path`, not yet committed.
Expected<AtomicFile> serialize_to(const onnx::ModelProto& model, const fs::path& path) {
  ONNXPROOF_TRY_ASSIGN(auto file, AtomicFile::create(path));
  {
    google::protobuf::io::FileOutputStream out(file.fd());
    if (!model.SerializeToZeroCopyStream(&out) || !out.Flush())
      return fail(ErrorCode::io, "cannot write " + path.string());
  }
  return file;
}

}  // namespace

Expected<void> save_model(onnx::ModelProto& model, const fs::path& path, const SaveOptions& options) {
  bool has_unloaded = false;
  for_each_tensor(
      model, [&](onnx::TensorProto& tensor) { has_unloaded |= tensor.data_location() == onnx::TensorProto::EXTERNAL; });
  if (has_unloaded) {
    return fail(ErrorCode::usage,
                "cannot save " + path.string() +
                    ": the model still refers to external data; load it with its external data first");
  }
  bool external = options.external == SaveOptions::External::always;
  if (options.external == SaveOptions::External::automatic) {
    external = model.ByteSizeLong() > k_protobuf_limit;
  }
  if (!external) {
    if (model.ByteSizeLong() > k_protobuf_limit) {
      return fail(ErrorCode::limit_exceeded, "cannot save " + path.string() + ": over 2 GiB without external data");
    }
    ONNXPROOF_TRY_ASSIGN(auto file, serialize_to(model, path));
    return file.commit();
  }

  // Move the bytes of each large tensor into the data file; remember them to move back.
  const std::string data_name = path.filename().string() + ".data";
  ONNXPROOF_TRY_ASSIGN(auto data_file, AtomicFile::create(path.parent_path() / data_name));
  std::vector<std::pair<onnx::TensorProto*, std::string>> moved;
  std::optional<Error> write_error;
  uint64_t offset = 0;
  for_each_tensor(model, [&](onnx::TensorProto& tensor) {
    if (write_error || !tensor.has_raw_data() || tensor.raw_data().size() < options.external_threshold_bytes) return;
    std::string bytes;
    bytes.swap(*tensor.mutable_raw_data());
    tensor.clear_raw_data();
    auto add_entry = [&](const std::string& key, const std::string& value) {
      auto* entry = tensor.add_external_data();
      entry->set_key(key);
      entry->set_value(value);
    };
    if (const ExternalSource* source = shared_source(tensor, bytes, path, options)) {
      add_entry("location", source->location);  // the bytes already there, referred to
      add_entry("offset", std::to_string(source->offset));
      add_entry("length", std::to_string(source->length));
    } else {
      if (auto ok = data_file.write(std::as_bytes(std::span(bytes.data(), bytes.size()))); !ok) {
        write_error = std::move(ok.error());
      }
      add_entry("location", data_name);
      add_entry("offset", std::to_string(offset));
      add_entry("length", std::to_string(bytes.size()));
      offset += bytes.size();
    }
    tensor.set_data_location(onnx::TensorProto::EXTERNAL);
    moved.emplace_back(&tensor, std::move(bytes));
  });

  Expected<void> result;
  if (write_error) {
    result = std::unexpected(std::move(*write_error));
  } else if (model.ByteSizeLong() > k_protobuf_limit) {
    result = fail(ErrorCode::limit_exceeded, "cannot save " + path.string() + ": over 2 GiB even with external data");
  } else {
    auto model_file = serialize_to(model, path);
    if (!model_file) {
      result = std::unexpected(std::move(model_file.error()));
    } else {
      // The data file goes into place first: a model never points at a missing data file. A
      // model whose every weight is shared writes none.
      if (offset > 0) result = data_file.commit();
      if (result) result = model_file->commit();
    }
  }
  for (auto& [tensor, bytes] : moved) {
    tensor->clear_external_data();
    tensor->clear_data_location();
    tensor->mutable_raw_data()->swap(bytes);
  }
  return result;
}

CommandInputs model_inputs(const LoadedModel& model) { return CommandInputs{.files = model_files(model)}; }

int default_domain_opset(const onnx::ModelProto& model) {
  int opset = 0;
  for (const auto& entry : model.opset_import())
    if (entry.domain().empty() || entry.domain() == "ai.onnx") opset = static_cast<int>(entry.version());
  return opset;
}

}  // namespace onnxproof
