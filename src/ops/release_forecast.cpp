#include "onnxproof/ops/release_forecast.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "onnxproof/core/installation.h"

namespace onnxproof {

namespace {

// The table's rows, oldest first, unjudged; empty when it cannot be read or a row is broken
// (a table broken by hand gives no forecast rather than a wrong one).
std::vector<ReleaseForecast> read_release_table() {
  std::vector<ReleaseForecast> releases;
  std::ifstream table(installation().data_dir / "onnxruntime-releases.csv");
  bool header = false;
  for (std::string line; std::getline(table, line);) {
    if (line.empty() || line.front() == '#') continue;
    if (!header) {  // version,newest_opset,newest_ir_version,released
      header = true;
      continue;
    }
    ReleaseForecast release;
    std::istringstream fields(line);
    std::string opset_field, ir_field;
    if (!std::getline(fields, release.version, ',') || !std::getline(fields, opset_field, ',') ||
        !std::getline(fields, ir_field, ','))
      return {};
    std::getline(fields, release.released, ',');  // may be empty: a release not dated yet
    try {
      release.newest_opset = std::stoi(opset_field);
      release.newest_ir_version = std::stoi(ir_field);
    } catch (const std::exception&) {
      return {};
    }
    releases.push_back(std::move(release));
  }
  return releases;
}

// "YYYY-MM-DD" moved back `months` whole months (the day kept: string order is date order).
std::string months_before(const std::string& date, int months) {
  int year = 0, month = 0;
  if (date.size() != 10 || std::sscanf(date.c_str(), "%4d-%2d", &year, &month) != 2) return {};
  const int index = year * 12 + (month - 1) - months;
  return fmt::format("{:04d}-{:02d}{}", index / 12, index % 12 + 1, date.substr(7));
}

}  // namespace

std::vector<ReleaseForecast> forecast_releases(int opset, int ir_version) {
  std::vector<ReleaseForecast> forecast = read_release_table();
  for (auto& release : forecast) {
    if (ir_version > release.newest_ir_version) {
      release.reason = fmt::format("IR version {} is above the {} it reads", ir_version, release.newest_ir_version);
    } else if (opset > release.newest_opset) {
      release.reason = fmt::format("opset {} is above the {} it runs", opset, release.newest_opset);
    }
    release.loads = release.reason.empty();
  }
  return forecast;
}

PortableOpset portable_opset(int months) {
  const std::vector<ReleaseForecast> releases = read_release_table();
  std::string newest;
  for (const auto& release : releases) newest = std::max(newest, release.released);
  const std::string since = months_before(newest, months);
  if (since.empty()) return {};
  PortableOpset portable;
  const ReleaseForecast* oldest = nullptr;
  for (const auto& release : releases) {
    if (release.released < since) continue;
    if (!oldest || release.released < oldest->released) oldest = &release;
    if (portable.opset == 0 || release.newest_opset < portable.opset) portable.opset = release.newest_opset;
  }
  if (!oldest) return {};
  portable.reason = fmt::format(
      "every ONNX Runtime release of the {} months up to {} ({} on) loads up to opset {} "
      "(data/onnxruntime-releases.csv)",
      months, newest, oldest->version, portable.opset);
  return portable;
}

std::string forecast_summary(const std::vector<ReleaseForecast>& forecast) {
  std::vector<const ReleaseForecast*> loading, refusing;
  for (const auto& release : forecast) (release.loads ? loading : refusing).push_back(&release);
  const auto range = [](const std::vector<const ReleaseForecast*>& releases) {
    return releases.size() == 1 ? releases.front()->version
                                : releases.front()->version + " to " + releases.back()->version;
  };
  std::string summary;
  if (!loading.empty()) summary = "ONNX Runtime " + range(loading) + " would load it";
  if (!refusing.empty()) {
    const ReleaseForecast& newest = *refusing.back();  // the newest refusing release: the nearest limit
    summary += fmt::format("{}{} {}: {}{}", summary.empty() ? "ONNX Runtime " : "; ", range(refusing),
                           "would refuse it", newest.reason, refusing.size() == 1 ? "" : " (" + newest.version + ")");
  }
  return summary.empty() ? summary : summary + " (opset and IR version; data/onnxruntime-releases.csv)";
}

nlohmann::json forecast_to_json(const std::vector<ReleaseForecast>& forecast) {
  nlohmann::json releases = nlohmann::json::array();
  for (const auto& release : forecast)
    releases.push_back({{"version", release.version},
                        {"newest_opset", release.newest_opset},
                        {"newest_ir_version", release.newest_ir_version},
                        {"loads", release.loads},
                        {"reason", release.reason}});
  return releases;
}

}  // namespace onnxproof
