// The command-line specs of an export: --input, --dynamic, --sweep and model families.
#include "onnxproof/export/export_step.h"
#include "onnxproof/tensor/dtype.h"
#include "text_parsing.h"

namespace onnxproof {

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
  return spec.starts_with("torchvision:") || spec.starts_with("timm:") || spec.starts_with("hf:");
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
