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
#include "test_support.h"

using namespace onnxproof::testing;
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

const std::string k_traps = std::string(ONNXPROOF_TEST_SOURCE_DIR) + "/fixtures/trap_models.py";

CliResult onnxproof_cli(const std::vector<std::string>& args) { return run_cli(ONNXPROOF_CLI, args); }

json read_json(const fs::path& path) {
  const std::string text = read_text(path);
  return text.empty() ? json() : json::parse(text);
}

std::vector<std::string> codes(const json& findings, const std::string& severity = "error") {
  std::vector<std::string> result;
  for (const auto& f : findings) {
    if (f["severity"] == severity) result.push_back(f["code"]);
  }
  return result;
}

bool contains(const std::vector<std::string>& values, const std::string& value) {
  return std::find(values.begin(), values.end(), value) != values.end();
}

CliResult pipeline(const fs::path& out, const std::string& factory, const std::string& input,
                   std::vector<std::string> extra = {}) {
  std::vector<std::string> args = {"pipeline",  "--model", k_traps + ":" + factory,
                                   "--input",   input,     "--dynamic",
                                   "x:0=batch", "--out",   out.string()};
  if (std::find(extra.begin(), extra.end(), "--samples") == extra.end()) extra.insert(extra.end(), {"--samples", "1"});
  args.insert(args.end(), extra.begin(), extra.end());
  return onnxproof_cli(args);
}

// The clean run many tests start from (dict_output, the default options above): made once per
// ctest run by the pipeline_clean_run fixture (tests/CMakeLists.txt sets ONNXPROOF_CLEAN_RUN) and
// copied into `out`, which each test then owns; made here when the binary runs on its own. One
// cold front end costs 5-10 s, most of it importing torch and the exporter.
::testing::AssertionResult clean_run(const fs::path& out) {
  const char* shared = std::getenv("ONNXPROOF_CLEAN_RUN");
  if (shared != nullptr && fs::exists(fs::path(shared) / "report.json")) {
    std::error_code error;
    fs::copy(shared, out, fs::copy_options::recursive | fs::copy_options::overwrite_existing, error);
    if (error) return ::testing::AssertionFailure() << "copying " << shared << ": " << error.message();
    return ::testing::AssertionSuccess();
  }
  const auto result = pipeline(out, "dict_output", "x=2x8:float32");
  if (result.exit_code != 0) return ::testing::AssertionFailure() << result.out << result.err;
  return ::testing::AssertionSuccess();
}

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

// Opsets 18 and later end to end: the dynamo exporter writes opset 23 by default, and every step
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
  EXPECT_EQ(report["schema"], "onnxproof.report/1");
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

// A re-run whose export fails never reaches the golden step: it used to publish a run folder
// without golden/, and the next run froze whatever it exported as the new baseline.
TEST(Pipeline, AFailedReRunKeepsTheGoldenSetOfTheLastRun) {
  TempDir out;
  ASSERT_TRUE(clean_run(out.path()));
  const std::string frozen = read_text(out / "golden" / "manifest.json");
  EXPECT_NE(read_text(out / ".onnxproof-run").find("onnxproof.run/1"), std::string::npos);
  // The failed re-run goes beside the passing run (RUN.failed), which it never replaces.
  const fs::path beside = out.path().string() + ".failed";
  const auto cleanup = std::shared_ptr<void>(nullptr, [&](void*) { fs::remove_all(beside); });
  EXPECT_EQ(pipeline(out.path(), "bessel_i0", "x=2x16:float32").exit_code, 1);
  EXPECT_EQ(read_text(out / "golden" / "manifest.json"), frozen);
  EXPECT_EQ(read_json(out / "report.json")["verdict"], "pass");
  EXPECT_EQ(read_text(beside / "golden" / "manifest.json"), frozen);
  const json failed = read_json(beside / "report.json");
  EXPECT_EQ(failed["steps"][5]["status"], "skip");
  EXPECT_NE(failed["headline"][5]["evidence"].get<std::string>().find("kept the golden set of an earlier run"),
            std::string::npos)
      << failed["headline"][5].dump();
  ASSERT_EQ(pipeline(out.path(), "dict_output", "x=2x8:float32").exit_code, 0);
  EXPECT_EQ(read_json(out / "report.json")["steps"][5]["action"], "verify");
  EXPECT_EQ(read_text(out / "golden" / "manifest.json"), frozen);
}

