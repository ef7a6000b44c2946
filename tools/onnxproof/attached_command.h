#pragma once
// The channel of `onnxproof pipeline --attach` (pipeline/attached_front_end.h): stdin from the front
// end, this process's original stdout to it.

#include <functional>
#include <istream>
#include <ostream>

#include "onnxproof/core/error.h"

namespace onnxproof::cli {

/// Calls `run` with the two streams once stdout is kept for the channel (fd 1 then points at
/// stderr); `report_error` answers a channel that cannot be set up.
int with_front_end_channel(const std::function<int(std::istream&, std::ostream&)>& run,
                           const std::function<int(const Error&)>& report_error);

}  // namespace onnxproof::cli
