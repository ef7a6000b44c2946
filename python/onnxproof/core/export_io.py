"""The export's two ways out: progress lines on stderr (the engine forwards those starting
`onnxproof export: `) and files written atomically (NAME.tmp-PID, then renamed)."""
import os
import sys


def progress(message):
    print(f"onnxproof export: {message}", file=sys.stderr, flush=True)


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