// A golden freeze killed between its two fallback renames (no RENAME_EXCHANGE) leaves the old set
// as ".golden.old-PID" of a dead process and no golden/: the next run puts it back and verifies
// against it instead of freezing a new baseline.
TEST(Pipeline, AGoldenFreezeKilledBetweenItsRenamesIsRecoveredByTheNextRun) {
  TempDir out;
  ASSERT_TRUE(clean_run(out.path()));
  const std::string frozen = read_text(out / "golden" / "manifest.json");
  fs::rename(out / "golden", out / ".golden.old-2147483000");  // no such process
  const auto rerun = pipeline(out.path(), "dict_output", "x=2x8:float32");
  ASSERT_EQ(rerun.exit_code, 0) << rerun.err;
  EXPECT_EQ(read_json(out / "report.json")["steps"][5]["action"], "verify");
  EXPECT_EQ(read_text(out / "golden" / "manifest.json"), frozen);
  EXPECT_FALSE(fs::exists(out / ".golden.old-2147483000"));
  // golden verify recovers the same way.
  fs::rename(out / "golden", out / ".golden.old-2147483000");
  const auto verified =
      onnxproof_cli({"golden", "verify", (out / "model.onnx").string(), "--golden", (out / "golden").string()});
  EXPECT_EQ(verified.exit_code, 0) << verified.err;
  EXPECT_EQ(read_text(out / "golden" / "manifest.json"), frozen);
}

// --exporter both: each sub-run keeps its own golden set when its re-run's export fails.
TEST(Pipeline, BothExportersKeepEachGoldenSetWhenTheReRunFails) {
  TempDir out;
  ASSERT_EQ(pipeline(out.path(), "dict_output", "x=2x8:float32", {"--exporter", "both"}).exit_code, 0);
  EXPECT_TRUE(fs::exists(out / ".onnxproof-run"));
  std::map<std::string, std::string> frozen;
  for (const std::string exporter : {"dynamo", "torchscript"}) {
    EXPECT_TRUE(fs::exists(out / exporter / ".onnxproof-run"));
    frozen[exporter] = read_text(out / exporter / "golden" / "manifest.json");
    ASSERT_FALSE(frozen[exporter].empty()) << exporter;
  }
  const fs::path beside = out.path().string() + ".failed";  // where the failed re-run goes
  const auto cleanup = std::shared_ptr<void>(nullptr, [&](void*) { fs::remove_all(beside); });
  EXPECT_EQ(pipeline(out.path(), "bessel_i0", "x=2x16:float32", {"--exporter", "both"}).exit_code, 1);
  for (const auto& [exporter, manifest] : frozen) {
    EXPECT_EQ(read_text(out / exporter / "golden" / "manifest.json"), manifest) << exporter;
    EXPECT_EQ(read_text(beside / exporter / "golden" / "manifest.json"), manifest) << exporter;
    EXPECT_EQ(read_json(out / exporter / "report.json")["verdict"], "pass") << exporter;
    EXPECT_EQ(read_json(beside / exporter / "report.json")["steps"][0]["status"], "fail") << exporter;
  }
}

