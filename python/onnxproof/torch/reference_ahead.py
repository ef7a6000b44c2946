"""The reference captured ahead: while the export runs (mostly Python on one core), a forked child
(under prove() in a notebook, a new interpreter: reference_spawned.py) captures PyTorch's reference
cases on the other core, each case in float32 then float64 under the usual budget, saving what it
has after every case. When the export is done the export process kills the child and captures the
cases it had not finished itself: export_reference.fill_reference resumes the child's last saved
Capture. This module is the export process's side (starting the child, Ahead); the child's own
life is reference_child.py.

A process, not a thread: torch.export patches module calls and the float64 pass sets torch's
default dtype, both process-wide. The child computes on one thread: GNU OpenMP's thread pool does
not survive a fork (a parallel region in the child hangs), and one core is what the export leaves
free. Killed rather than asked to stop: the export process, on two threads, finishes a case
sooner than the child would. Whatever goes wrong with the child (it fails to start, raises,
crashes) costs only its work: the export process then captures those cases itself, as it does
where no child is started.

A forward that fails in the child for want of a resource (memory under the child's own limits,
a thread or process it may not start: reference_child.own_failure) says nothing about the model:
it ends the child before it saves that case, and the export process runs the case itself, where a
refusal is PyTorch's. It leads a process group of its own, killed whole: what a forward started (a
subprocess, a pool) goes with it."""
import contextlib
import json
import os
import re
import shutil
import signal
import sys
import warnings

from ..core.export_io import progress
from ..core.memory import available_memory, libc
from ..core.processes import fork_is_safe
from ..core.reference import Capture, prepare_folder
from . import exact as exact_module, reference_spawned
from .reference_child import child_main

# Off with ONNXPROOF_REFERENCE_AHEAD=0 (the capture then runs after the export, in one process).
SWITCH = "ONNXPROOF_REFERENCE_AHEAD"

def start(state, model):
    """An Ahead child capturing the reference from now on, or None where it cannot help or would
    not be safe (worth_it), or where the fork itself fails. prove()'s child is a new interpreter
    (reference_spawned.py) unless the caller's process is as plain as the front end's own
    (fork_is_safe): a new interpreter takes 2-3 s to import torch here, longer than ResNet-18's
    whole export, and then captured nothing (prove() 1.11x a by-hand script with it, 1.12x without)."""
    if not worth_it(state, model):
        return None
    checkpoint = checkpoint_path(state)
    if state.given is not None and not fork_is_safe():
        return start_spawned(state, model, checkpoint)
    try:
        reference = prepare_folder(state)
        with contextlib.suppress(FileNotFoundError):
            os.remove(checkpoint)
        sys.stdout.flush()
        sys.stderr.flush()
        parent = os.getpid()
        libc()  # found here (ctypes runs ldconfig to find it): the child inherits it
        with warnings.catch_warnings():
            # Python 3.12 warns on any fork of a process with threads; OpenMP's idle workers are
            # the threads here, and the child uses none of them (reference_child.run_child: one thread).
            warnings.simplefilter("ignore", DeprecationWarning)
            pid = os.fork()
    except OSError as error:  # no process left under a pids limit, no memory to commit, a full disk
        progress(f"the reference is captured after the export ({error})")
        shutil.rmtree(os.path.join(state.out, "reference.partial"), ignore_errors=True)
        return None
    if pid == 0:
        child_main(state, model, reference, checkpoint, parent)  # never returns
    with contextlib.suppress(OSError):  # the child does the same: whichever runs first, its group exists
        os.setpgid(pid, pid)
    return Ahead(pid, reference, checkpoint)


def start_spawned(state, model, checkpoint):
    """prove()'s child, started afresh (reference_spawned.launch); None where it cannot start."""
    try:
        reference = prepare_folder(state)
        with contextlib.suppress(FileNotFoundError):
            os.remove(checkpoint)
    except OSError as error:
        progress(f"the reference is captured after the export ({error})")
        return None
    process = reference_spawned.launch(state, model, reference, checkpoint)
    if process is None:
        shutil.rmtree(reference, ignore_errors=True)
        return None
    with contextlib.suppress(OSError):
        os.setpgid(process.pid, process.pid)
    return Ahead(process.pid, reference, checkpoint, process)


