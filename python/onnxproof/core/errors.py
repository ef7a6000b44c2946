"""Errors that end the front end with one line and a documented exit code."""

EXIT_FAIL = 1   # the proof failed: the model has a problem (findings say which)
EXIT_USAGE = 2  # a malformed option or spec
EXIT_ERROR = 3  # the tool could not run: missing file, import error, missing dependency
EXIT_IO = 4     # a file could not be written (full disk, quota, read-only file system); the engine's io error, exit 3

# The most bytes one generated input may take: the engine's limit on --input and --sweep sizes
# (here, not in cases.py, so that prove()'s checks import without numpy).
MAX_GENERATED_BYTES = 4 << 30


def printable(text):
    """`text` with its control characters (C0, DEL, C1) written as escapes: a model's or a file's
    text printed to a terminal cannot move the cursor, clear the screen or split a line."""
    return "".join(ch if ch.isprintable() or ch == " " else ascii(ch)[1:-1] for ch in str(text))


class FrontEndError(Exception):
    """A user-facing error: printed as `onnxproof: error: <message>`, exit with `exit_code`."""

    def __init__(self, message, exit_code=EXIT_ERROR):
        super().__init__(message)
        self.exit_code = exit_code


class UsageError(FrontEndError):
    def __init__(self, message):
        super().__init__(message, EXIT_USAGE)


# The errno values that say a write failed for want of room or permission, not for a bug of ours.
_WRITE_ERRNOS = ("ENOSPC", "EDQUOT", "EROFS", "EFBIG")


def write_failure(error):
    """A FrontEndError saying `cannot write PATH: REASON` (exit EXIT_IO) for an OSError that is a
    failed write (full disk, quota, file size limit, read-only file system); else None."""
    import errno
    if not isinstance(error, OSError) or errno.errorcode.get(error.errno) not in _WRITE_ERRNOS:
        return None
    path = error.filename if error.filename is not None else "a file of the export"
    return FrontEndError(f"cannot write {path}: {error.strerror or error}", EXIT_IO)