TEST(Pipeline, ReExportIsVerifiedAgainstTheGoldenSetOfTheLastRun) {
  TempDir out;
  ASSERT_TRUE(clean_run(out.path()));
  const std::string frozen = read_text(out / "golden" / "manifest.json");
  ASSERT_EQ(pipeline(out.path(), "dict_output", "x=2x8:float32").exit_code, 0);
  const json report = read_json(out / "report.json");
  EXPECT_EQ(report["steps"][5]["action"], "verify");
  EXPECT_EQ(read_text(out / "golden" / "manifest.json"), frozen);  // a verify never rewrites the golden set
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
  const auto result = pipeline(out.path(), "dict_output", "x=2x8:float32", {"--provider", "cpu,openvino"});
  EXPECT_EQ(result.exit_code, 3) << result.out;
  const json report = read_json(out / "report.json");
  EXPECT_EQ(report["verdict"], "error");
  EXPECT_EQ(report["steps"][4]["status"], "error");
  EXPECT_NE(report["steps"][4]["reason"].get<std::string>().find("openvino"), std::string::npos);
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

// golden freeze --out replaces only a golden folder onnxproof made: never the run folder, the
// reference, a project folder or a file (each was renamed aside and deleted before).
TEST(Golden, FreezeNeverReplacesWhatItDidNotMake) {
  TempDir out;
  ASSERT_TRUE(clean_run(out.path()));
  const std::string model = (out / "model.onnx").string();
  const std::string reference = (out / "reference").string();
  const std::string model_bytes = read_text(out / "model.onnx");
  write_bytes(out / "notes.txt", "mine");
  // The run folder holds the model and the reference is read: the ownership rule refuses both.
  for (const fs::path& target : {out.path(), out / "reference", out / "notes.txt"}) {
    expect_one_line_error(
        onnxproof_cli({"golden", "freeze", model, "--reference", reference, "--out", target.string()}), 2,
        (target == out / "notes.txt" ? "refusing to replace " : "refusing to write ") + target.string());
  }
  EXPECT_EQ(read_text(out / "model.onnx"), model_bytes);
  EXPECT_TRUE(fs::exists(out / "reference" / "cases.json"));
  EXPECT_EQ(read_text(out / "notes.txt"), "mine");
  fs::create_directories(out / "other");
  write_bytes(out / "other" / "manifest.json", R"({"schema": "someone.else/1"})");
  expect_one_line_error(
      onnxproof_cli({"golden", "freeze", model, "--reference", reference, "--out", (out / "other").string()}), 2,
      "its manifest.json is not an onnxproof.golden/1 manifest");
  // A golden manifest beside the user's files does not make the folder a golden set.
  fs::copy(out / "golden", out / "mixed", fs::copy_options::recursive);
  write_bytes(out / "mixed" / "notes.txt", "mine");
  expect_one_line_error(
      onnxproof_cli({"golden", "freeze", model, "--reference", reference, "--out", (out / "mixed").string()}), 2,
      "it holds 'notes.txt', which a golden set never holds");
  EXPECT_EQ(read_text(out / "mixed" / "notes.txt"), "mine");
  // An earlier golden folder, an empty folder and a new path are fine.
  fs::create_directories(out / "empty");
  for (const fs::path& target : {out / "golden", out / "empty", out / "new"}) {
    const auto frozen = onnxproof_cli({"golden", "freeze", model, "--reference", reference, "--out", target.string()});
    EXPECT_EQ(frozen.exit_code, 0) << frozen.out << frozen.err;
    EXPECT_TRUE(fs::exists(target / "manifest.json"));
  }
}

// A golden manifest is untrusted input: it may not name files outside the folder, non-regular
// files (a FIFO hung verify forever), list nothing, drop data sets or carry a tolerance that
// accepts anything.
// A killed freeze or simplify leaves its staging folder (".NAME.tmp-PID"); the next run removes
// those whose process no longer runs.
TEST(Golden, StagingLeftByAKilledRunIsRemovedByTheNext) {
  TempDir out;
  ASSERT_TRUE(clean_run(out.path()));
  const fs::path stale = out / ".golden2.tmp-2147483000";  // no such process
  fs::create_directories(stale / "test_data_set_0");
  write_bytes(stale / "test_data_set_0" / "output_0.pb", std::string(1000, 'x'));
  const auto frozen = onnxproof_cli({"golden", "freeze", (out / "model.onnx").string(), "--reference",
                                     (out / "reference").string(), "--out", (out / "golden2").string()});
  ASSERT_EQ(frozen.exit_code, 0) << frozen.out << frozen.err;
  EXPECT_FALSE(fs::exists(stale));
  for (const auto& entry : fs::directory_iterator(out.path()))
    EXPECT_EQ(entry.path().filename().string().find(".tmp-"), std::string::npos) << entry.path();
}

TEST(Golden, HostileManifestsAreRefused) {
  TempDir out;
  ASSERT_TRUE(clean_run(out.path()));
  const std::string model = (out / "model.onnx").string();
  const fs::path golden = out / "golden";
  const std::string original = read_text(golden / "manifest.json");
  const auto verify_with = [&](const std::function<void(json&)>& change, const std::string& fragment) {
    json manifest = json::parse(original);
    change(manifest);
    write_bytes(golden / "manifest.json", manifest.dump(2));
    expect_one_line_error(onnxproof_cli({"golden", "verify", model, "--golden", golden.string()}), 3, fragment);
  };
  verify_with([](json& m) { m["files"]["../../etc/passwd"] = std::string(64, '0'); }, "is not a plain name");
  verify_with([](json& m) { m["files"]["/etc/shadow"] = std::string(64, '0'); }, "is not a plain name");
  ASSERT_EQ(::mkfifo((golden / "fifo.pb").c_str(), 0600), 0);
  verify_with([](json& m) { m["files"]["fifo.pb"] = std::string(64, '0'); }, "is not a regular file");
  fs::remove(golden / "fifo.pb");
  verify_with([](json& m) { m["files"] = json::object(); }, "it lists no files");
  verify_with([](json& m) { m["data_sets"] = 1; }, "is not one of the 1 data sets the manifest records");
  verify_with([](json& m) { m["data_sets"] = m["data_sets"].get<int>() + 1; }, "has no files listed");
  // Found by fuzzing: a count beyond int was converted with undefined behaviour.
  verify_with([](json& m) { m["data_sets"] = 1e26; }, "data_sets is not a count of data sets");
  verify_with([](json& m) { m["data_sets"] = "3"; }, "data_sets is not a count of data sets");
  fs::create_directory_symlink("/etc", golden / "link");
  verify_with([](json& m) { m["files"]["link/passwd"] = std::string(64, '0'); }, "leads outside the folder");
  fs::remove(golden / "link");
  write_bytes(golden / "test_data_set_0" / "extra.pb", "slipped in");
  verify_with([](json&) {}, "test_data_set_0/extra.pb is in the folder but not in the manifest");
  fs::remove(golden / "test_data_set_0" / "extra.pb");
  verify_with(
      [](json& m) {
        for (auto& [output, t] : m["tolerances"].items()) t["rtol"] = 1e9;
      },
      "is looser than a manifest may set");
  write_bytes(golden / "manifest.json", original);
  const auto clean = onnxproof_cli({"golden", "verify", model, "--golden", golden.string()});
  EXPECT_EQ(clean.exit_code, 0) << clean.out << clean.err;
}

TEST(Golden, MissingOrModifiedFilesAreClearErrors) {
  TempDir out;
  ASSERT_TRUE(clean_run(out.path()));
  const std::string model = (out / "model.onnx").string();
  write_bytes(out / "golden" / "test_data_set_0" / "output_0.pb", "changed");
  expect_one_line_error(onnxproof_cli({"golden", "verify", model, "--golden", (out / "golden").string()}), 3,
                        "was modified after the freeze");
  fs::remove(out / "golden" / "test_data_set_0" / "output_0.pb");
  expect_one_line_error(onnxproof_cli({"golden", "verify", model, "--golden", (out / "golden").string()}), 3,
                        "output_0.pb is missing");
  expect_one_line_error(onnxproof_cli({"golden", "verify", model, "--golden", (out / "reference").string()}), 3,
                        "is not a golden folder: manifest.json is missing");
}

TEST(Demo, PrintsTheVerdictTheAccuracyOfBothAndTheReport) {
  TempDir out;
  const auto result = onnxproof_cli({"demo", "--out", out.path().string()});
  ASSERT_EQ(result.exit_code, 0) << result.out << result.err;
  EXPECT_NE(result.out.find("accuracy         PyTorch "), std::string::npos) << result.out;
  EXPECT_NE(result.out.find("on 450 held-out digits; 0 predictions flipped"), std::string::npos) << result.out;
  EXPECT_NE(result.out.find("report           " + (out / "report.md").string()), std::string::npos) << result.out;
  EXPECT_NE(result.out.find("verdict          pass"), std::string::npos);
}

}  // namespace

