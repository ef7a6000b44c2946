#include "onnxproof/core/json_file.h"

#include "onnxproof/core/atomic_file.h"

namespace onnxproof {

Expected<nlohmann::json> read_json_object(const std::filesystem::path& path, ErrorCode code) {
  ONNXPROOF_TRY_ASSIGN(const std::string text, read_file(path, uint64_t{64} << 20));
  nlohmann::json json;
  try {
    json = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& error) {
    return fail(code, path.string() + " is malformed: " + error.what());
  }
  if (!json.is_object()) return std::unexpected(field_error(path, code, "(top level)", "an object"));
  return json;
}

Error field_error(const std::filesystem::path& path, ErrorCode code, const std::string& field,
                  const std::string& what) {
  return Error(code, path.string() + ": " + field + ": expected " + what);
}

}  // namespace onnxproof
