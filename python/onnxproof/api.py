"""The Python API: the whole pipeline on a model object in memory.

    report = onnxproof.prove(model, (x,), dynamic_axes={"x": {0: "batch"}})

prove() hands the model to the source framework that owns it (core/frameworks.py; PyTorch's is
torch/api.py), which exports it in this process and has one engine process prove the export;
check() and parity() run single engine commands on ONNX files.
"""
import functools
import json
import os
import tempfile

from .core import frameworks
from .core.engine import name_list, run_engine


def _documented_as_torch(function):
    """prove() shows PyTorch's signature and docstring (help(), IDEs): torch/api.py imports no
    torch at module level, so borrowing them costs nothing."""
    from .torch import api as torch_api
    return functools.wraps(torch_api.prove)(function)


@_documented_as_torch
def prove(model, args=(), kwargs=None, **options):
    """Exports `model` called as model(*args, **kwargs), proves the export and returns its Report,
    with the options of the model's framework (core/frameworks.py)."""
    return frameworks.for_object(model).prove(model, args, kwargs, **options)


def check(path):
    """The checker, shape inference and static findings for an ONNX file: the dict
    `onnxproof check --json` writes (findings with codes, the model's summary)."""
    return _json_of(["check", os.fspath(path)])


def parity(path, reference, providers=("cpu",), rtol=None, atol=None):
    """ONNX Runtime against a reference folder (test_data_set_N/, as a run folder's reference/):
    the dict `onnxproof parity --json` writes; its "verdict" is pass or fail."""
    arguments = ["parity", os.fspath(path), "--reference", os.fspath(reference), "--provider",
                 ",".join(name_list(providers))]
    arguments += ["--rtol", repr(float(rtol))] if rtol is not None else []
    arguments += ["--atol", repr(float(atol))] if atol is not None else []
    return _json_of(arguments)


def _json_of(arguments):
    with tempfile.TemporaryDirectory(prefix="onnxproof-") as folder:
        result = os.path.join(folder, "result.json")
        run_engine(arguments + ["--json", result], quiet=True)
        with open(result, encoding="utf-8") as handle:
            return json.load(handle)