// --exporter both: each exporter's run in its own folder, proved, and side by side in report.md
// and report.json (the question "should I switch exporters?").
void expect_side_by_side(const fs::path& out, const std::vector<std::string>& model_args) {
  std::vector<std::string> args = {"pipeline", "--exporter", "both", "--samples", "1", "--out", out.string()};
  args.insert(args.end(), model_args.begin(), model_args.end());
  const auto result = onnxproof_cli(args);
  EXPECT_EQ(result.exit_code, 0) << result.out << result.err;
  const json report = read_json(out / "report.json");
  EXPECT_EQ(report["verdict"], "pass") << report.dump(2);
  ASSERT_EQ(report["exporters"].size(), 2U) << report.dump(2);
  for (const auto& row : report["exporters"]) {
    const std::string exporter = row["exporter"];
    EXPECT_EQ(row["verdict"], "pass") << row.dump();
    EXPECT_GT(row["nodes"].get<int>(), 10) << row.dump();
    EXPECT_GT(row["initializers"].get<int>(), 0) << row.dump();
    EXPECT_FALSE(row["max_error"].empty()) << row.dump();
    EXPECT_EQ(read_json(out / exporter / "report.json")["verdict"], "pass");
    EXPECT_EQ(read_json(out / exporter / "export.json")["exporter"], exporter);
  }
  EXPECT_GE(report["exporters"][0]["opset"].get<int>(), 18);  // dynamo
  EXPECT_LE(report["exporters"][1]["opset"].get<int>(), 20);  // torchscript
  const std::string md = read_text(out / "report.md");
  EXPECT_NE(md.find("## Exporters side by side"), std::string::npos) << md;
  EXPECT_NE(md.find("[dynamo](dynamo/report.md)"), std::string::npos) << md;
  EXPECT_NE(md.find("| nodes |"), std::string::npos) << md;
  EXPECT_TRUE(fs::is_regular_file(out / "dynamo" / "exporter_report.md"));
}

