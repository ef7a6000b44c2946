#include "onnxproof/ops/release_forecast.h"

#include <fmt/format.h>

#include <fstream>
#include <sstream>

#include "onnxproof/core/installation.h"

namespace onnxproof {

std::vector<ReleaseForecast> forecast_releases(int opset, int ir_version) {
  std::vector<ReleaseForecast> forecast;
  std::ifstream table(installation().data_dir / "onnxruntime-releases.csv");
  bool header = false;
  for (std::string line; std::getline(table, line);) {
    if (line.empty() || line.front() == '#') continue;
    if (!header) {  // version,newest_opset,newest_ir_version
      header = true;
      continue;
    }
    ReleaseForecast release;
    std::istringstream fields(line);
    std::string opset_field, ir_field;
    if (!std::getline(fields, release.version, ',') || !std::getline(fields, opset_field, ',') ||
        !std::getline(fields, ir_field, ','))
      return {};  // a table broken by hand: no forecast rather than a wrong one
    try {
      release.newest_opset = std::stoi(opset_field);
      release.newest_ir_version = std::stoi(ir_field);
    } catch (const std::exception&) {
      return {};
    }
    if (ir_version > release.newest_ir_version) {
      release.reason = fmt::format("IR version {} is above the {} it reads", ir_version, release.newest_ir_version);
    } else if (opset > release.newest_opset) {
      release.reason = fmt::format("opset {} is above the {} it runs", opset, release.newest_opset);
    }
    release.loads = release.reason.empty();
    forecast.push_back(std::move(release));
  }
  return forecast;
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
