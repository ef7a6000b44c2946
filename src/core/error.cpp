#include "onnxproof/core/error.h"

namespace onnxproof {

std::string Error::describe() const {
  std::string line;
  for (const auto& context : m_context) {
    line += context;
    line += ": ";
  }
  line += m_message;
  // One line, always: messages from dependencies (ONNX, ORT) can span several.
  for (char& c : line) {
    if (c == '\n' || c == '\r') c = ' ';
  }
  return line;
}

}  // namespace onnxproof