TEST(Pipeline, BothExportersOnResNet18AreProvedSideBySide) {
  TempDir out;
  expect_side_by_side(out.path() / "run", {"--model", "torchvision:resnet18", "--sweep", "batch=1,3"});
  // The dynamo side (torch.export, then ONNX Script): dynamic batch as a torch.export.Dim, the
  // dynamo exporter's newest opset with the reason, a model the checker accepts.
  const fs::path dynamo = out.path() / "run" / "dynamo";
  const json manifest = read_json(dynamo / "export.json");
  EXPECT_EQ(manifest["outputs"][0]["dynamic_axes"]["0"], "batch") << manifest.dump(1);
  EXPECT_NE(manifest["opset"]["chosen_by"].get<std::string>().find("dynamo exporter"), std::string::npos);
  EXPECT_EQ(onnxproof_cli({"check", (dynamo / "model.onnx").string()}).exit_code, 0);
}

TEST(Pipeline, BothExportersOnASmallBertAreProvedSideBySide) {
  TempDir out;
  expect_side_by_side(out.path() / "run", {"--model", "hf:BertModel", "--sweep", "batch=1,3", "--sweep", "sequence=5"});
}

TEST(Pipeline, BothIsForThePipelineOnly) {
  TempDir out;
  const auto result = onnxproof_cli({"export", "--model", k_traps + ":dict_output", "--input", "x=2x8:float32",
                                     "--exporter", "both", "--out", out.path().string()});
  EXPECT_EQ(result.exit_code, 2) << result.out << result.err;
  EXPECT_NE(result.err.find("--exporter both"), std::string::npos) << result.err;
}

// Divergence localization: twelve identical blocks, one of whose activations has an ONNX
// translation that is not its forward (tests/fixtures/divergence_models.py), one model per
// exporter, and a NaN that only the ONNX translation produces, for the negative inputs.
struct PlantedDivergence {
  std::string factory;
  std::string exporter;
  std::string module;  // what the localization must name
  std::string code;    // the parity finding it explains
  std::string node;    // part of an ONNX node name it must name
};

class Localization : public ::testing::TestWithParam<PlantedDivergence> {};

int marked_line(const std::string& file, const std::string& marker) {
  const std::string text = read_text(file);
  const auto at = text.find(marker);
  return at == std::string::npos ? -1 : 1 + static_cast<int>(std::count(text.begin(), text.begin() + at, '\n'));
}

