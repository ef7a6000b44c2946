"""Finds and runs the C++ engine (the `onnxproof` binary) for the Python API and the console
script. The engine runs the proof; this process only exports (python -m onnxproof is the same
front end the engine starts for a --model spec)."""
import contextlib
import importlib.util
import os
import subprocess
import sys

from . import export_io
from .errors import EXIT_ERROR, EXIT_USAGE, FrontEndError, UsageError

PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # onnxproof/, above core/
# Where the wheel puts the engine (pyproject.toml: wheel.install-dir), and where a checkout builds it.
_BUNDLED = os.path.join(PACKAGE, "_engine", "bin", "onnxproof")
_CHECKOUT = os.path.join(os.path.dirname(os.path.dirname(PACKAGE)), "build", "bin", "onnxproof")


def name_list(value):
    """"ort-cpu", "ort-cpu,tensorrt" or ("ort-cpu", "tensorrt") -> ("ort-cpu", "tensorrt")."""
    items = value.split(",") if isinstance(value, str) else list(value)
    return tuple(item.strip() for item in items if item.strip())


class EngineError(FrontEndError):
    """The engine could not do its job (exit 3): its one-line reason."""


def engine_path():
    """$ONNXPROOF_ENGINE, else the wheel's bundled binary, else this checkout's build."""
    for candidate in (os.environ.get("ONNXPROOF_ENGINE"), _BUNDLED, _CHECKOUT):
        if candidate and os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return candidate
    raise EngineError("the onnxproof engine was not found: install the onnxproof wheel, build this checkout "
                      "(make demo), or set ONNXPROOF_ENGINE to the onnxproof binary")


def engine_environment():
    """The engine starts its Python front end with this interpreter and package: the ones running
    now, for PyTorch and TensorFlow models alike (a user's own choice in $ONNXPROOF_PYTHON,
    $ONNXPROOF_TF_PYTHON or $ONNXPROOF_PYTHONPATH stands)."""
    environment = dict(os.environ)
    environment.setdefault("ONNXPROOF_PYTHON", sys.executable)
    environment.setdefault("ONNXPROOF_TF_PYTHON", sys.executable)
    environment.setdefault("ONNXPROOF_PYTHONPATH", os.path.dirname(PACKAGE))
    if "ONNXPROOF_OPENVINO" not in environment and (libraries := installed_openvino_libraries()):
        environment["ONNXPROOF_OPENVINO"] = libraries  # providers=("cpu", "openvino") on the pip package
    return environment


def installed_openvino_libraries():
    """The `openvino` package's own libs/ folder where it is installed in this environment (pip
    install 'onnxproof[openvino]'), found without importing it; None otherwise (the engine's own
    .deps/openvino in a checkout, or ONNXPROOF_OPENVINO, stand then)."""
    spec = importlib.util.find_spec("openvino")
    if spec is None or not spec.submodule_search_locations:
        return None
    for folder in spec.submodule_search_locations:
        libraries = os.path.join(folder, "libs")
        if os.path.isdir(libraries) and any(name.startswith("libopenvino_c.so") for name in os.listdir(libraries)):
            return libraries
    return None


def run_engine(arguments, quiet=False):
    """Runs `onnxproof ARGUMENTS`; returns (exit code, stdout). Its progress (stderr) is passed on
    unless `quiet`; exit 2 raises UsageError and 3 EngineError with the engine's last error line."""
    process = subprocess.run([engine_path(), *arguments], env=engine_environment(), stdin=subprocess.DEVNULL,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, errors="replace")
    if not quiet and process.stderr:
        sys.stderr.write(process.stderr)
    if process.returncode in (EXIT_USAGE, EXIT_ERROR) or process.returncode < 0:
        lines = [line for line in process.stderr.splitlines() if line.startswith("onnxproof: error: ")]
        reason = lines[-1][len("onnxproof: error: "):] if lines else (
            f"the engine ended with exit code {process.returncode}: {process.stderr.strip()[-500:]}")
        raise (UsageError if process.returncode == EXIT_USAGE else EngineError)(reason)
    return process.returncode, process.stdout


@contextlib.contextmanager
def captured_output(log_path, quiet, append=False):
    """Everything this process prints, logs or warns while the block runs (torch's and the
    exporter's chatter, from Python or C++) goes to `log_path`, as the engine keeps export.log for a
    child; progress lines ("onnxproof export: ...") still reach the terminal unless `quiet`. Log
    records and warnings are written there too, not handed to the caller's handlers (pytest's
    would replay them under a failing test)."""
    # File descriptors 1 and 2 point at the log file itself. A pipe drained by a thread of this
    # process deadlocked: C++ code that writes past the pipe's 64 KiB while holding the GIL (the
    # TorchScript exporter's warnings on a PT2E graph) waits for a reader that needs the GIL.
    sys.stdout.flush()
    sys.stderr.flush()
    saved = {fd: os.dup(fd) for fd in (1, 2)}
    log = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | (0 if append else os.O_TRUNC), 0o644)
    for fd in (1, 2):
        os.dup2(log, fd)
    os.close(log)
    echo = export_io.echo_progress_to(None if quiet else saved[2])
    try:
        with _logs_and_warnings_to_stderr():
            yield
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        export_io.echo_progress_to(echo)
        for fd, copy in saved.items():
            os.dup2(copy, fd)
            os.close(copy)


@contextlib.contextmanager
def _logs_and_warnings_to_stderr():
    """While the block runs, Python's sys.stdout and sys.stderr are file descriptors 1 and 2, every
    logger's handlers one that writes to stderr, and warnings are shown there, whatever streams,
    handlers and warning recorders the caller had; all are restored afterwards."""
    import io
    import logging
    import warnings
    # Python-level streams too: a test runner's sys.stderr (pytest's) writes past file descriptor 2.
    streams = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = (io.TextIOWrapper(os.fdopen(fd, "wb", closefd=False), line_buffering=True,
                                               errors="replace") for fd in (1, 2))
    # Every logger that has handlers (the root, torch's own, and those a test runner attached to
    # non-propagating loggers, as pytest does) writes to this stream instead while the block runs.
    loggers = [logging.getLogger()] + [logger for logger in logging.Logger.manager.loggerDict.values()
                                       if isinstance(logger, logging.Logger) and logger.handlers]
    saved = [(logger, logger.handlers) for logger in loggers]
    here = logging.StreamHandler(sys.stderr)
    for logger in loggers:
        logger.handlers = [here]
    try:
        with warnings.catch_warnings():
            warnings.showwarning = _show_warning
            yield
    finally:
        for logger, handlers in saved:
            logger.handlers = handlers
        for stream in (sys.stdout, sys.stderr):
            stream.flush()
        sys.stdout, sys.stderr = streams


def _show_warning(message, category, filename, lineno, file=None, line=None):
    import warnings
    sys.stderr.write(warnings.formatwarning(message, category, filename, lineno, line))
