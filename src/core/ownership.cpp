#include "onnxproof/core/ownership.h"

#include <algorithm>
#include <string>

#include "onnxproof/core/atomic_file.h"

namespace onnxproof {
namespace fs = std::filesystem;

namespace {

// The path with every link in its existing part followed: two spellings of one file compare equal.
fs::path resolved(const fs::path& path) {
  std::error_code ec;
  const fs::path absolute = fs::absolute(path, ec);
  if (ec) return path.lexically_normal();
  fs::path real = fs::weakly_canonical(absolute, ec);
  if (ec) real = absolute.lexically_normal();
  // "ref/" and "ref" are one folder.
  if (!real.has_filename() && real != real.root_path()) real = real.parent_path();
  return real;
}

// True when `path` is `folder` or lies below it (both resolved).
bool is_inside(const fs::path& path, const fs::path& folder) {
  const auto [stop, unused] = std::mismatch(folder.begin(), folder.end(), path.begin(), path.end());
  return stop == folder.end();
}

}  // namespace

Expected<void> require_output_apart(const fs::path& output, const CommandInputs& inputs, std::string_view option,
                                    OutputKind kind) {
  if (output.empty()) return {};
  const fs::path out = resolved(output);
  const auto refuse = [&](const std::string& why) {
    return fail(ErrorCode::usage, "refusing to write " + output.string() + " (" + std::string(option) + "): " + why +
                                      "; onnxproof never writes over what it reads");
  };
  for (const fs::path& file : inputs.files) {
    if (file.empty()) continue;
    std::error_code ec;
    const fs::path input = resolved(file);
    if (out == input || fs::equivalent(output, file, ec))
      return refuse("it is an input of this command (" + file.string() + ")");
    if (kind == OutputKind::whole_folder && is_inside(input, out))
      return refuse("it holds " + file.string() + ", an input of this command");
  }
  for (const fs::path& folder : inputs.folders) {
    if (folder.empty()) continue;
    const fs::path input = resolved(folder);
    if (is_inside(out, input))
      return refuse(out == input ? "it is an input of this command (" + folder.string() + ")"
                                 : "it is inside " + folder.string() + ", an input of this command");
    if (kind == OutputKind::whole_folder && is_inside(input, out))
      return refuse("it holds " + folder.string() + ", an input of this command");
  }
  if (kind == OutputKind::file) return require_replaceable_file(output);
  return {};
}

Expected<void> require_regular_file(const fs::path& path) {
  std::error_code ec;
  const auto status = fs::status(path, ec);  // stat: a FIFO is never opened here
  if (!fs::exists(status)) return fail(ErrorCode::not_found, "no such file: " + path.string());
  if (!fs::is_regular_file(status)) return fail(ErrorCode::invalid_input, path.string() + " is not a regular file");
  return {};
}

Expected<void> require_not_a_link(const fs::path& path, std::string_view what) {
  std::error_code ec;
  if (!fs::is_symlink(fs::symlink_status(path, ec))) return {};
  return fail(ErrorCode::invalid_input,
              path.string() + " is a symbolic link; onnxproof does not follow links in " + std::string(what));
}

}  // namespace onnxproof
