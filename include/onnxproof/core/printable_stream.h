#pragma once
// Model-derived text (node, input and output names, messages quoting them) reaches the terminal
// through the CLI's streams (tools/onnxproof/main.cpp routes them here); a name holding control
// bytes must not drive the terminal (clear the screen, move the cursor, retitle the window). This
// stream buffer passes text through and writes C0 and C1 control characters other than newline
// and tab as \xNN / \u00NN.

#include <streambuf>

namespace onnxproof {

class PrintableBuffer : public std::streambuf {
 public:
  explicit PrintableBuffer(std::streambuf* target) : m_target(target) {}

 protected:
  int_type overflow(int_type ch) override;
  int sync() override;

 private:
  std::streambuf* m_target;
  bool m_after_c2 = false;  // the last byte was 0xC2, the lead byte of U+0080..U+00BF
};

/// Routes std::cout and std::cerr through PrintableBuffer while alive.
class PrintableStandardStreams {
 public:
  PrintableStandardStreams();
  ~PrintableStandardStreams();
  PrintableStandardStreams(const PrintableStandardStreams&) = delete;
  PrintableStandardStreams& operator=(const PrintableStandardStreams&) = delete;

 private:
  std::streambuf* m_original_out;
  std::streambuf* m_original_err;
  PrintableBuffer m_out;
  PrintableBuffer m_err;
};

}  // namespace onnxproof
