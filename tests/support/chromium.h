#pragma once
// Headless Chromium for the report tests: where it is, and what a page asks of the network.

#include <filesystem>
#include <string>
#include <vector>

namespace onnxproof::testing {

/// Chromium's binary: $ONNXPROOF_CHROMIUM, else the first of the usual names on PATH; "" when none.
std::string find_chromium();

/// The URLs other than file: and data: that `page` itself requested while headless Chromium
/// loaded it with the network cut off (every host resolves to nothing, a dead proxy), read from
/// Chromium's NetLog: the requests whose isolation key is the page's file:// origin (Chromium's own
/// background requests carry another). `scratch` holds the profile and the log.
std::vector<std::string> page_requests(const std::string& chromium, const std::filesystem::path& page,
                                       const std::filesystem::path& scratch);

}  // namespace onnxproof::testing
