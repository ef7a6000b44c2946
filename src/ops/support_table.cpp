#include "onnxproof/ops/support_table.h"

#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <fstream>

#include "onnxproof/core/installation.h"
#include "onnxproof/core/name_table.h"
#include "onnxproof/core/ownership.h"

namespace onnxproof {
namespace fs = std::filesystem;

constexpr NameTable<SupportStatus, 3> k_support_status_names = {
    {SupportStatus::supported, "supported"},
    {SupportStatus::restricted, "restricted"},
    {SupportStatus::unsupported, "unsupported"},
};

std::string_view support_status_name(SupportStatus status) { return name_in(k_support_status_names, status); }

std::optional<SupportStatus> parse_support_status(std::string_view name) {
  return parse_in(k_support_status_names, name);
}

namespace {

constexpr const char* k_header = "domain,op_type,since_version,until_version,status,restrictions";

// One CSV record (RFC 4180: quoted fields may hold commas and doubled quotes).
std::vector<std::string> split_csv(const std::string& line) {
  std::vector<std::string> fields(1);
  bool quoted = false;
  for (std::size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (quoted) {
      if (c == '"' && i + 1 < line.size() && line[i + 1] == '"') {
        fields.back() += '"';
        ++i;
      } else if (c == '"') {
        quoted = false;
      } else {
        fields.back() += c;
      }
    } else if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      fields.emplace_back();
    } else {
      fields.back() += c;
    }
  }
  return fields;
}

bool parse_version(const std::string& text, int& out) {
  if (text.empty()) {
    out = 0;
    return true;
  }
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
  return ec == std::errc() && end == text.data() + text.size() && out > 0;
}

}  // namespace

Expected<SupportTable> load_support_table(const fs::path& path) {
  if (auto regular = require_regular_file(path); !regular && regular.error().code() != ErrorCode::not_found)
    return std::unexpected(std::move(regular.error()));
  std::ifstream in(path);
  if (!in) return fail(ErrorCode::not_found, "no support table " + path.string());
  SupportTable table;
  std::string line;
  int number = 0;
  bool header_seen = false;
  while (std::getline(in, line)) {
    ++number;
    if (line.empty()) continue;
    if (line.starts_with("# ")) {
      const auto colon = line.find(": ");
      if (colon == std::string::npos) continue;
      const std::string key = line.substr(2, colon - 2);
      const std::string value = line.substr(colon + 2);
      if (key == "target") table.target = value;
      if (key == "runtime") table.runtime = value;
      if (key == "source") table.source = value;
      if (key == "opset_range" && value != "any") {
        std::sscanf(value.c_str(), "%d-%d", &table.min_opset, &table.max_opset);
      }
      continue;
    }
    if (!header_seen) {
      if (line != k_header)
        return fail(ErrorCode::invalid_input, path.string() + ": expected the header '" + k_header + "'");
      header_seen = true;
      continue;
    }
    const auto fields = split_csv(line);
    SupportEntry entry;
    const auto bad = [&](const std::string& why) {
      return fail(ErrorCode::invalid_input, path.string() + ":" + std::to_string(number) + ": " + why);
    };
    if (fields.size() != 6) return bad("expected 6 fields, found " + std::to_string(fields.size()));
    entry.domain = fields[0];
    entry.op_type = fields[1];
    if (!parse_version(fields[2], entry.since_version) || !parse_version(fields[3], entry.until_version)) {
      return bad("malformed opset version");
    }
    const auto status = parse_support_status(fields[4]);
    if (!status) return bad("unknown status '" + fields[4] + "'");
    entry.status = *status;
    entry.restrictions = fields[5];
    table.entries.push_back(std::move(entry));
  }
  if (!header_seen) return fail(ErrorCode::invalid_input, path.string() + ": no header line");
  if (table.target.empty()) table.target = path.stem().string();
  return table;
}

fs::path support_table_dir() { return installation().data_dir / "op-support"; }

std::vector<std::string> known_targets() {
  std::vector<std::string> targets;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(support_table_dir(), ec)) {
    const auto stem = entry.path().stem().string();
    if (entry.path().extension() == ".csv" && !stem.ends_with("-documented")) targets.push_back(stem);
  }
  std::sort(targets.begin(), targets.end());
  return targets;
}

Expected<SupportTable> load_target_table(const std::string& target) {
  const auto targets = known_targets();
  if (std::find(targets.begin(), targets.end(), target) == targets.end()) {
    std::string list;
    for (const auto& t : targets) list += (list.empty() ? "" : ", ") + t;
    return fail(ErrorCode::usage, "unknown target '" + target + "' (known: " + list + ")");
  }
  return load_support_table(support_table_dir() / (target + ".csv"));
}

Expected<std::vector<SupportTable>> load_target_tables(const std::vector<std::string>& targets) {
  std::vector<SupportTable> tables;
  for (const auto& target : targets) {
    ONNXPROOF_TRY_ASSIGN(auto table, load_target_table(target));
    tables.push_back(std::move(table));
  }
  return tables;
}

}  // namespace onnxproof
