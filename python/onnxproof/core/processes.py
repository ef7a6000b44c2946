"""A front end's life tied to the process that started it (the engine): when that one dies,
even by SIGKILL (a zoo killed with kill -9, a Ray worker lost with its node), the kernel ends
this one too, so no model keeps computing for a run nobody will publish."""
import contextlib
import os
import signal

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
