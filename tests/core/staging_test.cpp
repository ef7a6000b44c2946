// Publishing a staged folder: in one step, and recoverable when a run dies mid-way.
#include <gtest/gtest.h>

#include "cli_runner.h"
#include "onnxproof/core/staging.h"
#include "test_support.h"

namespace onnxproof {
namespace {

namespace fs = std::filesystem;
using testing::read_text;
using testing::TempDir;
using testing::write_bytes;

TEST(Staging, PublishReplacesTheOldFolderInOneStep) {
  TempDir parent;
  const fs::path destination = parent / "run";
  fs::create_directories(destination);
  write_bytes(destination / "old.txt", "old");
  {
    auto staging = StagingFolder::create(destination);
    ASSERT_TRUE(staging) << staging.error().describe();
    write_bytes(staging->path() / "new.txt", "new");
    ASSERT_TRUE(staging->publish());
  }
  EXPECT_EQ(read_text(destination / "new.txt"), "new");
  EXPECT_FALSE(fs::exists(destination / "old.txt"));
  EXPECT_EQ(std::distance(fs::directory_iterator(parent.path()), fs::directory_iterator()), 1);
}

TEST(Staging, AnUnpublishedStagingFolderIsRemoved) {
  TempDir parent;
  fs::path path;
  {
    auto staging = StagingFolder::create(parent / "run");
    ASSERT_TRUE(staging);
    path = staging->path();
    EXPECT_TRUE(fs::is_directory(path));
  }
  EXPECT_FALSE(fs::exists(path));
}

// A publish killed between its two renames (where the file system cannot exchange folders)
// leaves the old run as ".NAME.old-PID" of a dead process; the next run puts it back.
TEST(Staging, AnInterruptedPublishIsRecoveredByTheNextRun) {
  TempDir parent;
  const fs::path destination = parent / "run";
  const fs::path old = parent / ".run.old-2147483000";  // no such process
  fs::create_directories(old);
  write_bytes(old / "report.json", "{}");
  EXPECT_TRUE(recover_interrupted_publish(destination));
  EXPECT_EQ(read_text(destination / "report.json"), "{}");
  EXPECT_FALSE(fs::exists(old));
  // With the destination in place, a leftover old folder is only removed.
  fs::create_directories(old);
  EXPECT_FALSE(recover_interrupted_publish(destination));
  EXPECT_FALSE(fs::exists(old));
  EXPECT_TRUE(fs::exists(destination / "report.json"));
}

// A staged copy of a run (`onnxproof repair RUN/`, `localize .`): the folder named with a trailing
// separator is still the folder itself, its copy lies beside it, its files are links that nothing
// writes through, and the copy replaces it only while it is the run that was copied.
TEST(Staging, AStagedCopyOfARunNamedWithATrailingSlashReplacesItOnlyIfUnchanged) {
  TempDir parent;
  const fs::path run = parent / "run";
  fs::create_directories(run / "reference");
  write_bytes(run / "report.json", "old report");
  write_bytes(run / "reference" / "input_0.pb", "bytes");
  {
    auto staging = StagingFolder::create(run.string() + "/");
    ASSERT_TRUE(staging) << staging.error().describe();
    EXPECT_EQ(staging->path().parent_path(), parent.path());  // beside the run, not inside it
    const FolderIdentity copied = identity_of(run);
    ASSERT_TRUE(link_folder_contents(run, staging->path(), {}));
    EXPECT_EQ(fs::hard_link_count(run / "reference" / "input_0.pb"), 2U);
    fs::remove(staging->path() / "report.json");
    write_bytes(staging->path() / "report.json", "new report");
    EXPECT_EQ(read_text(run / "report.json"), "old report");  // the published file is untouched
    ASSERT_TRUE(staging->publish_over(copied));
  }
  EXPECT_EQ(read_text(run / "report.json"), "new report");
  EXPECT_EQ(read_text(run / "reference" / "input_0.pb"), "bytes");
  EXPECT_EQ(std::distance(fs::directory_iterator(parent.path()), fs::directory_iterator()), 1);

  // Another run published meanwhile: the copy is not put over it.
  auto staging = StagingFolder::create(run);
  ASSERT_TRUE(staging);
  const FolderIdentity copied = identity_of(run);
  ASSERT_TRUE(link_folder_contents(run, staging->path(), {}));
  auto newer = StagingFolder::create(parent / "elsewhere");
  ASSERT_TRUE(newer);
  write_bytes(newer->path() / "report.json", "newer run");
  ASSERT_TRUE(newer->publish(run));
  const auto refused = staging->publish_over(copied);
  ASSERT_FALSE(refused);
  EXPECT_NE(refused.error().describe().find("was replaced by another run"), std::string::npos);
  EXPECT_EQ(read_text(run / "report.json"), "newer run");
}

}  // namespace
}  // namespace onnxproof
