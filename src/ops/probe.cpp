#include "onnxproof/ops/probe.h"

#include <onnx/defs/schema.h>

#include <fmt/format.h>

#include <unistd.h>

#include <algorithm>
#include <map>
#include <set>

#include "onnxproof/core/atomic_file.h"
#include "onnxproof/core/name_table.h"
#include "onnxproof/runtime/session.h"
#include "onnxproof/tensor/dtype.h"

namespace onnxproof {
namespace fs = std::filesystem;

constexpr NameTable<ProbeStatus, 3> k_probe_status_names = {
    {ProbeStatus::supported, "supported"},
    {ProbeStatus::not_implemented, "not-implemented"},
    {ProbeStatus::error, "error"},
};

std::string_view probe_status_name(ProbeStatus status) { return name_in(k_probe_status_names, status); }

namespace {

// "tensor(float)" -> FLOAT; 0 for anything that is not a plain tensor type.
int32_t tensor_elem_type(const std::string& type) {
  if (!type.starts_with("tensor(") || type.back() != ')') return 0;
  std::string name = type.substr(7, type.size() - 8);
  if (name == "float") name = "float32";
  if (name == "double") name = "float64";
  const auto dtype = dtype_from_name(name);
  return dtype ? static_cast<int32_t>(*dtype) : 0;
}

// The element type for each formal parameter's type string: type constraints get `choice`
// (by index into their allowed tensor types, float first), literal types their own.
struct TypeChoice {
  std::map<std::string, int32_t> by_param;
  std::string describe;
};

std::vector<TypeChoice> type_choices(const onnx::OpSchema& schema) {
  // Preferred: every constraint at float (or its first tensor type); then, for the first
  // constraint, each of its other tensor types (kernels that exist only for other types).
  TypeChoice preferred;
  std::vector<int32_t> first_alternatives;
  for (const auto& constraint : schema.typeConstraintParams()) {
    std::vector<int32_t> types;
    for (const auto& allowed : constraint.allowed_type_strs) {
      if (const int32_t t = tensor_elem_type(allowed)) types.push_back(t);
    }
    if (types.empty()) continue;
    const bool has_float = std::find(types.begin(), types.end(), static_cast<int32_t>(DType::float32)) != types.end();
    preferred.by_param[constraint.type_param_str] = has_float ? static_cast<int32_t>(DType::float32) : types.front();
    if (first_alternatives.empty()) first_alternatives = types;
  }
  std::vector<TypeChoice> choices = {preferred};
  if (!schema.typeConstraintParams().empty()) {
    const std::string first = schema.typeConstraintParams().front().type_param_str;
    for (const int32_t t : first_alternatives) {
      if (t == preferred.by_param[first]) continue;
      TypeChoice alternative = preferred;
      alternative.by_param[first] = t;
      choices.push_back(alternative);
    }
  }
  for (auto& choice : choices) {
    for (const auto& [param, type] : choice.by_param) {
      choice.describe +=
          fmt::format("{}{}={}", choice.describe.empty() ? "" : ", ", param, dtype_name(static_cast<DType>(type)));
    }
  }
  return choices;
}

int32_t param_type(const onnx::OpSchema::FormalParameter& param, const TypeChoice& choice) {
  const auto it = choice.by_param.find(param.GetTypeStr());
  if (it != choice.by_param.end()) return it->second;
  for (const auto& allowed : param.GetTypes()) {
    if (const int32_t t = tensor_elem_type(*allowed)) return t;
  }
  return 0;
}

// Placeholder values for the attributes a schema requires (and Constant's value).
Expected<void> add_required_attributes(const onnx::OpSchema& schema, onnx::NodeProto& node) {
  if (schema.Name() == "Constant") {  // needs exactly one of its optional value attributes
    auto* value = node.add_attribute();
    value->set_name("value");
    value->set_type(onnx::AttributeProto::TENSOR);
    value->mutable_t()->set_data_type(onnx::TensorProto::FLOAT);
    value->mutable_t()->add_float_data(1.0F);
  }
  for (const auto& [name, attribute] : schema.attributes()) {
    if (!attribute.required) continue;
    auto* proto = node.add_attribute();
    proto->set_name(name);
    proto->set_type(attribute.type);
    switch (attribute.type) {
      case onnx::AttributeProto::INT:
        proto->set_i(1);
        break;
      case onnx::AttributeProto::FLOAT:
        proto->set_f(1.0F);
        break;
      case onnx::AttributeProto::STRING:
        proto->set_s("a");
        break;
      case onnx::AttributeProto::INTS:
        proto->add_ints(1);
        break;
      case onnx::AttributeProto::FLOATS:
        proto->add_floats(1.0F);
        break;
      case onnx::AttributeProto::STRINGS:
        proto->add_strings("a");
        break;
      case onnx::AttributeProto::TENSOR:
        proto->mutable_t()->set_data_type(onnx::TensorProto::FLOAT);
        proto->mutable_t()->add_float_data(1.0F);
        break;
      default:
        return fail(ErrorCode::unsupported,
                    "needs a '" + name + "' attribute of a kind the probe cannot make (a subgraph)");
    }
  }
  return {};
}

// A one-node model, or the reason none can be built (non-tensor types, subgraph attributes).
Expected<onnx::ModelProto> one_node_model(const onnx::OpSchema& schema, int opset, const TypeChoice& choice) {
  onnx::ModelProto model;
  model.set_ir_version(8);
  model.set_producer_name("onnxproof-probe");
  auto* import = model.add_opset_import();
  import->set_domain(schema.domain());
  import->set_version(opset);
  if (!schema.domain().empty()) {
    auto* base = model.add_opset_import();
    base->set_domain("");
    base->set_version(17);
  }
  auto* graph = model.mutable_graph();
  graph->set_name("probe");
  auto* node = graph->add_node();
  node->set_op_type(schema.Name());
  node->set_domain(schema.domain());
  const auto add_value = [](auto* list, const std::string& name, int32_t type) {
    auto* value = list->Add();
    value->set_name(name);
    value->mutable_type()->mutable_tensor_type()->set_elem_type(type);
  };
  // Inputs up to the last required one; optional ones in between are left out by name "".
  std::size_t last_required = 0;
  for (std::size_t i = 0; i < schema.inputs().size(); ++i) {
    if (schema.inputs()[i].GetOption() != onnx::OpSchema::Optional) last_required = i + 1;
  }
  for (std::size_t i = 0; i < last_required; ++i) {
    const auto& param = schema.inputs()[i];
    if (param.GetOption() == onnx::OpSchema::Optional) {
      node->add_input("");
      continue;
    }
    const int32_t type = param_type(param, choice);
    if (type == 0) return fail(ErrorCode::unsupported, "input '" + param.GetName() + "' is not a plain tensor");
    const std::string name = "in_" + std::to_string(i);
    add_value(graph->mutable_input(), name, type);
    node->add_input(name);
  }
  for (std::size_t i = 0; i < schema.outputs().size(); ++i) {
    const auto& param = schema.outputs()[i];
    if (param.GetOption() == onnx::OpSchema::Optional) break;
    const int32_t type = param_type(param, choice);
    if (type == 0) return fail(ErrorCode::unsupported, "output '" + param.GetName() + "' is not a plain tensor");
    const std::string name = "out_" + std::to_string(i);
    node->add_output(name);
    // Outputs are declared without a type where it depends on attributes (Cast's `to`).
    auto* output = graph->add_output();
    output->set_name(name);
  }
  ONNXPROOF_TRY(add_required_attributes(schema, *node));
  return model;
}

// A kernel constructor ran and rejected the probe's placeholder attributes: the kernel exists.
bool kernel_found(const std::string& message) {
  return message.find("Exception during initialization") != std::string::npos;
}

bool is_not_implemented(const std::string& message) {
  return message.find("Could not find an implementation") != std::string::npos ||
         message.find("Failed to find kernel") != std::string::npos ||
         message.find("is not a registered function/op") != std::string::npos ||
         message.find("not implemented") != std::string::npos;
}

}  // namespace

Expected<std::vector<ProbeRow>> probe_operators(const ProbeOptions& options) {
  std::vector<const onnx::OpSchema*> schemas;
  const auto all = onnx::OpSchemaRegistry::get_all_schemas_with_history();
  static const auto k_history = all;  // keeps the schemas alive for the pointers below
  std::map<std::pair<std::string, std::string>, const onnx::OpSchema*> latest;
  for (const auto& schema : k_history) {
    if (schema.domain() != "" && schema.domain() != "ai.onnx.ml") continue;
    if (schema.Deprecated() || schema.SinceVersion() > options.opset) continue;
    if (!options.only.empty() &&
        std::find(options.only.begin(), options.only.end(), schema.Name()) == options.only.end())
      continue;
    if (options.all_versions) {
      schemas.push_back(&schema);
    } else {
      auto& best = latest[{schema.domain(), schema.Name()}];
      if (!best || best->SinceVersion() < schema.SinceVersion()) best = &schema;
    }
  }
  for (const auto& [key, schema] : latest) schemas.push_back(schema);

  const fs::path folder = fs::temp_directory_path() / ("onnxproof-probe-" + std::to_string(::getpid()));
  std::error_code ec;
  fs::create_directories(folder, ec);
  if (ec) return fail(ErrorCode::io, "cannot create " + folder.string() + ": " + ec.message());

  std::vector<ProbeRow> rows;
  for (const auto* schema : schemas) {
    ProbeRow row{schema->domain().empty() ? "ai.onnx" : schema->domain(), schema->Name(), schema->SinceVersion(),
                 ProbeStatus::error, ""};
    // ai.onnx.ml has its own, smaller version numbers: its schemas are probed at their own version.
    const int opset = options.all_versions || !schema->domain().empty() ? schema->SinceVersion() : options.opset;
    for (const auto& choice : type_choices(*schema)) {
      auto model = one_node_model(*schema, opset, choice);
      if (!model) {
        row.message = model.error().message();
        break;
      }
      const fs::path path = folder / "probe.onnx";
      if (auto saved = write_file_atomically(path, model->SerializeAsString()); !saved)
        return std::unexpected(saved.error());
      auto session = Session::open(
          path, SessionOptions{
                    .provider = options.provider, .optimization = GraphOptimization::disabled, .intra_op_threads = 1});
      if (session) {
        row.status = ProbeStatus::supported;
        row.message = choice.describe.empty() ? "" : "probed with " + choice.describe;
        break;
      }
      if (session.error().code() == ErrorCode::not_found)
        return std::unexpected(session.error());  // the provider itself
      const std::string message = session.error().message();
      if (kernel_found(message)) {
        row.status = ProbeStatus::supported;
        row.message = "kernel found (its constructor rejected the probe's placeholder attributes)";
        break;
      }
      if (is_not_implemented(message)) {
        row.status = ProbeStatus::not_implemented;
        row.message = message.substr(0, 300);
        continue;  // another type may have a kernel
      }
      // A malformed probe: a type change will not fix it. After a "no kernel" for the preferred
      // type, that answer stands.
      if (row.status != ProbeStatus::not_implemented) {
        row.status = ProbeStatus::error;
        row.message = message.substr(0, 300);
      }
      break;
    }
    rows.push_back(std::move(row));
  }
  fs::remove_all(folder, ec);
  return rows;
}

SupportTable probed_table(const std::vector<ProbeRow>& rows, const SupportTable& documented,
                          const std::string& runtime) {
  SupportTable table;
  table.target = "ort-cpu";
  table.runtime = runtime;
  table.source =
      "probed from the installed library by `onnxproof ops probe --all-versions` (one-node sessions); "
      "operators the probe cannot build are taken from " +
      documented.source;
  // Versions per op, to close each probed row's range where the next schema version starts.
  std::map<std::pair<std::string, std::string>, std::vector<const ProbeRow*>> by_op;
  for (const auto& row : rows) by_op[{row.domain, row.op_type}].push_back(&row);
  std::set<std::pair<std::string, std::string>> undecided;
  for (auto& [key, versions] : by_op) {
    std::sort(versions.begin(), versions.end(), [](auto* a, auto* b) { return a->since_version < b->since_version; });
    for (std::size_t i = 0; i < versions.size(); ++i) {
      const auto* row = versions[i];
      if (row->status == ProbeStatus::error) {
        undecided.insert(key);
        continue;
      }
      const int until = i + 1 < versions.size() ? versions[i + 1]->since_version - 1 : 0;
      table.entries.push_back(
          {row->domain, row->op_type, row->since_version, until,
           row->status == ProbeStatus::supported ? SupportStatus::supported : SupportStatus::unsupported,
           row->status == ProbeStatus::supported ? row->message : "no kernel in the installed ONNX Runtime"});
    }
  }
  for (const auto& entry : documented.entries) {
    const std::pair key{entry.domain, entry.op_type};
    if (undecided.contains(key) || !by_op.contains(key)) {
      SupportEntry copy = entry;
      copy.restrictions = "documented, not probed" + (entry.restrictions.empty() ? "" : "; " + entry.restrictions);
      table.entries.push_back(std::move(copy));
    }
  }
  return table;
}

Expected<void> write_support_table(const SupportTable& table, const fs::path& path) {
  const auto quote = [](const std::string& field) {
    if (field.find_first_of(",\"\n") == std::string::npos) return field;
    std::string quoted = "\"";
    for (const char c : field) quoted += c == '"' ? std::string("\"\"") : std::string(1, c);
    return quoted + "\"";
  };
  std::string text =
      fmt::format("# target: {}\n# runtime: {}\n# source: {}\n# opset_range: {}\n", table.target, table.runtime,
                  table.source, table.min_opset > 0 ? fmt::format("{}-{}", table.min_opset, table.max_opset) : "any");
  text += "domain,op_type,since_version,until_version,status,restrictions\n";
  auto entries = table.entries;
  std::sort(entries.begin(), entries.end(), [](const SupportEntry& a, const SupportEntry& b) {
    return std::tie(a.domain, a.op_type, a.since_version) < std::tie(b.domain, b.op_type, b.since_version);
  });
  for (const auto& e : entries) {
    text += fmt::format(
        "{},{},{},{},{},{}\n", e.domain, e.op_type, e.since_version ? std::to_string(e.since_version) : "",
        e.until_version ? std::to_string(e.until_version) : "", support_status_name(e.status), quote(e.restrictions));
  }
  return write_file_atomically(path, text);
}

std::vector<ProbeDifference> differences_from_table(const std::vector<ProbeRow>& rows, const SupportTable& documented) {
  std::vector<ProbeDifference> differences;
  for (const auto& row : rows) {
    if (row.status == ProbeStatus::error) continue;  // inconclusive
    const bool documented_supported =
        std::any_of(documented.entries.begin(), documented.entries.end(), [&](const SupportEntry& entry) {
          return entry.domain == row.domain && entry.op_type == row.op_type &&
                 entry.since_version <= row.since_version &&
                 (entry.until_version == 0 || row.since_version <= entry.until_version);
        });
    if (documented_supported != (row.status == ProbeStatus::supported))
      differences.push_back({row, documented_supported});
  }
  return differences;
}

}  // namespace onnxproof
