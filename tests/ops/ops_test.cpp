#include <gtest/gtest.h>

#include <fmt/format.h>

#include <algorithm>

#include "onnxproof/check/frozen_shapes.h"
#include "onnxproof/export/export_step.h"
#include "onnxproof/ops/audit.h"
#include "onnxproof/ops/opset_limits.h"
#include "onnxproof/ops/probe.h"
#include "onnxproof/ops/release_forecast.h"
#include "onnxproof/ops/support_table.h"
#include "test_support.h"

using namespace onnxproof;
using namespace onnxproof::testing;

namespace {

constexpr int32_t k_float = onnx::TensorProto::FLOAT;

std::vector<SupportTable> tables(std::initializer_list<const char*> targets) {
  std::vector<SupportTable> result;
  for (const char* target : targets) {
    auto table = load_target_table(target);
    EXPECT_TRUE(table) << table.error().describe();
    if (table) result.push_back(std::move(*table));
  }
  return result;
}

const TargetVerdict& verdict(const OpsAudit& audit, const std::string& op_type, const std::string& target) {
  const auto op = std::find_if(audit.operators.begin(), audit.operators.end(),
                               [&](const AuditedOperator& o) { return o.op_type == op_type; });
  EXPECT_NE(op, audit.operators.end()) << op_type;
  const auto v = std::find_if(op->verdicts.begin(), op->verdicts.end(),
                              [&](const TargetVerdict& t) { return t.target == target; });
  EXPECT_NE(v, op->verdicts.end()) << target;
  return *v;
}

bool has(const OpsAudit& audit, const std::string& code, const std::string& fragment) {
  return std::any_of(audit.findings.begin(), audit.findings.end(), [&](const Finding& f) {
    return f.code_name() == code && (f.message + " " + f.hint).find(fragment) != std::string::npos;
  });
}

TEST(SupportTables, EveryShippedTargetLoadsAndSaysWhatItDescribes) {
  const auto targets = known_targets();
  EXPECT_EQ(targets, (std::vector<std::string>{"openvino", "ort-cpu", "ort-cuda", "tensorrt"}));
  for (const auto& table : tables({"openvino", "ort-cpu", "ort-cuda", "tensorrt"})) {
    EXPECT_FALSE(table.runtime.empty()) << table.target;
    EXPECT_FALSE(table.source.empty()) << table.target;
    EXPECT_GT(table.entries.size(), 150U) << table.target;
  }
  EXPECT_EQ(tables({"tensorrt"})[0].max_opset, 24);
}

TEST(SupportTables, UnknownTargetAndMalformedFilesAreClearErrors) {
  auto unknown = load_target_table("coreml");
  ASSERT_FALSE(unknown);
  EXPECT_EQ(unknown.error().code(), ErrorCode::usage);
  EXPECT_NE(unknown.error().describe().find("known: openvino, ort-cpu, ort-cuda, tensorrt"), std::string::npos);
  TempDir dir;
  write_bytes(dir / "bad.csv",
              "domain,op_type,since_version,until_version,status,restrictions\nai.onnx,Add,x,,supported,\n");
  auto bad = load_support_table(dir / "bad.csv");
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().describe().find("bad.csv:2: malformed opset version"), std::string::npos)
      << bad.error().describe();
}

TEST(Audit, AtenFallbackIsUnsupportedOnOnnxRuntimeAndTensorRT) {
  const auto model = single_node_model("ATen", {tensor_value("a", k_float, {8})}, tensor_value("c", k_float, {8}), 17,
                                       "org.pytorch.aten");
  const auto audit = audit_operators(model, tables({"ort-cpu", "tensorrt"}));
  EXPECT_EQ(operator_status_name(verdict(audit, "ATen", "ort-cpu").status), "unsupported");
  EXPECT_EQ(operator_status_name(verdict(audit, "ATen", "tensorrt").status), "unsupported");
  EXPECT_TRUE(has(audit, "OP_UNSUPPORTED_BY_TARGET", "decompose it into supported operators"));
}

TEST(Audit, CustomDomainOpIsUnsupportedWhereNoTableListsIt) {
  const auto model =
      single_node_model("MyOp", {tensor_value("a", k_float, {8})}, tensor_value("c", k_float, {8}), 17, "com.example");
  const auto audit = audit_operators(model, tables({"ort-cpu", "openvino"}));
  EXPECT_EQ(operator_status_name(verdict(audit, "MyOp", "ort-cpu").status), "unsupported");
  EXPECT_EQ(operator_status_name(verdict(audit, "MyOp", "openvino").status), "unsupported");
}

