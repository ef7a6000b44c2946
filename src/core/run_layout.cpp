#include "onnxproof/core/run_layout.h"

#include <algorithm>
#include <array>
#include <mutex>

#include "onnxproof/core/run_folder.h"

namespace onnxproof {

namespace {

using enum RunEntryRole;

// What a run writes at the top of its folder: the front end's export, the pipeline's steps and
// the report writers (a sub-run folder of --exporter both holds the same; run_folder.cpp names those).
constexpr std::array k_layout = {
    RunEntry{k_run_marker, false, run},
    RunEntry{"model.onnx", false, exp},
    RunEntry{"model.onnx.data", false, exp},
    RunEntry{"encoder.onnx", false, exp},
    RunEntry{"encoder.onnx.data", false, exp},
    RunEntry{"decoder_merged.onnx", false, exp},
    RunEntry{"decoder_merged.onnx.data", false, exp},
    RunEntry{"components", true, exp},  // a given generation folder's files beside model.onnx
    RunEntry{"export.json", false, exp},
    RunEntry{"export.log", false, exp},
    RunEntry{"exporter_report.md", false, exp},
    RunEntry{"reference", true, exp},
    RunEntry{"model.sim.onnx", false, proof},  // simplify
    RunEntry{"model.sim.onnx.data", false, proof},
    RunEntry{"model.fp16.onnx", false, proof},  // parity under --precision fp16
    RunEntry{"model.fp16.onnx.data", false, proof},
    RunEntry{"export.fp16.onnx", false, proof},
    RunEntry{"trt-cache", true, proof},
    RunEntry{"model.quant.onnx", false, proof},  // quantize
    RunEntry{"model.quant.onnx.data", false, proof},
    RunEntry{"reference-quant", true, proof},
    RunEntry{"runtimes", true, proof},  // proofs/runtimes
    RunEntry{"golden", true, proof},    // proofs/golden
    RunEntry{"localize", true, proof},  // localization after a parity failure
    RunEntry{"repair", true, proof},    // pipeline --repair, onnxproof repair RUN
    RunEntry{"bisect", true, proof},    // onnxproof bisect-release RUN
    RunEntry{"command.json", false, report},
    RunEntry{"report.json", false, report},
    RunEntry{"report.md", false, report},
    RunEntry{"report.html", false, report},
    RunEntry{"report-parity.svg", false, report},
    RunEntry{"report-localize.svg", false, report},
    RunEntry{"report-generate.svg", false, report},  // proofs/generation
};

std::mutex registered_mutex;
std::vector<RunEntry>& registered() {
  static std::vector<RunEntry> entries;
  return entries;
}

}  // namespace

std::vector<RunEntry> run_layout() {
  std::vector<RunEntry> layout(k_layout.begin(), k_layout.end());
  const std::lock_guard lock(registered_mutex);
  layout.insert(layout.end(), registered().begin(), registered().end());
  return layout;
}

std::optional<RunEntry> find_run_entry(std::string_view name, bool folder) {
  const auto matches = [&](const RunEntry& entry) { return entry.name == name && entry.folder == folder; };
  if (const auto* found = std::find_if(k_layout.begin(), k_layout.end(), matches); found != k_layout.end())
    return *found;
  const std::lock_guard lock(registered_mutex);
  const auto found = std::find_if(registered().begin(), registered().end(), matches);
  if (found == registered().end()) return std::nullopt;
  return *found;
}

void add_run_entries(std::span<const RunEntry> entries) {
  const std::lock_guard lock(registered_mutex);
  registered().insert(registered().end(), entries.begin(), entries.end());
}

void remove_run_entries(std::span<const RunEntry> entries) {
  const std::lock_guard lock(registered_mutex);
  std::erase_if(registered(), [&](const RunEntry& entry) {
    return std::any_of(entries.begin(), entries.end(),
                       [&](const RunEntry& gone) { return gone.name == entry.name && gone.folder == entry.folder; });
  });
}

}  // namespace onnxproof
