"""A front end's life tied to the process that started it (the engine): when that one dies,
even by SIGKILL (a zoo killed with kill -9, a Ray worker lost with its node), the kernel ends
this one too, so no model keeps computing for a run nobody will publish."""
import contextlib
import os
import signal
import sys

from .memory import libc

PR_SET_PDEATHSIG = 1


def end_with_parent():
    """SIGKILL when the parent dies (Linux's prctl; nothing elsewhere); exits at once when the
    parent died before the call took effect."""
    parent = os.getppid()
    with contextlib.suppress(AttributeError):
        if libc():
            libc().prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if os.getppid() != parent:
        os._exit(1)


def _stop_tqdm_monitor():
    """tqdm's monitor thread, started by the first progress bar (torch's dynamo exporter and
    onnxscript show some) and left running, only watches for stalled bars; tqdm starts it again
    with its next bar. Stopped (its documented exit(): set its event, join it), it is no thread a
    fork would copy."""
    module = sys.modules.get("tqdm")
    bar = getattr(module, "tqdm", None) if module else None
    monitor = getattr(bar, "monitor", None)
    if monitor is not None and hasattr(monitor, "exit"):
        with contextlib.suppress(Exception):
            monitor.exit()
            bar.monitor = None


def fork_is_safe():
    """Whether prove()'s process may be forked like the front end's: no Python thread but the main
    one and onnxproof's own progress thread (no thread of the caller's that the fork would copy
    holding a lock: a web server's, IPython's history writer) and no Jupyter kernel (whose output
    streams are sockets). tqdm's monitor thread, which an earlier dynamo export leaves, is stopped
    first (_stop_tqdm_monitor)."""
    import threading
    from .attached import PROGRESS_THREAD
    _stop_tqdm_monitor()
    others = [thread for thread in threading.enumerate()
              if thread is not threading.main_thread() and thread.name != PROGRESS_THREAD]
    return not others and "ipykernel" not in sys.modules
