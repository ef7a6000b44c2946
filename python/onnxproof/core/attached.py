"""One engine process per prove(): `onnxproof pipeline --attach`, spoken to over the line protocol
onnxproof.attach/2 (include/onnxproof/pipeline/attached_front_end.h has the whole of it).

This process sends the command first (onnxproof.command/1, the whole pipeline command: the engine
checks it as it checks the command line's options); the engine answers with the opset limit of
the targets (the export needs it), waits for the export
this process makes, runs the pipeline on it and, when its own rule says the divergence is to be
localized, asks this process for PyTorch's module outputs: only this process holds the model
object. Its last message is the outcome. One JSON object a line: engine -> here on its stdout,
here -> engine on its stdin; its progress stays on stderr, passed on unless quiet.
"""
import json
import re
import signal
import subprocess
import sys
import threading

from .engine import EngineError, engine_environment, engine_path
from .errors import EXIT_USAGE, UsageError

PROTOCOL = "onnxproof.attach/2"
# How long the engine may take to end after its last message (it has written the run by then).
_EXIT_SECONDS = 60
# How long an engine that broke the protocol has to end on SIGTERM (it removes its staging) before SIGKILL.
_TERM_SECONDS = 10
# The longest line either side sends, its newline not counted (k_max_attach_line_bytes in the
# engine's header; counted here in characters, each at least a byte).
MAX_LINE = 1 << 20
# The thread passing the engine's progress on (torch/reference_ahead.py knows it is harmless to a fork:
# it only forwards lines, and the child never writes through it).
PROGRESS_THREAD = "onnxproof-engine-progress"
# The most of a free text (a reason, the engine's error) one message or error line carries.
_MAX_TEXT = 16 << 10


