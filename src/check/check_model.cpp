#include "onnxproof/check/check_model.h"

#include <onnx/checker.h>
#include <onnx/defs/schema.h>
#include <onnx/shape_inference/implementation.h>

#include <algorithm>
#include <map>
#include <set>

#include "build_config.h"
#include "onnxproof/ops/opset_limits.h"
#include "onnxproof/runtime/session.h"
#include "onnxproof/tensor/dtype.h"

namespace onnxproof {
namespace {

constexpr std::string_view k_aten_domain = "org.pytorch.aten";

std::string type_name(const onnx::TypeProto& type) {
  switch (type.value_case()) {
    case onnx::TypeProto::kTensorType: {
      const auto dtype = dtype_from_onnx(type.tensor_type().elem_type());
      return dtype ? dtype_name(*dtype) : "unknown";
    }
    case onnx::TypeProto::kSequenceType:
      return "sequence(" + type_name(type.sequence_type().elem_type()) + ")";
    case onnx::TypeProto::kOptionalType:
      return "optional(" + type_name(type.optional_type().elem_type()) + ")";
    case onnx::TypeProto::kMapType:
      return "map";
    case onnx::TypeProto::kSparseTensorType:
      return "sparse_tensor";
    default:
      return "unknown";
  }
}

ValueSummary summarize_value(const onnx::ValueInfoProto& value) {
  ValueSummary summary;
  summary.name = value.name();
  summary.type = type_name(value.type());
  if (value.type().has_tensor_type() && value.type().tensor_type().has_shape()) {
    summary.has_shape = true;
    for (const auto& dim : value.type().tensor_type().shape().dim()) {
      DimSummary d;
      if (dim.has_dim_value()) d.size = dim.dim_value();
      if (dim.has_dim_param()) d.symbol = dim.dim_param();
      summary.dims.push_back(std::move(d));
    }
  }
  return summary;
}

uint64_t tensor_bytes(const onnx::TensorProto& tensor) {
  if (tensor.has_raw_data()) return tensor.raw_data().size();
  uint64_t count = 1;
  for (const int64_t dim : tensor.dims()) count *= static_cast<uint64_t>(std::max<int64_t>(dim, 0));
  const auto dtype = dtype_from_onnx(tensor.data_type());
  if (tensor.data_location() == onnx::TensorProto::EXTERNAL || !dtype || dtype_storage_bytes(*dtype, 1) == 0) {
    for (const auto& entry : tensor.external_data()) {
      if (entry.key() == "length") return std::strtoull(entry.value().c_str(), nullptr, 10);
    }
  }
  return dtype ? dtype_storage_bytes(*dtype, count) : 0;
}

bool has_external_data(const onnx::ModelProto& model) {
  bool found = false;
  for_each_graph(model.graph(), [&](const onnx::GraphProto& graph) {
    for (const auto& tensor : graph.initializer())
      found = found || tensor.data_location() == onnx::TensorProto::EXTERNAL;
  });
  return found;
}

std::string first_line(const std::string& text) {
  const auto end = text.find('\n');
  return end == std::string::npos ? text : text.substr(0, end);
}

// What the ONNX checker lets through but no runtime can use: a graph with no outputs, and
// negative dimensions in the declared inputs and outputs.
void add_interface_findings(const onnx::ModelProto& model, std::vector<Finding>& findings) {
  const auto& graph = model.graph();
  if (graph.output_size() == 0) {
    findings.push_back({FindingCode::checker_failed, Severity::error, "check",
                        "the graph has no outputs: it computes nothing (the ONNX checker accepts this)", "",
                        "re-export with the model's outputs"});
  }
  for (const auto* values : {&graph.input(), &graph.output()}) {
    for (const auto& value : *values) {
      if (!value.type().has_tensor_type() || !value.type().tensor_type().has_shape()) continue;
      const auto& dims = value.type().tensor_type().shape().dim();
      for (int axis = 0; axis < dims.size(); ++axis) {
        if (dims[axis].has_dim_value() && dims[axis].dim_value() < 0) {
          findings.push_back({FindingCode::checker_failed, Severity::error, "check",
                              "'" + value.name() + "' declares dimension " + std::to_string(dims[axis].dim_value()) +
                                  " on axis " + std::to_string(axis) + " (the ONNX checker accepts this)",
                              value.name(), "a dimension is a size >= 0 or a symbolic name"});
        }
      }
    }
  }
}

void add_domain_findings(const onnx::ModelProto& model, std::vector<Finding>& findings) {
  struct DomainUse {
    std::set<std::string> op_types;
    std::vector<std::string> nodes;
  };
  std::map<std::string, DomainUse> custom;
  for_each_graph(model.graph(), [&](const onnx::GraphProto& graph) {
    for (const auto& node : graph.node()) {
      const auto& domain = node.domain();
      if (domain.empty() || domain == "ai.onnx" || domain == "ai.onnx.ml") continue;
      auto& use = custom[domain];
      std::string op = node.op_type();
      if (domain == k_aten_domain) {
        for (const auto& attribute : node.attribute()) {
          if (attribute.name() == "operator") op += " (aten::" + attribute.s() + ")";
        }
      }
      use.op_types.insert(op);
      use.nodes.push_back(node.name().empty() ? node.op_type() : node.name());
    }
  });
  for (const auto& [domain, use] : custom) {
    std::string ops;
    for (const auto& op : use.op_types) ops += (ops.empty() ? "" : ", ") + op;
    std::string where;
    for (std::size_t i = 0; i < use.nodes.size() && i < 5; ++i) where += (i ? ", " : "") + use.nodes[i];
    if (use.nodes.size() > 5) where += ", ... (" + std::to_string(use.nodes.size()) + " nodes)";
    Finding finding;
    finding.code = FindingCode::custom_domain_op;
    finding.step = "check";
    finding.where = where;
    if (domain == k_aten_domain) {
      finding.severity = Severity::error;
      finding.message = std::to_string(use.nodes.size()) + " ATen fallback node(s) in domain " + domain + ": " + ops +
                        "; no deployment runtime implements them";
      finding.hint =
          "the exporter had no ONNX translation for this operator: try a newer --opset, the dynamo exporter, "
          "or rewrite the op with supported ones (a decomposition)";
    } else {
      finding.severity = Severity::warning;
      finding.message = std::to_string(use.nodes.size()) + " node(s) in custom domain " + domain + ": " + ops +
                        "; only runtimes that register this domain can run them";
      finding.hint = domain == "com.microsoft"
                         ? "com.microsoft contrib ops run on ONNX Runtime only; check each target runtime"
                         : "ship a custom-op library for every target runtime, or replace these ops";
    }
    findings.push_back(std::move(finding));
  }
}

}  // namespace

Expected<void> require_known_versions(const onnx::ModelProto& model) {
  // ONNX Runtime may read fewer IR versions than the ONNX library knows (ONNX Runtime 1.30 reads
  // up to 13, ONNX 1.23 knows 14): both limits are named.
  const int ort_ir = onnxruntime_newest_ir_version();
  if (model.ir_version() > onnx::Version::IR_VERSION || (ort_ir > 0 && model.ir_version() > ort_ir)) {
    return fail(ErrorCode::unsupported, "the model uses IR version " + std::to_string(model.ir_version()) +
                                            ", newer than onnxproof can check and run (ONNX Runtime " +
                                            onnxruntime_version() + " reads up to " + std::to_string(ort_ir) +
                                            "; ONNX " + ONNXPROOF_ONNX_VERSION + " knows up to " +
                                            std::to_string(onnx::Version::IR_VERSION) + ")");
  }
  // The checker accepts an opset it does not know (opset 1000 passes it): refuse anything newer
  // than the ONNX library's last released opset or than ONNX Runtime runs, naming both limits.
  const OpsetLimit limit = newest_supported_opset();
  const auto& ranges = onnx::OpSchemaRegistry::DomainToVersionRange::Instance().LastReleaseVersionMap();
  for (const auto& opset : model.opset_import()) {
    const std::string domain = opset.domain() == "ai.onnx" ? "" : opset.domain();
    if (domain.empty() && opset.version() > limit.opset) {
      return fail(ErrorCode::unsupported, "the model declares opset " + std::to_string(opset.version()) +
                                              " of ai.onnx, newer than onnxproof can check and run (" + limit.reason +
                                              "); re-export with --opset " + std::to_string(limit.opset) + " or older");
    }
    const auto range = ranges.find(domain);
    if (!domain.empty() && range != ranges.end() && opset.version() > range->second) {
      return fail(ErrorCode::unsupported, "the model declares opset " + std::to_string(opset.version()) + " of " +
                                              display_domain(domain) + ", newer than the ONNX library " +
                                              ONNXPROOF_ONNX_VERSION + " has released (up to " +
                                              std::to_string(range->second) + ")");
    }
  }
  return {};
}

std::string display_domain(const std::string& domain) { return domain.empty() ? "ai.onnx" : domain; }

std::string onnx_library_version() { return ONNXPROOF_ONNX_VERSION; }

ModelSummary summarize_model(const onnx::ModelProto& model) {
  ModelSummary summary;
  summary.ir_version = model.ir_version();
  summary.producer = model.producer_name();
  if (!model.producer_version().empty()) summary.producer += " " + model.producer_version();
  std::map<std::string, int64_t> opsets;
  for (const auto& opset : model.opset_import()) {
    const std::string domain = display_domain(opset.domain());
    opsets[domain] = opset.version();
    summary.opset_imports.emplace_back(domain, opset.version());
  }

  const auto& graph = model.graph();
  std::set<std::string> initializer_names;
  for (const auto& initializer : graph.initializer()) {
    initializer_names.insert(initializer.name());
    ++summary.initializer_count;
    summary.initializer_bytes += tensor_bytes(initializer);
    if (initializer.data_location() == onnx::TensorProto::EXTERNAL) summary.external_bytes += tensor_bytes(initializer);
  }
  for (const auto& input : graph.input()) {
    if (!initializer_names.contains(input.name())) summary.inputs.push_back(summarize_value(input));
  }
  for (const auto& output : graph.output()) summary.outputs.push_back(summarize_value(output));

  std::map<std::pair<std::string, std::string>, OperatorUse> uses;
  for_each_graph(graph, [&](const onnx::GraphProto& g) {
    const bool is_subgraph = &g != &graph;
    for (const auto& node : g.node()) {
      const std::string domain = display_domain(node.domain());
      auto& use = uses[{domain, node.op_type()}];
      use.domain = domain;
      use.op_type = node.op_type();
      use.opset = opsets.contains(domain) ? opsets[domain] : 0;
      ++use.count;
      if (is_subgraph) ++use.in_subgraphs;
      ++summary.node_count;
    }
  });
  for (auto& [key, use] : uses) summary.operators.push_back(std::move(use));
  return summary;
}

Expected<CheckResult> check_model(const LoadedModel& model, const CheckOptions& options) {
  const auto& proto = model.proto;
  ONNXPROOF_TRY(require_known_versions(proto));

  CheckResult result;
  result.summary = summarize_model(proto);

  try {
    // ONNX 1.23 exports the checker only by proto (external data then resolves against the
    // working directory) or by path: a model with external data is checked by its path, so the
    // data files are looked for beside it; its graph alone is read again, not the weights.
    if (has_external_data(proto) && !model.path.empty()) {
      onnx::checker::check_model(model.path.string(), /*full_check=*/false);
    } else {
      onnx::checker::check_model(proto, /*full_check=*/false);
    }
    result.checker_passed = true;
  } catch (const std::exception& error) {
    result.findings.push_back({FindingCode::checker_failed, Severity::error, "check",
                               "the ONNX checker rejected the model: " + first_line(error.what()), "",
                               "the exporter wrote an invalid graph; re-export with a supported opset or report it"});
  }

  // Strict shape inference works on a copy (it writes value_info into the graph), made without
  // the weights' bytes: shape inference reads their dims.
  try {
    onnx::ModelProto copy = copy_without_large_tensors(proto);
    onnx::ShapeInferenceOptions strict(/*check_type=*/true, /*error_mode=*/1, /*data_prop=*/true);
    onnx::shape_inference::InferShapes(copy, onnx::OpSchemaRegistry::Instance(), strict);
    result.shape_inference_passed = true;
  } catch (const std::exception& error) {
    result.findings.push_back({FindingCode::shape_inference_failed, Severity::error, "check",
                               "strict shape inference failed: " + first_line(error.what()), "",
                               "shapes do not propagate from inputs to outputs; look at the named node's inputs"});
  }

  add_interface_findings(proto, result.findings);
  add_domain_findings(proto, result.findings);
  for (auto& finding : find_frozen_dimensions(proto, options.frozen)) result.findings.push_back(std::move(finding));

  for (const auto& [domain, version] : result.summary.opset_imports) {
    if (domain == "ai.onnx" && version < options.min_opset) {
      result.findings.push_back({FindingCode::opset_too_old, Severity::warning, "check",
                                 "the model uses opset " + std::to_string(version) + " of ai.onnx, older than " +
                                     std::to_string(options.min_opset),
                                 "", "re-export with --opset " + std::to_string(options.min_opset) + " or newer"});
    }
  }
  return result;
}

}  // namespace onnxproof
