// End-to-end tests of `onnxproof export`: real PyTorch exports of clean models and of planted
// trace traps (tests/fixtures/trap_models.py), checked through export.json, the exit code, the
// ONNX checker and ONNX Runtime against PyTorch's reference outputs.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <thread>

#include <nlohmann/json.hpp>

#include "cli_runner.h"
#include "onnxproof/tensor/tensor_io.h"
#include "test_data_sets.h"
#include "test_support.h"

using namespace onnxproof::testing;
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

const std::string k_traps = std::string(ONNXPROOF_TEST_SOURCE_DIR) + "/fixtures/trap_models.py";

CliResult onnxproof_cli(const std::vector<std::string>& args) { return run_cli(ONNXPROOF_CLI, args); }

struct Export {
  CliResult cli;
  json manifest;
};

// Tests of what the front end does whatever the exporter (data sources, its log, the model's mode)
// pass --exporter torchscript: its cold start is about 3.5 s shorter than the dynamo exporter's
// (torch.export and ONNX Script imported), and the dynamo path has tests of its own.
Export export_model(const fs::path& out, std::vector<std::string> args) {
  args.insert(args.begin(), "export");
  args.insert(args.end(), {"--out", out.string()});
  Export result{onnxproof_cli(args), json()};
  const std::string text = read_text(out / "export.json");
  if (!text.empty()) result.manifest = json::parse(text);
  return result;
}

std::vector<json> findings_with(const json& manifest, const std::string& code) {
  std::vector<json> found;
  for (const auto& f : manifest["findings"]) {
    if (f["code"] == code) found.push_back(f);
  }
  return found;
}

bool has_finding(const json& manifest, const std::string& code, const std::string& severity) {
  for (const auto& f : findings_with(manifest, code)) {
    if (f["severity"] == severity) return true;
  }
  return false;
}

void expect_no_warnings_or_errors(const json& manifest) {
  for (const auto& f : manifest["findings"]) EXPECT_EQ(f["severity"], "info") << f.dump();
}

std::vector<json> case_sizes(const fs::path& out) {
  const json manifest = json::parse(read_text(out / "reference" / "cases.json"));
  std::vector<json> sizes;
  for (const auto& c : manifest["cases"]) sizes.push_back(c["sizes"]);
  return sizes;
}

TEST(Export, ResNet18ExportsCleanAndOnnxRuntimeMatchesPyTorchAtEveryBatchSize) {
  TempDir out;
  const auto result =
      export_model(out.path(), {"--model", "torchvision:resnet18", "--input", "input=1x3x224x224:float32", "--dynamic",
                                "input:0=batch", "--samples", "1", "--exporter", "torchscript"});
  ASSERT_EQ(result.cli.exit_code, 0) << result.cli.out << result.cli.err;
  EXPECT_NE(result.cli.out.find("verdict          pass"), std::string::npos) << result.cli.out;
  // The default opset: the newest that ONNX, ONNX Runtime and the TorchScript exporter all
  // support (torch 2.x's TorchScript exporter stops at 20), recorded with the reason.
  EXPECT_NE(result.cli.err.find("onnxproof export: exporting with the torchscript exporter at opset 20"),
            std::string::npos)
      << result.cli.err;
  EXPECT_EQ(result.manifest["opset"]["value"], 20);
  EXPECT_NE(result.manifest["opset"]["chosen_by"].get<std::string>().find("torchscript exporter"), std::string::npos);
  const auto& manifest = result.manifest;
  EXPECT_EQ(manifest["schema"], "onnxproof.export/1");
  EXPECT_EQ(manifest["status"], "exported");
  EXPECT_EQ(manifest["onnx_model"]["sha256"].get<std::string>().size(), 64U);
  const auto torch = manifest["versions"]["torch"].get<std::string>();  // "2.15.0+cu132"
  EXPECT_EQ(torch.substr(0, torch.find('+')), locked_version("torch"));
  EXPECT_TRUE(manifest["timings_s"].contains("export"));
  expect_no_warnings_or_errors(manifest);
  EXPECT_EQ(manifest["outputs"][0]["dynamic_axes"]["0"], "batch");
  // batch at 1 (the example's size), and 2 and 3: one of them odd.
  EXPECT_EQ(case_sizes(out.path()), (std::vector<json>{{{"batch", 1}}, {{"batch", 2}}, {{"batch", 3}}}));

  EXPECT_EQ(onnxproof_cli({"check", (out / "model.onnx").string()}).exit_code, 0);
  EXPECT_EQ(run_test_data_sets(out / "model.onnx", out / "reference"), "");
}

