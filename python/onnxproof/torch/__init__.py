"""PyTorch, the first source framework: models from file.py:callable specs, TorchScript archives
and the torchvision:, timm: and hf: families, exported by the dynamo or the TorchScript exporter,
with PyTorch's float32 and float64 outputs as the reference.

This file is what core/frameworks.py asks; it imports nothing heavy, so asking which framework owns
a spec or an object never loads torch. The work is in the modules beside it (whose names are no
names here: importing torch/export.py sets this package's `export` to that module)."""
import sys

NAME = "torch"
TITLE = "PyTorch"
# What `onnxproof --version` lists of this framework's interpreter (core/versions.py), by distribution.
VERSION_PACKAGES = ("torch", "torchvision", "onnx", "onnxscript", "numpy")

FAMILY_PREFIXES = ("torchvision:", "timm:", "hf:")
ARCHIVE_SUFFIXES = (".pt", ".pth")


def owns_spec(spec):
    """The spec forms only PyTorch has: its families and TorchScript archives. A FILE.py:CALLABLE
    or MODULE:CALLABLE spec, which no framework claims by its form, goes to the first framework
    (core/frameworks.py), PyTorch."""
    return spec.startswith(FAMILY_PREFIXES) or spec.endswith(ARCHIVE_SUFFIXES)


def owns_object(model):
    """An nn.Module (a ScriptModule included); torch is imported already when one exists."""
    torch = sys.modules.get("torch")
    return torch is not None and isinstance(model, torch.nn.Module)


def run_export(config):
    require_torch()
    from .export import export
    return export(config)


def require_torch():
    """One line, exit 3, for an interpreter without torch (the engine may start any --python)."""
    try:
        import torch  # noqa: F401
    except ImportError as error:
        from ..core.errors import FrontEndError
        raise FrontEndError(f"{sys.executable} cannot import {error.name or error}: PyTorch models need torch, onnx "
                            "and numpy (pip install 'onnxproof[torch]', a CPU-only torch installed first is kept; "
                            "Debian: /usr/bin/python3 with python3-torch, python3-onnx, python3-numpy)")


def run_localize(request):
    require_torch()
    from .localize import main
    return main(request)


def prove(model, args=(), kwargs=None, **options):
    from .api import prove as prove_torch
    return prove_torch(model, args, kwargs, **options)
