"""The reference child of prove(): the same work as reference_ahead's forked child, in a process
started afresh. prove() runs in the user's process (a notebook, a test runner), whose threads and
open connections a fork would copy mid-flight; a new interpreter copies nothing. It gets the
model and the export's state pickled through a file in the run folder, so the model must unpickle
in a fresh interpreter: a class defined in a notebook or a script's __main__ does not (the child
then says so and ends, and the export process captures every case itself, as without a child).
The user's main module is never run again (multiprocessing's spawn would run a script's
unguarded top level: a training loop, say)."""
import os
import pickle
import subprocess
import sys

from ..core.export_io import progress
from .reference_child import child_main

# Pickled through a file: above this many bytes of weights writing and reading the copy costs
# more than the child could save.
MAX_WEIGHT_BYTES = 512 * 2**20

_ENTRY = ("import sys; sys.path[:0] = [sys.argv[2]]; "
          "from onnxproof.torch.reference_spawned import main; main(sys.argv[1])")


def launch(state, model, reference, checkpoint):
    """The started child's subprocess.Popen, or None where the model or the state cannot be
    pickled (the reason in export.log) or the process cannot start."""
    payload = checkpoint + ".payload"
    try:
        with open(payload, "wb") as handle:  # the import path first: the model's modules load through it
            pickle.dump(list(sys.path), handle)
            pickle.dump((state, model, reference, checkpoint, os.getpid()), handle, protocol=pickle.HIGHEST_PROTOCOL)
    except Exception as error:  # any object of the model's or the data's that does not pickle
        progress(f"the reference is captured after the export (the model does not pickle: "
                 f"{type(error).__name__}: {str(error)[:200]})")
        _remove(payload)
        return None
    package_root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    try:
        return subprocess.Popen([sys.executable, "-c", _ENTRY, payload, package_root], stdin=subprocess.DEVNULL,
                                close_fds=True)
    except OSError as error:
        progress(f"the reference is captured after the export ({error})")
        _remove(payload)
        return None


def main(payload):
    """The child: the state and model unpickled (the payload file removed first), then the forked
    child's whole life (reference_child.child_main, which never returns)."""
    try:
        with open(payload, "rb") as handle:
            sys.path[:0] = [entry for entry in pickle.load(handle) if entry not in sys.path]
            state, model, reference, checkpoint, parent = pickle.load(handle)
    except Exception as error:  # a class the fresh interpreter cannot import (a notebook's)
        progress(f"the reference child cannot load the model ({type(error).__name__}: {str(error)[:200]}); "
                 "the export process captures every case")
        os._exit(0)
    finally:
        _remove(payload)
    child_main(state, model, reference, checkpoint, parent)


def _remove(path):
    try:
        os.remove(path)
    except OSError:
        pass
