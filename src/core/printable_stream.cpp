#include "onnxproof/core/printable_stream.h"

#include <iostream>
#include <string>

#include "onnxproof/core/printable.h"

namespace onnxproof {

namespace {

int put_text(std::streambuf* target, const char* text) {
  for (; *text; ++text) {
    if (target->sputc(*text) == std::streambuf::traits_type::eof()) return -1;
  }
  return 0;
}

}  // namespace

PrintableBuffer::int_type PrintableBuffer::overflow(int_type ch) {
  if (traits_type::eq_int_type(ch, traits_type::eof())) return traits_type::not_eof(ch);
  const auto byte = static_cast<unsigned char>(traits_type::to_char_type(ch));
  if (m_after_c2) {
    m_after_c2 = false;
    if (const std::string c1 = control_escape(byte, true); !c1.empty())  // U+0080..U+009F
      return put_text(m_target, c1.c_str()) == 0 ? ch : traits_type::eof();
    if (m_target->sputc(static_cast<char>(0xc2)) == traits_type::eof()) return traits_type::eof();
  }
  if (byte == 0xc2) {
    m_after_c2 = true;
    return ch;
  }
  if (const std::string c0 = control_escape(byte, false); !c0.empty())
    return put_text(m_target, c0.c_str()) == 0 ? ch : traits_type::eof();
  return m_target->sputc(static_cast<char>(byte)) == traits_type::eof() ? traits_type::eof() : ch;
}

int PrintableBuffer::sync() {
  if (m_after_c2) {
    m_after_c2 = false;
    m_target->sputc(static_cast<char>(0xc2));
  }
  return m_target->pubsync();
}

PrintableStandardStreams::PrintableStandardStreams()
    : m_original_out(std::cout.rdbuf()),
      m_original_err(std::cerr.rdbuf()),
      m_out(m_original_out),
      m_err(m_original_err) {
  std::cout.rdbuf(&m_out);
  std::cerr.rdbuf(&m_err);
}

PrintableStandardStreams::~PrintableStandardStreams() {
  std::cout.flush();
  std::cerr.flush();
  m_out.pubsync();
  m_err.pubsync();
  std::cout.rdbuf(m_original_out);
  std::cerr.rdbuf(m_original_err);
}

}  // namespace onnxproof
