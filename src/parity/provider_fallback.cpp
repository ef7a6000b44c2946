// PROVIDER_FALLBACK: the nodes ONNX Runtime ran on another provider than the one asked for, from
// its profile of one case (parity.h's measure_placements and fallback_finding).
#include "provider_fallback.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <unistd.h>

#include <atomic>
#include <map>

namespace onnxproof {
namespace fs = std::filesystem;

Expected<std::vector<NodePlacement>> measure_placements(const fs::path& model, const ReferenceCase& c,
                                                        const SessionOptions& options) {
  static std::atomic<int> counter{0};
  SessionOptions profiled = options;
  profiled.profile_prefix = fs::temp_directory_path() / fmt::format("onnxproof-profile-{}-{}", ::getpid(), counter++);
  ONNXPROOF_TRY_ASSIGN(Session session, Session::open(model, profiled));
  const auto ran = run_case(session, c);
  ONNXPROOF_TRY_ASSIGN(const fs::path profile, session.end_profiling());
  auto placements = read_profile_placements(profile);
  std::error_code ec;
  fs::remove(profile, ec);
  if (!ran) return std::unexpected(ran.error());
  return placements;
}

std::optional<Finding> fallback_finding(const std::string& provider, const std::vector<NodePlacement>& placements) {
  const auto off = nodes_off_provider(placements, provider);
  if (off.empty()) return std::nullopt;
  constexpr std::size_t k_named = 10;
  std::map<std::string, int> by_provider;
  std::string named;
  for (std::size_t i = 0; i < off.size(); ++i) {
    ++by_provider[off[i].provider];
    if (i < k_named)
      named +=
          fmt::format("{}'{}' ({}) on {}", named.empty() ? "" : ", ", off[i].node, off[i].op_type, off[i].provider);
  }
  if (off.size() > k_named) named += fmt::format(" and {} more", off.size() - k_named);
  std::string counts;
  for (const auto& [name, count] : by_provider)
    counts += fmt::format("{}{} on {}", counts.empty() ? "" : ", ", count, name);
  const auto& info = finding_code_info(FindingCode::provider_fallback);
  return Finding{
      FindingCode::provider_fallback,
      info.severity,
      "parity",
      fmt::format("{} of {} nodes did not run on {} ({}): {}", off.size(), placements.size(), provider, counts, named),
      provider,
      std::string(info.hint)};
}

namespace detail {

void add_fallback_findings(const fs::path& model, const Reference& reference, const SessionOptions& session,
                           ParityResult& result) {
  if (!reference.cases.empty()) {
    const auto placements = measure_placements(model, reference.cases.front(), session);
    if (placements) {
      if (auto finding = fallback_finding(session.provider, *placements))
        result.findings.push_back(std::move(*finding));
      return;
    }
  }
  SessionOptions strict_options = session;
  strict_options.forbid_cpu_fallback = true;
  if (auto strict = Session::open(model, strict_options); !strict) {
    result.findings.push_back(
        {FindingCode::provider_fallback, Severity::warning, "parity",
         fmt::format("some nodes fall back from {} to the CPU: {}", session.provider, strict.error().describe()),
         session.provider, "the numbers are proved, but the speed is not what the provider promises"});
  }
}

}  // namespace detail

}  // namespace onnxproof