TEST(Export, LstmWithDynamicBatchAndSequenceExportsClean) {
  TempDir out;
  const auto result = export_model(out.path(), {"--model", k_traps + ":lstm", "--input", "x=2x5x8:float32", "--dynamic",
                                                "x:0=batch", "--dynamic", "x:1=seq", "--samples", "2"});
  ASSERT_EQ(result.cli.exit_code, 0) << result.cli.out << result.cli.err;
  expect_no_warnings_or_errors(result.manifest);
  EXPECT_EQ(result.manifest["outputs"][0]["dynamic_axes"], json::parse(R"({"0": "batch", "1": "seq"})"));
  const auto sizes = case_sizes(out.path());
  EXPECT_EQ(sizes.size(), 2U * 8U);  // (example + 3 batch + 4 seq sizes) x 2 samples
  EXPECT_EQ(run_test_data_sets(out / "model.onnx", out / "reference"), "");
}

struct Trap {
  std::string factory;
  std::string exporter;
  std::string code;
  std::string severity;
  bool exported;
  int exit_code = 1;  // 0: the trap is said (a random forward) but is no defect of the export
};

// Names the parameter in test output instead of dumping its bytes.
void PrintTo(const Trap& trap, std::ostream* out) { *out << trap.factory << " (" << trap.exporter << ")"; }

class PlantedTrap : public ::testing::TestWithParam<Trap> {};

// Each trap is found by each exporter at a line of the trap's own file, with a hint.
TEST_P(PlantedTrap, IsFoundWithItsSourceLineAndAHint) {
  const Trap& trap = GetParam();
  TempDir out;
  const auto result =
      export_model(out.path(), {"--model", k_traps + ":" + trap.factory, "--input", "x=2x3x4:float32", "--dynamic",
                                "x:0=batch", "--samples", "1", "--exporter", trap.exporter});
  EXPECT_EQ(result.cli.exit_code, trap.exit_code) << result.cli.out << result.cli.err;
  EXPECT_NE(result.cli.out.find(trap.exit_code ? "verdict          fail" : "verdict          pass"), std::string::npos)
      << result.cli.out;
  EXPECT_EQ(result.manifest["status"], trap.exported ? "exported" : "failed");
  const auto found = findings_with(result.manifest, trap.code);
  ASSERT_FALSE(found.empty()) << result.manifest["findings"].dump(2);
  bool located = false;
  for (const auto& f : found) {
    EXPECT_FALSE(f["hint"].get<std::string>().empty()) << f.dump();
    EXPECT_EQ(f["message"].get<std::string>().find("\x1b"), std::string::npos) << f.dump();
    located |=
        f["severity"] == trap.severity && f["where"].get<std::string>().find("trap_models.py:") != std::string::npos;
  }
  EXPECT_TRUE(located) << "no " << trap.severity << " finding names the trap's source line: " << json(found).dump(2);
}

