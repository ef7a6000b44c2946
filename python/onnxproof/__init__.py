"""onnxproof: turn a trained model into an ONNX file that can be trusted, conversion plus proof.

    import onnxproof
    report = onnxproof.prove(model, (x,), dynamic_axes={"x": {0: "batch"}})
    print(report)            # verdict, the five headline answers, findings, where the report lies

The package is also the export front end the C++ engine starts (python -m onnxproof). Its
framework-neutral core (core/) imports no source framework; each framework has a subpackage
(torch/) that imports it only when a function needs it."""

from . import golden
from .api import check, parity, prove
from .core.engine import EngineError
from .core.errors import UsageError
from .core.report import Answer, Finding, ParityRow, Report, read_report
from .core import ONNXPROOF_VERSION as __version__

__all__ = ["prove", "check", "parity", "golden", "Report", "Finding", "Answer", "ParityRow", "read_report",
           "UsageError", "EngineError", "__version__"]
