#pragma once
// The run folder's layout: every entry a run writes at the top of its folder, by who writes it.
// One declared list that the run-folder rules (run_folder.h: what a run may replace) and repair
// (what a candidate copies of a run's export) read; a proof registered from elsewhere adds its
// own entries (pipeline/proof.h).

#include <optional>
#include <span>
#include <string_view>
#include <vector>

namespace onnxproof {

/// Who writes an entry, and so what it is to the commands that read a run.
enum class RunEntryRole {
  run,     // the run's marker
  exp,     // the export: the models, export.json, reference/ (what a repair candidate copies)
  proof,   // a step's proof: a simplified or converted model, golden/, runtimes/, ...
  report,  // the report writers: report.json/md/html and its pictures, command.json
};

struct RunEntry {
  std::string_view name;
  bool folder = false;
  RunEntryRole role = RunEntryRole::proof;
};

/// Every entry of the layout: the built-in ones, then those registered.
std::vector<RunEntry> run_layout();

/// The entry named `name` (a folder or a file as `folder` says); nullopt when the layout has none.
std::optional<RunEntry> find_run_entry(std::string_view name, bool folder);

/// Adds `entries` to the layout (a registered proof's); removes them again.
void add_run_entries(std::span<const RunEntry> entries);
void remove_run_entries(std::span<const RunEntry> entries);

}  // namespace onnxproof
