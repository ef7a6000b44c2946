"""Nothing of a zoo outlives it, even when it is killed with SIGKILL: a zoo run marks its
environment with a token that every process it starts inherits (its pipelines, their front ends,
a local Ray instance's raylet, workers and agents), and forks a small guardian first. The
guardian waits on a pipe only the zoo holds; when the pipe closes (the zoo exited, however it
did), it sends SIGTERM to every process still carrying the token, then SIGKILL to what is left
after a grace period (the engine uses it to remove its staging folder).

Measured before the guardian: a zoo on a local Ray instance killed with SIGKILL left a front end
computing and Ray's dashboard and runtime-env agents running, reparented to init."""
import os
import secrets
import signal
import time

TOKEN_VARIABLE = "ONNXPROOF_ZOO_RUN"
_GRACE_SECONDS = 5
_write_end = None  # held open for the zoo's whole life; the kernel closes it when the zoo dies


def start_guardian():
    """Marks this process's environment with a fresh token and forks the guardian. Call it once,
    early, before any thread or child exists (a fork with threads running is unsafe)."""
    global _write_end
    if _write_end is not None or not os.path.isdir("/proc"):
        return
    token = secrets.token_hex(16)
    os.environ[TOKEN_VARIABLE] = token
    read_end, write_end = os.pipe()  # neither end is inherited by what the zoo execs
    pid = os.fork()
    if pid == 0:
        os.close(write_end)
        _guard(read_end, token)  # never returns
    os.close(read_end)
    _write_end = write_end


def _guard(read_end, token):
    try:
        for number in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):  # Ctrl-C reaches the zoo, not this
            signal.signal(number, signal.SIG_IGN)
        os.setsid()  # out of the terminal's process group
        while True:
            try:
                if not os.read(read_end, 1):
                    break
            except InterruptedError:
                continue
        sweep(token)
    finally:
        os._exit(0)


def carriers(token):
    """The pids (other than this process) whose environment holds TOKEN_VARIABLE=token."""
    needle = f"{TOKEN_VARIABLE}={token}".encode() + b"\0"
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) == os.getpid():
            continue
        try:
            with open(f"/proc/{name}/environ", "rb") as stream:
                if needle in stream.read() + b"\0":
                    found.append(int(name))
        except OSError:  # gone, or not ours to read
            continue
    return found


def sweep(token):
    """SIGTERM to every carrier, SIGKILL to those still there after the grace period."""
    for number, wait in ((signal.SIGTERM, _GRACE_SECONDS), (signal.SIGKILL, 0)):
        left = carriers(token)
        for pid in left:
            try:
                os.kill(pid, number)
            except OSError:
                pass
        deadline = time.monotonic() + wait
        while left and time.monotonic() < deadline:
            time.sleep(0.1)
            left = carriers(token)