class AttachedEngine:
    """`onnxproof pipeline --attach` for one prove(), sent `command` (proving.engine_command) first;
    a context manager that leaves no engine behind: on the way out its stdin closes (the engine
    ends on end of input) and it is waited for, then killed when it does not end."""

    def __init__(self, command, quiet):
        self._quiet = quiet
        self._held = []      # progress held back while the export captures this process's output
        self._holding = False
        self._errors = []    # the engine's "onnxproof: error: " lines
        self._lock = threading.Lock()
        self._process = subprocess.Popen(
            [engine_path(), "pipeline", "--attach"], env=engine_environment(), stdin=subprocess.PIPE,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, errors="replace", bufsize=1)
        self._progress = threading.Thread(target=self._pass_progress_on, daemon=True, name=PROGRESS_THREAD)
        self._progress.start()
        try:  # an engine that ended already (a bad command line) says why in what it sent
            self._process.stdin.write(json.dumps({"event": "command", "protocol": PROTOCOL, "command": command}) + "\n")
            self._process.stdin.flush()
        except OSError:
            pass

    def __enter__(self):
        return self

    def __exit__(self, *exception):
        self.close()

    def opset_limit(self):
        """The first message: {"opset", "reason", "op_limits", "portable", "portable_reason"} for the targets."""
        message = self._receive("opset_limit")
        if message.get("protocol") != PROTOCOL:
            raise EngineError(f"the engine speaks {message.get('protocol')!r}, not {PROTOCOL}: reinstall onnxproof")
        return message

    def hold_progress(self, holding):
        """While the export runs, this process's stderr is its export.log: the engine's progress
        waits, and is passed on when `holding` turns false."""
        with self._lock:
            self._holding = holding
            released = [] if holding else self._held
            if not holding:
                self._held = []
        for line in released:
            self._show(line)

    def abort(self, reason):
        """The export did not happen: the engine ends without a run, and says nothing more."""
        self._quiet = True
        try:
            self._send({"event": "abort", "reason": str(reason)[:_MAX_TEXT]})
        except EngineError:
            pass  # it has ended already: the export's own error is the one to raise

    def prove(self, folder, capture, export_again=None):
        """Hands the export in `folder` over and answers the engine's capture requests with
        `capture(folder, model_file, case)` and its repair's export requests with
        `export_again(folder, exporter, opset)` (an exception is the reason it failed) until the
        outcome: {"verdict", "report", "error"}."""
        self._send({"event": "export_ready", "folder": folder})
        while True:
            message = self._receive("capture", "export_again", "outcome")
            if message["event"] == "outcome":
                if message.get("verdict") not in ("pass", "fail", "error") or not isinstance(message.get("report"), str):
                    self._violated(f"the engine sent an outcome without a verdict and a report: {_excerpt(message)}")
                return message
            if message["event"] == "export_again":
                self._send(self._export_again(export_again, message))
                continue
            if not all(isinstance(message.get(field), str) for field in ("folder", "model_file", "case")):
                self._violated(f"the engine sent a capture request without its folder, model file and case: "
                               f"{_excerpt(message)}")
            self._send(_answer(capture, message))

    def _export_again(self, export_again, request):
        """The answer to a repair's export request: export_ready, or export_failed with the reason."""
        if not (isinstance(request.get("folder"), str) and isinstance(request.get("exporter"), str)
                and isinstance(request.get("opset"), int)):
            self._violated(f"the engine sent an export request without its folder, exporter and opset: "
                           f"{_excerpt(request)}")
        if export_again is None:
            return {"event": "export_failed", "reason": "this front end exports once"}
        try:
            export_again(request["folder"], request["exporter"], request["opset"])
        except Exception as error:  # noqa: BLE001 -- a failed candidate export is a row of the repair's table
            return {"event": "export_failed", "reason": _one_line(f"{type(error).__name__}: {error}")}
        return {"event": "export_ready", "folder": request["folder"]}

    def close(self):
        """Ends the conversation: the engine sees end of input and ends; one that does not is killed."""
        try:
            self._process.stdin.close()
        except OSError:
            pass
        try:
            self._process.wait(timeout=_EXIT_SECONDS)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait()
        self._progress.join()
        self._process.stdout.close()

    def _send(self, message):
        try:
            self._process.stdin.write(json.dumps(message) + "\n")
            self._process.stdin.flush()
        except OSError:
            self._fail("the engine ended before it was sent " + message["event"])

    def _receive(self, *events):
        """The next message, one of `events`; an "error" message raised as the engine's error.
        A line past MAX_LINE (never read further), cut off by the engine's end, not a JSON object
        with an "event", or another event: the engine broke the protocol (_violated)."""
        awaited = " or ".join(events)
        line = self._process.stdout.readline(MAX_LINE + 1)
        if not line:
            self._fail(f"the engine ended before it sent {awaited}")
        if not line.endswith("\n"):
            if len(line) > MAX_LINE:
                self._violated(f"the engine sent a line longer than {MAX_LINE} characters where {awaited} was expected")
            self._violated(f"the engine ended mid-line where {awaited} was expected: {_excerpt(line)}")
        try:
            message = json.loads(line)
        except ValueError:
            message = None
        if not isinstance(message, dict):
            self._violated(f"the engine sent a malformed line where {awaited} was expected: {_excerpt(line)}")
        if message.get("event") == "error":
            raise (UsageError if message.get("code") == "usage" else EngineError)(_one_line(message.get("message")))
        if message.get("event") not in events:
            self._violated(f"the engine sent {_excerpt(message.get('event'))} where {awaited} was expected")
        return message

    def _violated(self, what):
        """The engine broke the protocol: it is ended now (SIGTERM, then SIGKILL), not waited
        for, and `what` raised as an EngineError."""
        if self._process.poll() is None:
            self._process.terminate()
            try:
                self._process.wait(timeout=_TERM_SECONDS)
            except subprocess.TimeoutExpired:
                self._process.kill()
        self.close()
        raise EngineError(what)

    def _fail(self, what):
        """The engine ended early: UsageError (exit 2) or EngineError with its last error line; an
        engine that Ctrl-C ended (the terminal sends SIGINT to the whole process group) is the
        user's interrupt: KeyboardInterrupt, as a Python program gives it."""
        self.close()
        if self._process.returncode in (-signal.SIGINT, 128 + signal.SIGINT):
            raise KeyboardInterrupt("the proof was interrupted (Ctrl-C): nothing was published")
        with self._lock:
            reason = self._errors[-1] if self._errors else f"{what}: exit code {self._process.returncode}"
        raise (UsageError if self._process.returncode == EXIT_USAGE else EngineError)(reason)

    def _pass_progress_on(self):
        for line in iter(lambda: self._process.stderr.readline(MAX_LINE), ""):  # a line without end is not held whole
            with self._lock:
                if line.startswith("onnxproof: error: "):
                    self._errors.append(line[len("onnxproof: error: "):].rstrip("\n"))
                if self._holding:
                    self._held.append(line)
                    continue
            self._show(line)
        self._process.stderr.close()

    def _show(self, line):
        """Passes a progress line on; a stderr that fails (closed, replaced by the caller) loses
        the line, never the draining: an engine whose stderr fills up would wait forever."""
        if not self._quiet:
            try:
                sys.stderr.write(line)
                sys.stderr.flush()
            except Exception:  # noqa: BLE001 -- whatever the caller's stderr raises
                pass


def _answer(capture, request):
    """The answer to a capture request: captured, or capture_failed with the reason."""
    try:
        capture(request["folder"], request["model_file"], request["case"])
    except Exception as error:  # noqa: BLE001 -- localization only explains the verdict; the engine records why not
        reason = _one_line(f"{type(error).__name__}: {error}")
        print(f"onnxproof: the divergence was not localized: {reason}", file=sys.stderr)
        return {"event": "capture_failed", "reason": reason}
    return {"event": "captured"}


def _one_line(text):
    """The engine's or a front end's free text as one line of at most _MAX_TEXT characters."""
    return re.sub(r"[\x00-\x1f\x7f]+", " ", str(text)).strip()[:_MAX_TEXT]


def _excerpt(value):
    """The start of something the engine sent, printable, for an error line."""
    return repr(value if not isinstance(value, str) else value[:200])[:300]
