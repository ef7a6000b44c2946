"""Handing memory back to the system between the export's stages, measuring each stage's peak, and
the memory this process may still take (what the float64 pass and the reference child plan by).

ONNX Runtime's session and the exporter's objects are freed into the C heap, which glibc keeps
for the process: after the runtime check of a 1.1 GB model the process still held 1.0 GB that
nothing used, and the float64 pass's tensors (allocated elsewhere, by mmap) came on top of it.
malloc_trim(0) gives the free heap back (measured: 1010 MiB -> 54 MiB after that session)."""
import contextlib
import ctypes
import ctypes.util
import gc
import os

# A full collection takes 0.2-0.3 s in a front end holding torch's and the exporter's objects
# (390,000 after exporting ResNet-18): spent only where the weights make it worth it.
WORTH_ABOVE_BYTES = 256 * 2**20

_LIBC = None


def libc():
    """The C library (ctypes), None where it cannot be loaded; loaded once."""
    global _LIBC
    if _LIBC is None:
        try:
            _LIBC = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
            _LIBC.malloc_trim.argtypes = [ctypes.c_size_t]
        except (OSError, AttributeError):
            _LIBC = False
    return _LIBC or None


def release_freed_memory(weight_bytes):
    """For a model with `weight_bytes` of weights above WORTH_ABOVE_BYTES: collects Python's
    reference cycles (the exported program's graphs hold the weights), then returns the C heap's
    free pages to the system (nothing of that where glibc is not the C library)."""
    if weight_bytes <= WORTH_ABOVE_BYTES:
        return
    gc.collect()
    if libc():
        libc().malloc_trim(0)


def high_water_mib():
    """This process's peak resident set in MiB (VmHWM), None where /proc does not say."""
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return None


def reset_high_water():
    """Resets VmHWM to the current resident set (Linux 4.0 on); where it cannot be, the next
    reading is the process's peak since it started, an upper bound of the stage's."""
    try:
        with open("/proc/self/clear_refs", "w") as clear:
            clear.write("5")
    except OSError:
        pass


class StagePeaks:
    """The peak resident set of each named stage (export.json's timings_s.peak_mib). Stages nest
    (the runtime check inside the export): a stage's reset of the mark does not hide the peak the
    stage around it had reached, which is read just before."""

    def __init__(self):
        self.peaks = {}  # {stage: MiB}, the largest of its runs
        self._running = []  # per open stage, the most an inner stage's reset hid from it

    def enter(self):
        if self._running:
            self._running[-1] = max(self._running[-1], high_water_mib() or 0.0)
        reset_high_water()
        self._running.append(0.0)

    def leave(self, stage):
        hidden = self._running.pop()
        now = high_water_mib()
        if now is None:
            return
        peak = max(now, hidden)
        self.peaks[stage] = round(max(self.peaks.get(stage, 0.0), peak))
        if self._running:
            self._running[-1] = max(self._running[-1], peak)


def available_memory():
    """Bytes this process may still take: the kernel's MemAvailable, less where a cgroup of the
    process (v2: any level up to the root; v1: the memory controller's) has less room left
    under its limit; None when nothing can be read."""
    found = []
    with contextlib.suppress(OSError, ValueError, IndexError):
        with open("/proc/meminfo") as handle:
            found += [int(line.split()[1]) * 1024 for line in handle if line.startswith("MemAvailable:")]
    with contextlib.suppress(OSError):
        with open("/proc/self/cgroup") as handle:
            lines = [line.rstrip("\n").split(":", 2) for line in handle]
        for hierarchy, controllers, path in (line for line in lines if len(line) == 3):
            if hierarchy == "0" and not controllers:  # v2: every level's limit holds
                folder = os.path.join("/sys/fs/cgroup", path.lstrip("/"))
                while folder.startswith("/sys/fs/cgroup/"):
                    found += cgroup_room(folder, "memory.max", "memory.current")
                    folder = os.path.dirname(folder)
            elif "memory" in controllers.split(","):
                found += cgroup_room(os.path.join("/sys/fs/cgroup/memory", path.lstrip("/")),
                                     "memory.limit_in_bytes", "memory.usage_in_bytes")
    return min(found) if found else None


def cgroup_room(folder, limit_file, usage_file):
    """[limit - usage] of one cgroup folder; [] without a limit or when it cannot be read."""
    try:
        with open(os.path.join(folder, limit_file)) as handle:
            limit = handle.read().strip()
        with open(os.path.join(folder, usage_file)) as handle:
            usage = int(handle.read())
        return [] if limit == "max" else [int(limit) - usage]
    except (OSError, ValueError):
        return []
