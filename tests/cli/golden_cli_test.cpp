// End-to-end tests of the golden set through the pipeline and `onnxproof golden`: a re-run keeps
// or verifies the last run's set, a freeze never replaces what it did not make, hostile manifests
// are refused; and the demo.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli_runner.h"
#include "pipeline_support.h"
#include "test_support.h"

using namespace onnxproof::testing;
using namespace onnxproof::testing::pipeline_support;
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

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
