#include "onnxproof/export/export_step.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <set>

#include <nlohmann/json.hpp>

#include "onnxproof/core/atomic_file.h"
#include "onnxproof/core/installation.h"
#include "onnxproof/core/json_file.h"
#include "onnxproof/core/sha256.h"
#include "onnxproof/core/staging.h"
#include "onnxproof/parity/parity.h"
#include "onnxproof/tensor/dtype.h"
#include "onnxproof/tensor/tensor.h"

extern char** environ;

namespace onnxproof {
namespace fs = std::filesystem;

namespace {

constexpr std::string_view k_error_prefix = "onnxproof: error: ";
constexpr std::string_view k_progress_prefix = "onnxproof export: ";

std::optional<int64_t> parse_int(std::string_view text) {
  int64_t value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return value;
}

std::vector<std::string> split(std::string_view text, char separator) {
  std::vector<std::string> parts;
  std::size_t start = 0;
  while (true) {
    const auto at = text.find(separator, start);
    parts.emplace_back(text.substr(start, at == std::string_view::npos ? std::string_view::npos : at - start));
    if (at == std::string_view::npos) return parts;
    start = at + 1;
  }
}

// Ends a child that overran its time: SIGTERM, then SIGKILL after five seconds.
void end_child(pid_t pid) {
  ::kill(pid, SIGTERM);
  for (int waited = 0; waited < 50; ++waited) {
    if (::waitpid(pid, nullptr, WNOHANG) == pid) return;
    ::usleep(100000);
  }
  ::kill(pid, SIGKILL);
  while (::waitpid(pid, nullptr, 0) < 0 && errno == EINTR) {
  }
}

// Our environment, with the front end first on PYTHONPATH and ONNX Runtime's telemetry off (should
// the exporter load it).
std::vector<std::string> front_end_environment() {
  std::vector<std::string> environment;
  for (char** entry = environ; *entry; ++entry) {
    const std::string_view text(*entry);
    if (!text.starts_with("PYTHONPATH=") && !text.starts_with("ORT_DISABLE_TELEMETRY=")) environment.emplace_back(text);
  }
  std::string path_entry = installation().python_dir.string();
  if (const char* existing = std::getenv("PYTHONPATH"); existing && *existing)
    path_entry += std::string(":") + existing;
  environment.push_back("PYTHONPATH=" + path_entry);
  environment.push_back("ORT_DISABLE_TELEMETRY=1");
  return environment;
}

constexpr int k_both_streams = -1;

// Starts `python ARGS...` with the front end on PYTHONPATH, stdin from /dev/null and
// `captured_fd` going into a pipe; returns the child's pid and the pipe's read end.
Expected<std::pair<pid_t, int>> spawn_front_end(const std::string& python, std::vector<std::string> args,
                                                int captured_fd) {
  args.insert(args.begin(), python);
  std::vector<char*> argv;
  for (auto& arg : args) argv.push_back(arg.data());
  argv.push_back(nullptr);

  std::vector<std::string> environment = front_end_environment();
  std::vector<char*> envp;
  for (auto& entry : environment) envp.push_back(entry.data());
  envp.push_back(nullptr);

  int pipe_fds[2];
  if (::pipe2(pipe_fds, O_CLOEXEC) != 0)
    return fail(ErrorCode::io, "cannot create a pipe: " + std::string(std::strerror(errno)));
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  // k_both_streams: the child's stdout and stderr share the pipe, so nothing it prints reaches ours.
  for (const int fd :
       captured_fd == k_both_streams ? std::vector{STDOUT_FILENO, STDERR_FILENO} : std::vector{captured_fd})
    posix_spawn_file_actions_adddup2(&actions, pipe_fds[1], fd);
  posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  pid_t pid = 0;
  const int spawned = ::posix_spawnp(&pid, python.c_str(), &actions, nullptr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  ::close(pipe_fds[1]);
  if (spawned != 0) {
    ::close(pipe_fds[0]);
    return fail(ErrorCode::not_found,
                "cannot run the Python interpreter '" + python + "': " + std::strerror(spawned) +
                    " (set --python or ONNXPROOF_PYTHON; scripts/setup.sh makes the default .venv)");
  }

  return std::pair{pid, pipe_fds[0]};
}

// Runs `python ARGS...` with the front end on PYTHONPATH and stdin from /dev/null; every line the
// child writes to `captured_fd` (its stdout, its stderr, or k_both_streams) goes to `on_line`. Returns the exit code
// (128 + signal when it was killed); ErrorCode::limit_exceeded when it runs past
// `timeout_seconds` (0: no limit), after ending it.
Expected<int> run_front_end(const std::string& python, std::vector<std::string> args, int captured_fd,
                            const std::function<void(const std::string&)>& on_line, double timeout_seconds) {
  ONNXPROOF_TRY_ASSIGN(const auto spawned, spawn_front_end(python, std::move(args), captured_fd));
  const auto [pid, read_fd] = spawned;
  // SIGINT or SIGTERM to onnxproof ends the child too (and removes live staging folders),
  // instead of leaving it running on its own.
  set_interrupt_child(pid);
  struct sigaction old_int {
  }, old_term{};
  ::sigaction(SIGINT, nullptr, &old_int);
  ::sigaction(SIGTERM, nullptr, &old_term);
  install_interrupt_cleanup();
  const auto restore = [&] {
    ::sigaction(SIGINT, &old_int, nullptr);
    ::sigaction(SIGTERM, &old_term, nullptr);
    set_interrupt_child(0);
  };

  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_seconds);
  std::string pending;
  char buffer[4096];
  while (true) {
    if (timeout_seconds > 0) {
      const auto left =
          std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
      pollfd readable{read_fd, POLLIN, 0};
      const int ready =
          left.count() > 0 ? ::poll(&readable, 1, static_cast<int>(std::min<int64_t>(left.count(), 60000))) : 0;
      if (ready < 0 && errno == EINTR) continue;
      if (ready == 0) {
        if (std::chrono::steady_clock::now() < deadline) continue;
        end_child(pid);
        ::close(read_fd);
        restore();
        return fail(ErrorCode::limit_exceeded, "the export front end ran past its time limit of " +
                                                   std::to_string(static_cast<int64_t>(timeout_seconds)) +
                                                   " s and was stopped (--export-timeout raises it)");
      }
    }
    const ssize_t n = ::read(read_fd, buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    pending.append(buffer, static_cast<std::size_t>(n));
    for (auto newline = pending.find('\n'); newline != std::string::npos; newline = pending.find('\n')) {
      on_line(pending.substr(0, newline));
      pending.erase(0, newline + 1);
    }
  }
  if (!pending.empty()) on_line(pending);
  ::close(read_fd);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  restore();
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

nlohmann::json config_json(const ExportOptions& options) {
  nlohmann::json inputs = nlohmann::json::array();
  for (const auto& input : options.inputs) {
    nlohmann::json spec = {{"name", input.name}, {"dims", input.dims}, {"dtype", input.dtype}};
    if (input.range) spec["range"] = {input.range->first, input.range->second};
    inputs.push_back(spec);
  }
  nlohmann::json dynamic = nlohmann::json::array();
  for (const auto& axis : options.dynamic) {
    nlohmann::json entry = {{"input", axis.input}, {"axis", axis.axis}, {"label", axis.label}};
    if (axis.range) {
      entry["min"] = axis.range->first;
      entry["max"] = axis.range->second;
    }
    dynamic.push_back(entry);
  }
  nlohmann::json config = {{"contract", k_config_contract},
                           {"model", options.model},
                           {"inputs", inputs},
                           {"dynamic", dynamic},
                           {"opset", options.opset},
                           {"exporter", options.exporter},
                           {"sweep", options.sweep},
                           {"samples", options.samples},
                           {"seed", options.seed},
                           {"out", options.out.string()}};
  if (options.opset_ceiling > 0) {
    config["opset_ceiling"] = options.opset_ceiling;
    config["opset_ceiling_reason"] = options.opset_ceiling_reason;
  }
  if (!options.opset_op_limits.empty()) config["opset_op_limits"] = options.opset_op_limits;
  if (!options.data.empty()) config["data"] = options.data;
  if (!options.data_dir.empty()) config["data_dir"] = options.data_dir.string();
  return config;
}

// export.json (schema onnxproof.export/1), checked field by field: a front end from another
// onnxproof version, or a broken one, is an error naming the field, never empty options.
// The declared axes (options.dynamic) with their sizes in the traced example (inputs[].dims) and
// the output axes that follow them (outputs[].dynamic_axes).
Expected<FrozenShapeOptions> frozen_shape_options_from(const nlohmann::json& manifest, const fs::path& path) {
  const auto bad = [&](const std::string& field, const std::string& what) {
    return std::unexpected(field_error(path, ErrorCode::internal, field, what));
  };
  FrozenShapeOptions frozen;
  const auto options = manifest.value("options", nlohmann::json::object());
  const auto inputs = manifest.value("inputs", nlohmann::json::array());
  const auto dynamic = options.is_object() ? options.value("dynamic", nlohmann::json::array()) : nlohmann::json();
  if (!dynamic.is_array() || !inputs.is_array()) return bad("options.dynamic / inputs", "lists");
  for (std::size_t i = 0; i < dynamic.size(); ++i) {
    const auto& axis = dynamic[i];
    if (!axis.is_object() || !axis.value("input", nlohmann::json()).is_string() ||
        !axis.value("axis", nlohmann::json()).is_number_integer() || !axis.value("label", nlohmann::json()).is_string())
      return bad("options.dynamic[" + std::to_string(i) + "]", "{input, axis, label}");
    DeclaredAxis declared{axis["input"], axis["axis"], axis["label"], 0};
    for (const auto& input : inputs) {
      const auto dims = input.is_object() ? input.value("dims", nlohmann::json::array()) : nlohmann::json::array();
      if (input.value("name", "") == declared.input && declared.axis < static_cast<int64_t>(dims.size()) &&
          dims[static_cast<std::size_t>(declared.axis)].is_number_integer())
        declared.example_size = dims[static_cast<std::size_t>(declared.axis)].get<int64_t>();
    }
    frozen.dynamic.push_back(std::move(declared));
  }
  const auto outputs = manifest.value("outputs", nlohmann::json::array());
  for (const auto& output : outputs) {
    if (!output.is_object() || !output.value("name", nlohmann::json()).is_string())
      return bad("outputs[]", "{name, dynamic_axes}");
    const auto axes = output.value("dynamic_axes", nlohmann::json::object());
    for (const auto& [axis, label] : axes.items()) {
      const auto index = parse_int(axis);
      if (!index || !label.is_string()) return bad("outputs[].dynamic_axes", "an object of axis -> label");
      frozen.output_axes[output["name"].get<std::string>()][*index] = label.get<std::string>();
    }
  }
  return frozen;
}

Expected<ExportResult> export_manifest_fields(const nlohmann::json& manifest, const fs::path& out,
                                              const fs::path& path) {
  const auto bad = [&](const std::string& field, const std::string& what) {
    return std::unexpected(field_error(path, ErrorCode::internal, field, what));
  };
  if (manifest.value("schema", "") != k_export_schema) return bad("schema", std::string(k_export_schema));
  ExportResult result;
  if (!manifest.contains("exporter") || !manifest["exporter"].is_string()) return bad("exporter", "a string");
  result.exporter = manifest["exporter"].get<std::string>();
  if (manifest.contains("model") && !manifest["model"].is_string()) return bad("model", "a string");
  result.spec = manifest.value("model", "");
  const auto versions = manifest.value("versions", nlohmann::json::object());
  if (!versions.is_object()) return bad("versions", "an object of tool -> version");
  for (const auto& [tool, version] : versions.items()) {
    if (!version.is_string()) return bad("versions." + tool, "a string");
    result.versions.emplace_back(tool, version.get<std::string>());
  }
  const auto findings = manifest.value("findings", nlohmann::json());
  if (!findings.is_array()) return bad("findings", "a list");
  for (std::size_t i = 0; i < findings.size(); ++i) {
    ONNXPROOF_TRY_ASSIGN(Finding finding,
                         finding_from_json(findings[i], "export.json: findings[" + std::to_string(i) + "]"));
    result.findings.push_back(std::move(finding));
  }
  const auto model = manifest.value("onnx_model", nlohmann::json());
  if (model.is_object()) {
    if (!model.contains("path") || !model["path"].is_string()) return bad("onnx_model.path", "a string");
    if (!model.contains("sha256") || !model["sha256"].is_string()) return bad("onnx_model.sha256", "a string");
    result.model = out / model["path"].get<std::string>();
    result.sha256 = model["sha256"].get<std::string>();
  } else if (!model.is_null()) {
    return bad("onnx_model", "an object or null");
  }
  ONNXPROOF_TRY_ASSIGN(result.frozen, frozen_shape_options_from(manifest, path));
  if (const fs::path cases = out / "reference" / "cases.json"; fs::exists(cases)) {
    ONNXPROOF_TRY_ASSIGN(const CasesManifest read, read_cases_manifest(cases));
    result.reference_sets = static_cast<int>(read.cases.size());
  }
  return result;
}

}  // namespace

Expected<ExportResult> read_export_manifest(const fs::path& out) {
  const fs::path path = out / "export.json";
  ONNXPROOF_TRY_ASSIGN(const nlohmann::json manifest, read_json_object(path, ErrorCode::internal));
  try {
    return export_manifest_fields(manifest, out, path);
  } catch (const nlohmann::json::exception& error) {  // a field of a type no check above expected
    return fail(ErrorCode::internal, path.string() + " is malformed: " + error.what());
  }
}

Expected<void> require_replaceable_run_folder(const fs::path& out) {
  std::error_code ec;
  const auto status = fs::symlink_status(out, ec);
  if (!fs::exists(status)) return {};
  if (!fs::is_directory(status))
    return fail(ErrorCode::usage, "--out " + out.string() + " is not a folder; onnxproof writes a run folder there");
  const bool empty = fs::is_empty(out, ec);
  // An earlier run, or a folder seeded with a golden set to verify against.
  // export.log: a run whose export stopped before it wrote export.json.
  if (empty || fs::exists(out / "report.json") || fs::exists(out / "export.json") || fs::exists(out / "export.log") ||
      fs::exists(out / "golden" / "manifest.json"))
    return {};
  return fail(ErrorCode::usage, "refusing to replace " + out.string() +
                                    ": it is not an onnxproof run folder (no report.json, export.json, export.log "
                                    "or golden/manifest.json); give an empty or new folder with --out");
}

Expected<FrozenShapeOptions> frozen_shape_options_beside(const fs::path& folder) {
  std::error_code ec;
  if (!fs::exists(folder / "export.json", ec)) return FrozenShapeOptions{};
  const auto manifest = read_json_object(folder / "export.json", ErrorCode::invalid_input);
  const auto schema = manifest ? manifest->find("schema") : nlohmann::json::const_iterator();
  if (!manifest || schema == manifest->end() || !schema->is_string() || schema->get<std::string>() != k_export_schema)
    return FrozenShapeOptions{};
  ONNXPROOF_TRY_ASSIGN(const ExportResult exported, read_export_manifest(folder));
  return exported.frozen;
}

Expected<InputSpec> parse_input_spec(const std::string& text) {
  const auto bad = [&](const std::string& why) {
    return fail(ErrorCode::usage,
                "--input '" + text + "': " + why + " (expected NAME=DIMS:DTYPE[:LO..HI], e.g. x=1x3x224x224:float32)");
  };
  const auto eq = text.find('=');
  if (eq == std::string::npos || eq == 0) return bad("no NAME=");
  InputSpec spec;
  spec.name = text.substr(0, eq);
  const auto fields = split(std::string_view(text).substr(eq + 1), ':');
  if (fields.size() < 2 || fields.size() > 3) return bad("DIMS and DTYPE are required");
  if (fields[0] != "scalar") {
    for (const auto& dim : split(fields[0], 'x')) {
      const auto value = parse_int(dim);
      if (!value || *value < 0) return bad("dimension '" + dim + "' is not a non-negative integer");
      spec.dims.push_back(*value);
    }
  }
  if (!dtype_from_name(fields[1])) return bad("unknown dtype '" + fields[1] + "'");
  spec.dtype = dtype_name(*dtype_from_name(fields[1]));
  if (fields.size() == 3) {
    const auto dots = fields[2].find("..");
    const auto low = dots == std::string::npos ? std::nullopt : parse_int(fields[2].substr(0, dots));
    const auto high = dots == std::string::npos ? std::nullopt : parse_int(fields[2].substr(dots + 2));
    if (!low || !high || *low >= *high) return bad("range '" + fields[2] + "' must be LO..HI with LO < HI");
    spec.range = {{*low, *high}};
  }
  return spec;
}

bool is_model_family(std::string_view spec) {
  return spec.starts_with("torchvision:") || spec.starts_with("timm:") || spec.starts_with("hf:");
}

Expected<DynamicAxis> parse_dynamic_axis(const std::string& text) {
  const auto bad = [&](const std::string& why) { return fail(ErrorCode::usage, "--dynamic '" + text + "': " + why); };
  const auto eq = text.rfind('=');
  const auto colon = eq == std::string::npos ? std::string::npos : text.rfind(':', eq);
  if (colon == std::string::npos || colon == 0 || eq + 1 == text.size())
    return bad("expected NAME:AXIS=LABEL[:MIN..MAX], e.g. x:0=batch or x:0=batch:1..64");
  const auto axis = parse_int(std::string_view(text).substr(colon + 1, eq - colon - 1));
  if (!axis || *axis < 0) return bad("AXIS must be a non-negative integer");
  DynamicAxis result{text.substr(0, colon), *axis, text.substr(eq + 1), std::nullopt};
  if (const auto range_colon = result.label.find(':'); range_colon != std::string::npos) {
    const std::string range = result.label.substr(range_colon + 1);
    result.label.resize(range_colon);
    const auto dots = range.find("..");
    const auto low = dots == std::string::npos ? std::nullopt : parse_int(range.substr(0, dots));
    const auto high = dots == std::string::npos ? std::nullopt : parse_int(range.substr(dots + 2));
    if (!low || !high || *low < 1 || *low > *high)
      return bad("range '" + range + "' must be MIN..MAX with 1 <= MIN <= MAX");
    result.range = {{*low, *high}};
  }
  if (result.label.empty()) return bad("LABEL is empty");
  return result;
}

Expected<std::pair<std::string, std::vector<int64_t>>> parse_sweep(const std::string& text) {
  const auto eq = text.find('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == text.size()) {
    return fail(ErrorCode::usage, "--sweep '" + text + "': expected LABEL=SIZES, e.g. batch=1,3,8");
  }
  std::vector<int64_t> sizes;
  for (const auto& item : split(std::string_view(text).substr(eq + 1), ',')) {
    const auto size = parse_int(item);
    if (!size || *size < 1)
      return fail(ErrorCode::usage, "--sweep '" + text + "': '" + item + "' is not a positive size");
    sizes.push_back(*size);
  }
  return std::pair{text.substr(0, eq), sizes};
}

namespace {

// --dynamic ranges: one per label, holding the example's size and every --sweep size.
Expected<void> validate_dynamic_ranges(const ExportOptions& options) {
  std::map<std::string, std::pair<int64_t, int64_t>> ranges;
  for (const auto& axis : options.dynamic) {
    if (!axis.range) continue;
    const auto [known, inserted] = ranges.emplace(axis.label, *axis.range);
    if (!inserted && known->second != *axis.range)
      return fail(ErrorCode::usage, "--dynamic gives '" + axis.label + "' two ranges; give it one");
  }
  const auto outside = [&](const std::string& label, int64_t size) {
    const auto range = ranges.find(label);
    return range != ranges.end() && (size < range->second.first || size > range->second.second);
  };
  const auto range_text = [&](const std::string& label) {
    return std::to_string(ranges[label].first) + ".." + std::to_string(ranges[label].second);
  };
  for (const auto& axis : options.dynamic) {
    for (const auto& input : options.inputs) {
      if (input.name != axis.input || axis.axis >= static_cast<int64_t>(input.dims.size())) continue;
      const int64_t size = input.dims[static_cast<std::size_t>(axis.axis)];
      if (outside(axis.label, size))
        return fail(ErrorCode::usage, "--input " + input.name + ": axis " + std::to_string(axis.axis) + " is " +
                                          std::to_string(size) + ", outside the range " + range_text(axis.label) +
                                          " given for '" + axis.label + "'");
    }
  }
  for (const auto& [label, sizes] : options.sweep) {
    for (const int64_t size : sizes) {
      if (outside(label, size))
        return fail(ErrorCode::usage, "--sweep " + label + ": " + std::to_string(size) + " is outside the range " +
                                          range_text(label) + " given with --dynamic");
    }
  }
  return {};
}

// Generated inputs are held in memory several times over: refuse sizes no machine can hold, and
// types numpy cannot generate.
Expected<void> validate_generated_inputs(const ExportOptions& options) {
  constexpr uint64_t k_max_input_bytes = uint64_t{4} << 30;
  for (const auto& input : options.inputs) {
    const auto dtype = dtype_from_name(input.dtype);
    const bool generated = options.data.empty() && options.data_dir.empty();
    // Generated inputs are numpy arrays: no strings, and none of the narrow types (float8, int4, ...).
    const bool numpy_type =
        dtype && *dtype != DType::string && static_cast<int>(*dtype) <= static_cast<int>(DType::bfloat16);
    if (!dtype || (generated && !numpy_type))
      return fail(ErrorCode::usage, "--input " + input.name + ": onnxproof cannot generate " + input.dtype +
                                        " inputs; give real samples with --data or --data-dir");
    if (dtype_storage_bytes(*dtype, 1) == 0) continue;  // strings: their size is the data's
    uint64_t count = 1;
    for (const int64_t dim : input.dims) {
      if (dim > 0 && count > k_max_input_bytes / static_cast<uint64_t>(dim))
        count = k_max_input_bytes + 1;
      else
        count *= static_cast<uint64_t>(std::max<int64_t>(dim, 0));
    }
    if (count > k_max_input_bytes || dtype_storage_bytes(*dtype, count) > k_max_input_bytes) {
      return fail(ErrorCode::usage, "--input " + input.name + ": " + format_shape(input.dims) + " of " + input.dtype +
                                        " is over 4 GiB; declare the size one sample has");
    }
  }
  return {};
}

}  // namespace

Expected<void> validate_export_options(const ExportOptions& options) {
  if (!options.from_export.empty()) {
    if (options.out.empty()) return fail(ErrorCode::usage, "--out is required");
    std::error_code ec;
    if (!fs::is_regular_file(options.from_export / "export.json", ec))
      return fail(ErrorCode::usage, "--from-export " + options.from_export.string() +
                                        " holds no export.json: give a folder written by onnxproof export or prove()");
    return {};
  }
  if (options.model.empty()) return fail(ErrorCode::usage, "--model is required");
  if (options.out.empty()) return fail(ErrorCode::usage, "--out is required");
  if (options.exporter != "auto" && options.exporter != "torchscript" && options.exporter != "dynamo" &&
      options.exporter != "both")
    return fail(ErrorCode::usage,
                "--exporter must be auto, torchscript, dynamo or both, not '" + options.exporter + "'");
  if (options.inputs.empty() && !is_model_family(options.model))
    return fail(ErrorCode::usage, "--input is required for " + options.model +
                                      " (torchvision:, timm: and hf: models bring their own inputs)");
  // The configuration reaches Python as JSON, which holds UTF-8 text only.
  for (const auto& [option, text] : {std::pair<const char*, std::string>{"--model", options.model},
                                     {"--out", options.out.string()},
                                     {"--data", options.data},
                                     {"--data-dir", options.data_dir.string()}}) {
    try {
      (void)nlohmann::json(text).dump();
    } catch (const nlohmann::json::exception&) {
      return fail(ErrorCode::usage, std::string(option) + " is not valid UTF-8 text; rename the path");
    }
  }
  if (options.opset != 0 && options.opset < 7)
    return fail(ErrorCode::usage, "--opset " + std::to_string(options.opset) + ": the oldest opset is 7");
  if (options.opset_ceiling > 0 && options.opset > options.opset_ceiling) {
    return fail(ErrorCode::usage, "--opset " + std::to_string(options.opset) + " is newer than onnxproof can prove (" +
                                      options.opset_ceiling_reason + ")");
  }
  std::set<std::string> labels;
  std::map<std::pair<std::string, int64_t>, std::string> axes;
  for (const auto& axis : options.dynamic) {
    const auto input = std::find_if(options.inputs.begin(), options.inputs.end(),
                                    [&](const InputSpec& spec) { return spec.name == axis.input; });
    if (input == options.inputs.end())
      return fail(ErrorCode::usage, "--dynamic names input '" + axis.input + "', which no --input declares");
    if (axis.axis >= static_cast<int64_t>(input->dims.size())) {
      return fail(ErrorCode::usage, "--dynamic " + axis.input + ":" + std::to_string(axis.axis) + ": '" + axis.input +
                                        "' has " + std::to_string(input->dims.size()) + " dimensions");
    }
    const auto [known, inserted] = axes.emplace(std::pair{axis.input, axis.axis}, axis.label);
    if (!inserted && known->second != axis.label) {
      return fail(ErrorCode::usage, "--dynamic gives " + axis.input + ":" + std::to_string(axis.axis) +
                                        " two labels, '" + known->second + "' and '" + axis.label + "'");
    }
    labels.insert(axis.label);
  }
  for (const auto& [label, sizes] : options.sweep) {
    // A model family's own inputs name their axes in the front end, which checks those labels.
    if (!labels.contains(label) && !options.inputs.empty())
      return fail(ErrorCode::usage, "--sweep " + label + ": no --dynamic axis has that label");
  }
  ONNXPROOF_TRY(validate_dynamic_ranges(options));
  ONNXPROOF_TRY(validate_generated_inputs(options));
  if (!options.data_dir.empty() && !fs::is_directory(options.data_dir))
    return fail(ErrorCode::usage, "--data-dir " + options.data_dir.string() + " is not a folder");
  return {};
}

namespace {

// Copies `from` into `to`: regular files and folders only (a link or device in an export folder
// is refused, not followed).
Expected<void> copy_export_tree(const fs::path& from, const fs::path& to) {
  std::error_code ec;
  fs::create_directories(to, ec);
  if (ec) return fail(ErrorCode::io, "cannot create " + to.string() + ": " + ec.message());
  for (const auto& entry : fs::directory_iterator(from, ec)) {
    const auto status = entry.symlink_status(ec);
    if (fs::is_directory(status)) {
      ONNXPROOF_TRY(copy_export_tree(entry.path(), to / entry.path().filename()));
    } else if (fs::is_regular_file(status)) {
      fs::copy_file(entry.path(), to / entry.path().filename(), fs::copy_options::overwrite_existing, ec);
    } else {
      return fail(ErrorCode::invalid_input, entry.path().string() +
                                                " is not a regular file; an export folder holds "
                                                "only files and folders");
    }
    if (ec) return fail(ErrorCode::io, "cannot copy " + entry.path().string() + ": " + ec.message());
  }
  if (ec) return fail(ErrorCode::io, "cannot read " + from.string() + ": " + ec.message());
  return {};
}

}  // namespace

Expected<ExportResult> adopt_export(const ExportOptions& options) {
  ONNXPROOF_TRY(validate_export_options(options));
  const fs::path& from = options.from_export;
  std::error_code ec;
  if (fs::exists(options.out, ec) && fs::equivalent(from, options.out, ec))
    return fail(ErrorCode::usage, "--from-export and --out are the same folder; the export is copied, never changed");
  ONNXPROOF_TRY_ASSIGN(const ExportResult found, read_export_manifest(from));
  fs::create_directories(options.out, ec);
  if (ec) return fail(ErrorCode::io, "cannot create " + options.out.string() + ": " + ec.message());
  std::vector<fs::path> files = {"export.json", "export.log", "exporter_report.md"};
  if (!found.model.empty()) {
    const fs::path model = found.model.lexically_relative(from);
    if (model.empty() || model.has_parent_path())
      return fail(ErrorCode::invalid_input, (from / "export.json").string() +
                                                ": onnx_model.path must name a file "
                                                "in the export folder");
    ONNXPROOF_TRY_ASSIGN(const std::string sha256, sha256_file(found.model));
    if (sha256 != found.sha256)
      return fail(ErrorCode::invalid_input, found.model.string() + " changed since it was exported (sha256 " + sha256 +
                                                ", export.json says " + found.sha256 +
                                                "): its reference outputs belong to another model");
    files.push_back(model);
    files.push_back(model.string() + ".data");  // the dynamo exporter's external weights
  }
  for (const fs::path& file : files) {
    const auto status = fs::symlink_status(from / file, ec);
    if (!fs::exists(status)) continue;
    if (!fs::is_regular_file(status))
      return fail(ErrorCode::invalid_input, (from / file).string() + " is not a regular file");
    fs::copy_file(from / file, options.out / file, fs::copy_options::overwrite_existing, ec);
    if (ec) return fail(ErrorCode::io, "cannot copy " + (from / file).string() + ": " + ec.message());
  }
  if (fs::is_directory(from / "reference", ec))
    ONNXPROOF_TRY(copy_export_tree(from / "reference", options.out / "reference"));
  return read_export_manifest(options.out);
}

Expected<ExportResult> run_export(const ExportOptions& options, std::ostream& progress) {
  if (!options.from_export.empty()) {
    ONNXPROOF_TRY(require_replaceable_run_folder(options.out));
    return adopt_export(options);
  }
  ONNXPROOF_TRY(validate_export_options(options));
  if (options.exporter == "both")
    return fail(ErrorCode::usage, "--exporter both proves each exporter's model: it is for onnxproof pipeline");
  ONNXPROOF_TRY(require_replaceable_run_folder(options.out));  // never into a project folder
  std::error_code ec;
  fs::create_directories(options.out, ec);
  if (ec) return fail(ErrorCode::io, "cannot create " + options.out.string() + ": " + ec.message());
  // A stale manifest must never pass for this run's result.
  fs::remove(options.out / "export.json", ec);

  const std::string python = front_end_interpreter(options.python);
  // Everything the front end prints (its stdout and stderr: progress, the exporter's and torch's
  // chatter) is kept in OUT/export.log; progress lines are forwarded, and its final
  // "onnxproof: error:" line becomes this function's Error (printed once, by the caller).
  std::string error_line;
  std::string log;
  const auto finished = run_front_end(
      python, {"-m", "onnxproof", "--config-json", config_json(options).dump()}, k_both_streams,
      [&](const std::string& line) {
        log += line + '\n';
        if (line.starts_with(k_error_prefix))
          error_line = line.substr(k_error_prefix.size());
        else if (line.starts_with(k_progress_prefix))
          progress << line << '\n' << std::flush;
      },
      options.timeout_seconds);
  ONNXPROOF_TRY(write_file_atomically(options.out / "export.log", log));
  ONNXPROOF_TRY_ASSIGN(const int code, finished);
  if (code == 0 || code == 1) {
    if (!fs::exists(options.out / "export.json")) {
      return fail(ErrorCode::internal, "the export front end (" + python + ") ended without writing " +
                                           (options.out / "export.json").string());
    }
    return read_export_manifest(options.out);
  }
  if (!error_line.empty()) return fail(code == 2 ? ErrorCode::usage : ErrorCode::invalid_input, error_line);
  return fail(ErrorCode::internal, "the export front end (" + python + " -m onnxproof) failed with exit code " +
                                       std::to_string(code) + "; its output is in " +
                                       (options.out / "export.log").string());
}

Expected<void> capture_module_outputs(const fs::path& run, const std::string& model_file, const std::string& data_set,
                                      const std::string& python, double timeout_seconds) {
  const nlohmann::json request = {{"run", run.string()}, {"model", model_file}, {"case", data_set}};
  std::error_code ec;
  fs::create_directories(run / "localize", ec);
  if (ec) return fail(ErrorCode::io, "cannot create " + (run / "localize").string() + ": " + ec.message());
  std::string error_line;
  std::string log;
  const std::string interpreter = front_end_interpreter(python);
  const auto finished = run_front_end(
      interpreter, {"-m", "onnxproof", "--localize-json", request.dump()}, k_both_streams,
      [&](const std::string& line) {
        log += line + '\n';
        if (line.starts_with(k_error_prefix)) error_line = line.substr(k_error_prefix.size());
      },
      timeout_seconds);
  ONNXPROOF_TRY(write_file_atomically(run / "localize" / "capture.log", log));
  ONNXPROOF_TRY_ASSIGN(const int code, finished);
  if (code == 0) return {};
  return fail(ErrorCode::invalid_input,
              error_line.empty() ? "the front end could not capture the module outputs (exit code " +
                                       std::to_string(code) + "); see " + (run / "localize" / "capture.log").string()
                                 : error_line);
}

std::string front_end_interpreter(const std::string& requested) {
  if (!requested.empty()) return requested;
  return installation().python;
}

Expected<std::vector<std::pair<std::string, std::string>>> front_end_versions(const std::string& requested) {
  const std::string python = front_end_interpreter(requested);
  std::vector<std::pair<std::string, std::string>> versions;
  ONNXPROOF_TRY_ASSIGN(const int code, run_front_end(
                                           python, {"-m", "onnxproof.versions"}, STDOUT_FILENO,
                                           [&](const std::string& line) {
                                             const auto space = line.find(' ');
                                             if (space == std::string::npos) return;
                                             versions.emplace_back(line.substr(0, space), line.substr(space + 1));
                                           },
                                           /*timeout_seconds=*/60));
  if (code != 0 || versions.empty()) {
    return fail(ErrorCode::not_found, "the front end's interpreter " + python +
                                          " cannot report its versions (exit code " + std::to_string(code) + ")");
  }
  return versions;
}

}  // namespace onnxproof