def worth_it(state, model):
    """Whether start() starts a child: two cores or more, no CUDA, and the memory the child's
    float64 model takes free beside the export's growth; for prove(), a model small enough to be
    pickled to the child (reference_spawned.MAX_WEIGHT_BYTES), whose own copy counts too."""
    import torch
    if os.environ.get(SWITCH, "1") == "0" or not hasattr(os, "fork"):
        return False
    if state.given is not None and weight_bytes(model) > reference_spawned.MAX_WEIGHT_BYTES:
        return False
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    if cores < 2 or torch.cuda.is_initialized():
        return False
    try:
        available = available_memory()
        if available is None:  # unknown: only a model small enough to be copied for the float64 pass anyway
            return 8 * sum(t.numel() for t in exact_module.model_tensors(model)) <= exact_module.IN_PLACE_ABOVE_BYTES
        own_copy = weight_bytes(model) if state.given is not None else 0
        return memory_needed(model) + own_copy <= available
    except (AttributeError, TypeError, RuntimeError, MemoryError):  # no parameters() to count; too large to copy
        return False


# While the child computes the export grows too: on a 1.1 GB model (bench/pipeline_overhead/
# large_bert.py) the front end went from 1.9 to 3.0 GB, its runtime check mapping the weights
# (5.3 GB when the model was saved in one file, weights and serialized bytes beside each other).
EXPORT_GROWTH = 2
MARGIN_BYTES = 2**30


def weight_bytes(model):
    """The bytes of the model's parameters and buffers as they are."""
    return sum(t.numel() * t.element_size() for t in exact_module.model_tensors(model))


def memory_needed(model):
    """Bytes the export and the child add together: the child's float64 copy of the model (made
    from a float32 copy: both at once for a moment) where it takes one (a large model goes float64
    a module at a time, exact.LayerByLayer, within the margin), the export's growth, and a margin
    for activations."""
    weights = weight_bytes(model)
    float64 = 8 * sum(t.numel() for t in exact_module.model_tensors(model))
    copy = float64 + weights if exact_module.pass_mode(model, float64, in_place=False) == "copy" else 0
    return copy + EXPORT_GROWTH * weights + MARGIN_BYTES


def checkpoint_path(state):
    return os.path.join(state.out, ".reference-ahead.json")


class Ahead:
    """The export process's handle on the child: finish() kills it and takes the cases it saved,
    close() makes sure it is gone."""

    def __init__(self, pid, reference, checkpoint, process=None):
        self.pid = pid
        self.process = process  # prove()'s child's subprocess.Popen (reaped through it); None: forked
        self.child = pid  # kept after the child is reaped: its temporary files are named after it
        self.reference = reference
        self.checkpoint = checkpoint
        self.taken = False  # finish() handed the folder on

    def finish(self, state):
        """Kills the child and returns its last saved Capture, its findings and rejected cases
        merged into `state`, the folder holding just its cases; None when it saved none or
        anything goes wrong here (the folder is then the caller's to make afresh)."""
        try:
            self.kill()
            capture = self.read_checkpoint()
            self.remove_checkpoint()
            if capture is None:
                return None
            self.tidy(capture)
        except Exception as error:  # the child's work is lost, not the export
            progress(f"the cases captured beside the export are not used ({error})")
            return None
        self.taken = True
        state.findings += capture.findings
        state.rejected_cases.update(capture.rejected)
        return capture

    def tidy(self, capture):
        """The reference folder as the checkpoint says: no case folder it does not list (the case
        the child was killed in), no half-written file, and each case's exact_outputs as its
        folder has them (a float64 run finished after the last save counts)."""
        listed = {case["data_set"] for case in capture.cases}
        for name in os.listdir(self.reference):
            if name not in listed:
                shutil.rmtree(os.path.join(self.reference, name))
        for case in capture.cases:
            folder = os.path.join(self.reference, case["data_set"])
            names = os.listdir(folder)
            for name in names:
                if name.endswith(f".tmp-{self.child}"):
                    os.remove(os.path.join(folder, name))
            case["exact_outputs"] = sorted(int(name[len("exact_output_"):-len(".pb")]) for name in names
                                           if re.fullmatch(r"exact_output_\d+\.pb", name))

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

    def remove_checkpoint(self):
        for path in (self.checkpoint, self.checkpoint + ".partial"):  # one killed while saving leaves the second
            with contextlib.suppress(FileNotFoundError):
                os.remove(path)

    def kill(self):
        """The child and its process group (what its forwards started) killed, the child reaped."""
        if self.pid is not None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.pid, signal.SIGKILL)
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, signal.SIGKILL)
            with contextlib.suppress(ChildProcessError):  # reaped elsewhere (SIGCHLD ignored by the model's code)
                if self.process is not None:
                    self.process.wait()
                else:
                    os.waitpid(self.pid, 0)
            self.pid = None

    def close(self):
        """The child killed if it still runs, its checkpoint gone, and its folder too unless
        finish() handed it on."""
        self.kill()
        self.remove_checkpoint()
        if not self.taken:
            shutil.rmtree(self.reference, ignore_errors=True)
