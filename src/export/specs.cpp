// The command-line specs of an export: --input, --dynamic, --sweep, model families and the source
// framework a --model spec belongs to.
#include <algorithm>
#include <fstream>

#include "onnxproof/core/source_framework.h"
#include "onnxproof/export/export_step.h"
#include "onnxproof/tensor/dtype.h"
#include "text_parsing.h"

namespace onnxproof {
namespace fs = std::filesystem;

namespace {

// Python's \s and \w on one line of source (bytes of UTF-8 letters count as word characters).
bool is_space(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v'; }
bool is_word(char c) {
  return c == '_' || (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
         static_cast<unsigned char>(c) >= 0x80;
}

std::size_t skip_spaces(std::string_view line, std::size_t at) {
  while (at < line.size() && is_space(line[at])) ++at;
  return at;
}

// Whether `line` matches ^\s*(import|from)\s+(tensorflow|keras|tf_keras)\b, the front end's rule for
// a FILE.py spec that builds a TensorFlow model (python/onnxproof/tensorflow/).
bool imports_tensorflow(std::string_view line) {
  const std::size_t start = skip_spaces(line, 0);
  const std::string_view rest = line.substr(start);
  const std::size_t keyword = rest.starts_with("import") ? 6 : rest.starts_with("from") ? 4 : 0;
  const std::size_t name_at = skip_spaces(line, start + keyword);
  if (keyword == 0 || name_at == start + keyword) return false;
  const std::string_view name = line.substr(name_at);
  for (const std::string_view module : {"tensorflow", "keras", "tf_keras"}) {
    if (name.starts_with(module) && (name.size() == module.size() || !is_word(name[module.size()]))) return true;
  }
  return false;
}

// Whether `line` imports torch at the top of the module (no indentation): a PyTorch file that
// also imports TensorFlow inside a function (to compare, to convert) stays PyTorch's.
bool imports_torch_at_top(std::string_view line) {
  const std::size_t keyword = line.starts_with("import") ? 6 : line.starts_with("from") ? 4 : 0;
  const std::size_t name_at = skip_spaces(line, keyword);
  if (keyword == 0 || name_at == keyword) return false;
  const std::string_view name = line.substr(name_at);
  return name.starts_with("torch") && (name.size() == 5 || !is_word(name[5]));
}

// Whether the Python file `path` builds a TensorFlow model: it imports TensorFlow or Keras, and
// not torch at its top; false when it cannot be read (only a regular file is opened: a FIFO named
// .py must not block the check).
bool file_imports_tensorflow(const fs::path& path) {
  std::error_code ec;
  if (!fs::is_regular_file(path, ec)) return false;
  std::ifstream file(path);
  bool tensorflow = false;
  for (std::string line; std::getline(file, line);) {
    if (imports_torch_at_top(line)) return false;
    tensorflow = tensorflow || imports_tensorflow(line);
  }
  return tensorflow;
}

}  // namespace

Expected<InputSpec> parse_input_spec(const std::string& text) {
  const auto bad = [&](const std::string& why) {
    return fail(ErrorCode::usage,
                "--input '" + text + "': " + why + " (expected NAME=DIMS:DTYPE[:LO..HI], e.g. x=1x3x224x224:float32)");
  };
  const auto eq = text.find('=');
  if (eq == std::string::npos || eq == 0) return bad("no NAME=");
  InputSpec spec;
  spec.name = text.substr(0, eq);
  const auto fields = export_text::split(std::string_view(text).substr(eq + 1), ':');
  if (fields.size() < 2 || fields.size() > 3) return bad("DIMS and DTYPE are required");
  if (fields[0] != "scalar") {
    for (const auto& dim : export_text::split(fields[0], 'x')) {
      const auto value = export_text::parse_int(dim);
      if (!value || *value < 0) return bad("dimension '" + dim + "' is not a non-negative integer");
      spec.dims.push_back(*value);
    }
  }
  if (!dtype_from_name(fields[1])) return bad("unknown dtype '" + fields[1] + "'");
  spec.dtype = dtype_name(*dtype_from_name(fields[1]));
  if (fields.size() == 3) {
    const auto dots = fields[2].find("..");
    const auto low = dots == std::string::npos ? std::nullopt : export_text::parse_int(fields[2].substr(0, dots));
    const auto high = dots == std::string::npos ? std::nullopt : export_text::parse_int(fields[2].substr(dots + 2));
    if (!low || !high || *low >= *high) return bad("range '" + fields[2] + "' must be LO..HI with LO < HI");
    spec.range = {{*low, *high}};
  }
  return spec;
}

bool is_model_family(std::string_view spec) {
  const auto colon = spec.find(':');
  return colon != std::string_view::npos &&
         std::find(k_model_families.begin(), k_model_families.end(), spec.substr(0, colon)) != k_model_families.end();
}

std::string source_framework_of_spec(const std::string& spec) {
  const std::string_view view = spec;
  if (view.starts_with("keras:") || view.starts_with("saved_model:") || view.ends_with(".keras"))
    return std::string(k_tensorflow);
  const auto colon = spec.rfind(':');
  if (colon != std::string::npos && view.substr(0, colon).ends_with(".py") &&
      file_imports_tensorflow(spec.substr(0, colon)))
    return std::string(k_tensorflow);
  return std::string(k_torch);
}

Expected<DynamicAxis> parse_dynamic_axis(const std::string& text) {
  const auto bad = [&](const std::string& why) { return fail(ErrorCode::usage, "--dynamic '" + text + "': " + why); };
  const auto eq = text.rfind('=');
  const auto colon = eq == std::string::npos ? std::string::npos : text.rfind(':', eq);
  if (colon == std::string::npos || colon == 0 || eq + 1 == text.size())
    return bad("expected NAME:AXIS=LABEL[:MIN..MAX], e.g. x:0=batch or x:0=batch:1..64");
  const auto axis = export_text::parse_int(std::string_view(text).substr(colon + 1, eq - colon - 1));
  if (!axis || *axis < 0) return bad("AXIS must be a non-negative integer");
  DynamicAxis result{text.substr(0, colon), *axis, text.substr(eq + 1), std::nullopt};
  if (const auto range_colon = result.label.find(':'); range_colon != std::string::npos) {
    const std::string range = result.label.substr(range_colon + 1);
    result.label.resize(range_colon);
    const auto dots = range.find("..");
    const auto low = dots == std::string::npos ? std::nullopt : export_text::parse_int(range.substr(0, dots));
    const auto high = dots == std::string::npos ? std::nullopt : export_text::parse_int(range.substr(dots + 2));
    if (!low || !high || *low < 1 || *low > *high)
      return bad("range '" + range + "' must be MIN..MAX with 1 <= MIN <= MAX");
    result.range = {{*low, *high}};
  }
  if (result.label.empty()) return bad("LABEL is empty");
  return result;
}

Expected<std::pair<std::string, std::vector<int64_t>>> parse_sweep(const std::string& text) {
  const auto eq = text.find('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == text.size()) {
    return fail(ErrorCode::usage, "--sweep '" + text + "': expected LABEL=SIZES, e.g. batch=1,3,8");
  }
  std::vector<int64_t> sizes;
  for (const auto& item : export_text::split(std::string_view(text).substr(eq + 1), ',')) {
    const auto size = export_text::parse_int(item);
    if (!size || *size < 1)
      return fail(ErrorCode::usage, "--sweep '" + text + "': '" + item + "' is not a positive size");
    sizes.push_back(*size);
  }
  return std::pair{text.substr(0, eq), sizes};
}

}  // namespace onnxproof
