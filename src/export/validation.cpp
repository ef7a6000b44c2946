// What can be checked in the export options before Python starts.
#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "onnxproof/core/json_file.h"
#include "onnxproof/core/source_framework.h"
#include "onnxproof/export/export_step.h"
#include "onnxproof/parity/generation.h"
#include "onnxproof/tensor/dtype.h"
#include "onnxproof/tensor/tensor.h"

namespace onnxproof {
namespace fs = std::filesystem;

namespace {

// --dynamic ranges: one per label, holding the example's size and every --sweep size.
Expected<void> validate_dynamic_ranges(const ExportOptions& options) {
  std::map<std::string, std::pair<int64_t, int64_t>> ranges;
  for (const auto& axis : options.dynamic) {
    if (!axis.range) continue;
    const auto [known, inserted] = ranges.emplace(axis.label, *axis.range);
    if (!inserted && known->second != *axis.range)
      return fail(ErrorCode::usage, "--dynamic gives '" + axis.label + "' two ranges; give it one");
  }
  const auto outside = [&](const std::string& label, int64_t size) {
    const auto range = ranges.find(label);
    return range != ranges.end() && (size < range->second.first || size > range->second.second);
  };
  const auto range_text = [&](const std::string& label) {
    return std::to_string(ranges[label].first) + ".." + std::to_string(ranges[label].second);
  };
  for (const auto& axis : options.dynamic) {
    for (const auto& input : options.inputs) {
      if (input.name != axis.input || axis.axis >= static_cast<int64_t>(input.dims.size())) continue;
      const int64_t size = input.dims[static_cast<std::size_t>(axis.axis)];
      if (outside(axis.label, size))
        return fail(ErrorCode::usage, "--input " + input.name + ": axis " + std::to_string(axis.axis) + " is " +
                                          std::to_string(size) + ", outside the range " + range_text(axis.label) +
                                          " given for '" + axis.label + "'");
    }
  }
  for (const auto& [label, sizes] : options.sweep) {
    for (const int64_t size : sizes) {
      if (outside(label, size))
        return fail(ErrorCode::usage, "--sweep " + label + ": " + std::to_string(size) + " is outside the range " +
                                          range_text(label) + " given with --dynamic");
    }
  }
  return {};
}

// True when `dims` of `dtype` hold more than the 4 GiB a generated input may take.
bool over_input_limit(const std::vector<int64_t>& dims, DType dtype) {
  constexpr uint64_t k_max_input_bytes = uint64_t{4} << 30;
  uint64_t count = 1;
  for (const int64_t dim : dims) {
    if (dim > 0 && count > k_max_input_bytes / static_cast<uint64_t>(dim))
      count = k_max_input_bytes + 1;
    else
      count *= static_cast<uint64_t>(std::max<int64_t>(dim, 0));
  }
  return count > k_max_input_bytes || dtype_storage_bytes(dtype, count) > k_max_input_bytes;
}

// `input`'s dims with every dynamic axis at the largest --sweep size of its label (the largest
// input the sweep generates), or nothing when no swept label is on it.
std::optional<std::vector<int64_t>> largest_swept(const ExportOptions& options, const InputSpec& input) {
  std::vector<int64_t> dims = input.dims;
  bool swept = false;
  for (const auto& axis : options.dynamic) {
    const auto sizes = options.sweep.find(axis.label);
    if (axis.input != input.name || sizes == options.sweep.end() || sizes->second.empty() ||
        axis.axis >= static_cast<int64_t>(dims.size()))
      continue;
    dims[static_cast<std::size_t>(axis.axis)] = *std::max_element(sizes->second.begin(), sizes->second.end());
    swept = true;
  }
  return swept ? std::optional(dims) : std::nullopt;
}

// Generated inputs are held in memory several times over: refuse sizes no machine can hold, at
// the example's shape and at every --sweep size alike, and types numpy cannot generate.
Expected<void> validate_generated_inputs(const ExportOptions& options) {
  for (const auto& input : options.inputs) {
    const auto dtype = dtype_from_name(input.dtype);
    const bool generated = options.data.empty() && options.data_dir.empty();
    // Generated inputs are numpy arrays: no strings, and none of the narrow types (float8, int4, ...).
    const bool numpy_type =
        dtype && *dtype != DType::string && static_cast<int>(*dtype) <= static_cast<int>(DType::bfloat16);
    if (!dtype || (generated && !numpy_type))
      return fail(ErrorCode::usage, "--input " + input.name + ": onnxproof cannot generate " + input.dtype +
                                        " inputs; give real samples with --data or --data-dir");
    if (dtype_storage_bytes(*dtype, 1) == 0) continue;  // strings: their size is the data's
    if (over_input_limit(input.dims, *dtype)) {
      return fail(ErrorCode::usage, "--input " + input.name + ": " + format_shape(input.dims) + " of " + input.dtype +
                                        " is over 4 GiB; declare the size one sample has");
    }
    if (const auto swept = largest_swept(options, input); swept && over_input_limit(*swept, *dtype)) {
      return fail(ErrorCode::usage, "--sweep: input " + input.name + " at " + format_shape(*swept) + " of " +
                                        input.dtype + " is over 4 GiB; sweep smaller sizes");
    }
  }
  return {};
}

// --dynamic: each axis on an input --input declares, within its dimensions, one label per axis;
// returns the labels. A TensorFlow model's inputs come from its signature, which only the front
// end reads: an axis on an input no --input declares is left for it to check. With declared
// inputs, a name none of them has is an output's (torch.onnx.export's dynamic_axes name both):
// the front end checks it against the outputs the forward returns and the exported file. So it does
// against a given file's inputs (--onnx) when no --input declares the model's.
Expected<std::set<std::string>> validate_dynamic_axes(const ExportOptions& options, const std::string& framework) {
  std::set<std::string> labels;
  std::map<std::pair<std::string, int64_t>, std::string> axes;
  for (const auto& axis : options.dynamic) {
    const auto input = std::find_if(options.inputs.begin(), options.inputs.end(),
                                    [&](const InputSpec& spec) { return spec.name == axis.input; });
    // A given file (--onnx) declares its inputs: the front end checks the name against them.
    if (input == options.inputs.end() && framework != k_tensorflow && options.inputs.empty() && options.onnx.empty())
      return fail(ErrorCode::usage, "--dynamic names input '" + axis.input + "', which no --input declares");
    if (input == options.inputs.end() && framework != k_tensorflow) continue;  // an output's axis
    if (input != options.inputs.end() && axis.axis >= static_cast<int64_t>(input->dims.size())) {
      return fail(ErrorCode::usage, "--dynamic " + axis.input + ":" + std::to_string(axis.axis) + ": '" + axis.input +
                                        "' has " + std::to_string(input->dims.size()) + " dimensions");
    }
    const auto [known, inserted] = axes.emplace(std::pair{axis.input, axis.axis}, axis.label);
    if (!inserted && known->second != axis.label) {
      return fail(ErrorCode::usage, "--dynamic gives " + axis.input + ":" + std::to_string(axis.axis) +
                                        " two labels, '" + known->second + "' and '" + axis.label + "'");
    }
    labels.insert(axis.label);
  }
  return labels;
}

bool offers(const SourceFramework& framework, std::string_view exporter) {
  return std::find(framework.exporters.begin(), framework.exporters.end(), exporter) != framework.exporters.end();
}

// "auto, tf2onnx, keras" + `last` + "both": a framework's exporters as a usage error lists them.
std::string listed_exporters(const SourceFramework& framework, const std::string& last) {
  std::string text;
  for (std::size_t i = 0; i < framework.exporters.size(); ++i)
    text += (i == 0 ? "" : i + 1 == framework.exporters.size() ? last : ", ") + std::string(framework.exporters[i]);
  return text;
}

// --exporter: one of the exporters of `framework`, the one the spec belongs to. Another framework's
// exporter is named as such, so the error also says which kind of model the spec was read as.
Expected<void> validate_exporter(const ExportOptions& options, const std::string& framework) {
  const SourceFramework& own = *source_framework(framework);
  if (offers(own, options.exporter)) return {};
  for (const auto& other : source_frameworks()) {
    if (!offers(other, options.exporter)) continue;
    return fail(ErrorCode::usage, "--exporter " + options.exporter + " is a " + std::string(other.title) +
                                      " exporter; " + options.model + " is a " + std::string(own.title) +
                                      " model (its exporters: " + listed_exporters(own, ", ") + ")");
  }
  return fail(ErrorCode::usage,
              "--exporter must be " + listed_exporters(own, " or ") + ", not '" + options.exporter + "'");
}

// --data FILE.py:CALLABLE: the file must be there before Python starts (a module name is Python's).
Expected<void> validate_data_spec(const std::string& data) {
  const auto colon = data.rfind(':');
  const std::string target = colon == std::string::npos ? data : data.substr(0, colon);
  if (!target.ends_with(".py")) return {};
  std::error_code ec;
  const auto status = fs::status(target, ec);
  if (!fs::exists(status)) return fail(ErrorCode::not_found, "--data " + data + ": no such file: " + target);
  if (!fs::is_regular_file(status))
    return fail(ErrorCode::usage, "--data " + data + ": " + target + " is not a regular file");
  return {};
}

}  // namespace

namespace {

// Edits from `a` to `b` (insertions, deletions, substitutions, swaps of neighbours), for the
// "did you mean" of a misspelled family prefix.
std::size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::vector<std::size_t>> d(a.size() + 1, std::vector<std::size_t>(b.size() + 1));
  for (std::size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
  for (std::size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    for (std::size_t j = 1; j <= b.size(); ++j) {
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
    }
  }
  return d[a.size()][b.size()];
}

// A prefix one or two letters from a model family's is a typo, not a Python module named so:
// said before "--input is required", which a family needs not.
Expected<void> validate_family_prefix(const std::string& spec) {
  std::error_code ec;
  const auto colon = spec.find(':');
  const std::string head = spec.substr(0, colon);
  const bool bare_name = colon != std::string::npos && !head.empty() &&
                         head.find_first_of("./\\") == std::string::npos && !fs::exists(head, ec) &&
                         !fs::exists(head + ".py", ec);
  if (!bare_name) return {};
  std::vector<std::string_view> prefixes(k_model_families.begin(), k_model_families.end());
  prefixes.push_back("saved_model");
  for (const std::string_view family : prefixes) {
    const std::size_t distance = edit_distance(head, family);
    // A short prefix is too near many module names ("tf", "time" to hf, timm) to call a typo: only
    // the long ones are corrected, one edit off (two for torchvision and saved_model).
    if (family.size() >= 5 && distance > 0 && distance <= (family.size() > 5 ? 2U : 1U))
      return fail(ErrorCode::usage, "--model " + spec + ": no model family '" + head + ":'; did you mean " +
                                        std::string(family) + spec.substr(colon) + "?");
  }
  return {};
}

}  // namespace

Expected<void> validate_export_options(const ExportOptions& options) {
  if (!options.from_export.empty()) {
    if (options.out.empty()) return fail(ErrorCode::usage, "--out is required");
    std::error_code ec;
    if (!fs::is_regular_file(options.from_export / "export.json", ec))
      return fail(ErrorCode::usage, "--from-export " + options.from_export.string() +
                                        " holds no export.json: give a folder written by onnxproof export or prove()");
    // A recorded generation names files in the run folder: checked before any work.
    const fs::path generation = options.from_export / "reference" / "generation";
    if (fs::is_regular_file(generation / "generation.json", ec)) return check_generation_reference(generation);
    // An export made with --generate whose recorded generation is gone would pass unproved.
    ONNXPROOF_TRY_ASSIGN(const nlohmann::json manifest,
                         read_json_object(options.from_export / "export.json", ErrorCode::invalid_input));
    const nlohmann::json recorded =
        manifest.value("options", nlohmann::json::object()).value("generate", nlohmann::json());
    if (recorded.is_number_integer() && recorded.get<int64_t>() > 0)
      return fail(ErrorCode::invalid_input, "--from-export " + options.from_export.string() +
                                                ": its export.json says "
                                                "the export recorded a generation (generate " +
                                                recorded.dump() +
                                                "), but reference/generation/generation.json is "
                                                "missing: the generation cannot be proved");
    return {};
  }
  if (options.model.empty()) return fail(ErrorCode::usage, "--model is required");
  if (options.out.empty()) return fail(ErrorCode::usage, "--out is required");
  if (options.merged_decoder && options.generate == 0)
    return fail(ErrorCode::usage, "--merged-decoder needs --generate N: the merged decoder is proved by generation");
  ONNXPROOF_TRY(validate_family_prefix(options.model));
  const std::string framework = source_framework_of_spec(options.model);
  ONNXPROOF_TRY(validate_exporter(options, framework));
  // --generate: the front end reads a decoder's inputs from its cache (python/onnxproof/torch/generation.py).
  // A TensorFlow model brings its own input signature (a Keras model's inputs, a SavedModel's).
  // A given file (--onnx) declares them.
  if (options.inputs.empty() && !is_model_family(options.model) && options.generate == 0 && framework != k_tensorflow &&
      options.onnx.empty())
    return fail(ErrorCode::usage, "--input is required for " + options.model +
                                      " (torchvision:, timm: and hf: models and TensorFlow models bring their own "
                                      "inputs)");
  // The configuration reaches Python as JSON, which holds UTF-8 text only.
  for (const auto& [option, text] : {std::pair<const char*, std::string>{"--model", options.model},
                                     {"--out", options.out.string()},
                                     {"--data", options.data},
                                     {"--data-dir", options.data_dir.string()},
                                     {"--onnx", options.onnx.string()}}) {
    try {
      (void)nlohmann::json(text).dump();
    } catch (const nlohmann::json::exception&) {
      return fail(ErrorCode::usage, std::string(option) + " is not valid UTF-8 text; rename the path");
    }
  }
  if (options.opset != 0 && options.opset < 7)
    return fail(ErrorCode::usage, "--opset " + std::to_string(options.opset) + ": the oldest opset is 7");
  if (options.opset_ceiling > 0 && options.opset > options.opset_ceiling) {
    return fail(ErrorCode::usage, "--opset " + std::to_string(options.opset) + " is newer than onnxproof can prove (" +
                                      options.opset_ceiling_reason + ")");
  }
  ONNXPROOF_TRY_ASSIGN(const std::set<std::string> labels, validate_dynamic_axes(options, framework));
  for (const auto& [label, sizes] : options.sweep) {
    // A model family's own inputs name their axes in the front end, which checks those labels; so
    // does a TensorFlow model's signature, whose None axes are labelled there.
    // So do a given file's symbolic dimensions.
    if (!labels.contains(label) && !options.inputs.empty() && framework != k_tensorflow && options.onnx.empty())
      return fail(ErrorCode::usage, "--sweep " + label + ": no --dynamic axis has that label");
  }
  ONNXPROOF_TRY(validate_dynamic_ranges(options));
  ONNXPROOF_TRY(validate_generated_inputs(options));
  if (!options.data_dir.empty() && !fs::is_directory(options.data_dir))
    return fail(ErrorCode::usage, "--data-dir " + options.data_dir.string() + " is not a folder");
  if (!options.data.empty()) ONNXPROOF_TRY(validate_data_spec(options.data));
  return {};
}

Expected<void> validate_model_file(const std::string& spec) {
  std::error_code ec;
  const auto colon = spec.find(':');
  const std::string head = spec.substr(0, colon);
  const auto missing = [&](const std::string& what, const std::string& path) {
    return fail(ErrorCode::usage, "--model " + spec + ": no such " + what + " " + path);
  };
  if (spec.starts_with("saved_model:")) {
    if (!fs::is_directory(spec.substr(12), ec)) return missing("SavedModel folder", spec.substr(12));
    return {};
  }
  if (colon != std::string::npos && head.ends_with(".py") && !fs::is_regular_file(head, ec))
    return missing("file", head);
  for (const char* suffix : {".pt", ".pth", ".keras"})
    if (colon == std::string::npos && spec.ends_with(suffix) && !fs::is_regular_file(spec, ec))
      return missing("file", spec);
  return {};
}

}  // namespace onnxproof
