// End-to-end tests of the proof: `onnxproof pipeline`, `parity`, `golden` and `demo` on models
// exported by real PyTorch, clean and broken on purpose.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <algorithm>
#include <functional>
#include <map>
#include <memory>

#include <nlohmann/json.hpp>

#include "cli_runner.h"
#include "onnxproof/model/model_io.h"
#include "onnxproof/tensor/tensor_io.h"
#include "pipeline_support.h"
#include "test_support.h"

using namespace onnxproof::testing;
namespace fs = std::filesystem;
using nlohmann::json;
using namespace onnxproof::testing::pipeline_support;

namespace {

// Adds 0.5 to the first element of the first float initializer with more than 16 elements.
void tamper_one_weight(const fs::path& model_path) {
  auto model = onnxproof::load_model(model_path, {.load_external_data = true});
  ASSERT_TRUE(model) << model.error().describe();
  for (auto& initializer : *model->proto.mutable_graph()->mutable_initializer()) {
    if (initializer.data_type() != onnx::TensorProto::FLOAT || initializer.raw_data().size() <= 64) continue;
    float value = 0;
    std::memcpy(&value, initializer.raw_data().data(), sizeof value);
    value += 0.5F;
    std::memcpy(initializer.mutable_raw_data()->data(), &value, sizeof value);
    ASSERT_TRUE(onnxproof::save_model(model->proto, model_path));
    return;
  }
  FAIL() << "no float initializer to tamper with";
}

// Opsets 18 and later end to end: the dynamo exporter writes torch's default opset (20), and every step
// (check, simplify, ops, parity, golden) runs on that model and passes.
TEST(Pipeline, DynamoExportAtItsDefaultOpsetPassesEveryStep) {
  TempDir out;
  const auto result =
      pipeline(out.path(), "dict_output", "x=2x8:float32", {"--exporter", "dynamo", "--target", "ort-cpu,tensorrt"});
  ASSERT_EQ(result.exit_code, 0) << result.out << result.err;
  const json report = read_json(out / "report.json");
  EXPECT_EQ(report["verdict"], "pass");
  for (const auto& step : report["steps"]) EXPECT_EQ(step["status"], "pass") << step.dump();
  const json manifest = read_json(out / "export.json");
  EXPECT_EQ(manifest["exporter"], "dynamo");
  // The newest opset ONNX Runtime, the TensorRT table (9-24) and the dynamo exporter all support.
  EXPECT_GE(manifest["opset"]["value"].get<int>(), 18);
  EXPECT_NE(manifest["opset"]["chosen_by"].get<std::string>().find("tensorrt"), std::string::npos);
  EXPECT_TRUE(fs::exists(out / "golden" / "manifest.json"));
  const auto check = onnxproof_cli({"check", (out / "model.onnx").string()});
  EXPECT_EQ(check.exit_code, 0) << check.out << check.err;
  EXPECT_NE(check.out.find("ai.onnx " + std::to_string(manifest["opset"]["value"].get<int>())), std::string::npos)
      << check.out;
}

TEST(Pipeline, CleanModelPassesWithEveryStepAndAReport) {
  TempDir out;
  ASSERT_TRUE(clean_run(out.path()));
  const json report = read_json(out / "report.json");
  EXPECT_EQ(report["schema"], "onnxproof.report/2");
  EXPECT_EQ(report["verdict"], "pass");
  std::vector<std::string> steps;
  for (const auto& step : report["steps"]) {
    steps.push_back(step["name"]);
    EXPECT_EQ(step["status"], "pass") << step.dump();
  }
  EXPECT_EQ(steps, (std::vector<std::string>{"export", "check", "simplify", "ops", "parity", "golden"}));
  // Every case x output is in parity[] with its figures, at ONNX Runtime's default optimization
  // level only: a case that passes there is not run again with the optimizations disabled.
  EXPECT_EQ(report["parity"].size(), 4U * 2U);
  for (const auto& row : report["parity"]) {
    EXPECT_EQ(row["optimization"], "all") << row.dump();
    for (const char* key :
         {"max_abs", "max_rel", "mismatches", "elements", "allclose", "nan_mismatch", "argmax_flips", "rows"}) {
      EXPECT_TRUE(row.contains(key)) << key << " missing in " << row.dump();
    }
  }
  ASSERT_EQ(report["headline"].size(), 6U);  // the five questions and the evidence's strength
  EXPECT_EQ(report["headline"][4]["question"], "How strong is the evidence?");
  EXPECT_EQ(report["headline"][0]["answer"], "yes");
  EXPECT_EQ(report["headline"][2]["answer"], "yes");
  EXPECT_NE(report["headline"][2]["evidence"].get<std::string>().find("ort-cpu"), std::string::npos);
  EXPECT_TRUE(fs::exists(out / "golden" / "manifest.json"));
  const std::string markdown = read_text(out / "report.md");
  EXPECT_NE(markdown.find("**Verdict: pass**"), std::string::npos);
  EXPECT_NE(markdown.find("## Can I ship?"), std::string::npos);
  EXPECT_NE(markdown.find("## Parity"), std::string::npos);
  EXPECT_NE(markdown.find("![largest error per case](report-parity.svg)"), std::string::npos);
  const std::string svg = read_text(out / "report-parity.svg");
  EXPECT_TRUE(svg.starts_with("<svg")) << svg.substr(0, 80);
  EXPECT_EQ(svg.find("#d62728"), std::string::npos);  // no red bar: every case passed
  const std::string html = read_text(out / "report.html");
  EXPECT_TRUE(html.starts_with("<!DOCTYPE html>"));
  EXPECT_NE(html.find("Verdict: <span class=\"pass\">pass</span>"), std::string::npos);
  EXPECT_NE(html.find("<svg"), std::string::npos);  // the plot is inline: one self-contained page
  EXPECT_TRUE(report["localization"].is_null());    // nothing failed: nothing to localize
  EXPECT_FALSE(fs::exists(out / "localize"));
}

TEST(Pipeline, SimplifiedModelIsWhatGetsProvedAndShipped) {
  TempDir out;
  ASSERT_EQ(pipeline(out.path(), "lstm", "x=2x5x8:float32").exit_code, 0);
  const json report = read_json(out / "report.json");
  const auto& simplify = report["steps"][2];
  EXPECT_EQ(simplify["name"], "simplify");
  EXPECT_LT(simplify["nodes_after"].get<int>(), simplify["nodes_before"].get<int>()) << simplify.dump();
  // Proved by the parity step's own session (one per model and level), on every case.
  EXPECT_EQ(simplify["proof"]["by"], "parity") << simplify.dump();
  EXPECT_GT(simplify["proof"]["cases"].get<int>(), 0);
  EXPECT_EQ(report["onnx_model"], (out / "model.sim.onnx").string());
  EXPECT_GT(report["steps"][4]["peak_mib"].get<double>(), 0.0);              // the parity step's peak memory
  EXPECT_GT(report["steps"][0]["front_end_peak_mib"].get<double>(), 100.0);  // torch's process: export.json's
  const json timings = read_json(out / "export.json")["timings_s"];
  EXPECT_GT(timings["peak_mib"]["export"].get<double>(), timings["peak_mib"]["load"].get<double>() / 2)
      << timings.dump();
  EXPECT_TRUE(fs::exists(out / "model.sim.onnx"));
}

TEST(Pipeline, TamperedWeightFailsParityAndGolden) {
  TempDir out;
  ASSERT_TRUE(clean_run(out.path()));
  tamper_one_weight(out / "model.onnx");

  const auto parity =
      onnxproof_cli({"parity", (out / "model.onnx").string(), "--reference", (out / "reference").string()});
  EXPECT_EQ(parity.exit_code, 1) << parity.out;
  EXPECT_NE(parity.out.find("error   PARITY_MISMATCH"), std::string::npos) << parity.out;

  const auto golden =
      onnxproof_cli({"golden", "verify", (out / "model.onnx").string(), "--golden", (out / "golden").string()});
  EXPECT_EQ(golden.exit_code, 1) << golden.out;
  EXPECT_NE(golden.out.find("error   GOLDEN_DRIFT"), std::string::npos) << golden.out;
  EXPECT_NE(golden.out.find("the model file changed since the freeze"), std::string::npos) << golden.out;
}

// A NaN or infinite tolerance would turn every miss into a pass; an output PyTorch gives that
// the model lacks, or a tolerance for an output that does not exist, would prove nothing.
TEST(Pipeline, NoToleranceOrMissingOutputCanFakeAPass) {
  TempDir out;
  ASSERT_TRUE(clean_run(out.path()));
  tamper_one_weight(out / "model.onnx");
  const std::string model = (out / "model.onnx").string();
  const std::string reference = (out / "reference").string();
  for (const std::vector<std::string>& tolerance :
       {std::vector<std::string>{"--rtol", "nan"}, {"--atol", "nan"}, {"--rtol", "inf"}, {"--atol", "-1"}}) {
    std::vector<std::string> args = {"parity", model, "--reference", reference};
    args.insert(args.end(), tolerance.begin(), tolerance.end());
    expect_one_line_error(onnxproof_cli(args), 2, "must be a finite number >= 0");
  }
  const json outputs = read_json(out / "reference" / "cases.json")["outputs"];
  const std::string first = outputs[0].get<std::string>();
  expect_one_line_error(
      onnxproof_cli({"parity", model, "--reference", reference, "--output-tolerance", first + "=nan,nan"}), 2,
      "must be finite numbers >= 0");
  expect_one_line_error(
      onnxproof_cli({"parity", model, "--reference", reference, "--output-tolerance", "no_such_output=1,1"}), 2,
      "'no_such_output', which is not an output of the model");
  expect_one_line_error(onnxproof_cli({"golden", "freeze", model, "--reference", reference, "--out",
                                       (out / "golden2").string(), "--rtol", "nan"}),
                        2, "must be a finite number >= 0");
  EXPECT_FALSE(fs::exists(out / "golden2"));

  // A reference output the model does not produce: PARITY_MISMATCH naming it, never a pass.
  TempDir again;
  ASSERT_TRUE(clean_run(again.path()));
  const fs::path set = again / "reference" / "test_data_set_0";
  int count = 0;
  while (fs::exists(set / ("output_" + std::to_string(count) + ".pb"))) ++count;
  auto extra = onnxproof::read_tensor_pb(set / "output_0.pb");
  ASSERT_TRUE(extra);
  ASSERT_TRUE(
      onnxproof::write_tensor_pb(set / ("output_" + std::to_string(count) + ".pb"), extra->tensor, "lost_in_export"));
  const auto lost =
      onnxproof_cli({"parity", (again / "model.onnx").string(), "--reference", (again / "reference").string()});
  EXPECT_EQ(lost.exit_code, 1) << lost.out << lost.err;
  EXPECT_NE(lost.out.find("the reference has output 'lost_in_export', which the model does not produce"),
            std::string::npos)
      << lost.out;
}

std::vector<std::string> files_below(const fs::path& folder) {
  std::vector<std::string> files;
  for (const auto& entry : fs::recursive_directory_iterator(folder)) files.push_back(entry.path().string());
  return files;
}

// A pipeline run writes only under --out: nothing in $HOME (ONNX Runtime's telemetry kept a
// database there) and nothing left in the temporary folder (its mat-debug-PID.log, staging files).
TEST(Pipeline, WritesNothingOutsideItsOutputFolder) {
  TempDir home;
  TempDir temp;
  TempDir parent;
  const fs::path out = parent / "run";  // the staging folder beside it must be gone too
  const auto result =
      run_cli("/usr/bin/env", {"HOME=" + home.path().string(), "TMPDIR=" + temp.path().string(), ONNXPROOF_CLI,
                               "pipeline", "--model", k_traps + ":dict_output", "--input", "x=2x8:float32", "--dynamic",
                               "x:0=batch", "--samples", "1", "--out", out.string()});
  ASSERT_EQ(result.exit_code, 0) << result.out << result.err;
  EXPECT_EQ(files_below(home.path()), std::vector<std::string>{});
  EXPECT_EQ(files_below(temp.path()), std::vector<std::string>{});
  EXPECT_TRUE(fs::exists(out / "report.json"));
  std::vector<std::string> beside;
  for (const auto& entry : fs::directory_iterator(parent.path())) beside.push_back(entry.path().filename().string());
  EXPECT_EQ(beside, std::vector<std::string>{"run"});

  // golden freeze, on its own, likewise: only its --out folder appears.
  TempDir elsewhere;
  const auto freeze =
      run_cli("/usr/bin/env", {"HOME=" + home.path().string(), "TMPDIR=" + temp.path().string(), ONNXPROOF_CLI,
                               "golden", "freeze", (out / "model.onnx").string(), "--reference",
                               (out / "reference").string(), "--out", (elsewhere / "golden").string()});
  ASSERT_EQ(freeze.exit_code, 0) << freeze.out << freeze.err;
  EXPECT_EQ(files_below(home.path()), std::vector<std::string>{});
  EXPECT_EQ(files_below(temp.path()), std::vector<std::string>{});
  std::vector<std::string> frozen;
  for (const auto& entry : fs::directory_iterator(elsewhere.path())) frozen.push_back(entry.path().filename().string());
  EXPECT_EQ(frozen, std::vector<std::string>{"golden"});
}

// A re-run into a run folder is built beside it and published at the end: killed during its
// export, it leaves the last run exactly as it was and no staging folder behind.
// pipeline --from-export proves an export made before (onnxproof export, or the Python API's
// in-process export): copied, never changed; a model changed since is refused.
TEST(Pipeline, FromExportProvesAFinishedExportAndNeverChangesIt) {
  TempDir exported;
  ASSERT_EQ(onnxproof_cli({"export", "--model", k_traps + ":dict_output", "--input", "x=2x8:float32", "--dynamic",
                           "x:0=batch", "--samples", "1", "--out", exported.path().string()})
                .exit_code,
            0);
  const auto contents = [&] {
    std::map<std::string, std::string> files;
    for (const auto& entry : fs::recursive_directory_iterator(exported.path()))
      if (entry.is_regular_file()) files[entry.path().string()] = read_text(entry.path());
    return files;
  };
  const auto before = contents();

  TempDir out;
  const auto proved =
      onnxproof_cli({"pipeline", "--from-export", exported.path().string(), "--out", out.path().string()});
  ASSERT_EQ(proved.exit_code, 0) << proved.out << proved.err;
  const json report = read_json(out / "report.json");
  EXPECT_EQ(report["model"], k_traps + ":dict_output");
  EXPECT_EQ(report["steps"][0]["status"], "pass");
  EXPECT_EQ(report["steps"][4]["status"], "pass");  // parity, on the export's own reference data
  EXPECT_TRUE(fs::exists(out / "reference" / "cases.json"));
  EXPECT_EQ(contents(), before);

  const auto shaped = onnxproof_cli(
      {"pipeline", "--from-export", exported.path().string(), "--out", (out / "again").string(), "--opset", "17"});
  EXPECT_EQ(shaped.exit_code, 2) << shaped.err;
  EXPECT_NE(shaped.err.find("--from-export proves one already made"), std::string::npos) << shaped.err;
  EXPECT_EQ(onnxproof_cli({"pipeline", "--from-export", exported.path().string()}).exit_code, 2);
  EXPECT_EQ(
      onnxproof_cli({"pipeline", "--from-export", out.path().string() + "/nothing", "--out", (out / "again").string()})
          .exit_code,
      2);

  tamper_one_weight(exported / "model.onnx");
  TempDir refused;
  const auto changed =
      onnxproof_cli({"pipeline", "--from-export", exported.path().string(), "--out", refused.path().string()});
  EXPECT_EQ(changed.exit_code, 3) << changed.err;
  EXPECT_NE(changed.err.find("changed since it was exported"), std::string::npos) << changed.err;
  EXPECT_EQ(read_json(refused / "report.json")["verdict"], "error");  // the step that could not run, said
}

TEST(Pipeline, AKilledReRunLeavesThePreviousRunIntact) {
  TempDir parent;
  const fs::path out = parent / "run";
  ASSERT_TRUE(clean_run(out));
  const std::string report = read_text(out / "report.json");
  const std::string model = read_text(out / "model.onnx");
  const std::string manifest = read_text(out / "export.json");
  const auto killed =
      run_cli("/usr/bin/timeout", {"-s", "TERM", "8", ONNXPROOF_CLI, "pipeline", "--model", k_traps + ":never_returns",
                                   "--input", "x=1x8:float32", "--out", out.string()});
  EXPECT_EQ(killed.exit_code, 124) << killed.err;  // timeout(1): the command was terminated
  EXPECT_EQ(read_text(out / "report.json"), report);
  EXPECT_EQ(read_text(out / "model.onnx"), model);
  EXPECT_EQ(read_text(out / "export.json"), manifest);  // the old code deleted it first thing
  EXPECT_TRUE(fs::exists(out / "golden" / "manifest.json"));
  std::vector<std::string> beside;
  for (const auto& entry : fs::directory_iterator(parent.path())) beside.push_back(entry.path().filename().string());
  EXPECT_EQ(beside, std::vector<std::string>{"run"});
}

// onnxproof replaces only what it made: a folder holding anything but an earlier run is refused
// before any work, untouched.
TEST(Pipeline, AnOutFolderThatIsNotARunFolderIsRefused) {
  TempDir out;
  write_bytes(out / "notes.txt", "mine");
  const auto result = pipeline(out.path(), "dict_output", "x=2x8:float32");
  EXPECT_EQ(result.exit_code, 2) << result.err;
  EXPECT_NE(result.err.find("not an onnxproof run folder"), std::string::npos) << result.err;
  EXPECT_EQ(read_text(out / "notes.txt"), "mine");
  EXPECT_FALSE(fs::exists(out / "report.json"));
}

// The probe's project folder: a report.json beside the user's src/ and README.md made it pass for
// a run folder, and the run replaced it (exit 0). Refused now, naming the first foreign entry.
TEST(Pipeline, AProjectFolderHoldingAReportIsNeverReplaced) {
  TempDir project;
  write_bytes(project / "report.json", "{}");
  write_bytes(project / "README.md", "mine");
  fs::create_directories(project / "src");
  write_bytes(project / "src" / "main.py", "print()");
  expect_one_line_error(pipeline(project.path(), "dict_output", "x=2x8:float32"), 2,
                        "it holds 'README.md', which no onnxproof run writes");
  EXPECT_EQ(read_text(project / "README.md"), "mine");
  EXPECT_EQ(read_text(project / "src" / "main.py"), "print()");
  EXPECT_EQ(read_text(project / "report.json"), "{}");
}

TEST(Pipeline, FrozenBatchDimensionFailsAtTheOtherBatchSizes) {
  TempDir out;
  const auto result = pipeline(out.path(), "frozen_reshape", "x=2x3x4:float32");
  EXPECT_EQ(result.exit_code, 1) << result.out << result.err;
  const json report = read_json(out / "report.json");
  EXPECT_EQ(report["verdict"], "fail");
  // Predicted statically, seen by the differential trace, confirmed by the sweep: one finding.
  int frozen = 0;
  for (const auto& f : report["findings"]) {
    if (f["code"] != "FROZEN_DIMENSION" || f["severity"] != "error") continue;
    ++frozen;
    const std::string message = f["message"];
    EXPECT_NE(message.find("check: Reshape input 1 (shape) is the constant [2, -1]"), std::string::npos) << message;
    EXPECT_NE(message.find("confirmed by the sweep: output 'output'"), std::string::npos) << message;
    EXPECT_EQ(f["where"], "/Reshape");
  }
  EXPECT_EQ(frozen, 1) << report["findings"].dump(2);
  EXPECT_FALSE(contains(codes(report["findings"]), "PARITY_MISMATCH"));  // folded into the finding above
  EXPECT_EQ(report["headline"][0]["answer"], "no");
}

TEST(Pipeline, FixedBatchModelRejectsTheShapesProductionSends) {
  TempDir dynamic;
  TempDir fixed;
  ASSERT_TRUE(clean_run(dynamic.path()));
  // The same model exported without the dynamic batch axis: its input is fixed at 2x8.
  const auto export_fixed = onnxproof_cli({"export", "--model", k_traps + ":dict_output", "--input", "x=2x8:float32",
                                           "--samples", "1", "--out", fixed.path().string()});
  ASSERT_EQ(export_fixed.exit_code, 0) << export_fixed.err;
  const auto parity = onnxproof_cli({"parity", (fixed / "model.onnx").string(), "--reference",
                                     (dynamic / "reference").string(), "--json", (fixed / "parity.json").string()});
  EXPECT_EQ(parity.exit_code, 1) << parity.out;
  const json result = read_json(fixed / "parity.json");
  EXPECT_TRUE(contains(codes(result["findings"]), "SHAPE_REJECTED")) << result["findings"].dump(2);
  bool names_axis = false;
  for (const auto& f : result["findings"]) {
    names_axis |= f["code"] == "SHAPE_REJECTED" &&
                  f["message"].get<std::string>().find("input 'x' axis 0 is fixed at 2") != std::string::npos;
  }
  EXPECT_TRUE(names_axis) << result["findings"].dump(2);
}

TEST(Pipeline, DataDependentBranchFailsOnInputsThatTakeTheOtherBranch) {
  TempDir out;
  const auto result = pipeline(out.path(), "branch_on_value", "x=2x3x4:float32", {"--samples", "3"});
  EXPECT_EQ(result.exit_code, 1);
  const auto errors = codes(read_json(out / "report.json")["findings"]);
  EXPECT_TRUE(contains(errors, "DATA_DEPENDENT_CONTROL_FLOW"));
  EXPECT_TRUE(contains(errors, "PARITY_MISMATCH"));
  EXPECT_NE(read_text(out / "report-parity.svg").find("#d62728"), std::string::npos);  // the failing cases are red
}

TEST(Pipeline, UnavailableProviderIsAnErrorNeverAPass) {
  TempDir out;
  // dnnl: an ONNX Runtime provider the CPU build lacks (OpenVINO's absence is said before any
  // export: tests/python/test_openvino.py).
  const auto result = pipeline(out.path(), "dict_output", "x=2x8:float32", {"--provider", "cpu,dnnl"});
  EXPECT_EQ(result.exit_code, 3) << result.out;
  const json report = read_json(out / "report.json");
  EXPECT_EQ(report["verdict"], "error");
  EXPECT_EQ(report["steps"][4]["status"], "error");
  EXPECT_NE(report["steps"][4]["reason"].get<std::string>().find("dnnl"), std::string::npos);
}

TEST(Pipeline, ExportFailureSkipsTheLaterStepsAndFails) {
  TempDir out;
  const auto result = pipeline(out.path(), "bessel_i0", "x=2x16:float32");
  EXPECT_EQ(result.exit_code, 1);
  const json report = read_json(out / "report.json");
  EXPECT_EQ(report["steps"][0]["status"], "fail");
  for (int i = 1; i < 6; ++i) EXPECT_EQ(report["steps"][i]["status"], "skip") << report["steps"][i].dump();
  EXPECT_EQ(report["headline"][3]["answer"], "not checked");
}

TEST(Pipeline, TargetsAreAuditedAndAnUnknownTargetIsAUsageError) {
  TempDir out;
  const auto result =
      pipeline(out.path(), "dict_output", "x=2x8:float32", {"--target", "ort-cpu,tensorrt,openvino,ort-cuda"});
  EXPECT_EQ(result.exit_code, 0) << result.out;
  const json report = read_json(out / "report.json");
  EXPECT_EQ(report["steps"][3]["name"], "ops");
  EXPECT_EQ(report["steps"][3]["targets"].size(), 4U);
  expect_one_line_error(pipeline(out.path(), "dict_output", "x=2x8:float32", {"--target", "coreml"}), 2,
                        "unknown target 'coreml'");
}

}  // namespace