// Where the exporters differ: the TorchScript exporter records one path and warns (the
// differential trace then confirms); torch.export refuses the model at the same line. Neither
// exporter can see a non-tensor output or a random forward: the front end finds those before
// either runs; a random forward is said (its outputs are checked for their domain only) and is no
// defect of the export. torch.fft.rfft is no trap for the dynamo exporter (it writes DFT), so the
// unsupported-operator trap is special.i0, which neither translates.
INSTANTIATE_TEST_SUITE_P(
    Export, PlantedTrap,
    ::testing::Values(Trap{"branch_on_value", "torchscript", "DATA_DEPENDENT_CONTROL_FLOW", "error", true},
                      Trap{"branch_on_value", "dynamo", "DATA_DEPENDENT_CONTROL_FLOW", "error", false},
                      Trap{"frozen_reshape", "torchscript", "FROZEN_DIMENSION", "warning", true},
                      Trap{"frozen_reshape", "dynamo", "FROZEN_DIMENSION", "error", false},
                      Trap{"batch_specialized", "torchscript", "DATA_DEPENDENT_CONTROL_FLOW", "error", true},
                      Trap{"batch_specialized", "dynamo", "FROZEN_DIMENSION", "error", false},
                      Trap{"random_forward", "torchscript", "NONDETERMINISTIC_FORWARD", "info", true, 0},
                      Trap{"random_forward", "dynamo", "NONDETERMINISTIC_FORWARD", "info", true, 0},
                      Trap{"non_tensor_output", "torchscript", "NON_TENSOR_OUTPUT", "error", false},
                      Trap{"non_tensor_output", "dynamo", "NON_TENSOR_OUTPUT", "error", false},
                      Trap{"real_fft", "torchscript", "UNSUPPORTED_ATEN_OP", "error", false},
                      Trap{"bessel_i0", "torchscript", "UNSUPPORTED_ATEN_OP", "error", false},
                      Trap{"bessel_i0", "dynamo", "UNSUPPORTED_ATEN_OP", "error", false}),
    [](const auto& param_info) { return param_info.param.factory + "_" + param_info.param.exporter; });

// The dynamo exporter names the specialized axis and the guard, in the axis' own words.
TEST(Export, DynamoSpecializedBatchNamesTheAxisAndTheGuard) {
  TempDir out;
  const auto result = export_model(out.path(), {"--model", k_traps + ":frozen_reshape", "--input", "x=2x3x4:float32",
                                                "--dynamic", "x:0=batch", "--exporter", "dynamo", "--samples", "1"});
  const auto found = findings_with(result.manifest, "FROZEN_DIMENSION");
  ASSERT_EQ(found.size(), 1U) << result.manifest["findings"].dump(2);
  EXPECT_EQ(found[0]["evidence"]["axis"], "batch");
  EXPECT_NE(found[0]["message"].get<std::string>().find("'batch' was specialized to the constant 2 by the guard "
                                                        "Eq(batch, 2)"),
            std::string::npos)
      << found[0].dump();
  EXPECT_NE(found[0]["where"].get<std::string>().find("n = int(x.shape[0])"), std::string::npos) << found[0].dump();
}

// --exporter auto on torch 2.9+: dynamo first; when it fails, TorchScript, with the dynamo
// exporter's finding kept as EXPORTER_FALLBACK (info) and TorchScript's own findings as they are.
TEST(Export, AutoFallsBackToTorchScriptAndSaysWhy) {
  TempDir out;
  const auto result = export_model(out.path(), {"--model", k_traps + ":branch_on_value", "--input", "x=2x3x4:float32",
                                                "--dynamic", "x:0=batch", "--samples", "1"});
  EXPECT_EQ(result.cli.exit_code, 1) << result.cli.out << result.cli.err;
  EXPECT_EQ(result.manifest["exporter"], "torchscript");
  const auto fallback = findings_with(result.manifest, "EXPORTER_FALLBACK");
  ASSERT_EQ(fallback.size(), 1U) << result.manifest["findings"].dump(2);
  EXPECT_EQ(fallback[0]["severity"], "info");
  EXPECT_NE(fallback[0]["message"].get<std::string>().find("DATA_DEPENDENT_CONTROL_FLOW: torch.export cannot follow"),
            std::string::npos)
      << fallback[0].dump();
  EXPECT_TRUE(has_finding(result.manifest, "DATA_DEPENDENT_CONTROL_FLOW", "error"));
}

// A clean model under auto is the dynamo exporter's, with no fallback.
TEST(Export, AutoIsTheDynamoExporterOnThisTorch) {
  TempDir out;
  const auto result = export_model(out.path(), {"--model", k_traps + ":dict_output", "--input", "x=2x8:float32",
                                                "--dynamic", "x:0=batch", "--samples", "1"});
  ASSERT_EQ(result.cli.exit_code, 0) << result.cli.out << result.cli.err;
  EXPECT_EQ(result.manifest["exporter"], "dynamo");
  EXPECT_TRUE(findings_with(result.manifest, "EXPORTER_FALLBACK").empty());
  EXPECT_TRUE(fs::is_regular_file(out / "exporter_report.md"));
  const auto check = onnxproof_cli({"check", (out / "model.onnx").string()});
  EXPECT_NE(check.out.find("batch x 8"), std::string::npos) << check.out;  // the label, not torch's symbol
}

