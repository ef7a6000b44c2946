"""The reference captured ahead: while the export runs (mostly Python on one core), a forked child
captures PyTorch's reference cases on the other core, each case in float32 then float64 under the
usual budget. When the export is done the export process stops the child after its current case
and captures the rest itself: export_reference.fill_reference resumes the child's Capture.

A process, not a thread: torch.export patches module calls and the float64 pass sets torch's
default dtype, both process-wide. The child computes on one thread: GNU OpenMP's thread pool does
not survive a fork (a parallel region in the child hangs), and one core is what the export leaves
free. Whatever goes wrong in the child (an exception, a crash, no progress) costs only its work:
the export process then captures every case itself, as it does where no child is started."""
import contextlib
import ctypes
import ctypes.util
import json
import os
import re
import select
import signal
import sys
import time
import traceback
import warnings

from . import exact as exact_module
from .export_reference import Capture, capture_case, exact_case, prepare_folder, reference_samples, write_exact

# Off with ONNXPROOF_REFERENCE_AHEAD=0 (the capture then runs after the export, in one process).
SWITCH = "ONNXPROOF_REFERENCE_AHEAD"

# A child whose next case takes longer than this (plus 50 times the example's forward) is taken
# for stuck: it is killed and the export process captures every case.
STALL_SECONDS = 300

PR_SET_PDEATHSIG = 1


def start(state, model):
    """An Ahead child capturing the reference from now on, or None where it cannot help or would
    not be safe: fewer than two cores, a model handed over in the caller's own process (prove()),
    torch's CUDA already initialized, or too little memory for the child's float64 model beside
    the export's peak (worth_it)."""
    if not worth_it(state, model):
        return None
    reference = prepare_folder(state)
    checkpoint = checkpoint_path(state)
    with contextlib.suppress(FileNotFoundError):
        os.remove(checkpoint)
    stop_read, stop_write = os.pipe()
    progress_read, progress_write = os.pipe()
    sys.stdout.flush()
    sys.stderr.flush()
    with warnings.catch_warnings():
        # Python 3.12 warns on any fork of a process with threads; OpenMP's idle workers are
        # the threads here, and the child uses none of them (run_child: one thread).
        warnings.simplefilter("ignore", DeprecationWarning)
        pid = os.fork()
    if pid == 0:
        os.close(stop_write)
        os.close(progress_read)
        code = 1
        try:
            code = run_child(state, model, reference, checkpoint, stop_read, progress_write)
        except BaseException:
            print("onnxproof export: the reference capture beside the export failed; "
                  "the export process captures every case:", file=sys.stderr)
            traceback.print_exc()
        finally:
            sys.stdout.flush()  # what the model printed; os._exit flushes nothing
            sys.stderr.flush()
            os._exit(code)
    os.close(stop_read)
    os.close(progress_write)
    return Ahead(pid, reference, checkpoint, stop_write, progress_read,
                 STALL_SECONDS + 50 * state.timings.get("forward", 0.0))


def worth_it(state, model):
    """Whether start() forks: two cores or more, the export's own process (not prove()'s), no CUDA,
    and the memory the child's float64 model takes free beside the export's growth."""
    import torch
    if os.environ.get(SWITCH, "1") == "0" or not hasattr(os, "fork") or state.given is not None:
        return False
    if len(os.sched_getaffinity(0)) < 2 or torch.cuda.is_initialized():
        return False
    available = available_memory()
    if available is None:  # unknown: only a model small enough to be copied for the float64 pass anyway
        return float64_bytes(model) <= exact_module.IN_PLACE_ABOVE_BYTES
    return memory_needed(model) <= available


# While the child holds its float64 model the export grows too: dynamo's translation took the
# front end from 1.1 to 5.1 GB on a 1.1 GB model (bench/pipeline_overhead/large_bert.py).
EXPORT_GROWTH = 4
MARGIN_BYTES = 2**30


def float64_bytes(model):
    return 8 * sum(t.numel() for t in list(model.parameters()) + list(model.buffers()))


def memory_needed(model):
    """Bytes the export and the child add together: the child's float64 copy of the model (made
    from a float32 copy: both at once for a moment), the export's growth, and a margin for
    activations."""
    weights = sum(t.numel() * t.element_size() for t in list(model.parameters()) + list(model.buffers()))
    return float64_bytes(model) + weights + EXPORT_GROWTH * weights + MARGIN_BYTES


def available_memory():
    """Bytes this process may still take: the kernel's MemAvailable, less where the process's
    cgroup (v2) sets a lower limit; None when neither can be read."""
    found = []
    try:
        with open("/proc/meminfo") as handle:
            found += [int(line.split()[1]) * 1024 for line in handle if line.startswith("MemAvailable:")]
    except (OSError, ValueError, IndexError):
        pass
    try:
        with open("/proc/self/cgroup") as handle:
            group = next(line.strip().split("::", 1)[1] for line in handle if line.startswith("0::"))
        folder = os.path.join("/sys/fs/cgroup", group.lstrip("/"))
        with open(os.path.join(folder, "memory.max")) as handle:
            limit = handle.read().strip()
        with open(os.path.join(folder, "memory.current")) as handle:
            current = int(handle.read())
        if limit != "max":
            found.append(int(limit) - current)
    except (OSError, ValueError, StopIteration, IndexError):
        pass
    return min(found) if found else None


def checkpoint_path(state):
    return os.path.join(state.out, ".reference-ahead.json")


