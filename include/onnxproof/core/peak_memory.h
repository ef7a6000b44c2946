#pragma once
// The process's peak resident memory over one stretch of work (a pipeline step): the kernel's
// high-water mark (VmHWM) is reset at the start and read at the end.

#include <optional>

namespace onnxproof {

/// Measures the peak resident set of this process from its construction to peak_mib(). Where
/// the kernel does not let the mark be reset (not Linux, /proc read-only), peak_mib() is the
/// process's peak since it started: an upper bound, never a smaller figure than the truth.
/// Stretches may nest: an inner one's reset does not hide an outer one's earlier peak, which
/// the outer takes from the mark at the inner's start.
class PeakMemory {
 public:
  PeakMemory();
  ~PeakMemory();
  PeakMemory(const PeakMemory&) = delete;
  PeakMemory& operator=(const PeakMemory&) = delete;
  /// The peak in MiB so far; nullopt where the mark cannot be read.
  std::optional<double> peak_mib() const;

 private:
  PeakMemory* m_outer;
  double m_before_inner_mib = 0.0;  // the most an inner stretch's reset hid from this one
};

}  // namespace onnxproof
