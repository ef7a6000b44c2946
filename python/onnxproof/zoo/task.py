"""One model of the zoo: `onnxproof pipeline` as a child process in a process group of its own,
its output in logs/NAME.log, its run folder runs/NAME/ and golden set golden/NAME/; the result is
one dashboard row. Whatever happens to the child (a crash, a hang past its timeout, the kernel's
out-of-memory killer) becomes an error row: it never ends the zoo."""
import contextlib
import ctypes
import functools
import os
import shutil
import signal
import subprocess
import sys
import threading
import time

from ..core.reads import SWITCH as READS_SWITCH
from .cache import reads_record_path
from .files import read_report_json

# After SIGTERM, the engine ends its own front end (a process group of its own) and removes its
# staging folder; what is left after this long gets SIGKILL.
_GRACE_SECONDS = 10
# The pipelines running in this process, so that an interrupted zoo ends them (each is in a
# session of its own, out of reach of the terminal's Ctrl-C).
_LIVE = set()
_LIVE_LOCK = threading.Lock()


_LIBC = ctypes.CDLL(None, use_errno=True) if sys.platform.startswith("linux") else None
_PR_SET_PDEATHSIG = 1


def _end_with_parent(parent):
    """In the child before exec: SIGTERM when the process that started it (`parent`) dies (a Ray
    worker killed by its memory monitor or lost with its node, a zoo killed with SIGKILL), so no
    pipeline outlives it."""
    if _LIBC is not None:
        _LIBC.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)
        # A parent that died between the fork and the prctl sends no signal: the child would
        # run on, reparented, with nobody to collect its row.
        if os.getppid() != parent:
            os._exit(1)


def end_live_pipelines():
    """SIGTERM to every running pipeline's process group (the engine then ends its front end and
    removes its staging folder); the threads waiting on them take it from there."""
    with _LIVE_LOCK:
        live = list(_LIVE)
    for process in live:
        try:
            os.killpg(process.pid, signal.SIGTERM)
        except ProcessLookupError:
            pass


def pipeline_arguments(model, out):
    """The `onnxproof pipeline` arguments (after the binary) that prove `model` into the zoo `out`."""
    options = model.options
    arguments = ["pipeline", "--model", model.spec, "--out", os.path.join(out, "runs", model.name)]
    arguments += ["--golden", os.path.join(out, "golden", model.name)] if model.golden else ["--no-golden"]
    for key, flag in (("exporter", "--exporter"), ("opset", "--opset"), ("samples", "--samples"),
                      ("generate", "--generate"), ("rtol", "--rtol"), ("atol", "--atol"), ("data", "--data"),
                      ("data_dir", "--data-dir")):
        if key in options:
            arguments += [flag, str(options[key])]
    for key, flag in (("inputs", "--input"), ("dynamic", "--dynamic"), ("sweep", "--sweep")):
        for value in options.get(key, []):
            arguments += [flag, value]
    for key, flag in (("targets", "--target"), ("providers", "--provider")):
        if options.get(key):
            arguments += [flag, ",".join(options[key])]
    # The export's own limit stays inside the model's, so the engine reports it when it can.
    arguments += ["--export-timeout", str(int(model.timeout))]
    return arguments + list(options.get("args", []))


def _end_group(process):
    """SIGTERM to the child's process group (the engine then ends its front end), SIGKILL after
    the grace period."""
    try:
        os.killpg(process.pid, signal.SIGTERM)
    except ProcessLookupError:
        pass
    try:
        process.wait(timeout=_GRACE_SECONDS)
    except subprocess.TimeoutExpired:
        pass
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    process.wait()


def _new_log(path):
    """The model's log, made anew: a link planted at its name is replaced, never written through."""
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)
    return os.fdopen(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644), "wb")


def _pipeline_environment(out, name):
    """This environment, with the front ends asked to record what the model reads (cache.py)."""
    record = reads_record_path(out, name)
    with contextlib.suppress(FileNotFoundError):
        os.unlink(record)
    return {**os.environ, READS_SWITCH: record}


def run_model(model, engine, out):
    """Proves `model` with `engine` into the zoo folder `out`; returns its dashboard row (a dict,
    see dashboard.row_from_run). Never raises for what the child does."""
    log_path = os.path.join(out, "logs", model.name + ".log")
    command = [engine, *pipeline_arguments(model, out)]
    start = time.time()
    timed_out = False
    try:
        with _new_log(log_path) as log:
            log.write(("$ " + " ".join(command) + "\n").encode())
            log.flush()
            process = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                       start_new_session=True,
                                       preexec_fn=functools.partial(_end_with_parent, os.getpid()),
                                       env=_pipeline_environment(out, model.name))
            with _LIVE_LOCK:
                _LIVE.add(process)
            try:
                code = process.wait(timeout=model.timeout)
            except subprocess.TimeoutExpired:
                timed_out = True
                _end_group(process)
                code = process.returncode
            except BaseException:  # an interrupted zoo (a Ray task cancelled) leaves no pipeline behind
                _end_group(process)
                raise
            finally:
                with _LIVE_LOCK:
                    _LIVE.discard(process)
    except OSError as error:
        return _error_row(model, time.time() - start, f"cannot run {engine}: {error.strerror or error}", None)
    seconds = time.time() - start
    if timed_out:
        return _error_row(model, seconds, f"timed out after {model.timeout:g} s", code)
    return _row_after_run(model, out, start, seconds, code, log_path)


def _latest_in_place(out, name, start):
    """A re-run that does not pass is published beside a run that passed (NAME.failed, docs/cli.md);
    the zoo shows, caches and merges each model's latest run, so that run takes the old one's place."""
    beside = os.path.join(out, "runs", name + ".failed")
    report = os.path.join(beside, "report.json")
    if os.path.exists(report) and os.path.getmtime(report) >= start - 1:
        place = os.path.join(out, "runs", name)
        shutil.rmtree(place, ignore_errors=True)
        os.replace(beside, place)


def _row_after_run(model, out, start, seconds, code, log_path):
    from .dashboard import row_from_report
    _latest_in_place(out, model.name, start)
    report_path = os.path.join(out, "runs", model.name, "report.json")
    report = read_report_json(report_path) if os.path.exists(report_path) else None
    fresh = report is not None and os.path.getmtime(report_path) >= start - 1
    if code < 0:
        reason = f"killed by signal {-code} ({signal.Signals(-code).name})"
        if -code == signal.SIGKILL:
            reason += ": out of memory, or ended from outside"
        return _error_row(model, seconds, reason, code)
    if not fresh:
        return _error_row(model, seconds, _last_error_line(log_path) or f"exit code {code}, no report", code)
    row = row_from_report(model, report, seconds)
    row["exit_code"] = code
    if row["verdict"] == "error" and not row["note"]:
        row["note"] = _last_error_line(log_path)
    return row


def _last_error_line(log_path):
    """The engine's last `onnxproof: error: ...` line in the log (else its last line), shortened."""
    try:
        with open(log_path, encoding="utf-8", errors="replace") as stream:
            lines = [line.strip() for line in stream if line.strip()]
    except OSError:
        return ""
    errors = [line for line in lines if line.startswith("onnxproof: error: ")]
    line = errors[-1][len("onnxproof: error: "):] if errors else (lines[-1] if len(lines) > 1 else "")
    return line[:300]


def _error_row(model, seconds, note, code):
    from .dashboard import empty_row
    row = empty_row(model)
    # No report of this run: a link would show an earlier run's, or nothing.
    row.update(verdict="error", seconds=round(seconds, 1), note=note, exit_code=code, report=None)
    return row
