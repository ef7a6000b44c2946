#pragma once
// Runs the Python front end as a child process: spawned with the front end on PYTHONPATH and stdin
// closed, its output captured line by line, ended when it overruns its time.

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "onnxproof/core/error.h"

namespace onnxproof {

/// The front end's last line when it fails, and the prefix of its progress lines.
inline constexpr std::string_view k_front_end_error_prefix = "onnxproof: error: ";
inline constexpr std::string_view k_front_end_progress_prefix = "onnxproof export: ";

/// run_front_end's `captured_fd` for the child's stdout and stderr together.
inline constexpr int k_both_streams = -1;

/// Runs `python ARGS...` with the front end on PYTHONPATH and stdin from /dev/null; every line the
/// child writes to `captured_fd` (its stdout, its stderr, or k_both_streams) goes to `on_line`.
/// Returns the exit code (128 + signal when it was killed); ErrorCode::not_found when the
/// interpreter cannot start, saying how to give one for `framework`'s models (the source framework
/// `python` was chosen for: core/source_framework.h); ErrorCode::limit_exceeded when it runs past
/// `timeout_seconds` (0: no limit), after ending it. `extra_environment` ("NAME=VALUE") is set
/// in the child's environment over what it inherits.
Expected<int> run_front_end(const std::string& python, std::string_view framework, std::vector<std::string> args,
                            int captured_fd, const std::function<void(const std::string&)>& on_line,
                            double timeout_seconds, const std::vector<std::string>& extra_environment = {});

/// Replaces this process by `python ARGS...` with the environment run_front_end gives its child (the
/// front end first on PYTHONPATH); stdin, stdout, stderr, the process group and signals stay as they
/// are. Returns only when that fails: ErrorCode::not_found naming the interpreter.
Error exec_front_end(const std::string& python, std::vector<std::string> args);

}  // namespace onnxproof
