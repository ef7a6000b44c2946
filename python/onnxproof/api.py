"""The Python API: the whole pipeline on a model object in memory.

    report = onnxproof.prove(model, (x,), dynamic_axes={"x": {0: "batch"}})

prove() hands the model to the source framework that owns it (core/frameworks.py; PyTorch's is
torch/api.py), which exports it in this process and has one engine process prove the export;
check() and parity() run single engine commands on ONNX files.
"""
import json
import os
import tempfile

from .core import frameworks
from .core.engine import run_engine


def prove(model, args=(), kwargs=None, **options):
    """Exports `model` called as model(*args, **kwargs), proves the export and returns its Report.
    The options are the framework's: for PyTorch, torch/api.py's prove() documents them."""
    return frameworks.for_object(model).prove(model, args, kwargs, **options)


def check(path):
    """The checker, shape inference and static findings for an ONNX file: the dict
    `onnxproof check --json` writes (findings with codes, the model's summary)."""
    return _json_of(["check", os.fspath(path)])


def parity(path, reference, providers=("cpu",), rtol=None, atol=None):
    """ONNX Runtime against a reference folder (test_data_set_N/, as a run folder's reference/):
    the dict `onnxproof parity --json` writes; its "verdict" is pass or fail."""
    arguments = ["parity", os.fspath(path), "--reference", os.fspath(reference), "--provider",
                 ",".join([providers] if isinstance(providers, str) else providers)]
    arguments += ["--rtol", repr(float(rtol))] if rtol is not None else []
    arguments += ["--atol", repr(float(atol))] if atol is not None else []
    return _json_of(arguments)


def _json_of(arguments):
    with tempfile.TemporaryDirectory(prefix="onnxproof-") as folder:
        result = os.path.join(folder, "result.json")
        run_engine(arguments + ["--json", result], quiet=True)
        with open(result, encoding="utf-8") as handle:
            return json.load(handle)
