#include "chromium.h"

#include <unistd.h>

#include <cstdlib>
#include <fstream>

#include <nlohmann/json.hpp>

#include "cli_runner.h"

namespace onnxproof::testing {

std::string find_chromium() {
  if (const char* env = std::getenv("ONNXPROOF_CHROMIUM")) return env;
  const std::string path = std::getenv("PATH") ? std::getenv("PATH") : "";
  for (const char* name : {"chromium", "chromium-browser", "google-chrome"}) {
    std::size_t start = 0;
    while (start <= path.size()) {
      const std::size_t end = std::min(path.find(':', start), path.size());
      const std::filesystem::path candidate = std::filesystem::path(path.substr(start, end - start)) / name;
      if (!candidate.parent_path().empty() && ::access(candidate.c_str(), X_OK) == 0) return candidate.string();
      start = end + 1;
    }
  }
  return "";
}

std::vector<std::string> page_requests(const std::string& chromium, const std::filesystem::path& page,
                                       const std::filesystem::path& scratch) {
  const auto log = scratch / "netlog.json";
  const auto result = run_cli(
      chromium, {"--headless", "--no-sandbox", "--disable-gpu", "--user-data-dir=" + (scratch / "profile").string(),
                 "--disable-background-networking", "--disable-component-update", "--no-first-run",
                 "--proxy-server=127.0.0.1:9", "--host-resolver-rules=MAP * ~NOTFOUND", "--log-net-log=" + log.string(),
                 "--dump-dom", "file://" + std::filesystem::absolute(page).string()});
  if (result.exit_code != 0) return {"(Chromium failed: " + result.err.substr(0, 300) + ")"};
  std::ifstream in(log);
  const auto netlog = nlohmann::json::parse(in, nullptr, false);
  if (netlog.is_discarded()) return {"(no readable NetLog at " + log.string() + ")"};
  int start_job = -1;  // the event type of a request's start
  for (const auto& [name, id] : netlog["constants"]["logEventTypes"].items())
    if (name == "URL_REQUEST_START_JOB") start_job = id.get<int>();
  std::vector<std::string> urls;
  for (const auto& event : netlog["events"]) {
    if (event.value("type", -2) != start_job || !event.contains("params")) continue;
    const auto& params = event["params"];
    const std::string url = params.value("url", "");
    if (params.value("network_isolation_key", "").starts_with("file://") && !url.starts_with("file:") &&
        !url.starts_with("data:"))
      urls.push_back(url);
  }
  return urls;
}

}  // namespace onnxproof::testing
