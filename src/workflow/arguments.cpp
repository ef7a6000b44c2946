// The option groups shared by several workflows (model, proof, lists), resolved into the
// libraries' options.
#include <string>
#include <vector>

#include "onnxproof/ops/opset_limits.h"
#include "onnxproof/runtime/session.h"
#include "onnxproof/workflow/workflows.h"

namespace onnxproof {
namespace fs = std::filesystem;

namespace {

// The file a model or --data spec names ("file.py:callable", "model.pt"); empty for a module or
// a family ("pkg.module:callable", "torchvision:NAME").
fs::path spec_file(const std::string& spec) {
  std::error_code ec;
  if (spec.empty() || fs::exists(spec, ec)) return spec;
  const fs::path before_colon = spec.substr(0, spec.find(':'));
  return before_colon.extension() == ".py" ? before_colon : fs::path();
}

// The folder a saved_model:DIR spec names (TensorFlow's SavedModel); empty for any other spec.
fs::path spec_folder(const std::string& spec) {
  constexpr std::string_view prefix = "saved_model:";
  return spec.starts_with(prefix) ? fs::path(spec.substr(prefix.size())) : fs::path();
}

// What an export reads that the run folder `out` (replaced whole when published) may not hold:
// the model's file or SavedModel folder, --data's file, --data-dir, the --from-export folder.
Expected<void> require_out_apart(const ModelArguments& arguments, const fs::path& out) {
  const fs::path onnx = arguments.onnx.value_or("");
  const CommandInputs read{.files = {spec_file(arguments.model), spec_file(arguments.data), onnx},
                           .folders = {spec_folder(arguments.model), arguments.data_dir, arguments.from_export}};
  return require_output_apart(out, read, "--out", OutputKind::whole_folder);
}

Expected<void> check_generate(const ModelArguments& arguments) {
  if (arguments.generate < 0 || arguments.generate > k_max_generate_steps) {
    return fail(ErrorCode::usage, "--generate takes 0 to " + std::to_string(k_max_generate_steps) + " steps");
  }
  return {};
}

// --from-export adopts a finished export: the options that shape one are refused, not ignored.
Expected<ExportOptions> adopted_export_options(const ModelArguments& arguments, const fs::path& out) {
  if (out.empty()) return fail(ErrorCode::usage, "--from-export needs --out: the run folder to prove the export in");
  if (!arguments.inputs.empty() || !arguments.dynamic.empty() || !arguments.sweep.empty() || arguments.opset != 0 ||
      arguments.exporter != "auto" || !arguments.data.empty() || !arguments.data_dir.empty() ||
      arguments.merged_decoder)
    return fail(ErrorCode::usage,
                "--input, --dynamic, --sweep, --opset, --exporter, --merged-decoder and --data shape an export; "
                "--from-export proves "
                "one already made (export again to change them)");
  ONNXPROOF_TRY(require_out_apart(arguments, out));
  ExportOptions options;
  options.from_export = arguments.from_export;
  options.out = out;
  // --generate proves the generation the export recorded (prove(..., generate=N) attaches with it).
  ONNXPROOF_TRY(check_generate(arguments));
  options.generate = arguments.generate;
  return options;
}

// --onnx proves a file (or a generation folder) already made: the options that shape an export
// are refused, not ignored. Returns --bind's pairs.
Expected<std::map<std::string, std::string>> given_file_options(const ModelArguments& arguments) {
  if (arguments.opset != 0 || arguments.exporter != "auto" || arguments.merged_decoder)
    return fail(ErrorCode::usage,
                "--opset, --exporter and --merged-decoder shape an export; --onnx proves the file as "
                "it is (export it again to change them)");
  std::map<std::string, std::string> bind;
  for (const auto& pair : arguments.bind.value_or(std::vector<std::string>{})) {
    const auto equals = pair.find('=');
    if (equals == 0 || equals == std::string::npos || equals + 1 == pair.size())
      return fail(ErrorCode::usage, "--bind takes FILE_INPUT=MODEL_INPUT, got '" + pair + "'");
    bind[pair.substr(0, equals)] = pair.substr(equals + 1);
  }
  std::error_code ec;  // a folder's layout is the front end's to read (core/given_folder.py)
  if (!fs::is_regular_file(*arguments.onnx, ec) && !fs::is_directory(*arguments.onnx, ec))
    return fail(ErrorCode::usage, "--onnx " + *arguments.onnx + ": no such file");
  return bind;
}

}  // namespace

Expected<ExportOptions> attached_export_options_from(const ModelArguments& arguments, const fs::path& out) {
  if (out.empty())
    return fail(ErrorCode::usage,
                "the attached command names no run folder (its run.out): the folder to prove the export in");
  if (!arguments.model.empty() || !arguments.from_export.empty())
    return fail(ErrorCode::usage, "--attach takes the export from the front end: give no --model or --from-export");
  return adopted_export_options(arguments, out);
}

Expected<ExportOptions> export_options_from(const ModelArguments& arguments, const fs::path& out) {
  if (!arguments.from_export.empty()) return adopted_export_options(arguments, out);
  if (arguments.model.empty()) return fail(ErrorCode::usage, "give the model with --model SPEC (or --from-export DIR)");
  ExportOptions options;
  options.model = arguments.model;
  for (const auto& text : arguments.inputs) {
    ONNXPROOF_TRY_ASSIGN(auto spec, parse_input_spec(text));
    options.inputs.push_back(std::move(spec));
  }
  for (const auto& text : arguments.dynamic) {
    ONNXPROOF_TRY_ASSIGN(auto axis, parse_dynamic_axis(text));
    options.dynamic.push_back(std::move(axis));
  }
  for (const auto& text : arguments.sweep) {
    ONNXPROOF_TRY_ASSIGN(auto sweep, parse_sweep(text));
    options.sweep[sweep.first] = std::move(sweep.second);
  }
  if (arguments.samples < 1) return fail(ErrorCode::usage, "--samples must be at least 1");
  ONNXPROOF_TRY(check_generate(arguments));
  options.generate = arguments.generate;
  options.merged_decoder = arguments.merged_decoder;
  if (!arguments.data.empty() && !arguments.data_dir.empty()) {
    return fail(ErrorCode::usage, "--data and --data-dir are alternatives; give one");
  }
  if (arguments.opset < 0) return fail(ErrorCode::usage, "--opset must be a positive opset number");
  if (arguments.onnx) {
    ONNXPROOF_TRY_ASSIGN(options.bind, given_file_options(arguments));
  }
  options.onnx = arguments.onnx.value_or("");
  options.opset = arguments.opset;
  const OpsetLimit limit = newest_supported_opset();
  options.opset_ceiling = limit.opset;
  options.opset_ceiling_reason = limit.reason;
  options.opset_op_limits = limit.op_limits;
  options.opset_portable = limit.portable;
  options.opset_portable_reason = limit.portable_reason;
  options.exporter = arguments.exporter;
  options.samples = arguments.samples;
  options.data = arguments.data;
  options.data_dir = arguments.data_dir;
  options.python = arguments.python;
  if (!(arguments.export_timeout > 0))
    return fail(ErrorCode::usage, "--export-timeout must be a positive number of seconds");
  options.timeout_seconds = arguments.export_timeout;
  ONNXPROOF_TRY(require_out_apart(arguments, out));
  options.out = out;
  return options;
}

Expected<std::vector<std::string>> split_list(const std::string& list, const std::string& option) {
  std::vector<std::string> items;
  for (std::size_t start = 0; start <= list.size();) {
    const auto comma = list.find(',', start);
    const std::string item = list.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    if (item.empty()) return fail(ErrorCode::usage, option + " takes a comma-separated list, e.g. cpu,cuda");
    items.push_back(item);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return items;
}

Expected<ParityOptions> parity_options_from(const ProofArguments& arguments) {
  ParityOptions options;
  ONNXPROOF_TRY_ASSIGN(options.providers, split_list(arguments.providers, "--provider"));
  // Said before any export or run: OpenVINO is an optional part of an installation.
  for (const auto& provider : options.providers) {
    if (is_openvino_provider(provider)) ONNXPROOF_TRY(openvino_version());
  }
  options.tolerance.rtol = arguments.rtol;
  options.tolerance.atol = arguments.atol;
  for (const auto& text : arguments.output_tolerances) ONNXPROOF_TRY(options.tolerance.add_output_tolerance(text));
  ONNXPROOF_TRY(options.tolerance.validate());
  options.compare_optimization_off = !arguments.skip_optimization_check;
  options.disabled_optimizers = arguments.disabled_optimizers;
  if (arguments.precision == "fp16") {
    options.precision = DType::float16;
  } else if (arguments.precision != "fp32") {
    return fail(ErrorCode::usage, "--precision takes fp32 or fp16, not '" + arguments.precision + "'");
  }
  return options;
}

}  // namespace onnxproof
