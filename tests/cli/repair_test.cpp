// End-to-end tests of `onnxproof repair` and `pipeline --repair` (docs/repair.md): for each kind of
// change, a model whose proof only that kind fixes (tests/fixtures/repair_models.py says why), every
// candidate tried (--all) so the table shows that no other kind passes; a model nothing fixes; and
// the refusals.
#include <gtest/gtest.h>

#include <sys/stat.h>

#include <atomic>
#include <map>
#include <set>
#include <thread>

#include <nlohmann/json.hpp>

#include "cli_runner.h"
#include "test_support.h"

using namespace onnxproof::testing;
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

const std::string k_fixtures = std::string(ONNXPROOF_TEST_SOURCE_DIR) + "/fixtures/";
const std::string k_repair_models = k_fixtures + "repair_models.py";

CliResult onnxproof_cli(const std::vector<std::string>& args) { return run_cli(ONNXPROOF_CLI, args); }

json read_json(const fs::path& path) { return json::parse(read_text(path)); }

// A failed pipeline run of `model` (x=2x8x16, batch dynamic, unless `input` says otherwise) in `out`.
void failed_run(const fs::path& out, const std::string& model, std::vector<std::string> extra,
                const std::string& input = "x=2x8x16:float32") {
  std::vector<std::string> args = {"pipeline",  "--model",   model, "--input",     input,   "--dynamic",
                                   "x:0=batch", "--samples", "1",   "--no-golden", "--out", out.string()};
  args.insert(args.end(), extra.begin(), extra.end());
  const auto result = onnxproof_cli(args);
  ASSERT_EQ(result.exit_code, 1) << result.out << result.err;
}

// `repair RUN --all`: RUN/repair/repair.json.
json repair_every_candidate(const fs::path& run, int expected_exit = 0) {
  const auto result = onnxproof_cli({"repair", run.string(), "--all"});
  EXPECT_EQ(result.exit_code, expected_exit) << result.out << result.err;
  return read_json(run / "repair" / "repair.json");
}

// The kinds of the candidates that passed.
std::set<std::string> passing_kinds(const json& repair) {
  std::set<std::string> kinds;
  for (const auto& attempt : repair["attempts"])
    if (attempt["status"] == "pass") kinds.insert(attempt["kind"].get<std::string>());
  return kinds;
}

// Every candidate that passed changes `kind` (alone, or paired with another change), and the
// first one to pass is `first`: no other kind of change fixes the run.
void expect_only_kind_repairs(const json& repair, const std::string& kind, const std::string& first) {
  const auto kinds = passing_kinds(repair);
  EXPECT_FALSE(kinds.empty()) << repair.dump(1);
  for (const auto& passed : kinds)
    EXPECT_TRUE(passed == kind || passed.starts_with(kind + "+") || passed.ends_with("+" + kind)) << passed;
  EXPECT_EQ(repair["repair"]["folder"], "repair/" + first);
}

// The run's report points at the repair: report.json's and report.md's "what to do".
void expect_report_points_at(const fs::path& run, const std::string& folder) {
  const json report = read_json(run / "report.json");
  const std::string what = report["ship"]["what_to_do"];
  EXPECT_NE(what.find("onnxproof repair found a proved fix"), std::string::npos) << what;
  EXPECT_NE(what.find(folder), std::string::npos) << what;
  EXPECT_EQ(report["ship"]["repair"]["folder"], folder);
  EXPECT_NE(read_text(run / "report.md").find("onnxproof repair found a proved fix"), std::string::npos);
}

// Every regular file below `folder`, by its path relative to it, with its bytes.
std::map<std::string, std::string> files_below(const fs::path& folder) {
  std::map<std::string, std::string> files;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(folder, ec); !ec && it != fs::recursive_directory_iterator();
       it.increment(ec))
    if (it->is_regular_file(ec)) files[it->path().lexically_relative(folder).string()] = read_text(it->path());
  return files;
}

ino_t inode_of(const fs::path& path) {
  struct stat info{};
  return ::stat(path.c_str(), &info) == 0 ? info.st_ino : 0;
}

