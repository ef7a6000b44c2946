"""The export's two ways out: progress lines on stderr (the engine forwards those starting
`onnxproof export: `) and files written atomically (NAME.tmp-PID, then renamed)."""
import os
import sys


# While prove() sends this process's output to export.log (engine.captured_output), progress
# lines are also written here: the caller's terminal.
_echo_fd = None


def echo_progress_to(fd):
    """Progress lines also go to file descriptor `fd` (None: stderr only); the previous setting."""
    global _echo_fd
    previous, _echo_fd = _echo_fd, fd
    return previous


def progress(message):
    """One progress line, in one write: print() writes the text and its newline apart, and where
    stderr is unbuffered (PYTHONUNBUFFERED) another process's output on the same pipe (the
    reference child's model printing) could land between them, inside the line the engine forwards."""
    line = f"onnxproof export: {message}\n"
    sys.stderr.write(line)
    sys.stderr.flush()
    if _echo_fd is not None:
        os.write(_echo_fd, line.encode("utf-8", "replace"))


def temporary_path(path):
    """A name beside `path` that no other run uses (the engine's convention: NAME.tmp-PID)."""
    return f"{path}.tmp-{os.getpid()}"


def write_atomically(path, data):
    mode = "wb" if isinstance(data, bytes) else "w"
    temporary = temporary_path(path)
    try:
        with open(temporary, mode) as handle:
            handle.write(data)
        os.replace(temporary, path)
    except OSError as error:
        if error.filename is None:  # a failed write() names no file: the error names the one meant
            raise OSError(error.errno, error.strerror, path) from error
        raise
    finally:
        if os.path.exists(temporary):
            os.remove(temporary)