TEST(Export, DifferentialTracingConfirmsTheFrozenBatchInTheReshape) {
  TempDir out;
  const auto result =
      export_model(out.path(), {"--model", k_traps + ":frozen_reshape", "--input", "x=2x3x4:float32", "--dynamic",
                                "x:0=batch", "--samples", "1", "--exporter", "torchscript"});
  ASSERT_TRUE(has_finding(result.manifest, "FROZEN_DIMENSION", "error")) << result.manifest["findings"].dump(2);
  for (const auto& f : findings_with(result.manifest, "FROZEN_DIMENSION")) {
    if (f["severity"] != "error") continue;
    EXPECT_NE(f["message"].get<std::string>().find("dynamic axis 'batch' frozen at 2"), std::string::npos) << f.dump();
    EXPECT_NE(f["where"].get<std::string>().find("Reshape"), std::string::npos) << f.dump();
  }
}

TEST(Export, TransformerEncoderFastPathIsRetriedAndExportsClean) {
  TempDir out;
  const auto result =
      export_model(out.path(), {"--model", k_traps + ":transformer_encoder", "--input", "x=2x5x16:float32", "--dynamic",
                                "x:0=batch", "--samples", "1", "--exporter", "torchscript"});
  ASSERT_EQ(result.cli.exit_code, 0) << result.cli.out << result.cli.err;
  const auto retried = findings_with(result.manifest, "UNSUPPORTED_ATEN_OP");
  ASSERT_EQ(retried.size(), 1U);
  EXPECT_EQ(retried[0]["severity"], "info");
  EXPECT_NE(retried[0]["message"].get<std::string>().find("aten::_transformer_encoder_layer_fwd"), std::string::npos);
  EXPECT_EQ(run_test_data_sets(out / "model.onnx", out / "reference"), "");
}

// torch 2.x's TorchScript export of attention without the fast path takes the sequence length as
// a Python int (torch 1.13's did not): the frozen 'seq' axis is found by the differential trace.
TEST(Export, TransformerEncoderSequenceAxisFrozenByTheTorchScriptExporterIsFound) {
  TempDir out;
  const auto result =
      export_model(out.path(), {"--model", k_traps + ":transformer_encoder", "--input", "x=2x5x16:float32", "--dynamic",
                                "x:0=batch", "--dynamic", "x:1=seq", "--samples", "1", "--exporter", "torchscript"});
  ASSERT_EQ(result.cli.exit_code, 1) << result.cli.out << result.cli.err;
  const auto frozen = findings_with(result.manifest, "FROZEN_DIMENSION");
  ASSERT_FALSE(frozen.empty()) << result.manifest.dump(2);
  EXPECT_NE(frozen[0]["message"].get<std::string>().find("dynamic axis 'seq' frozen at 5"), std::string::npos);
  EXPECT_EQ(frozen[0]["severity"], "error");
}

// The same model through torch.export: the sequence axis stays symbolic, and a --dynamic range
// bounds the sizes it is proved at.
TEST(Export, TransformerEncoderKeepsItsSequenceAxisWithTheDynamoExporter) {
  TempDir out;
  const auto result =
      export_model(out.path(), {"--model", k_traps + ":transformer_encoder", "--input", "x=2x5x16:float32", "--dynamic",
                                "x:0=batch", "--dynamic", "x:1=seq:2..6", "--samples", "1", "--exporter", "dynamo"});
  ASSERT_EQ(result.cli.exit_code, 0) << result.cli.out << result.cli.err;
  EXPECT_TRUE(findings_with(result.manifest, "FROZEN_DIMENSION").empty()) << result.manifest.dump(2);
  for (const auto& sizes : case_sizes(out.path())) {
    EXPECT_GE(sizes["seq"].get<int>(), 2) << sizes.dump();
    EXPECT_LE(sizes["seq"].get<int>(), 6) << sizes.dump();
  }
  EXPECT_EQ(run_test_data_sets(out / "model.onnx", out / "reference"), "");
}