TEST(Audit, OpThatTensorRTLacksIsReported) {
  const auto model = single_node_model("Bernoulli", {tensor_value("p", k_float, {8})}, tensor_value("y", k_float, {8}));
  const auto audit = audit_operators(model, tables({"ort-cpu", "tensorrt"}));
  EXPECT_EQ(operator_status_name(verdict(audit, "Bernoulli", "tensorrt").status), "unsupported");
  EXPECT_EQ(operator_status_name(verdict(audit, "Bernoulli", "ort-cpu").status),
            "supported");  // ORT expands the function
  EXPECT_TRUE(has(audit, "OP_UNSUPPORTED_BY_TARGET", "TensorRT 10.15 ONNX parser does not support ai.onnx::Bernoulli"));
}

// Constant has no kernel in ONNX Runtime's lists (it becomes an initializer at load time): every
// Constant node of a model was reported unsupported on ort-cuda.
TEST(Audit, ConstantIsSupportedByEveryOnnxRuntimeTable) {
  const auto model = single_node_model("Constant", {}, tensor_value("y", k_float, {1}));
  const auto audit = audit_operators(model, tables({"ort-cpu", "ort-cuda"}));
  EXPECT_EQ(operator_status_name(verdict(audit, "Constant", "ort-cpu").status), "supported");
  EXPECT_EQ(operator_status_name(verdict(audit, "Constant", "ort-cuda").status), "supported");
  EXPECT_FALSE(has(audit, "OP_UNSUPPORTED_BY_TARGET", "Constant"));
}

TEST(Audit, OpNeedingANewerOpsetSaysWhichOpset) {
  // ONNX Runtime has no CPU kernel for Add before version 7 (probed).
  const auto model = single_node_model("Add", {tensor_value("a", k_float, {8}), tensor_value("b", k_float, {8})},
                                       tensor_value("c", k_float, {8}), 6);
  const auto audit = audit_operators(model, tables({"ort-cpu"}));
  const auto& v = verdict(audit, "Add", "ort-cpu");
  EXPECT_EQ(operator_status_name(v.status), "needs-opset");
  EXPECT_EQ(v.needs_opset, 7);
  EXPECT_TRUE(has(audit, "OP_UNSUPPORTED_BY_TARGET", "re-export with --opset 7"));
}

TEST(Audit, RestrictionsAreWarningsWithTheTableText) {
  const auto model = single_node_model("MaxPool", {tensor_value("x", k_float, {1, 1, 4, 4})},
                                       tensor_value("y", k_float, {1, 1, 2, 2}));
  const auto audit = audit_operators(model, tables({"tensorrt"}));
  EXPECT_EQ(operator_status_name(verdict(audit, "MaxPool", "tensorrt").status), "restricted");
  EXPECT_TRUE(has(audit, "OP_RESTRICTED_BY_TARGET", "2D or 3D pooling only"));
}

TEST(Audit, OpsetOutsideTheDocumentedRangeIsReported) {
  const auto model = single_node_model("Relu", {tensor_value("x", k_float, {4})}, tensor_value("y", k_float, {4}), 8);
  const auto audit = audit_operators(model, tables({"tensorrt"}));
  EXPECT_TRUE(has(audit, "OP_UNSUPPORTED_BY_TARGET", "outside the documented range 9-24"));
}

TEST(Probe, SmallSubsetAgainstTheInstalledRuntime) {
  ProbeOptions options;
  options.only = {"Relu", "Add", "If"};
  options.all_versions = true;
  auto rows = probe_operators(options);
  ASSERT_TRUE(rows) << rows.error().describe();
  const auto status = [&](const std::string& op, int version) {
    for (const auto& row : *rows) {
      if (row.op_type == op && row.since_version == version) return std::string(probe_status_name(row.status));
    }
    return std::string("missing");
  };
  EXPECT_EQ(status("Relu", 14), "supported");
  EXPECT_EQ(status("Add", 14), "supported");
  EXPECT_EQ(status("Add", 6), "not-implemented");
  EXPECT_EQ(status("If", 16), "error");  // needs a subgraph: undecided, never counted as supported
}

// y = Reshape(x, [2, -1]) with x's batch declared dynamic and traced at 2.
onnx::ModelProto frozen_reshape_model() {
  auto model =
      single_node_model("Reshape", {tensor_value("x", k_float, {-1, 3, 4})}, tensor_value("y", k_float, {2, 12}));
  auto* graph = model.mutable_graph();
  graph->mutable_node(0)->add_input("shape");
  auto* shape = graph->add_initializer();
  shape->set_name("shape");
  shape->set_data_type(onnx::TensorProto::INT64);
  shape->add_dims(2);
  shape->add_int64_data(2);
  shape->add_int64_data(-1);
  return model;
}

TEST(FrozenShapes, ReshapeConstantHoldingTheTracedBatchIsFound) {
  FrozenShapeOptions options;
  options.dynamic = {{"x", 0, "batch", 2}};
  options.output_axes["y"][0] = "batch";
  const auto findings = find_frozen_dimensions(frozen_reshape_model(), options);
  ASSERT_EQ(findings.size(), 2U);
  EXPECT_EQ(findings[0].where, "Reshape_0");
  EXPECT_NE(findings[0].message.find("[2, -1], which holds 2, the traced size of dynamic axis 'batch'"),
            std::string::npos);
  EXPECT_NE(findings[1].message.find("output 'y' axis 0 should follow dynamic axis 'batch' but is fixed at 2"),
            std::string::npos);
}

