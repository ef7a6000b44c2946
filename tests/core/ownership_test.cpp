// The one ownership rule (core/ownership.h): outputs apart from inputs, regular files, no links.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include "onnxproof/core/ownership.h"
#include "test_support.h"

namespace onnxproof {
namespace {

namespace fs = std::filesystem;
using testing::TempDir;
using testing::write_bytes;

// The refusal's message, or "" when the output is allowed.
std::string refusal(const fs::path& output, const CommandInputs& inputs, OutputKind kind = OutputKind::file) {
  const auto checked = require_output_apart(output, inputs, "--out", kind);
  if (checked) return "";
  EXPECT_EQ(checked.error().code(), ErrorCode::usage);
  return checked.error().message();
}

TEST(Ownership, AnOutputIsNeverAnInputHoweverItIsSpelled) {
  TempDir dir;
  write_bytes(dir / "model.onnx", "m");
  fs::create_directories(dir / "ref" / "set");
  const CommandInputs inputs{.files = {dir / "model.onnx"}, .folders = {dir / "ref"}};
  EXPECT_EQ(refusal(dir / "report.json", inputs), "");
  EXPECT_EQ(refusal("", inputs), "");
  EXPECT_NE(refusal(dir / "model.onnx", inputs).find("it is an input of this command"), std::string::npos);
  EXPECT_NE(refusal(dir / "ref" / ".." / "model.onnx", inputs), "");
  fs::create_hard_link(dir / "model.onnx", dir / "hard.onnx");
  EXPECT_NE(refusal(dir / "hard.onnx", inputs), "");
  fs::create_symlink(dir / "ref", dir / "link");
  EXPECT_NE(refusal(dir / "link" / "set" / "new.json", inputs).find("it is inside"), std::string::npos);
  EXPECT_NE(refusal(dir / "ref/", inputs, OutputKind::into_folder).find("it is an input"), std::string::npos);
  // A folder replaced whole may not hold an input; one written into may.
  EXPECT_NE(refusal(dir.path(), inputs, OutputKind::whole_folder).find("it holds"), std::string::npos);
  EXPECT_EQ(refusal(dir / "out", inputs, OutputKind::whole_folder), "");
  EXPECT_EQ(refusal(dir.path(), {.files = {dir / "model.onnx"}}, OutputKind::into_folder), "");
}

TEST(Ownership, ReadersCheckForARegularFileAndLinksAreNamed) {
  TempDir dir;
  ASSERT_EQ(::mkfifo((dir / "fifo").c_str(), 0600), 0);
  const auto fifo = require_regular_file(dir / "fifo");
  ASSERT_FALSE(fifo);
  EXPECT_EQ(fifo.error().message(), (dir / "fifo").string() + " is not a regular file");
  EXPECT_EQ(require_regular_file(dir / "missing").error().code(), ErrorCode::not_found);
  write_bytes(dir / "file", "x");
  EXPECT_TRUE(require_regular_file(dir / "file"));
  fs::create_symlink(dir / "file", dir / "link");
  EXPECT_TRUE(require_not_a_link(dir / "file", "an export folder"));
  EXPECT_TRUE(require_not_a_link(dir / "missing", "an export folder"));
  const auto link = require_not_a_link(dir / "link", "an export folder");
  ASSERT_FALSE(link);
  EXPECT_EQ(link.error().message(),
            (dir / "link").string() + " is a symbolic link; onnxproof does not follow links in an export folder");
}

}  // namespace
}  // namespace onnxproof
