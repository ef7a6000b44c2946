"""ONNX Runtime's Python package, when the front end imports it in the user's own process (prove()
checks that the runtime loads an export there)."""
import os
import sys


def import_onnxruntime():
    """onnxruntime, with its telemetry off when onnxproof is the first to import it: importing
    ONNX Runtime 1.30's Python package writes ~/.cache/Microsoft/DeveloperTools/.onnxruntime/ and
    $TMPDIR/mat-debug-PID.log and $TMPDIR/.ses (measured here), and a proof writes nothing outside
    its run folder. The variable stays set for the process (docs/python-api.md); a value the user
    set stands, and a process that imported onnxruntime before keeps what it chose."""
    if "onnxruntime" not in sys.modules:
        os.environ.setdefault("ORT_DISABLE_TELEMETRY", "1")
    import onnxruntime
    return onnxruntime