TEST_P(Localization, NamesTheModuleItsNodesAndItsSourceLine) {
  const auto& planted = GetParam();
  const std::string fixtures = std::string(ONNXPROOF_TEST_SOURCE_DIR) + "/fixtures/divergence_models.py";
  TempDir out;
  const auto result =
      onnxproof_cli({"pipeline", "--model", fixtures + ":" + planted.factory, "--input", "x=4x16:float32", "--dynamic",
                     "x:0=batch", "--exporter", planted.exporter, "--samples", "1", "--out", out.path().string()});
  ASSERT_EQ(result.exit_code, 1) << result.out << result.err;
  const json report = read_json(out / "report.json");
  EXPECT_TRUE(contains(codes(report["findings"]), planted.code)) << report["findings"].dump(1);
  ASSERT_TRUE(report["localization"].is_object()) << report["localization"].dump();
  EXPECT_EQ(report["localization"]["located"], planted.module);
  std::vector<std::string> located;
  for (const auto& finding : report["findings"]) {
    if (finding["code"] == "DIVERGENCE_LOCATED") located.push_back(finding["message"]);
  }
  ASSERT_EQ(located.size(), 1U);
  const std::string line = "divergence_models.py:" + std::to_string(marked_line(fixtures, "# LOCALIZED"));
  EXPECT_NE(located[0].find("'" + planted.module + "'"), std::string::npos) << located[0];
  EXPECT_NE(located[0].find(line), std::string::npos) << located[0];
  EXPECT_NE(located[0].find(planted.node), std::string::npos) << located[0];
  EXPECT_NE(located[0].find("its inputs match PyTorch's"), std::string::npos) << located[0];
  // Every module before the planted one agrees; the error grows from it on.
  for (const auto& module : report["localization"]["modules"]) {
    if (module["module"] == planted.module) break;
    if (module["matched"]) {
      EXPECT_TRUE(module["outputs_agree"].get<bool>()) << module.dump();
    }
  }
  EXPECT_NE(read_text(out / "report.md").find("## Where the outputs diverge"), std::string::npos);
  EXPECT_TRUE(read_text(out / "report-localize.svg").starts_with("<svg"));
  EXPECT_TRUE(fs::exists(out / "localize" / "modules.json"));

  // `onnxproof localize RUN` finds it again from the run folder alone: the TorchScript cases
  // capture the module outputs anew (a cold front end), the dynamo cases use the ones the run
  // kept (--captured: no Python starts).
  std::vector<std::string> localize = {"localize", out.path().string()};
  if (planted.exporter == "dynamo") localize.push_back("--captured");
  const auto again = onnxproof_cli(localize);
  EXPECT_EQ(again.exit_code, 0) << again.out << again.err;
  EXPECT_NE(again.out.find("'" + planted.module + "'"), std::string::npos) << again.out;
}

INSTANTIATE_TEST_SUITE_P(
    Planted, Localization,
    ::testing::Values(
        PlantedDivergence{"shifted_torchscript", "torchscript", "blocks.7.act", "PARITY_MISMATCH", "/blocks.7/act/Add"},
        PlantedDivergence{"shifted_dynamo", "dynamo", "blocks.7.act", "PARITY_MISMATCH", "node_shifted_silu"},
        PlantedDivergence{"nan_torchscript", "torchscript", "blocks.4.act", "NAN_OR_INF", "/blocks.4/act/Sqrt"},
        PlantedDivergence{"nan_dynamo", "dynamo", "blocks.4.act", "NAN_OR_INF", "node_sqrt_abs"}),
    [](const auto& test) { return test.param.factory; });

TEST(Localization, ARunThatPassedHasNothingToLocalize) {
  TempDir out;
  ASSERT_TRUE(clean_run(out.path()));
  const auto result = onnxproof_cli({"localize", out.path().string()});
  EXPECT_EQ(result.exit_code, 2) << result.err;
  EXPECT_NE(result.err.find("nothing to localize"), std::string::npos) << result.err;
  EXPECT_EQ(onnxproof_cli({"localize", (out / "missing").string()}).exit_code, 2);
  const auto no_case = onnxproof_cli({"localize", out.path().string(), "--case", "test_data_set_99"});
  EXPECT_EQ(no_case.exit_code, 2) << no_case.err;
  EXPECT_NE(no_case.err.find("no reference case test_data_set_99"), std::string::npos) << no_case.err;
  const auto level =
      onnxproof_cli({"localize", out.path().string(), "--case", "test_data_set_0", "--optimization", "fast"});
  EXPECT_EQ(level.exit_code, 2) << level.err;
  EXPECT_NE(level.err.find("--optimization must be all or disabled"), std::string::npos) << level.err;
  // RUN/localize is written into: never through a link to another folder.
  TempDir elsewhere;
  fs::create_directory_symlink(elsewhere.path(), out / "localize");
  expect_one_line_error(onnxproof_cli({"localize", out.path().string(), "--case", "test_data_set_0"}), 2,
                        "refusing to write into " + (out / "localize").string() + ": it is a symbolic link");
  EXPECT_TRUE(fs::is_empty(elsewhere.path()));
}

