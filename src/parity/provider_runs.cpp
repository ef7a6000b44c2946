// Which runs a provider list stands for (provider_runs.h).
#include "provider_runs.h"

#include <algorithm>

namespace onnxproof::detail {

std::vector<std::pair<std::string, bool>> providers_to_run(const std::vector<std::string>& asked) {
  const bool default_asked = std::find(asked.begin(), asked.end(), "openvino:default") != asked.end();
  std::vector<std::pair<std::string, bool>> runs;
  const auto add = [&](const std::string& provider, bool advisory) {
    const bool seen = std::any_of(runs.begin(), runs.end(), [&](const auto& run) { return run.first == provider; });
    if (!seen) runs.emplace_back(provider, advisory);
  };
  for (const auto& provider : asked) {
    add(provider == "openvino:f32" ? "openvino" : provider, false);
    if (provider == "openvino" && !default_asked) add("openvino:default", true);
  }
  return runs;
}

DType judged_precision(const Session& session, DType asked) {
  const std::string computed = session.precision();
  const DType narrower = computed == "bf16" ? DType::bfloat16 : computed == "f16" ? DType::float16 : DType::undefined;
  // The coarser of the two: bfloat16 (8 significant bits) under a float16 proof (11) is judged as
  // bfloat16; float16 under float16 as float16.
  const auto coarseness = [](DType dtype) { return dtype == DType::bfloat16 ? 2 : dtype == DType::float16 ? 1 : 0; };
  return coarseness(narrower) > coarseness(asked) ? narrower : asked;
}

}  // namespace onnxproof::detail