// A dataclass result becomes one output per field that is not None, with both exporters.
TEST(Export, DataclassOutputsAreFlattenedWithTheirFieldNames) {
  for (const std::string exporter : {"dynamo", "torchscript"}) {
    TempDir out;
    const auto result = export_model(out.path(), {"--model", k_traps + ":dataclass_output", "--input", "x=2x8:float32",
                                                  "--dynamic", "x:0=batch", "--samples", "1", "--exporter", exporter});
    ASSERT_EQ(result.cli.exit_code, 0) << exporter << result.cli.out << result.cli.err;
    ASSERT_EQ(result.manifest["outputs"].size(), 2U) << exporter;
    EXPECT_EQ(result.manifest["outputs"][0]["name"], "logits") << exporter;
    EXPECT_EQ(result.manifest["outputs"][1]["name"], "hidden") << exporter;
    EXPECT_EQ(run_test_data_sets(out / "model.onnx", out / "reference"), "") << exporter;
  }
}

TEST(Export, ModelInTrainingModeIsSwitchedToEvalAndReported) {
  TempDir out;
  const auto result = export_model(out.path(), {"--model", k_traps + ":training_mode_dropout", "--input",
                                                "x=2x8:float32", "--samples", "1", "--exporter", "torchscript"});
  EXPECT_EQ(result.cli.exit_code, 0) << result.cli.out << result.cli.err;
  // The spec's callable built the model (in train mode, as constructors do): the user never held
  // the object, so it is said (info), not a warning to fix.
  EXPECT_TRUE(has_finding(result.manifest, "TRAINING_MODE", "info"));
  // In eval mode the dropout is inactive, so ONNX Runtime reproduces PyTorch exactly.
  EXPECT_EQ(run_test_data_sets(out / "model.onnx", out / "reference"), "");
}

TEST(Export, DictOutputsAreFlattenedWithTheirKeysAsNames) {
  TempDir out;
  const auto result = export_model(out.path(), {"--model", k_traps + ":dict_output", "--input", "x=2x8:float32",
                                                "--dynamic", "x:0=batch", "--samples", "1"});
  ASSERT_EQ(result.cli.exit_code, 0) << result.cli.err;
  EXPECT_EQ(result.manifest["outputs"][0]["name"], "logits");
  EXPECT_EQ(result.manifest["outputs"][1]["name"], "features");
  EXPECT_EQ(run_test_data_sets(out / "model.onnx", out / "reference"), "");
}

// What the model and the exporter print goes to OUT/export.log, not to onnxproof's output;
// progress lines still come through.
TEST(Export, TheFrontEndsChatterIsKeptInTheLog) {
  TempDir out;
  const auto result = export_model(
      out.path(), {"--model", k_traps + ":chatty", "--input", "x=2x3:float32", "--exporter", "torchscript"});
  ASSERT_EQ(result.cli.exit_code, 0) << result.cli.err;
  EXPECT_EQ(result.cli.out.find("CHATTER"), std::string::npos);
  EXPECT_EQ(result.cli.err.find("CHATTER"), std::string::npos);
  EXPECT_NE(result.cli.err.find("onnxproof export: "), std::string::npos) << result.cli.err;
  const std::string log = read_text(out / "export.log");
  EXPECT_NE(log.find("CHATTER FROM FORWARD"), std::string::npos) << log;
  EXPECT_NE(log.find("onnxproof export: "), std::string::npos);
}

// A project folder is never an export's run folder: the user's own model.onnx there is not
// overwritten (exit 2, before Python starts).
TEST(Export, AFolderThatIsNotARunFolderIsRefused) {
  TempDir out;
  write_bytes(out / "model.onnx", "the user's own model");
  const auto result = onnxproof_cli(
      {"export", "--model", k_traps + ":dict_output", "--input", "x=2x8:float32", "--out", out.path().string()});
  EXPECT_EQ(result.exit_code, 2) << result.err;
  EXPECT_NE(result.err.find("not an onnxproof run folder"), std::string::npos) << result.err;
  EXPECT_EQ(read_text(out / "model.onnx"), "the user's own model");
}