def run_child(state, model, reference, checkpoint, stop, progress):
    """The child: cases in order until the export process asks it to stop, then its Capture as
    JSON into `checkpoint`; the exit code. Each case's float64 run (within the budget) follows its
    float32 one, on a float64 copy of the model, never the model widened in place: the float32
    model keeps computing. With every case captured and the export still running, the child
    goes on with float64 runs of the cases the budget skipped (free evidence, the checkpoint saved
    after each), until the export process kills it."""
    import torch
    die_with_parent()
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the export process's to handle: it kills the child
    torch.set_num_threads(1)
    started = time.perf_counter()
    capture = Capture()
    findings_before = len(state.findings)
    exact = exact_module.ExactReference(model, in_place=False)
    skipped = []  # capture_case's entries of the cases the budget left without a float64 run

    def save():
        capture.exact = exact.summary()
        capture.findings = state.findings[findings_before:]
        capture.rejected = state.rejected_cases
        capture.seconds = time.perf_counter() - started
        capture.ahead_cases = len(capture.cases)
        write_checkpoint(checkpoint, capture)

    with exact.float64_model():
        for item in reference_samples(state, model):
            if stop_asked(stop):
                break
            entry = capture_case(state, model, reference, capture, item)
            if entry is not None:
                exact_case(state, exact, entry, capture.cases)
                if not capture.cases[entry[0]]["exact_outputs"]:
                    skipped.append(entry)
            os.write(progress, b".")
        else:
            capture.complete = True
        save()
        for index, folder, arrays, outputs, _ in skipped if capture.complete else []:
            if exact.model is None or stop_asked(stop):
                break
            values = write_exact(state, exact, folder, arrays, outputs, budgeted=False)
            capture.cases[index]["exact_outputs"] = [k for k, value in enumerate(values) if value is not None]
            save()
    return 0


def stop_asked(stop):
    return bool(select.select([stop], [], [], 0)[0])


def write_checkpoint(checkpoint, capture):
    partial = checkpoint + ".partial"
    with open(partial, "w", encoding="utf-8") as handle:
        json.dump(vars(capture), handle)
    os.replace(partial, checkpoint)


def die_with_parent():
    """The child goes when the export process does (killed by the engine's timeout, say)."""
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    except (OSError, AttributeError):
        pass  # not Linux: the stop pipe's end still ends the child after its current case


class Ahead:
    """The export process's handle on the child: finish() stops it and takes its cases, close()
    makes sure it is gone."""

    def __init__(self, pid, reference, checkpoint, stop, progress, stall_seconds):
        self.pid = pid
        self.child = pid  # kept after the child is reaped: its temporary files are named after it
        self.reference = reference
        self.checkpoint = checkpoint
        self.stop = stop
        self.progress = progress
        self.stall_seconds = stall_seconds
        self.taken = False  # finish() handed the folder on

    def finish(self, state):
        """Stops the child and returns its Capture, its findings and rejected cases merged into
        `state`; None when the child failed (the folder is then the caller's to make afresh). A
        child still capturing cases ends after its current one; a child past the last case only
        adds float64 runs, and is killed at once: what it wrote is kept."""
        with contextlib.suppress(OSError):
            os.write(self.stop, b"x")
        saved = self.read_checkpoint()
        if saved is not None and saved.complete:
            self.kill()
            ended = True
        else:
            ended = self.wait()
        capture = self.read_checkpoint() if ended else None
        with contextlib.suppress(FileNotFoundError):
            os.remove(self.checkpoint)
        if capture is None:
            return None
        self.taken = True
        self.tidy(capture)
        state.findings += capture.findings
        state.rejected_cases.update(capture.rejected)
        return capture

    def tidy(self, capture):
        """Each case's exact_outputs as its folder has them (a float64 run killed after its file
        was written and before the checkpoint counts), and no half-written file of the child."""
        for case in capture.cases:
            folder = os.path.join(self.reference, case["data_set"])
            names = os.listdir(folder)
            for name in names:
                if name.endswith(f".tmp-{self.child}"):
                    os.remove(os.path.join(folder, name))
            case["exact_outputs"] = sorted(int(name[len("exact_output_"):-len(".pb")]) for name in names
                                           if re.fullmatch(r"exact_output_\d+\.pb", name))

    def wait(self):
        """True when the child exited 0; a child that makes no progress for stall_seconds is
        killed (False)."""
        while True:
            ready = select.select([self.progress], [], [], self.stall_seconds)[0]
            if not ready:
                self.kill()
                return False
            if not os.read(self.progress, 4096):
                break  # the child closed its end: it exited
        _, status = os.waitpid(self.pid, 0)
        self.pid = None
        return os.waitstatus_to_exitcode(status) == 0

    def read_checkpoint(self):
        """The child's last saved Capture, None when there is none."""
        try:
            with open(self.checkpoint, encoding="utf-8") as handle:
                saved = json.load(handle)
        except (OSError, ValueError):
            return None
        capture = Capture()
        for name, value in saved.items():
            setattr(capture, name, value)
        return capture

    def kill(self):
        if self.pid is not None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, signal.SIGKILL)
            os.waitpid(self.pid, 0)
            self.pid = None

    def close(self):
        """The child killed if it still runs, its pipes closed, its folder and checkpoint gone
        unless finish() handed them on."""
        self.kill()
        for fd in (self.stop, self.progress):
            with contextlib.suppress(OSError):
                os.close(fd)
        self.stop = self.progress = -1
        for path in (self.checkpoint, self.checkpoint + ".partial"):  # one killed while saving leaves the second
            with contextlib.suppress(FileNotFoundError):
                os.remove(path)
        if not self.taken:
            import shutil
            shutil.rmtree(self.reference, ignore_errors=True)
