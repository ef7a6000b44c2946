"""The TorchScript exporter run in a forked child. It is native code that can end the process it
runs in: torch 2.15's shape pass divides by zero on a zero-size reshape with a dynamic batch and
the kernel ends the process with SIGFPE. Under prove() that process is the user's (a notebook, a
test runner); in a child, it is one failed export, said as such.

Forked, not started afresh: the model is already in memory (a class from a script's __main__ or
a notebook would not unpickle in a new interpreter) and a fork copies nothing until written. So
only where forking is safe (core.processes.fork_is_safe under prove(); always in the front end,
whose process is onnxproof's own) and never once CUDA is up; elsewhere the exporter runs in this
process, as before. The child computes on one thread: GNU OpenMP's pool does not survive a fork
(a parallel region in the child hangs; seen here with torch 2.15)."""
import contextlib
import os
import pickle
import signal
import sys
import types
import warnings

from ..core.memory import libc
from ..core.processes import end_with_parent, fork_is_safe

# Off with ONNXPROOF_EXPORT_CHILD=0 (the exporter then runs in this process).
SWITCH = "ONNXPROOF_EXPORT_CHILD"


class ExporterDied(Exception):
    """The exporter's process ended without an answer (a signal, or an exit of its own)."""


def run_recording_warnings(state, function, action="always"):
    """Calls function() (which exports) under warnings.simplefilter(action); returns the warnings
    it raised (objects with category, message, filename and lineno), raises what it raised, or
    ExporterDied where the child it ran in ended without a word."""
    if not _forkable(state):
        with warnings.catch_warnings(record=True) as records:
            warnings.simplefilter(action)
            function()
        return records
    read_end, write_end = os.pipe()
    sys.stdout.flush()
    sys.stderr.flush()
    libc()  # found here (ctypes runs ldconfig to find it): the child inherits it
    with warnings.catch_warnings():
        # Python 3.12 warns on any fork of a process with threads; OpenMP's idle workers are the
        # threads here, and the child uses none of them.
        warnings.simplefilter("ignore", DeprecationWarning)
        pid = os.fork()
    if pid == 0:
        os.close(read_end)
        _child(function, write_end, action)  # never returns
    os.close(write_end)
    try:
        with os.fdopen(read_end, "rb") as pipe:
            payload = pipe.read()
        _, status = os.waitpid(pid, 0)
    except BaseException:  # Ctrl-C, or the caller's own error: the child goes with it
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
        raise
    return _answer(payload, status)


def _forkable(state):
    if os.environ.get(SWITCH, "1") == "0" or not hasattr(os, "fork"):
        return False
    import torch
    if torch.cuda.is_initialized():
        return False
    return state.given is None or fork_is_safe()


def _child(function, write_end, action):
    code = 1
    try:
        end_with_parent()
        import torch
        torch.set_num_threads(1)
        with warnings.catch_warnings(record=True) as records:
            warnings.simplefilter(action)
            try:
                function()
                error = None
            except Exception as caught:  # said to the parent, which decides what it means
                error = _portable(caught)
        seen = [(record.category.__name__, str(record.message), record.filename, record.lineno) for record in records]
        with os.fdopen(write_end, "wb") as pipe:
            pickle.dump((seen, error), pipe, protocol=pickle.HIGHEST_PROTOCOL)
        code = 0
    finally:
        with contextlib.suppress(Exception):
            sys.stdout.flush()
            sys.stderr.flush()
        os._exit(code)


def _portable(error):
    """The error as it crosses the pipe: pickled whole where it unpickles (onnxproof's own errors,
    most of torch's), else its type's name and message."""
    try:
        pickled = pickle.dumps(error)
        pickle.loads(pickled)
        return ("pickled", pickled)
    except Exception:
        return ("named", type(error).__name__, str(error))


def _answer(payload, status):
    if os.WIFSIGNALED(status):
        number = os.WTERMSIG(status)
        raise ExporterDied(f"the exporter ended its process with {_signal_name(number)} (signal {number})")
    if not payload:
        raise ExporterDied(f"the exporter's process ended with exit code {os.WEXITSTATUS(status)} and no answer")
    seen, error = pickle.loads(payload)
    if error is not None:
        if error[0] == "pickled":
            raise pickle.loads(error[1])
        raise type(error[1], (RuntimeError,), {})(error[2])  # its name is what traps reads
    return [types.SimpleNamespace(category=type(name, (Warning,), {}), message=message, filename=filename,
                                  lineno=lineno) for name, message, filename, lineno in seen]


def _signal_name(number):
    try:
        return signal.Signals(number).name
    except ValueError:
        return "a signal"