// A difference that only ONNX Runtime's optimizations make (tests/fixtures/runtime_models.py: its
// ConvAddFusion folds an Add into a Conv's bias and skips a rounding PyTorch does) is traced to
// the optimizer by name, with either exporter.
class RuntimeOptimization : public ::testing::TestWithParam<std::string> {};

TEST_P(RuntimeOptimization, TheOptimizerThatChangesTheOutputsIsNamed) {
  const std::string fixtures = std::string(ONNXPROOF_TEST_SOURCE_DIR) + "/fixtures/runtime_models.py";
  TempDir out;
  // The fixed rule: the fusion moves ONNX Runtime away from PyTorch (though not from the exact
  // answer, which the calibrated rule judges by: see the test below).
  const auto result = onnxproof_cli(
      {"pipeline", "--model", fixtures + ":large_bias_conv", "--input", "x=2x3x16x16:float32", "--dynamic", "x:0=batch",
       "--exporter", GetParam(), "--samples", "1", "--rtol", "1e-3", "--atol", "1e-5", "--out", out.path().string()});
  ASSERT_EQ(result.exit_code, 1) << result.out << result.err;
  const json report = read_json(out / "report.json");
  // The premise: it passes with optimizations disabled. PyTorch's and ONNX Runtime's convolutions
  // round at the 1e5 bias in their own orders, which on some machines and loads differs by a step
  // at 1e5 even without the fusion; then there is no optimizer to name (the calibrated rule,
  // below, passes either way).
  for (const auto& row : report["parity"]) {
    if (row["optimization"] == "disabled" && row["status"] != "pass") {
      GTEST_SKIP() << "without optimizations ONNX Runtime already differs from PyTorch here: " << row.dump();
    }
  }
  std::vector<json> named;
  for (const auto& finding : report["findings"]) {
    if (finding["code"] == "RUNTIME_OPTIMIZATION_CHANGED_OUTPUTS") named.push_back(finding);
  }
  ASSERT_EQ(named.size(), 1U) << report["findings"].dump(1);
  EXPECT_EQ(named[0]["where"], "ConvAddFusion");
  EXPECT_NE(named[0]["message"].get<std::string>().find("optimizer ConvAddFusion changes the outputs"),
            std::string::npos);
  EXPECT_NE(named[0]["hint"].get<std::string>().find("optimization.disable_specified_optimizers=ConvAddFusion"),
            std::string::npos);
}

// TorchScript only: the dynamo export of this fixture rounds at 1e5 in another order even with
// the optimizations off (it differs from PyTorch by ~0.03 there too), so the premise that only an
// optimizer changes the outputs does not hold for it under the fixed rule.
INSTANTIATE_TEST_SUITE_P(TorchScript, RuntimeOptimization, ::testing::Values("torchscript"),
                         [](const auto& test) { return test.param; });

// The calibrated rule asks how far each side is from the float64 answer: ConvAddFusion skips a
// rounding at 1e5 that PyTorch makes, so ONNX Runtime differs from PyTorch by ~4e-3 yet is no
// farther from exact than PyTorch is. No false alarm.
TEST(RuntimeOptimization, AFusionThatIsNoFartherFromExactThanPyTorchPasses) {
  const std::string fixtures = std::string(ONNXPROOF_TEST_SOURCE_DIR) + "/fixtures/runtime_models.py";
  TempDir out;
  const auto result = onnxproof_cli({"pipeline", "--model", fixtures + ":large_bias_conv", "--input",
                                     "x=2x3x16x16:float32", "--dynamic", "x:0=batch", "--exporter", "torchscript",
                                     "--samples", "1", "--out", out.path().string()});
  EXPECT_EQ(result.exit_code, 0) << result.out << result.err;
  const json report = read_json(out / "report.json");
  for (const auto& row : report["parity"]) {
    EXPECT_EQ(row["status"], "pass") << row.dump();
    EXPECT_TRUE(row["rule"] == "calibrated" || row["rule"] == "pooled") << row.dump();
    EXPECT_LT(row["error_ratio"].get<double>(), 8.0) << row.dump();  // no farther from exact than 8x PyTorch
  }
}