// The old opset is reported once, by check (it reads the model's opset), not by the export too.
TEST(Export, SweepSetsTheSizesAndOldOpsetIsReportedOnceByCheck) {
  TempDir out;
  const auto result =
      export_model(out.path(), {"--model", k_traps + ":dict_output", "--input", "x=2x8:float32", "--dynamic",
                                "x:0=batch", "--sweep", "batch=1,7", "--samples", "1", "--opset", "13"});
  EXPECT_EQ(result.manifest["exporter"], "torchscript");  // auto: the dynamo exporter writes 18 and newer
  EXPECT_EQ(result.cli.exit_code, 0) << result.cli.err;
  EXPECT_FALSE(has_finding(result.manifest, "OPSET_TOO_OLD", "warning"));
  const auto check = onnxproof_cli({"check", (out / "model.onnx").string()});
  EXPECT_NE(check.out.find("OPSET_TOO_OLD"), std::string::npos) << check.out;
  EXPECT_EQ(case_sizes(out.path()), (std::vector<json>{{{"batch", 2}}, {{"batch", 1}}, {{"batch", 7}}}));
}

TEST(Export, RealDataReplacesGeneratedInputs) {
  TempDir out;
  const auto result =
      export_model(out.path(), {"--model", k_traps + ":dict_output", "--input", "x=2x8:float32", "--dynamic",
                                "x:0=batch", "--data", k_traps + ":digits_samples", "--exporter", "torchscript"});
  ASSERT_EQ(result.cli.exit_code, 0) << result.cli.err;
  const auto cases = json::parse(read_text(out / "reference" / "cases.json"))["cases"];
  ASSERT_EQ(cases.size(), 4U);
  EXPECT_EQ(cases[2]["sizes"]["batch"], 3);
  EXPECT_EQ(cases[2]["source"], k_traps + ":digits_samples");
  EXPECT_EQ(run_test_data_sets(out / "model.onnx", out / "reference"), "");
}

// A capture that fails midway (here the --data source breaks) leaves no reference.partial/.
TEST(Export, FailedReferenceCaptureLeavesNoPartialFolder) {
  TempDir out;
  const auto result = onnxproof_cli({"export", "--model", k_traps + ":dict_output", "--input", "x=2x8:float32",
                                     "--dynamic", "x:0=batch", "--data", k_traps + ":failing_samples", "--exporter",
                                     "torchscript", "--out", out.path().string()});
  EXPECT_NE(result.exit_code, 0) << result.out << result.err;
  EXPECT_NE(result.err.find("the data source broke"), std::string::npos) << result.err;
  EXPECT_FALSE(fs::exists(out / "reference.partial"));
  EXPECT_FALSE(fs::exists(out / "reference"));
}

TEST(Export, DataDirSamplesAreTheReferenceInputs) {
  TempDir out;
  TempDir data;
  for (const int batch : {1, 5}) {
    fs::create_directories(data / ("sample_" + std::to_string(batch)));
    auto x = *onnxproof::Tensor::zeros(onnxproof::DType::float32, {batch, 8});
    for (float& v : x.mutable_values<float>()) v = 0.25F * static_cast<float>(batch);
    ASSERT_TRUE(onnxproof::write_npy(data / ("sample_" + std::to_string(batch)) / "x.npy", x));
  }
  const auto result =
      export_model(out.path(), {"--model", k_traps + ":dict_output", "--input", "x=2x8:float32", "--dynamic",
                                "x:0=batch", "--data-dir", data.path().string(), "--exporter", "torchscript"});
  ASSERT_EQ(result.cli.exit_code, 0) << result.cli.err;
  EXPECT_EQ(case_sizes(out.path()), (std::vector<json>{{{"batch", 1}}, {{"batch", 5}}}));
  EXPECT_EQ(run_test_data_sets(out / "model.onnx", out / "reference"), "");
}

TEST(Export, TorchScriptArchiveIsAModelSpec) {
  TempDir out;
  const std::string archive = std::string(ONNXPROOF_FIXTURES) + "/linear_traced.pt";
  const auto result = export_model(out.path(), {"--model", archive, "--input", "x=2x8:float32", "--samples", "1"});
  ASSERT_EQ(result.cli.exit_code, 0) << result.cli.out << result.cli.err;
  EXPECT_NE(result.manifest["description"].get<std::string>().find("TorchScript archive"), std::string::npos);
  EXPECT_EQ(run_test_data_sets(out / "model.onnx", out / "reference"), "");
}

}  // namespace
