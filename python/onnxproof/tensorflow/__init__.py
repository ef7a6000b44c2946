"""TensorFlow, the second source framework: Keras 3 models (on the TensorFlow backend), tf.Module
and tf.function objects with an input signature, and SavedModels, exported by tf2onnx or by Keras's
own model.export(format="onnx"), with TensorFlow's float32 outputs and a float64 twin's as the
reference.

This file is what core/frameworks.py asks; it imports nothing heavy (importing TensorFlow takes
seconds), so asking which framework owns a spec or an object never loads it. The work is in the
modules beside it (source.py loads, export.py exports, reference.py captures, api.py is prove())."""
import os
import re
import sys

NAME = "tensorflow"
TITLE = "TensorFlow"
# What `onnxproof --version` lists of this framework's interpreter (core/versions.py), by distribution.
VERSION_PACKAGES = ("tensorflow", "keras", "tf2onnx", "onnx", "onnxruntime", "numpy")

FAMILY_PREFIXES = ("keras:", "saved_model:")
ARCHIVE_SUFFIXES = (".keras",)

# A FILE.py:CALLABLE spec is TensorFlow's when its file imports TensorFlow or Keras (the engine
# applies the same rule to choose the interpreter: src/export/specs.cpp).
_IMPORTS_TENSORFLOW = re.compile(r"^\s*(import|from)\s+(tensorflow|keras|tf_keras)\b", re.MULTILINE)
# ...and not torch at its top: a PyTorch file importing TensorFlow inside a function stays PyTorch's.
_IMPORTS_TORCH_AT_TOP = re.compile(r"^(import|from)\s+torch\b", re.MULTILINE)


def owns_spec(spec):
    """keras:NAME, saved_model:DIR, FILE.keras, and FILE.py:CALLABLE whose file imports TensorFlow or
    Keras and not torch at its top."""
    if spec.startswith(FAMILY_PREFIXES) or spec.endswith(ARCHIVE_SUFFIXES):
        return True
    target = spec.rpartition(":")[0]
    if not target.endswith(".py"):
        return False
    try:
        with open(target, encoding="utf-8", errors="replace") as handle:
            text = handle.read()
        return bool(_IMPORTS_TENSORFLOW.search(text)) and not _IMPORTS_TORCH_AT_TOP.search(text)
    except OSError:
        return False  # the first framework's loader names the missing file


def owns_object(model):
    """A Keras model or layer, a tf.Module or a tf.function; TensorFlow or Keras is imported
    already when one exists, so the check looks at the object's classes' modules."""
    modules = {kind.__module__.split(".")[0] for kind in type(model).__mro__}
    return bool(modules & {"keras", "tensorflow", "tf_keras"})


def _configured_backend():
    """The backend Keras's settings file names ($KERAS_HOME/keras.json, else ~/.keras/keras.json),
    read before Keras is imported: Keras imports that backend's framework on import (a torch
    backend in an environment without torch would fail there, not be refused); None when unset."""
    import json
    home = os.environ.get("KERAS_HOME") or os.path.join(os.path.expanduser("~"), ".keras")
    try:
        with open(os.path.join(home, "keras.json"), encoding="utf-8") as handle:
            backend = json.load(handle).get("backend")
    except (OSError, ValueError, AttributeError, RecursionError):
        return None
    return backend if isinstance(backend, str) else None


def require_tensorflow():
    """TensorFlow, imported with the settings the proof needs; one line, exit 3, for an interpreter
    without it, and a usage error for a Keras backend other than TensorFlow.

    TF_ENABLE_ONEDNN_OPTS=0: TensorFlow warns that oneDNN's reordered kernels change numerics; the
    reference is the plain kernels' (docs/tensorflow.md). Both are read once, at TensorFlow's import."""
    from ..core.errors import FrontEndError, UsageError
    backend = os.environ.get("KERAS_BACKEND", "tensorflow")
    if backend != "tensorflow":
        raise UsageError(f"KERAS_BACKEND={backend}: onnxproof proves Keras models on the TensorFlow backend only "
                         "(the jax and torch backends are not supported yet); unset it or set it to tensorflow")
    configured = None if "KERAS_BACKEND" in os.environ else _configured_backend()
    if configured not in (None, "tensorflow"):
        raise UsageError(f"Keras's settings file (keras.json) chooses its {configured} backend: onnxproof proves Keras "
                         "models on the TensorFlow backend only; set KERAS_BACKEND=tensorflow")
    if "tensorflow" not in sys.modules:
        os.environ["TF_ENABLE_ONEDNN_OPTS"] = "0"
        os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    try:
        import keras
        import tensorflow
        import tf2onnx  # noqa: F401
    except ImportError as error:
        raise FrontEndError(f"{sys.executable} cannot import {error.name or error}: TensorFlow models need "
                            "tensorflow, keras and tf2onnx (scripts/setup.sh makes .venv-tf with them; "
                            "pip install 'onnxproof[tensorflow]' in your own environment)") from error
    if keras.backend.backend() != "tensorflow":  # set by ~/.keras/keras.json rather than the variable
        raise UsageError(f"Keras runs on its {keras.backend.backend()} backend (~/.keras/keras.json): onnxproof "
                         "proves Keras models on the TensorFlow backend only; set KERAS_BACKEND=tensorflow")
    return tensorflow


def run_export(config):
    from .export import export  # imports TensorFlow inside the run folder's Keras home
    return export(config)


def run_localize(request):
    from .export import keras_home_inside
    from .localize import main
    with keras_home_inside(request["run"]):
        require_tensorflow()
        return main(request)


def prove(model, args=(), kwargs=None, **options):
    from .api import prove as prove_tensorflow
    return prove_tensorflow(model, args, kwargs, **options)
