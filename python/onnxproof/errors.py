"""Errors that end the front end with one line and a documented exit code."""

EXIT_FAIL = 1   # the proof failed: the model has a problem (findings say which)
EXIT_USAGE = 2  # a malformed option or spec
EXIT_ERROR = 3  # the tool could not run: missing file, import error, missing dependency


class FrontEndError(Exception):
    """A user-facing error: printed as `onnxproof: error: <message>`, exit with `exit_code`."""

    def __init__(self, message, exit_code=EXIT_ERROR):
        super().__init__(message)
        self.exit_code = exit_code


class UsageError(FrontEndError):
    def __init__(self, message):
        super().__init__(message, EXIT_USAGE)
