"""onnxproof: turn a PyTorch model into an ONNX file that can be trusted, conversion plus proof.

    import onnxproof
    report = onnxproof.prove(model, (x,), dynamic_axes={"x": {0: "batch"}})
    print(report)            # verdict, the five headline answers, findings, where the report lies

The package is also the export front end the C++ engine starts (python -m onnxproof); nothing
here imports torch until a function needs it."""

__version__ = "0.1.0"

from .api import check, parity, prove  # noqa: E402  (after __version__, which export.py reads)
from .engine import EngineError  # noqa: E402
from .errors import UsageError  # noqa: E402
from .report import Answer, Finding, ParityRow, Report, read_report  # noqa: E402
from . import golden  # noqa: E402

__all__ = ["prove", "check", "parity", "golden", "Report", "Finding", "Answer", "ParityRow", "read_report",
           "UsageError", "EngineError", "__version__"]
