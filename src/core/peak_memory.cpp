#include "onnxproof/core/peak_memory.h"

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <string>

namespace onnxproof {
namespace {

// The innermost stretch being measured (steps run on one thread).
thread_local PeakMemory* t_innermost = nullptr;

// VmHWM of /proc/self/status in MiB.
std::optional<double> high_water_mib() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmHWM:", 0) == 0) {  // "VmHWM:   123456 kB"
      char* end = nullptr;
      const double kib = std::strtod(line.c_str() + 6, &end);
      return end == line.c_str() + 6 ? std::nullopt : std::optional<double>(kib / 1024.0);
    }
  }
  return std::nullopt;
}

// "5" to clear_refs resets VmHWM to the current resident set (Linux 4.0 and later).
void reset_high_water() {
  std::ofstream clear("/proc/self/clear_refs");
  clear << "5";
}

}  // namespace

PeakMemory::PeakMemory() : m_outer(t_innermost) {
  if (m_outer) m_outer->m_before_inner_mib = std::max(m_outer->m_before_inner_mib, high_water_mib().value_or(0.0));
  reset_high_water();
  t_innermost = this;
}

PeakMemory::~PeakMemory() { t_innermost = m_outer; }

std::optional<double> PeakMemory::peak_mib() const {
  const auto now = high_water_mib();
  if (!now) return std::nullopt;
  return std::max(*now, m_before_inner_mib);
}

}  // namespace onnxproof
