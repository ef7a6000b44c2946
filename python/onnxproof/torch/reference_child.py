"""The reference child's side of reference_ahead.py: its whole life in the forked process (or in
the fresh interpreter of reference_spawned.py), capturing PyTorch's cases with export_reference's
steps and saving a Capture after each, until the export process kills it. Nothing here runs in the
export process: the parent's handle on the child (Ahead) stays in reference_ahead.py."""
import contextlib
import json
import os
import re
import signal
import sys
import time
import traceback

from ..core.export_io import progress
from ..core.memory import libc
from ..core.reference import Capture, reference_samples
from .exact import ExactReference
from .export_reference import capture_case, exact_case, write_exact

PR_SET_PDEATHSIG = 1


def child_main(state, model, reference, checkpoint, parent):
    """The child's whole life: nothing of the export process's code runs after it."""
    code = 1
    try:
        os.setpgid(0, 0)
        die_with(parent)
        code = run_child(state, model, reference, checkpoint)
    except BaseException:
        with contextlib.suppress(BaseException):
            progress("the reference capture beside the export failed; the export process captures the cases "
                     "it had not saved:")
            traceback.print_exc()
    finally:
        with contextlib.suppress(BaseException):
            sys.stdout.flush()  # what the model printed; os._exit flushes nothing
            sys.stderr.flush()
        os._exit(code)


def run_child(state, model, reference, checkpoint):
    """The child: every case in order, its Capture saved as JSON into `checkpoint` after each run, until
    the export process kills it; the exit code. Each case's float64 run (within the budget)
    follows its float32 one, on a float64 copy of the model or the model widened a module at a
    time (a large one), never the whole model widened in place: the float32 model keeps computing.
    With every case captured, the child goes on with float64 runs of the cases the budget skipped
    (free evidence while the export still runs)."""
    import torch
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the export process's to handle: it kills the child
    torch.set_num_threads(1)
    started = time.perf_counter()
    capture = Capture()
    findings_before = len(state.findings)
    exact = ExactReference(model, in_place=False)
    skipped = []  # capture_case's entries of the cases the budget left without a float64 run

    def save():
        capture.exact = exact.summary()
        capture.findings = state.findings[findings_before:]
        capture.rejected = state.rejected_cases
        capture.seconds = time.perf_counter() - started
        write_checkpoint(checkpoint, capture)

    with exact.float64_model():
        for item in reference_samples(state):
            try:
                entry = capture_case(state, model, reference, capture, item, own_failure)
            except Exception as error:
                return stopped(f"{type(error).__name__}: {first_line(error)}")
            if entry is not None:
                save()  # a large model's float64 run may outlast the export: its float32 case counts
                exact_case(state, exact, entry, capture.cases)
                if own_failure(exact.forward_error):
                    return stopped(exact.forward_failure)
                if not capture.cases[entry[0]]["exact_outputs"]:
                    skipped.append(entry)
            save()
        capture.complete = True
        save()
        for index, folder, arrays, outputs, _ in skipped:
            if exact.model is None:
                break
            values = write_exact(state, exact, folder, arrays, outputs, budgeted=False)
            if own_failure(exact.forward_error):
                return stopped(exact.forward_failure)
            capture.cases[index]["exact_outputs"] = [k for k, value in enumerate(values) if value is not None]
            save()
    return 0


# What a process short of memory, threads or processes raises (torch's allocator says it in a
# RuntimeError): in the child, possibly its own shortage, not the model's.
_SHORTAGE = re.compile(r"can't allocate memory|out of memory|cannot allocate memory|can't start new thread|"
                       r"resource temporarily unavailable", re.IGNORECASE)


def own_failure(error):
    """Whether the child's forward raising `error` may be the child's own trouble, not the model's."""
    if error is None:
        return False
    return isinstance(error, (MemoryError, OSError)) or bool(_SHORTAGE.search(str(error)))


def stopped(reason):
    """The child's end at a forward that raised: not saved, so the export process runs that case
    (and every later one) itself; exit code 0, the reason in export.log."""
    progress(f"the model's forward raised in the reference capture beside the export ({reason}); the export "
             "process captures the cases from there")
    return 0


def first_line(error):
    text = str(error).strip()
    return text.splitlines()[0][:200] if text else ""


def write_checkpoint(checkpoint, capture):
    partial = checkpoint + ".partial"
    with open(partial, "w", encoding="utf-8") as handle:
        json.dump(vars(capture), handle)
    os.replace(partial, checkpoint)


def die_with(parent):
    """The child goes when the export process does (killed by the engine's timeout, say)."""
    with contextlib.suppress(AttributeError):  # prctl is Linux's
        if libc():
            libc().prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if os.getppid() != parent:  # it went before prctl() took effect
        os._exit(1)
