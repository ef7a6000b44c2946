// The engine's half of the contract with the Python front end, through the types generated from
// schemas/config.schema.json and schemas/export.schema.json (scripts/contract-codegen.py).
#include "contract.h"

#include <algorithm>

#include "onnxproof/contract/config.h"
#include "onnxproof/contract/export.h"
#include "onnxproof/core/json_file.h"
#include "onnxproof/core/source_framework.h"
#include "onnxproof/parity/parity.h"
#include "text_parsing.h"

namespace onnxproof {
namespace fs = std::filesystem;

static_assert(k_config_contract == contract::k_config_version && k_export_schema == contract::k_export_version,
              "export_step.h names another version than schemas/ holds");

namespace {

contract::ConfigDocument config_document(const ExportOptions& options) {
  contract::ConfigDocument config;
  config.contract = contract::k_config_version;
  config.model = options.model;
  for (const auto& input : options.inputs) {
    contract::ConfigInput& spec =
        config.inputs.emplace_back(contract::ConfigInput{input.name, input.dims, input.dtype});
    if (input.range) spec.range = std::vector<int64_t>{input.range->first, input.range->second};
  }
  const auto declared = [&](const std::string& name) {
    return std::any_of(options.inputs.begin(), options.inputs.end(),
                       [&](const InputSpec& input) { return input.name == name; });
  };
  for (const auto& axis : options.dynamic) {
    // With inputs declared, a name none has is an output's axis (validate_dynamic_axes).
    if (!options.inputs.empty() && !declared(axis.input) && source_framework_of_spec(options.model) != k_tensorflow) {
      if (!config.output_axes) config.output_axes.emplace();
      (*config.output_axes)[axis.input][std::to_string(axis.axis)] = axis.label;
      continue;
    }
    contract::ConfigDynamicAxis& entry =
        config.dynamic.emplace_back(contract::ConfigDynamicAxis{axis.input, axis.axis, axis.label});
    if (axis.range) {
      entry.min = axis.range->first;
      entry.max = axis.range->second;
    }
  }
  config.opset = options.opset;
  config.exporter = options.exporter;
  config.framework = source_framework_of_spec(options.model);
  config.sweep = options.sweep;
  config.samples = options.samples;
  config.seed = static_cast<int64_t>(options.seed);
  config.out = options.out.string();
  if (options.opset_ceiling > 0) {
    config.opset_ceiling = options.opset_ceiling;
    config.opset_ceiling_reason = options.opset_ceiling_reason;
  }
  if (options.opset_portable > 0) {
    config.opset_portable = options.opset_portable;
    config.opset_portable_reason = options.opset_portable_reason;
  }
  if (!options.opset_op_limits.empty())
    config.opset_op_limits =
        std::map<std::string, int64_t>(options.opset_op_limits.begin(), options.opset_op_limits.end());
  if (!options.data.empty()) config.data = options.data;
  if (options.generate > 0) config.generate = options.generate;
  if (options.merged_decoder) config.merged_decoder = true;
  if (!options.data_dir.empty()) config.data_dir = options.data_dir.string();
  if (!options.onnx.empty()) config.onnx = options.onnx.string();
  if (!options.bind.empty()) config.bind = options.bind;
  return config;
}

// The declared axes (options.dynamic) with their sizes in the traced example (inputs[].dims) and
// the output axes that follow them (outputs[].dynamic_axes), for the frozen-shape analysis.
Expected<FrozenShapeOptions> frozen_shape_options_from(const contract::ExportDocument& manifest, const fs::path& path) {
  FrozenShapeOptions frozen;
  const auto inputs = manifest.inputs.value_or(std::vector<contract::ExportInput>{});
  if (manifest.options && manifest.options->dynamic) {
    for (const auto& axis : *manifest.options->dynamic) {
      DeclaredAxis declared{axis.input, axis.axis, axis.label, 0};
      for (const auto& input : inputs) {
        if (input.name == declared.input && declared.axis < static_cast<int64_t>(input.dims.size()))
          declared.example_size = input.dims[static_cast<std::size_t>(declared.axis)];
      }
      frozen.dynamic.push_back(std::move(declared));
    }
  }
  for (const auto& output : manifest.outputs.value_or(std::vector<contract::ExportOutput>{})) {
    for (const auto& [axis, label] : output.dynamic_axes.value_or(std::map<std::string, std::string>{})) {
      const auto index = export_text::parse_int(axis);
      if (!index)
        return std::unexpected(
            field_error(path, ErrorCode::internal, "outputs[].dynamic_axes." + axis, "a decimal axis"));
      frozen.output_axes[output.name][*index] = label;
    }
  }
  return frozen;
}

Expected<ExportResult> export_result_from(const contract::ExportDocument& manifest, const fs::path& out,
                                          const fs::path& path) {
  ExportResult result;
  result.exporter = manifest.exporter;
  if (manifest.opset) {
    result.opset = manifest.opset->value.value_or(0);
    result.opset_chosen_by = manifest.opset->chosen_by.value_or("");
  }
  if (manifest.framework) result.framework = *manifest.framework;
  result.spec = manifest.model.value_or("");
  for (const auto& [tool, version] : manifest.versions.value_or(std::map<std::string, std::string>{}))
    result.versions.emplace_back(tool, version);
  for (std::size_t i = 0; i < manifest.findings.size(); ++i) {
    ONNXPROOF_TRY_ASSIGN(Finding finding,
                         finding_from_json(manifest.findings[i], "export.json: findings[" + std::to_string(i) + "]"));
    result.findings.push_back(std::move(finding));
  }
  if (manifest.onnx_model && *manifest.onnx_model) {
    result.model = out / (*manifest.onnx_model)->path;
    result.sha256 = (*manifest.onnx_model)->sha256;
  }
  if (manifest.timings_s && manifest.timings_s->peak_mib) {
    for (const auto& [stage, mib] : *manifest.timings_s->peak_mib)
      result.front_end_peak_mib = std::max(result.front_end_peak_mib.value_or(0.0), mib);
  }
  ONNXPROOF_TRY_ASSIGN(result.frozen, frozen_shape_options_from(manifest, path));
  if (manifest.given_file) {
    const auto bound = [](const auto& names) {
      std::vector<BoundName> out;
      for (const auto& name : names) out.push_back({name.file, name.model, name.by, name.cast.value_or(""), {}});
      return out;
    };
    result.given_file = GivenFile{manifest.given_file->path, manifest.given_file->sha256,
                                  bound(manifest.given_file->inputs), bound(manifest.given_file->outputs)};
    result.given_file->folder = manifest.given_file->folder.value_or("");
    for (std::size_t i = 0; i < manifest.given_file->inputs.size(); ++i)
      result.given_file->inputs[i].layout = manifest.given_file->inputs[i].layout.value_or("");
  }
  if (const fs::path cases = out / "reference" / "cases.json"; fs::exists(cases)) {
    ONNXPROOF_TRY_ASSIGN(const CasesManifest read, read_cases_manifest(cases));
    result.reference_sets = static_cast<int>(read.cases.size());
  }
  return result;
}

}  // namespace

nlohmann::json config_json(const ExportOptions& options) { return contract::write_config(config_document(options)); }

Expected<ExportResult> read_export_manifest(const fs::path& out) {
  const fs::path path = out / "export.json";
  ONNXPROOF_TRY_ASSIGN(const nlohmann::json json, read_json_object(path, ErrorCode::internal));
  // A front end from another onnxproof version, or a broken one, is an error naming the field,
  // never empty options.
  ONNXPROOF_TRY_ASSIGN(const contract::ExportDocument manifest, contract::read_export(json, path, ErrorCode::internal));
  return export_result_from(manifest, out, path);
}

namespace {

// Whether `folder` holds an export.json of onnxproof's (another tool's file of that name is none).
bool has_onnxproof_export(const fs::path& folder) {
  std::error_code ec;
  if (!fs::exists(folder / "export.json", ec)) return false;
  const auto manifest = read_json_object(folder / "export.json", ErrorCode::invalid_input);
  const auto schema = manifest ? manifest->find("schema") : nlohmann::json::const_iterator();
  return manifest && schema != manifest->end() && schema->is_string() && schema->get<std::string>() == k_export_schema;
}

}  // namespace

Expected<FrozenShapeOptions> frozen_shape_options_beside(const fs::path& folder) {
  if (!has_onnxproof_export(folder)) return FrozenShapeOptions{};
  ONNXPROOF_TRY_ASSIGN(const ExportResult exported, read_export_manifest(folder));
  return exported.frozen;
}

std::string source_framework_beside(const fs::path& folder) {
  if (!has_onnxproof_export(folder)) return "";
  const auto exported = read_export_manifest(folder);
  return exported ? exported->framework : "";
}

}  // namespace onnxproof
