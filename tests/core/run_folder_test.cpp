// The run-folder marker and the rule for replacing a folder: onnxproof replaces only what it made.
#include <gtest/gtest.h>

#include "cli_runner.h"
#include "onnxproof/core/folder_lock.h"
#include "onnxproof/core/run_folder.h"
#include "test_support.h"

namespace onnxproof {
namespace {

namespace fs = std::filesystem;
using testing::read_text;
using testing::TempDir;
using testing::write_bytes;

std::string refusal(const fs::path& out) {
  auto replaceable = require_replaceable_run_folder(out);
  if (replaceable) return "";
  EXPECT_EQ(replaceable.error().code(), ErrorCode::usage);
  return replaceable.error().message();
}

// The probe's project folder: a report.json (or export.log, export.json) beside the user's files
// was taken for a run and replaced.
TEST(RunFolder, AProjectFolderWithAReportIsNotARun) {
  for (const std::string marker : {"report.json", "export.json", "export.log", ".onnxproof-run"}) {
    TempDir project;
    write_bytes(project / marker, R"({"schema": "onnxproof.run/1"})");
    write_bytes(project / "README.md", "mine");
    fs::create_directories(project / "src");
    write_bytes(project / "src" / "main.py", "print()");
    const std::string message = refusal(project.path());
    EXPECT_NE(message.find("not an onnxproof run folder"), std::string::npos) << marker << ": " << message;
    EXPECT_NE(message.find("'README.md'"), std::string::npos) << message;  // the first foreign entry
    EXPECT_EQ(message.find('\n'), std::string::npos);
    EXPECT_EQ(read_text(project / "src" / "main.py"), "print()");
  }
}

TEST(RunFolder, AMarkedRunAnEarlierRunAndASeededGoldenSetAreReplaceable) {
  TempDir parent;
  const fs::path marked = parent / "marked";
  fs::create_directories(marked / "reference");
  ASSERT_TRUE(write_run_marker(marked, "onnxproof pipeline", "m.py:f"));
  write_bytes(marked / "model.onnx", "x");
  write_bytes(marked / ".report.json.tmp.Ab12Cd", "");  // an atomic write a kill interrupted
  fs::create_directories(marked / ".golden.old-2147483000");
  EXPECT_EQ(refusal(marked), "");
  EXPECT_NE(read_text(marked / ".onnxproof-run").find("onnxproof.run/1"), std::string::npos);

  const fs::path legacy = parent / "legacy";  // written before the marker
  fs::create_directories(legacy / "golden");
  for (const std::string file : {"report.json", "report.md", "export.json", "export.log", "model.onnx"})
    write_bytes(legacy / file, "{}");
  EXPECT_EQ(refusal(legacy), "");

  const fs::path seeded = parent / "seeded";
  fs::create_directories(seeded / "golden");
  write_bytes(seeded / "golden" / "manifest.json", "{}");
  EXPECT_EQ(refusal(seeded), "");

  // What --quantize static and an encoder-decoder's export write beside model.onnx.
  const fs::path extras = parent / "extras";
  fs::create_directories(extras / "reference-quant" / "test_data_set_0");
  ASSERT_TRUE(write_run_marker(extras, "onnxproof pipeline --quantize static", "m.py:f"));
  for (const std::string file : {"model.onnx", "model.quant.onnx", "encoder.onnx", "decoder_merged.onnx"})
    write_bytes(extras / file, "x");
  EXPECT_EQ(refusal(extras), "");

  const fs::path both = parent / "both";  // --exporter both: a run per exporter inside
  fs::create_directories(both / "dynamo");
  ASSERT_TRUE(write_run_marker(both, "onnxproof pipeline --exporter both", "m.py:f"));
  write_bytes(both / "dynamo" / "report.json", "{}");
  EXPECT_EQ(refusal(both), "");
  write_bytes(both / "dynamo" / "notes.txt", "mine");
  EXPECT_NE(refusal(both).find("'dynamo/notes.txt'"), std::string::npos);
}

// The probe of 2026-12-06: a user's plan in p/repair/ beside a report.json was deleted by
// `onnxproof repair p`. repair/ is replaced with the run, so what is in it must be a repair's.
TEST(RunFolder, AUsersFileInRepairIsRefusedARepairsOwnFilesAreNot) {
  TempDir parent;
  const fs::path planned = parent / "planned";
  fs::create_directories(planned / "repair");
  write_bytes(planned / "report.json", R"({"verdict": "fail"})");
  write_bytes(planned / "repair" / "fix_plan.md", "plan");
  const std::string message = refusal(planned);
  EXPECT_NE(message.find("'repair/fix_plan.md'"), std::string::npos) << message;
  EXPECT_EQ(read_text(planned / "repair" / "fix_plan.md"), "plan");

  const fs::path repaired = parent / "repaired";
  fs::create_directories(repaired / "repair" / "01-dynamo" / "reference");
  fs::create_directories(repaired / "repair" / ".export");
  ASSERT_TRUE(write_run_marker(repaired, "onnxproof pipeline", "m.py:f"));
  for (const std::string file : {"repair/repair.json", "repair/repair.md", "repair/01-dynamo/report.json",
                                 "repair/01-dynamo/session-options.md", "repair/.export/export.json"})
    write_bytes(repaired / file, "{}");
  EXPECT_EQ(refusal(repaired), "");
  write_bytes(repaired / "repair" / "01-dynamo" / "notes.txt", "mine");
  EXPECT_NE(refusal(repaired).find("'repair/01-dynamo/notes.txt'"), std::string::npos);
}

// The probe: two `onnxproof repair RUN` at once, the second emptied repair/ under the first.
TEST(FolderLock, ASecondHolderIsRefusedUntilTheFirstLetsGo) {
  TempDir run;
  {
    auto first = FolderLock::take(run.path(), "onnxproof repair");
    ASSERT_TRUE(first) << first.error().describe();
    auto second = FolderLock::take(run.path(), "onnxproof repair");
    ASSERT_FALSE(second);
    EXPECT_EQ(second.error().code(), ErrorCode::usage);
    EXPECT_NE(second.error().message().find("in use by another onnxproof repair"), std::string::npos);
  }
  EXPECT_TRUE(FolderLock::take(run.path(), "onnxproof repair"));
  EXPECT_TRUE(fs::is_empty(run.path()));  // nothing written into the folder
}

TEST(RunFolder, KnownNamesAloneOrAForeignMarkerAreNotARun) {
  TempDir parent;
  const fs::path unmarked = parent / "unmarked";
  fs::create_directories(unmarked / "reference");
  write_bytes(unmarked / "model.onnx", "x");
  EXPECT_NE(refusal(unmarked).find("no .onnxproof-run"), std::string::npos);

  const fs::path other = parent / "other";
  fs::create_directories(other);
  write_bytes(other / ".onnxproof-run", R"({"schema": "someone.else/1"})");
  EXPECT_NE(refusal(other).find("not an onnxproof.run/1 marker"), std::string::npos);
}

// Replacing never reaches through a link: a linked golden/ or report.json is foreign, as is --out
// itself when it is a link.
TEST(RunFolder, LinksAreNeverOurs) {
  TempDir parent;
  const fs::path elsewhere = parent / "elsewhere";
  fs::create_directories(elsewhere);
  write_bytes(elsewhere / "manifest.json", "{}");
  const fs::path run = parent / "run";
  fs::create_directories(run);
  ASSERT_TRUE(write_run_marker(run, "onnxproof pipeline", "m.py:f"));
  fs::create_directory_symlink(elsewhere, run / "golden");
  EXPECT_NE(refusal(run).find("'golden'"), std::string::npos);

  fs::create_directory_symlink(run, parent / "link");
  EXPECT_NE(refusal(parent / "link").find("is not a folder"), std::string::npos);
}

TEST(RunFolder, TemporariesOfAKilledRunAreKnownOthersAreNot) {
  for (const std::string name : {"model.onnx.tmp-123", ".torch-cache.tmp-9", ".dynamo.tmp-9", "reference.partial",
                                 "reference.old", ".refused-export", ".exporter-artifacts.tmp-4", ".golden.tmp-77",
                                 ".keras-home.tmp-12", "model.onnx.tmp-12.onnx", "tf2onnx", "keras", ".keras.tmp-3"})
    EXPECT_TRUE(is_run_folder_entry(name, true)) << name;
  for (const std::string name : {"src", "README.md", "model.onnx.tmp-x", "report.json.bak", ".git", "golden2",
                                 "model.onnx.tmp-x.onnx", "keras-home"})
    EXPECT_FALSE(is_run_folder_entry(name, name != "README.md")) << name;
  EXPECT_FALSE(is_run_folder_entry("report.json", true));  // a folder where a run writes a file
  EXPECT_FALSE(is_run_folder_entry("reference", false));
}

}  // namespace
}  // namespace onnxproof