// `repair RUN` (with `extra`) while the published run is watched: as long as RUN is the folder it
// was, it holds exactly the files it held, byte for byte; the repaired run replaces it as a whole
// (another folder); and the files it held were never written in place (their old links keep
// their bytes).
CliResult repair_watching_the_published_run(const fs::path& run, const std::vector<std::string>& extra) {
  const auto before = files_below(run);
  const ino_t published = inode_of(run);
  TempDir old_links;
  for (const auto& [relative, bytes] : before) {
    fs::create_directories((old_links / relative).parent_path());
    fs::create_hard_link(run / relative, old_links / relative);
  }
  std::vector<std::string> args = {"repair", run.string()};
  args.insert(args.end(), extra.begin(), extra.end());
  CliResult result;
  std::atomic<bool> done = false;
  std::thread repair([&] {
    result = onnxproof_cli(args);
    done = true;
  });
  int watched = 0;
  while (!done) {
    const ino_t first = inode_of(run);
    const auto now = files_below(run);
    if (first == published && inode_of(run) == published) {
      EXPECT_EQ(now, before) << "the published run changed before the repaired one replaced it";
      ++watched;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  repair.join();
  EXPECT_GT(watched, 0);
  EXPECT_NE(inode_of(run), published) << "the repaired run was not published as a folder of its own";
  EXPECT_EQ(files_below(old_links.path()), before) << "a published file was written in place";
  return result;
}

TEST(Repair, AnOptimizerOnlyAFusionBreaksIsSwitchedOffWithTheSessionOptionWrittenOut) {
  TempDir out;
  // The fixed rule: ConvAddFusion moves ONNX Runtime away from PyTorch (pipeline_test's RuntimeOptimization).
  failed_run(out.path(), k_fixtures + "runtime_models.py:large_bias_conv",
             {"--exporter", "torchscript", "--rtol", "1e-3", "--atol", "1e-5"}, "x=2x3x16x16:float32");
  const json report = read_json(out / "report.json");
  for (const auto& row : report["parity"])
    if (row["optimization"] == "disabled" && row["status"] != "pass")
      GTEST_SKIP() << "without optimizations ONNX Runtime already differs from PyTorch here: " << row.dump();
  const json repair = repair_every_candidate(out.path());
  expect_only_kind_repairs(repair, "optimizer", "01-optimizer-ConvAddFusion");
  EXPECT_EQ(repair["repair"]["diff"]["session_options"]["optimization.disable_specified_optimizers"], "ConvAddFusion");
  const std::string snippet = read_text(out / "repair" / "01-optimizer-ConvAddFusion" / "session-options.md");
  EXPECT_NE(snippet.find("add_session_config_entry(\"optimization.disable_specified_optimizers\", \"ConvAddFusion\")"),
            std::string::npos);
  // The candidate was proved by the run's own rule (--rtol/--atol), not an easier one.
  for (const auto& row : read_json(out / "repair" / "01-optimizer-ConvAddFusion" / "report.json")["parity"])
    EXPECT_EQ(row["rule"], "user") << row.dump();
  expect_report_points_at(out.path(), "repair/01-optimizer-ConvAddFusion");
}

TEST(Repair, AnExporterOnlyTheOtherExporterTracesIsExportedAgainWithIt) {
  TempDir out;
  failed_run(out.path(), k_repair_models + ":exporter_only", {"--exporter", "torchscript"});
  const json repair = repair_every_candidate(out.path());
  expect_only_kind_repairs(repair, "exporter", "01-exporter-dynamo");
  EXPECT_EQ(repair["repair"]["diff"]["exporter"], json({{"from", "torchscript"}, {"to", "dynamo"}}));
  expect_report_points_at(out.path(), "repair/01-exporter-dynamo");
}

// The probe of 2026-12-06: command.json pointed at another model after the run, and the dynamo
// candidate's new export (of that model, against a reference of that model) was "the repair".
TEST(Repair, ACandidateThatExportedAnotherModelIsNoRepair) {
  TempDir out;
  failed_run(out.path(), k_repair_models + ":exporter_only", {"--exporter", "torchscript"});
  json command = read_json(out / "command.json");
  command["model"]["model"] = k_repair_models + ":exporter_only_other_weights";
  write_bytes(out / "command.json", command.dump());
  const auto result = onnxproof_cli({"repair", out.path().string()});
  EXPECT_EQ(result.exit_code, 1) << result.out << result.err;
  const json repair = read_json(out / "repair" / "repair.json");
  EXPECT_FALSE(repair["repaired"]);
  const json& first = repair["attempts"][0];
  EXPECT_EQ(first["status"], "fail") << first.dump();
  EXPECT_NE(first["why"].get<std::string>().find("not the run's"), std::string::npos) << first.dump();
}

TEST(Repair, AnOpsetOnlyALowerOpsetTranslatesRightIsFound) {
  TempDir out;
  failed_run(out.path(), k_repair_models + ":opset_only", {"--exporter", "dynamo", "--opset", "23"});
  const json repair = repair_every_candidate(out.path());
  expect_only_kind_repairs(repair, "opset", "02-opset-22");
  EXPECT_EQ(repair["repair"]["diff"]["opset"]["from"], 23);
  EXPECT_EQ(repair["repair"]["diff"]["opset"]["to"], 22);
}

TEST(Repair, AFloat16ConstantOverflowKeepsItsNodesInFloat32) {
  TempDir out;
  // pipeline --repair: the run, then the repair, in one command; its summary names the fix.
  const auto result = onnxproof_cli({"pipeline", "--model", k_repair_models + ":fp16_overflow", "--input",
                                     "x=2x8x16:float32", "--dynamic", "x:0=batch", "--samples", "1", "--no-golden",
                                     "--precision", "fp16", "--repair", "--out", out.path().string()});
  ASSERT_EQ(result.exit_code, 1) << result.out << result.err;  // the export as made still fails
  EXPECT_NE(result.out.find("onnxproof repair found a proved fix: the float16 conversion keeps"), std::string::npos)
      << result.out;
  const json repair = repair_every_candidate(out.path());
  expect_only_kind_repairs(repair, "float32", "01-keep-float32");
  EXPECT_EQ(repair["repair"]["diff"]["kept_in_float32"].size(), 2U);  // the two Muls, each with a constant
  const json proved = read_json(out / "repair" / "01-keep-float32" / "report.json");
  EXPECT_EQ(proved["verdict"], "pass");
}

// onnxproof's own simplify needs no repair: a float16 proof of the simplified model that fails
// where the export's passes (onnxproof folded exp(12) into a constant float16 cannot hold) keeps
// the export, as a float32 proof does, and passes with a warning.
TEST(Repair, AConstantOnnxproofsSimplifyFoldsPastFloat16IsNoFailureOfTheModel) {
  TempDir out;
  const auto result = onnxproof_cli({"pipeline", "--model", k_repair_models + ":simplify_fp16", "--input",
                                     "x=2x8x16:float32", "--dynamic", "x:0=batch", "--samples", "1", "--no-golden",
                                     "--exporter", "torchscript", "--precision", "fp16", "--out", out.path().string()});
  ASSERT_EQ(result.exit_code, 0) << result.out << result.err;
  const json report = read_json(out / "report.json");
  bool warned = false;
  for (const auto& finding : report["findings"]) warned = warned || finding["code"] == "SIMPLIFY_CHANGED_OUTPUTS";
  EXPECT_TRUE(warned) << report["findings"].dump(1);
  EXPECT_FALSE(fs::exists(out / "model.sim.onnx"));
  EXPECT_TRUE(fs::exists(out / "model.fp16.onnx"));  // the export's float16 copy, the one proved
  EXPECT_FALSE(fs::exists(out / "export.fp16.onnx"));
  expect_one_line_error(onnxproof_cli({"repair", out.path().string()}), 2, "only a failed run is repaired");
}

TEST(Repair, AFrozenReshapeIsRewrittenToCopyTheDynamicAxis) {
  TempDir out;
  failed_run(out.path(), k_repair_models + ":frozen_reshape_custom_op", {"--exporter", "torchscript"},
             "x=2x3x4x4:float32");
  const json repair = repair_every_candidate(out.path());
  expect_only_kind_repairs(repair, "rewrite", "01-rewrite-frozen-reshape");
  const json& rewrite = repair["repair"]["diff"]["rewrites"][0];
  EXPECT_EQ(rewrite["shape_before"], json({2, -1}));
  EXPECT_EQ(rewrite["shape_after"], json({0, -1}));
  // The user's line comes first in the answer, and the advice says the code still freezes it.
  const json ship = read_json(out / "report.json")["ship"];
  EXPECT_TRUE(ship["where"].get<std::string>().starts_with(k_repair_models + ":")) << ship.dump();
  EXPECT_NE(ship["where"].get<std::string>().find("(in the graph: "), std::string::npos) << ship.dump();
  EXPECT_NE(ship["what_to_do"].get<std::string>().find("the code is not: change " + k_repair_models + ":"),
            std::string::npos)
      << ship.dump();
  // The input run is left as it was: the rewrite is a copy in the candidate's own folder.
  EXPECT_NE(read_json(out / "export.json")["onnx_model"]["sha256"],
            read_json(out / "repair" / "01-rewrite-frozen-reshape" / "export.json")["onnx_model"]["sha256"]);
}

TEST(Repair, AModelNoConfigurationFixesIsSaidSoWithEverythingTried) {
  TempDir out;
  failed_run(out.path(), k_repair_models + ":unfixable", {"--exporter", "torchscript"});
  const auto result = repair_watching_the_published_run(out.path(), {});
  EXPECT_EQ(result.exit_code, 1) << result.out << result.err;
  const json repair = read_json(out / "repair" / "repair.json");
  EXPECT_FALSE(repair["repaired"]);
  // A Python branch the trace froze: the other exporter is tried, no opset (every opset traces the
  // branch alike).
  ASSERT_GE(repair["attempts"].size(), 1U);
  for (const auto& attempt : repair["attempts"]) {
    EXPECT_EQ(attempt["kind"].get<std::string>().find("opset"), std::string::npos) << attempt.dump();
    EXPECT_EQ(attempt["status"], "fail") << attempt.dump();
    EXPECT_FALSE(attempt["why"].get<std::string>().empty());
  }
  const std::string what = read_json(out / "report.json")["ship"]["what_to_do"];
  EXPECT_NE(what.find("onnxproof repair tried"), std::string::npos) << what;
  EXPECT_NE(read_text(out / "repair" / "repair.md").find("**Not repaired:**"), std::string::npos);

  // A budget spent before the first candidate: nothing tried, and said so.
  const auto spent = onnxproof_cli({"repair", out.path().string(), "--repair-budget", "1e-9"});
  EXPECT_EQ(spent.exit_code, 1) << spent.out << spent.err;
  EXPECT_NE(spent.out.find("not repaired     0 of "), std::string::npos) << spent.out;  // none ran
  const json none = read_json(out / "repair" / "repair.json");
  EXPECT_TRUE(none["budget_spent"]);
  for (const auto& attempt : none["attempts"]) EXPECT_EQ(attempt["status"], "not_tried");
}

TEST(Repair, OnlyAFailedRunFolderOfItsOwnIsRepaired) {
  TempDir out;
  expect_one_line_error(onnxproof_cli({"repair", (out / "missing").string()}), 2, "is not a run folder");
  const auto passed = onnxproof_cli({"pipeline", "--model", k_fixtures + "trap_models.py:dict_output", "--input",
                                     "x=2x8:float32", "--samples", "1", "--no-golden", "--out", out.path().string()});
  ASSERT_EQ(passed.exit_code, 0) << passed.out << passed.err;
  expect_one_line_error(onnxproof_cli({"repair", out.path().string()}), 2, "only a failed run is repaired");
  expect_one_line_error(onnxproof_cli({"repair", out.path().string(), "--repair-budget", "0"}), 2,
                        "--repair-budget must be a positive number");
  // The pipeline's repair options, refused before any work.
  const std::vector<std::string> model = {"pipeline",
                                          "--model",
                                          k_fixtures + "trap_models.py:dict_output",
                                          "--input",
                                          "x=2x8:float32",
                                          "--out",
                                          (out / "other").string()};
  auto with = [&](std::vector<std::string> extra) {
    std::vector<std::string> args = model;
    args.insert(args.end(), extra.begin(), extra.end());
    return onnxproof_cli(args);
  };
  expect_one_line_error(with({"--keep-float32", "node_mul"}), 2,
                        "--keep-float32 names nodes of the float16 conversion");
  expect_one_line_error(with({"--repair", "--exporter", "both"}), 2, "--repair repairs one export");
  expect_one_line_error(with({"--repair", "--repair-budget", "-1"}), 2, "--repair-budget must be a positive number");
  auto report = read_json(out / "report.json");
  report["verdict"] = "fail";
  write_bytes(out / "report.json", report.dump());
  // A command record that is not one is named, not trusted.
  const std::string recorded = read_text(out / "command.json");
  write_bytes(out / "command.json", R"({"schema": "onnxproof.command/1", "model": {}})");
  expect_one_line_error(onnxproof_cli({"repair", out.path().string()}), 2,
                        "command.json: model.model: expected a value");
  // A record whose options onnxproof refuses names the record, not an option the user never typed.
  json forged = json::parse(recorded);
  forged["model"]["export_timeout"] = 0;  // the schema takes 0; the option check does not
  write_bytes(out / "command.json", forged.dump());
  expect_one_line_error(onnxproof_cli({"repair", out.path().string()}), 2,
                        "command.json records options onnxproof refuses: --export-timeout");
  write_bytes(out / "command.json", recorded);
  // RUN/repair is replaced by every repair: never through a link to somewhere else.
  TempDir elsewhere;
  fs::create_directory_symlink(elsewhere.path(), out / "repair");
  expect_one_line_error(onnxproof_cli({"repair", out.path().string()}), 2,
                        "refusing to write into " + (out / "repair").string() + ": it is a symbolic link");
  EXPECT_TRUE(fs::is_empty(elsewhere.path()));
  // The run is replaced as a whole: a file of the user's in it is named, and stays.
  fs::remove(out / "repair");
  write_bytes(out / "notes.txt", "mine");
  expect_one_line_error(onnxproof_cli({"repair", out.path().string()}), 2,
                        "it holds 'notes.txt', which no onnxproof run writes); repair replaces the run as a whole");
  EXPECT_EQ(read_text(out / "notes.txt"), "mine");
}

}  // namespace
