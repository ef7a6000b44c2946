#include "analyzer.h"

#include <fmt/format.h>

#include "onnxproof/core/finding.h"
#include "onnxproof/core/source_framework.h"

namespace onnxproof::parity_analyzers {

// OUTPUT_ALL_ZEROS and OUTPUT_SATURATED, one per (provider, optimization, output) as NAN_OR_INF.
void add_silent_findings(const AnalyzerInput& in) {
  const auto& [reference, groups, result, requests] = in;
  const std::string source = source_title(reference.framework);
  for (const auto sign : {SilentSign::all_zeros, SilentSign::saturated}) {
    const auto& grouped = sign == SilentSign::all_zeros ? groups.zero_rows : groups.saturated_rows;
    for (const auto& [key, rows] : grouped) {
      const auto* first = rows.front();
      if (first->optimization == GraphOptimization::disabled &&
          grouped.contains(at_level(*first, GraphOptimization::all)))
        continue;
      const std::string where = fmt::format("output '{}' on {}", first->output, run_setting(*first));
      const std::string cases = fmt::format("in {} of {} cases; first {} ({})", rows.size(), reference.cases.size(),
                                            first->data_set, describe_sizes(first->sizes));
      std::string message;
      if (sign == SilentSign::all_zeros) {
        message = fmt::format("{} is all zeros where {}'s is not, {}", where, source, cases);
      } else {
        int64_t elements = 0;
        for (const auto* row : rows) elements += row->silent.saturated;
        message =
            fmt::format("{} has {} elements at +-{:g} (the largest finite {}) where {}'s are not, {}", where, elements,
                        first->silent.saturated_value,
                        first->silent.saturated_value == 65504.0 ? "float16" : first->actual_dtype, source, cases);
      }
      requests.push_back({result.findings.size(), first, sign});
      const auto code = sign == SilentSign::all_zeros ? FindingCode::output_all_zeros : FindingCode::output_saturated;
      const auto& info = finding_code_info(code);
      result.findings.push_back(
          {code, info.severity, "parity", message, first->output, std::string(info.hint), {.sizes = first->sizes}});
    }
  }
}

// The first node whose output shows each silent failure, from one run of the case with every
// intermediate value as an output (on the provider and level that showed it), added to the
// finding's message. A copy that cannot run says so instead: the finding stands either way.
void locate_silent_failures(const std::filesystem::path& model, const Reference& reference,
                            const ParityOptions& options, const std::vector<LocateRequest>& requests,
                            ParityResult& result) {
  constexpr std::size_t k_most_runs = 8;  // one run of the whole graph each: bounded
  for (std::size_t i = 0; i < requests.size(); ++i) {
    const auto& request = requests[i];
    Finding& finding = result.findings[request.finding];
    if (i >= k_most_runs) {
      finding.message += "; first node not located (more than 8 silent failures)";
      continue;
    }
    const ReferenceCase* c = find_case(reference, request.row->data_set);
    if (!c) continue;
    const auto located = find_first_node_showing(model, *c,
                                                 SessionOptions{.provider = request.row->provider,
                                                                .optimization = request.row->optimization,
                                                                .intra_op_threads = options.intra_op_threads},
                                                 request.sign, request.row->output);
    if (!located) {
      finding.message += "; the first node could not be located: " + located.error().describe();
    } else if (*located) {
      const FirstNode& node = **located;
      finding.message +=
          fmt::format("; first node whose output is {}: '{}' ({}), value '{}' ({})", silent_sign_name(request.sign),
                      node.node, node.op_type, node.value, request.row->data_set);
    } else {
      finding.message += fmt::format("; no intermediate value is {} by itself in {}", silent_sign_name(request.sign),
                                     request.row->data_set);
    }
  }
}

}  // namespace onnxproof::parity_analyzers
