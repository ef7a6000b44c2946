#include "onnxproof/localize/localize.h"

#include "onnxproof/localize/float64_graph.h"

#include "onnxproof/contract/localize.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "onnxproof/core/json_file.h"
#include "onnxproof/core/source_framework.h"
#include "onnxproof/model/model_io.h"
#include "onnxproof/parity/compare.h"
#include "onnxproof/tensor/tensor_io.h"

namespace onnxproof {
namespace fs = std::filesystem;

namespace {

// One value of a module's boundary: the ONNX value's name, PyTorch's tensor file and the float64
// twin's (empty when the model has no float64 run).
struct CapturedValue {
  std::string onnx;
  fs::path pytorch;
  fs::path exact{};
};

struct CapturedModule {
  ModuleComparison comparison;
  std::vector<CapturedValue> inputs;
  std::vector<CapturedValue> outputs;
};

Expected<std::vector<CapturedValue>> captured_values(const nlohmann::json& list, const fs::path& folder,
                                                     const std::string& context) {
  std::vector<CapturedValue> values;
  if (!list.is_array()) return fail(ErrorCode::invalid_input, context + ": expected a list");
  const auto inside = [&](const nlohmann::json& name) -> Expected<fs::path> {
    const fs::path file = name.get<std::string>();
    if (file.is_absolute() || file.lexically_normal().string().starts_with(".."))
      return fail(ErrorCode::invalid_input, context + ": " + file.string() + " lies outside the localize folder");
    return folder / file;
  };
  for (const auto& item : list) {
    if (!item.is_object() || !item.contains("onnx") || !item["onnx"].is_string() || !item.contains("pytorch") ||
        !item["pytorch"].is_string() || (item.contains("exact") && !item["exact"].is_string()))
      return fail(ErrorCode::invalid_input, context + ": each value needs \"onnx\" and \"pytorch\" strings");
    CapturedValue value{.onnx = item["onnx"].get<std::string>(), .pytorch = {}};
    ONNXPROOF_TRY_ASSIGN(value.pytorch, inside(item["pytorch"]));
    if (item.contains("exact")) {
      ONNXPROOF_TRY_ASSIGN(value.exact, inside(item["exact"]));
    }
    values.push_back(std::move(value));
  }
  return values;
}

static_assert(k_localize_schema == contract::k_localize_version,
              "localize.h names another version than schemas/ holds");

// RUN/localize/modules.json, checked field by field.
Expected<std::pair<std::string, std::vector<CapturedModule>>> read_capture(const fs::path& folder) {
  const fs::path path = folder / "modules.json";
  ONNXPROOF_TRY_ASSIGN(const nlohmann::json manifest, read_json_object(path, ErrorCode::invalid_input));
  if (manifest.value("schema", "") != k_localize_schema)
    return fail(ErrorCode::invalid_input, path.string() + ": schema is not " + std::string(k_localize_schema));
  if (!manifest.contains("modules") || !manifest["modules"].is_array() || !manifest.contains("case") ||
      !manifest["case"].is_string())
    return fail(ErrorCode::invalid_input, path.string() + ": needs \"case\" and a \"modules\" list");
  std::vector<CapturedModule> modules;
  for (const auto& entry : manifest["modules"]) {
    const std::string context = path.string() + ": module " + entry.value("module", std::string("?"));
    CapturedModule module;
    ModuleComparison& c = module.comparison;
    c.module = entry.value("module", "");
    c.class_name = entry.value("class", "");
    c.source = entry.value("source", "");
    c.calls = entry.value("calls", 1);
    c.reason = entry.value("reason", "");
    c.nodes = entry.value("nodes", std::vector<std::string>{});
    ONNXPROOF_TRY_ASSIGN(module.inputs,
                         captured_values(entry.value("inputs", nlohmann::json::array()), folder, context));
    ONNXPROOF_TRY_ASSIGN(module.outputs,
                         captured_values(entry.value("outputs", nlohmann::json::array()), folder, context));
    c.matched = entry.value("matched", false) && !module.outputs.empty();
    for (const auto& value : module.inputs) c.input_values.push_back(value.onnx);
    for (const auto& value : module.outputs) c.output_values.push_back(value.onnx);
    modules.push_back(std::move(module));
  }
  return std::pair{manifest["case"].get<std::string>(), std::move(modules)};
}

// A copy of the model whose outputs also carry every captured value, and the model's own graph
// structure (for the node view).
struct ModelCopy {
  std::string bytes;
  GraphStructure structure;
};

Expected<ModelCopy> model_with_intermediates(const fs::path& model, const std::vector<CapturedModule>& modules) {
  ONNXPROOF_TRY_ASSIGN(LoadedModel loaded, load_model(model, {.load_external_data = true}));
  auto& graph = *loaded.proto.mutable_graph();
  GraphStructure structure = graph_structure(graph);
  std::set<std::string> present;
  for (const auto& value : graph.input()) present.insert(value.name());
  for (const auto& value : graph.output()) present.insert(value.name());
  for (const auto& value : graph.initializer()) present.insert(value.name());
  for (const auto& module : modules) {
    for (const auto* values : {&module.inputs, &module.outputs}) {
      for (const auto& value : *values) {
        if (present.insert(value.onnx).second) graph.add_output()->set_name(value.onnx);
      }
    }
  }
  if (loaded.proto.ByteSizeLong() >= (uint64_t{1} << 31))
    return fail(ErrorCode::unsupported, "localization of models over 2 GiB is not supported yet");
  return ModelCopy{loaded.proto.SerializeAsString(), std::move(structure)};
}

// The calibrated rule on one tensor (parity/calibrated.h): ONNX Runtime's distance from the float64
// value against PyTorch's own float32 distance from it there, times the noise multiple.
Comparison calibrated(const Tensor& pytorch, const Tensor& exact, const Tensor& actual) {
  ExactDeviation deviation;
  return compare_calibrated(pytorch, exact, actual, 0.0, deviation);
}

// Every value the copy gives for the case (its outputs by name, and the case's inputs), and
// whether its own outputs still miss PyTorch's as the parity step's did.
struct ComparisonRun {
  std::map<std::string, Tensor> values;
  bool reproduced = false;
  double largest_error = 0;  // max abs over the model's outputs
};

Expected<ComparisonRun> run_with_intermediates(const std::string& bytes, const ReferenceCase& c,
                                               const SessionOptions& options, const ToleranceOptions& tolerance) {
  ONNXPROOF_TRY_ASSIGN(Session session, Session::open_bytes(bytes, options));
  ONNXPROOF_TRY_ASSIGN(std::vector<Tensor> outputs, run_case(session, c));
  ComparisonRun run;
  // The copy's first outputs are the model's own, in order, judged by the rule parity used.
  for (std::size_t i = 0; i < c.outputs.size() && i < outputs.size(); ++i) {
    const std::string& name = session.outputs()[i].name;
    const Tensor& expected = c.outputs[i].tensor;
    const Tensor* exact = tolerance.overridden(name) ? nullptr : exact_output(c, name, i);
    const Comparison cmp = exact && exact_applies(expected, *exact) ? calibrated(expected, *exact, outputs[i])
                                                                    : tolerance.compare(name, expected, outputs[i]);
    run.reproduced = run.reproduced || !cmp.allclose;
    run.largest_error = std::max(run.largest_error, cmp.max_abs);
  }
  for (std::size_t i = 0; i < outputs.size(); ++i) run.values.emplace(session.outputs()[i].name, std::move(outputs[i]));
  for (const auto& input : c.inputs) run.values.emplace(input.name, input.tensor);
  return run;
}

// An intermediate value's tolerance without a float64 twin: the output's for its dtype, with the absolute part raised
// to rtol x the tensor's largest magnitude. Float noise in an activation of size 10 (a few elements off by 3e-5) is no
// divergence; a shifted or NaN value still is.
Tolerance intermediate_tolerance(const Tensor& expected, const ToleranceOptions& options) {
  const Tolerance base = options.resolve("", expected.dtype());
  if (!is_floating(expected.dtype())) return base;
  double magnitude = 0;  // max |expected| over finite values
  for (int64_t i = 0; i < expected.size(); ++i) {
    const double value = std::abs(expected.value_as_double(i));
    if (std::isfinite(value)) magnitude = std::max(magnitude, value);
  }
  return Tolerance{base.rtol, std::max(base.atol, base.rtol * magnitude)};
}

struct SideResult {
  bool agree = true;
  double max_rel = 0;
  double max_abs = 0;
  int64_t mismatches = 0;
  int64_t elements = 0;
  int64_t nonfinite = 0;
  bool calibrated = true;  // every value judged against its float64 twin
};

// ONNX Runtime's values on one side of a module against PyTorch's.
Expected<SideResult> compare_side(const std::vector<CapturedValue>& captured,
                                  const std::map<std::string, Tensor>& values, const ToleranceOptions& tolerance) {
  SideResult result;
  for (const auto& value : captured) {
    const auto found = values.find(value.onnx);
    if (found == values.end()) return fail(ErrorCode::internal, "ONNX Runtime gave no value for " + value.onnx);
    ONNXPROOF_TRY_ASSIGN(const NamedTensor expected, read_tensor_pb(value.pytorch));
    std::optional<NamedTensor> exact;
    if (!value.exact.empty() && !tolerance.overridden("")) {
      ONNXPROOF_TRY_ASSIGN(exact, read_tensor_pb(value.exact));
    }
    const Comparison cmp =
        exact && exact_applies(expected.tensor, exact->tensor)
            ? calibrated(expected.tensor, exact->tensor, found->second)
            : compare_tensors(expected.tensor, found->second, intermediate_tolerance(expected.tensor, tolerance));
    result.calibrated = result.calibrated && exact && exact_applies(expected.tensor, exact->tensor);
    result.agree = result.agree && cmp.allclose;
    result.max_rel = std::max(result.max_rel, cmp.shape_match ? cmp.max_rel : 0.0);
    result.max_abs = std::max(result.max_abs, cmp.shape_match ? cmp.max_abs : 0.0);
    result.mismatches += cmp.shape_match ? cmp.mismatches : expected.tensor.size();
    result.elements += expected.tensor.size();
    result.nonfinite += cmp.nan_mismatches;
  }
  return result;
}

// A module's inputs and outputs against PyTorch's. A module called several times (a ReLU a
// block applies twice) holds each call's values one after the other: each call is judged on its
// own, and the first call whose inputs agree and whose outputs do not is the one said (the later
// calls read what the first one got wrong); otherwise every call together.
Expected<std::pair<SideResult, SideResult>> compare_module(const CapturedModule& module,
                                                           const std::map<std::string, Tensor>& values,
                                                           const ToleranceOptions& tolerance) {
  const auto calls = static_cast<std::size_t>(std::max(1, module.comparison.calls));
  // Each call's values lie one after the other only for floating-point values (the capture lists
  // integer pairs, an Embedding's indices, after them): a module with any is judged as a whole.
  bool floating = calls > 1;
  for (const auto& value : module.inputs) {
    if (!floating) break;
    const auto tensor = read_tensor_pb(value.pytorch);
    floating = tensor && is_floating(tensor->tensor.dtype());
  }
  if (floating && module.inputs.size() % calls == 0 && module.outputs.size() % calls == 0 && !module.inputs.empty()) {
    const std::size_t ins = module.inputs.size() / calls, outs = module.outputs.size() / calls;
    for (std::size_t k = 0; k < calls; ++k) {
      const std::vector<CapturedValue> in_values(module.inputs.begin() + k * ins,
                                                 module.inputs.begin() + (k + 1) * ins);
      const std::vector<CapturedValue> out_values(module.outputs.begin() + k * outs,
                                                  module.outputs.begin() + (k + 1) * outs);
      ONNXPROOF_TRY_ASSIGN(const SideResult in, compare_side(in_values, values, tolerance));
      ONNXPROOF_TRY_ASSIGN(const SideResult out, compare_side(out_values, values, tolerance));
      if (in.agree && !out.agree) return std::pair{in, out};
    }
  }
  ONNXPROOF_TRY_ASSIGN(const SideResult in, compare_side(module.inputs, values, tolerance));
  ONNXPROOF_TRY_ASSIGN(const SideResult out, compare_side(module.outputs, values, tolerance));
  return std::pair{in, out};
}

// `source`: what the reference's framework is called ("PyTorch").
std::string describe_error(const SideResult& side, const std::string& source) {
  if (side.nonfinite > 0) return fmt::format("{} NaN/Inf positions {} does not have", side.nonfinite, source);
  return fmt::format("max abs {:.3g}, max rel {:.3g}", side.max_abs, side.max_rel);
}

Finding located_finding(const Localization& result, const ModuleComparison& m, const SideResult& in,
                        const SideResult& out) {
  const std::string name = m.module.empty() ? "the model itself" : "'" + m.module + "'";
  const std::string nodes =
      m.nodes.size() <= 4
          ? fmt::format("{}", fmt::join(m.nodes, ", "))
          : fmt::format("{}, ... ({} nodes)", fmt::join(m.nodes.begin(), m.nodes.begin() + 3, ", "), m.nodes.size());
  const std::string source = source_title(result.framework);
  const std::string inputs = in.elements == 0
                                 ? "it reads the model's inputs"
                                 : "its inputs match " + source + "'s (" + describe_error(in, source) + ")";
  return {
      FindingCode::divergence_located,
      Severity::info,
      "localize",
      fmt::format("the error appears in {} ({}, {}), ONNX node(s) {}: {}, its outputs differ: {} of {} elements, "
                  "{} (case {}, {}, {} optimizations)",
                  name, m.class_name, m.source.empty() ? "source unknown" : m.source, nodes, inputs, out.mismatches,
                  out.elements, describe_error(out, source), result.data_set, result.provider,
                  optimization_name(result.optimization)),
      (m.module.empty() ? std::string("the model itself") : "module " + m.module) +
          (m.source.empty() ? "" : " (" + m.source + ")"),
      fmt::format("compare that module's ONNX nodes with its {}; localize/ in the run folder has both sides' tensors",
                  module_call(result.framework))};
}

// Why no module is named: the copy's outputs match (an optimization that fuses across modules),
// or every compared module agrees within its budget, or the divergence lies between modules the
// exporter did not keep apart. Never "there is no error": the parity miss stands either way.
Finding nothing_located(const Localization& result) {
  const auto unmatched =
      std::count_if(result.modules.begin(), result.modules.end(), [](const ModuleComparison& m) { return !m.matched; });
  const auto whole = std::find_if(result.modules.begin(), result.modules.end(),
                                  [](const ModuleComparison& m) { return m.module.empty() && m.matched; });
  if (!result.reproduced)
    return {FindingCode::divergence_located,
            Severity::info,
            "localize",
            fmt::format("the model's outputs match {}'s on {} when every module's values are outputs too "
                        "(largest error {:.3g}): if parity failed on this case, an optimization that fuses across "
                        "modules is the likely cause (ONNX Runtime cannot fuse across an output)",
                        source_title(result.framework), result.data_set, result.largest_error),
            "",
            "see RUNTIME_OPTIMIZATION_CHANGED_OUTPUTS when the case passes with optimizations disabled"};
  if (whole != result.modules.end() && whole->outputs_agree)
    return {FindingCode::divergence_located,
            Severity::info,
            "localize",
            fmt::format("the error could not be located: on {} every compared module, the whole model's values "
                        "included, agrees with {} within its budget ({}), while the model's outputs still "
                        "miss (largest error {:.3g}); the parity miss stands",
                        result.data_set, source_title(result.framework),
                        result.calibrated ? "each value against its float64 twin, by the calibrated rule"
                                          : "rtol x each value's magnitude: the model has no float64 run",
                        whole->output_abs),
            "",
            "compare the outputs of the nodes after the last module (localize/modules.json lists what was paired), "
            "or localize another case with onnxproof localize RUN --case"};
  return {FindingCode::divergence_located,
          Severity::info,
          "localize",
          fmt::format("no module could be named: no compared module turns agreeing inputs into differing outputs on {} "
                      "({} modules compared, {} could not be paired with ONNX values)",
                      result.data_set, result.modules.size() - static_cast<std::size_t>(unmatched), unmatched),
          "",
          "the difference arises between modules the exporter did not keep apart (the unpaired ones in "
          "localize/modules.json), or this case does not diverge"};
}

// The view's nodes given their first output's error against the ONNX graph's own float64 run,
// in node_errors and in the view: the error float32 adds inside a module, node by node.
void add_float64_run(const fs::path& model, const ReferenceCase& c, const SessionOptions& session,
                     const GraphStructure& structure, Localization& result) {
  std::map<std::string, std::string> first_output;  // node name -> its first output
  for (const auto& node : structure.nodes)
    if (!node.name.empty() && !node.outputs.empty()) first_output.emplace(node.name, node.outputs.front());
  std::vector<std::string> values;
  for (const auto& node : result.view->nodes)
    if (const auto found = first_output.find(node.node); found != first_output.end()) values.push_back(found->second);
  SessionOptions cpu = session;
  cpu.provider = "cpu";  // the float64 kernels are ONNX Runtime's CPU ones
  const Float64Run run = float64_deviations(model, c, values, cpu);
  result.float64_unavailable = run.unavailable;
  result.float64_float32_ops = run.float32_ops;
  const auto fill = [&](NodeError& e) {
    const auto output = first_output.find(e.node);
    if (output == first_output.end()) return;
    if (const auto found = run.values.find(output->second); found != run.values.end()) {
      e.float64_rel = found->second.rel;
      e.float64_abs = found->second.max_abs;
    }
  };
  for (auto& e : result.node_errors) fill(e);
  for (auto& e : result.view->nodes) fill(e);
}

}  // namespace

Expected<Localization> localize_divergence(const fs::path& run, const fs::path& model, const ReferenceCase& c,
                                           const LocalizeOptions& options) {
  ONNXPROOF_TRY_ASSIGN(auto capture, read_capture(run / "localize"));
  auto& [data_set, modules] = capture;
  if (data_set != c.data_set)
    return fail(ErrorCode::invalid_input,
                "localize/modules.json was captured on " + data_set + ", not " + c.data_set + ": capture again");
  ONNXPROOF_TRY_ASSIGN(const ModelCopy copy, model_with_intermediates(model, modules));
  ONNXPROOF_TRY_ASSIGN(const ComparisonRun compared,
                       run_with_intermediates(copy.bytes, c, options.session, options.tolerance));
  const auto& values = compared.values;
  bool calibrated = true;  // every compared value had its float64 twin

  Localization result{.data_set = data_set,
                      .provider = options.session.provider,
                      .optimization = options.session.optimization,
                      .framework = options.framework};
  for (auto& module : modules) {
    ModuleComparison& m = module.comparison;
    if (m.matched) {
      ONNXPROOF_TRY_ASSIGN(const auto sides, compare_module(module, values, options.tolerance));
      const auto& [in, out] = sides;
      m.inputs_agree = in.agree;
      m.outputs_agree = out.agree;
      m.input_error = in.max_rel;
      m.output_error = out.max_rel;
      m.output_abs = out.max_abs;
      m.output_mismatches = out.mismatches;
      m.output_elements = out.elements;
      m.nonfinite_outputs = out.nonfinite;
      calibrated = calibrated && in.calibrated && out.calibrated;
      // The first module whose inputs agree and whose outputs do not: modules finish inner
      // first, so this is the innermost one that introduces the error.
      if (!result.located && in.agree && !out.agree) {
        result.located = result.modules.size();
        result.findings.push_back(located_finding(result, m, in, out));
      }
    }
    result.modules.push_back(std::move(m));
  }
  result.calibrated = calibrated;
  result.reproduced = compared.reproduced;
  result.largest_error = compared.largest_error;
  if (!result.located) result.findings.push_back(nothing_located(result));
  result.node_errors = node_errors_of(result.modules, result.located, copy.structure);
  result.view = divergence_neighbourhood(result.node_errors, copy.structure);
  if (result.view) add_float64_run(model, c, options.session, copy.structure, result);
  result.graph = copy.structure.name;
  result.model_file = model.filename().string();
  return result;
}

std::optional<ParityRow> worst_failing_row(const ParityResult& parity) {
  const ParityRow* worst = nullptr;
  const auto rank = [](const ParityRow& row) {
    return std::tuple{row.comparison.nan_mismatches > 0, row.argmax && row.argmax->flips > 0, row.comparison.max_abs};
  };
  // Advisory rows (OpenVINO's default precision beside its float32 proof) only where no row that
  // gates failed: their error is the precision's, not a node's.
  for (const bool advisory : {false, true}) {
    for (const auto& row : parity.rows) {
      const bool row_advisory = parity.advisory(row.provider) || row.provider == "openvino:default";
      if (row.status != RowStatus::fail || row_advisory != advisory) continue;
      if (!worst || rank(row) > rank(*worst)) worst = &row;
    }
    if (worst) break;
  }
  if (!worst) return std::nullopt;
  return *worst;
}

nlohmann::json localization_to_json(const Localization& localization) {
  nlohmann::json modules = nlohmann::json::array();
  for (const auto& m : localization.modules) {
    modules.push_back({{"module", m.module},
                       {"class", m.class_name},
                       {"source", m.source},
                       {"nodes", m.nodes},
                       {"calls", m.calls},
                       {"matched", m.matched},
                       {"reason", m.reason},
                       {"inputs_agree", m.inputs_agree},
                       {"outputs_agree", m.outputs_agree},
                       {"input_max_rel", m.input_error},
                       {"output_max_rel", m.output_error},
                       {"output_max_abs", m.output_abs},
                       {"output_mismatches", m.output_mismatches},
                       {"output_elements", m.output_elements},
                       {"nonfinite_outputs", m.nonfinite_outputs}});
  }
  nlohmann::json findings = nlohmann::json::array();
  for (const auto& finding : localization.findings) findings.push_back(finding_to_json(finding));
  return {{"case", localization.data_set},
          {"provider", localization.provider},
          {"optimization", optimization_name(localization.optimization)},
          {"seconds", localization.seconds},
          {"reproduced", localization.reproduced},
          {"largest_error", localization.largest_error},
          {"located", localization.located ? nlohmann::json(localization.modules[*localization.located].module)
                                           : nlohmann::json(nullptr)},
          {"findings", findings},
          {"modules", modules},
          {"graph_view", localization.view ? graph_view_to_json(*localization.view) : nlohmann::json(nullptr)},
          {"float64_graph",
           {{"ran", localization.view && localization.float64_unavailable.empty()},
            {"unavailable", localization.float64_unavailable},
            {"float32_ops", localization.float64_float32_ops}}}};
}

}  // namespace onnxproof
