#pragma once
// Operator support tables: what a target runtime supports, as data (data/op-support/*.csv, one
// file per target, all in one format; adding a runtime is adding a file).

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "onnxproof/core/error.h"

namespace onnxproof {

enum class SupportStatus { supported, restricted, unsupported };

/// "supported", "restricted", "unsupported": the tables' status column.
std::string_view support_status_name(SupportStatus status);
std::optional<SupportStatus> parse_support_status(std::string_view name);

struct SupportEntry {
  std::string domain;  // "ai.onnx" for the default domain
  std::string op_type;
  int since_version = 0;  // 0: any version
  int until_version = 0;  // 0: open-ended
  SupportStatus status = SupportStatus::supported;
  std::string restrictions;
};

struct SupportTable {
  std::string target;   // "tensorrt"
  std::string runtime;  // "TensorRT 10.15 ONNX parser"
  std::string source;
  int min_opset = 0;  // the default-domain opsets the table covers; 0: any
  int max_opset = 0;
  std::vector<SupportEntry> entries;
};

/// Parses one table (RFC 4180 CSV after '# key: value' header lines). Fails on a missing file,
/// a wrong header or a malformed row (with its line number).
Expected<SupportTable> load_support_table(const std::filesystem::path& path);

/// The folder holding the tables: $ONNXPROOF_DATA/op-support, else the source tree's data/op-support.
std::filesystem::path support_table_dir();

/// Loads the table of a target ("ort-cpu", "ort-cuda", "tensorrt", "openvino"). An unknown
/// target is a usage error listing the known ones.
Expected<SupportTable> load_target_table(const std::string& target);

/// The tables of several targets, in the order given.
Expected<std::vector<SupportTable>> load_target_tables(const std::vector<std::string>& targets);

/// Targets that have a table.
std::vector<std::string> known_targets();

}  // namespace onnxproof
