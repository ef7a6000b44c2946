// The CLI's streams (core/printable_stream.h): text passes through, control bytes from a model's
// names are written as escapes, and a C1 control (0xC2 0x80..0x9F) is escaped across writes.
#include <gtest/gtest.h>

#include <sstream>

#include "onnxproof/core/printable_stream.h"

namespace onnxproof {
namespace {

std::string through_buffer(const std::string& text) {
  std::ostringstream target;
  PrintableBuffer buffer(target.rdbuf());
  std::ostream stream(&buffer);
  stream << text << std::flush;
  return target.str();
}

TEST(PrintableStream, PassesTextNewlinesTabsAndUtf8Through) {
  EXPECT_EQ(through_buffer("conv1/Conv\tweight\n"), "conv1/Conv\tweight\n");
  EXPECT_EQ(through_buffer("caf\xc3\xa9 \xc2\xb5s"), "caf\xc3\xa9 \xc2\xb5s");  // é, µ (0xC2 0xB5 is no control)
}

TEST(PrintableStream, EscapesControlBytesThatWouldDriveTheTerminal) {
  const std::string escaped = through_buffer("name\x1b[2Jcleared\x07");
  EXPECT_EQ(escaped.find('\x1b'), std::string::npos);
  EXPECT_EQ(escaped.find('\x07'), std::string::npos);
  EXPECT_NE(escaped.find("cleared"), std::string::npos);
}

TEST(PrintableStream, EscapesAC1ControlAndKeepsALoneLeadByteAtTheEnd) {
  const std::string c1 = through_buffer(
      "a\xc2\x9b"
      "b");  // U+009B, the 8-bit CSI
  EXPECT_EQ(c1.find("\xc2\x9b"), std::string::npos);
  EXPECT_EQ(c1.front(), 'a');
  EXPECT_EQ(c1.back(), 'b');
  EXPECT_EQ(through_buffer("end\xc2"), "end\xc2");  // flushed as it was
}

}  // namespace
}  // namespace onnxproof