TEST(FrozenShapes, DoesNotFireWithoutDynamicAxesOrOnOtherSizes) {
  EXPECT_TRUE(find_frozen_dimensions(frozen_reshape_model(), {}).empty());
  FrozenShapeOptions options;
  options.dynamic = {{"x", 0, "batch", 5}};
  EXPECT_TRUE(find_frozen_dimensions(frozen_reshape_model(), options).empty());
}

TEST(FrozenShapes, FixedInputAxisConstantIfAndTripCount) {
  auto model = single_node_model("Relu", {tensor_value("x", k_float, {2, 3})}, tensor_value("y", k_float, {2, 3}));
  FrozenShapeOptions options;
  options.dynamic = {{"x", 0, "batch", 2}};
  const auto fixed = find_frozen_dimensions(model, options);
  ASSERT_EQ(fixed.size(), 1U);
  EXPECT_NE(fixed[0].message.find("input 'x' axis 0 ('batch') is fixed at 2"), std::string::npos);

  auto loop = single_node_model("Loop", {tensor_value("x", k_float, {-1})}, tensor_value("y", k_float, {-1}));
  auto* graph = loop.mutable_graph();
  graph->mutable_node(0)->set_input(0, "trips");
  auto* trips = graph->add_initializer();
  trips->set_name("trips");
  trips->set_data_type(onnx::TensorProto::INT64);
  trips->add_int64_data(2);
  auto* node = graph->add_node();
  node->set_op_type("If");
  node->add_input("trips");
  const auto found = find_frozen_dimensions(loop, FrozenShapeOptions{{{"x", 0, "batch", 2}}, {}});
  EXPECT_TRUE(std::any_of(found.begin(), found.end(),
                          [](const Finding& f) { return f.message.find("Loop trip count") != std::string::npos; }));
  EXPECT_TRUE(std::any_of(found.begin(), found.end(), [](const Finding& f) {
    return f.message.find("If condition is a constant") != std::string::npos;
  }));
}

TEST(FrozenShapes, ReadsTheDeclaredAxesFromExportJson) {
  TempDir out;
  const std::string head = R"({"schema": "onnxproof.export/1", "exporter": "torchscript", "findings": [],
    "onnx_model": null, "inputs": [{"name": "x", "dims": [4, 3], "dtype": "float32"}],)";
  write_bytes(out / "export.json", head + R"(
    "options": {"dynamic": [{"input": "x", "axis": 0, "label": "batch"}]},
    "outputs": [{"name": "y", "dynamic_axes": {"0": "batch"}}]})");
  const auto read = read_export_manifest(out.path());
  ASSERT_TRUE(read) << read.error().describe();
  ASSERT_EQ(read->frozen.dynamic.size(), 1U);
  EXPECT_EQ(read->frozen.dynamic[0].example_size, 4);
  EXPECT_EQ(read->frozen.output_axes.at("y").at(0), "batch");
  // A malformed record is an error naming the field, never empty options.
  write_bytes(out / "export.json", head + R"("options": {"dynamic": [{"input": "x", "axis": "zero"}]}})");
  const auto bad = read_export_manifest(out.path());
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().describe().find("options.dynamic[0]"), std::string::npos) << bad.error().describe();
}

}  // namespace

// The default opset's portability bound: every release of data/onnxruntime-releases.csv dated
// within 18 months of its newest loads it, and one of them loads nothing newer.
TEST(ReleaseTable, ThePortableOpsetIsWhatEveryRecentReleaseLoads) {
  const PortableOpset portable = portable_opset();
  ASSERT_GT(portable.opset, 0) << "the table has no release dates";
  const auto releases = forecast_releases(0, 0);
  std::string newest;
  for (const auto& release : releases) newest = std::max(newest, release.released);
  const int month = std::stoi(newest.substr(0, 4)) * 12 + std::stoi(newest.substr(5, 2)) - 1 - 18;
  const std::string since = fmt::format("{:04d}-{:02d}{}", month / 12, month % 12 + 1, newest.substr(7));
  bool bound_met = false;
  for (const auto& release : releases) {
    if (release.released.empty() || release.released < since) continue;
    EXPECT_GE(release.newest_opset, portable.opset) << release.version;
    bound_met = bound_met || release.newest_opset == portable.opset;
  }
  EXPECT_TRUE(bound_met) << portable.reason;
  EXPECT_NE(portable.reason.find("18 months"), std::string::npos) << portable.reason;
  // And the limit the export is sent carries it.
  EXPECT_EQ(newest_supported_opset().portable, portable.opset);
}
