#include "onnxproof/core/run_folder.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "onnxproof/core/atomic_file.h"
#include "onnxproof/core/numbered_name.h"
#include "onnxproof/core/run_layout.h"
#include "onnxproof/core/source_framework.h"

namespace onnxproof {
namespace fs = std::filesystem;

namespace {

// The front end's scratch folders, there only while it runs (or after it was killed): PyTorch's
// compile caches and exporter artifacts, TensorFlow's KERAS_HOME (python/onnxproof/tensorflow/export.py).
constexpr std::array<std::string_view, 5> k_scratch = {"torch-cache", "dynamo", "exporter-artifacts", "refused-export",
                                                       "keras-home"};

bool one_of(std::string_view name, const auto& names) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

// A sub-run folder of --exporter both: one per exporter compared, of any source framework.
bool is_sub_run(std::string_view name) {
  const auto frameworks = source_frameworks();
  return std::any_of(frameworks.begin(), frameworks.end(),
                     [&](const SourceFramework& framework) { return one_of(name, framework.compared); });
}

// After a known name, what a temporary of it ends with: ".tmp.XXXXXX" (an atomic write),
// ".tmp-PID" (the front end, a staging folder), ".tmp-PID.onnx" (a TensorFlow exporter, which
// wants the suffix), ".old-PID" (a publish stepping aside), ".partial" and ".old" (the front end's
// reference swap).
bool is_temporary_tail(std::string_view tail) {
  const std::string_view unsuffixed = tail.ends_with(".onnx") ? tail.substr(0, tail.size() - 5) : tail;
  return tail.starts_with(".tmp.") || tail == ".partial" || tail == ".old" || number_after(unsuffixed, ".tmp-") ||
         number_after(tail, ".old-");
}

// A temporary a killed run may leave beside one of its entries.
bool is_left_by_a_killed_run(std::string_view name) {
  if (name == ".refused-export") return true;
  const std::string_view rest = name.starts_with('.') ? name.substr(1) : name;
  const auto leaves = [&](std::string_view base) {
    return rest.starts_with(base) && is_temporary_tail(rest.substr(base.size()));
  };
  const auto frameworks = source_frameworks();
  const auto layout = run_layout();
  return std::any_of(layout.begin(), layout.end(), [&](const RunEntry& entry) { return leaves(entry.name); }) ||
         std::any_of(k_scratch.begin(), k_scratch.end(), leaves) ||
         std::any_of(frameworks.begin(), frameworks.end(), [&](const SourceFramework& framework) {
           return std::any_of(framework.compared.begin(), framework.compared.end(), leaves);
         });
}

Error refuse(const fs::path& out, const std::string& why, std::string_view remedy) {
  return Error(ErrorCode::usage, "refusing to replace " + out.string() + ": it is not an onnxproof run folder (" + why +
                                     "); " + std::string(remedy));
}

// The marker says the folder is a run's: a regular file holding onnxproof.run/1.
Expected<bool> has_run_marker(const fs::path& out) {
  std::error_code ec;
  const fs::path marker = out / k_run_marker;
  if (!fs::exists(fs::symlink_status(marker, ec))) return false;
  auto text = read_file(marker, uint64_t{1} << 20);
  try {
    if (text && nlohmann::json::parse(*text).value("schema", "") == k_run_schema) return true;
  } catch (const nlohmann::json::exception&) {
  }
  return std::unexpected(
      refuse(out, "its " + std::string(k_run_marker) + " is not an " + std::string(k_run_schema) + " marker",
             "give --out a new or empty folder"));
}

// What a repair writes in RUN/repair/ (repair/repair.cpp, repair/outputs.cpp): repair.json,
// repair.md, each candidate's run in NN-NAME/ (with its scratch .NN-NAME/ while it runs) and the
// copy of the export candidates adopt, .export/.
bool is_candidate_folder(std::string_view name) {
  const std::string_view rest = name.starts_with('.') ? name.substr(1) : name;
  return rest.size() > 3 && std::isdigit(static_cast<unsigned char>(rest[0])) &&
         std::isdigit(static_cast<unsigned char>(rest[1])) && rest[2] == '-';
}

bool is_repair_entry(std::string_view name, bool is_folder) {
  if (is_folder) return name == ".export" || is_candidate_folder(name);
  const auto leaves = [&](std::string_view base) {
    return name == base || (name.starts_with(base) && is_temporary_tail(name.substr(base.size()))) ||
           (name.starts_with('.') && name.substr(1).starts_with(base) &&
            is_temporary_tail(name.substr(1 + base.size())));
  };
  return leaves("repair.json") || leaves("repair.md");
}

// A candidate's run folder: a run's entries and the session options a candidate names.
bool is_candidate_entry(std::string_view name, bool is_folder) {
  return is_run_folder_entry(name, is_folder) || (!is_folder && name == "session-options.md");
}

// The first entry of RUN/repair/ (and of the folders in it) no repair writes, as "repair/...".
std::optional<std::string> foreign_in_repair(const fs::path& repair) {
  std::error_code ec;
  if (!fs::is_directory(fs::symlink_status(repair, ec))) return std::nullopt;
  if (auto foreign = first_foreign_entry(repair, is_repair_entry)) return "repair/" + *foreign;
  for (const auto& entry : fs::directory_iterator(repair, ec)) {
    const std::string name = entry.path().filename().string();
    if (auto foreign = first_foreign_entry(entry.path(), is_candidate_entry)) return "repair/" + name + "/" + *foreign;
  }
  return std::nullopt;
}

bool is_regular(const fs::path& path) {
  std::error_code ec;
  return fs::is_regular_file(fs::symlink_status(path, ec));
}

}  // namespace

Expected<void> write_run_marker(const fs::path& folder, std::string_view command, std::string_view model) {
  const nlohmann::json marker = {{"schema", k_run_schema}, {"command", command}, {"model", model}};
  return write_file_atomically(folder / k_run_marker,
                               marker.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n");
}

bool is_run_folder_entry(std::string_view name, bool is_folder) {
  if (is_left_by_a_killed_run(name)) return true;
  return find_run_entry(name, is_folder).has_value() || (is_folder && is_sub_run(name));
}

std::optional<std::string> first_foreign_entry(const fs::path& folder, bool (*known)(std::string_view, bool)) {
  std::vector<std::pair<std::string, fs::file_type>> entries;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(folder, ec))
    entries.emplace_back(entry.path().filename().string(), entry.symlink_status(ec).type());
  std::sort(entries.begin(), entries.end());
  for (const auto& [name, type] : entries) {
    const bool is_folder = type == fs::file_type::directory;
    // A link is never ours: onnxproof writes none, and replacing must not reach through one.
    if (type == fs::file_type::symlink || (!is_folder && type != fs::file_type::regular) || !known(name, is_folder))
      return name;
  }
  return std::nullopt;
}

Expected<void> require_replaceable_run_folder(const fs::path& out, std::string_view remedy) {
  std::error_code ec;
  const auto status = fs::symlink_status(out, ec);
  if (!fs::exists(status)) return {};
  if (!fs::is_directory(status))
    return fail(ErrorCode::usage, "--out " + out.string() + " is not a folder; onnxproof writes a run folder there");
  if (fs::is_empty(out, ec)) return {};
  if (auto foreign = first_foreign_entry(out, is_run_folder_entry))
    return std::unexpected(refuse(out, "it holds '" + *foreign + "', which no onnxproof run writes", remedy));
  for (const auto& framework : source_frameworks()) {
    for (const std::string_view sub_run : framework.compared) {  // --exporter both
      if (!fs::is_directory(fs::symlink_status(out / sub_run, ec))) continue;
      if (auto foreign = first_foreign_entry(out / sub_run, is_run_folder_entry))
        return std::unexpected(refuse(
            out, "it holds '" + std::string(sub_run) + "/" + *foreign + "', which no onnxproof run writes", remedy));
    }
  }
  // repair/ is replaced with the run: a file of the user's in it is refused as one beside it is.
  if (auto foreign = foreign_in_repair(out / "repair"))
    return std::unexpected(refuse(out, "it holds '" + *foreign + "', which no onnxproof run writes", remedy));
  ONNXPROOF_TRY_ASSIGN(const bool marked, has_run_marker(out));
  if (marked) return {};
  // Run folders written before the marker, and a folder seeded with a golden set to verify against.
  // export.log alone: a run whose export stopped before it wrote export.json.
  if (is_regular(out / "report.json") || is_regular(out / "export.json") || is_regular(out / "export.log") ||
      is_regular(out / "golden" / "manifest.json"))
    return {};
  return std::unexpected(refuse(out,
                                "no " + std::string(k_run_marker) +
                                    ", report.json, export.json, export.log or "
                                    "golden/manifest.json",
                                remedy));
}

}  // namespace onnxproof
