// ONNX Runtime's profile read for where each node ran (PROVIDER_FALLBACK's evidence).
#include <set>

#include <nlohmann/json.hpp>

#include "onnxproof/core/atomic_file.h"
#include "onnxproof/runtime/session.h"
#include "session_providers.h"

namespace onnxproof {

Expected<std::vector<NodePlacement>> parse_profile_placements(std::string_view profile_json) {
  constexpr std::string_view k_suffix = "_kernel_time";
  const auto events = nlohmann::json::parse(profile_json, nullptr, false);
  if (events.is_discarded() || !events.is_array()) {
    return fail(ErrorCode::invalid_input, "an ONNX Runtime profile is a JSON array of trace events");
  }
  std::vector<NodePlacement> placements;
  std::set<std::string> seen;
  for (const auto& event : events) {
    if (!event.is_object() || event.value("cat", "") != "Node" || !event.contains("args")) continue;
    const std::string name = event.value("name", "");
    const auto& args = event["args"];
    if (!name.ends_with(k_suffix) || !args.is_object() || !args.contains("provider")) continue;
    std::string node = name.substr(0, name.size() - k_suffix.size());
    if (!seen.insert(node).second) continue;
    placements.push_back(
        {std::move(node), args.value("op_name", ""), runtime_detail::short_provider_name(args.value("provider", ""))});
  }
  return placements;
}

Expected<std::vector<NodePlacement>> read_profile_placements(const std::filesystem::path& profile) {
  ONNXPROOF_TRY_ASSIGN(const std::string text, read_file(profile, uint64_t{1} << 30));
  auto placements = parse_profile_placements(text);
  if (!placements) return fail(ErrorCode::invalid_input, profile.string() + ": " + placements.error().message());
  return placements;
}

std::vector<NodePlacement> nodes_off_provider(const std::vector<NodePlacement>& placements,
                                              const std::string& provider) {
  std::vector<NodePlacement> off;
  for (const auto& placement : placements) {
    if (placement.provider != provider) off.push_back(placement);
  }
  return off;
}

}  // namespace onnxproof
