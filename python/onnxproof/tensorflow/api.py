"""The Python API for TensorFlow models (onnxproof.prove hands a keras.Model, a tf.Module or a
tf.function here): the export and TensorFlow's reference happen in this process, on the object;
the proof is the same attached engine run as PyTorch's (core/proving.py).

    report = onnxproof.prove(keras_model, (x,), dynamic_axes={"tokens": {0: "batch", 1: "sequence"}})
"""
import collections.abc
import hashlib
import itertools
import json
import os
import re

from ..core import api_checks as checks, proving
from ..core.data import as_array, samples_from
from ..core.engine import name_list
from ..core.errors import UsageError
from .exporters import EXPORTERS

DEFAULT_DATA_BATCHES = 8


def prove(model, args=(), kwargs=None, *, dynamic_axes=None, dynamic_shapes=None, data=None,
          data_batches=DEFAULT_DATA_BATCHES, opset=None, exporter="auto", targets=("ort-cpu",), providers=("cpu",),
          sweep=None, samples=3, rtol=None, atol=None, out=None, golden=None, quiet=False, localize=True,
          generate=0, quantize=None, repair=False, repair_budget=900, onnx=None, bind=None):
    """Exports `model` (a keras.Model, a tf.Module whose __call__ is a tf.function with an input
    signature, or such a tf.function) called on `args` (one array or tensor per input, in the
    model's input order), proves the export and returns its Report.

    dynamic_axes: {input: {axis: label}} or {input: [axis, ...]}; by default every None axis of
        the model's input signature (batch, sequence, height, width, ...).
    exporter: "auto" (tf2onnx, then Keras's own), "tf2onnx" or "keras".
    data: real inputs to prove on: a list of samples (tuples in input order or dicts by name).
    onnx, bind: an ONNX file you made (tf2onnx, Keras's model.export(format="onnx")), proved as it
        is against `model`, its inputs bound to the model's by name, then position (bind={file input:
        model input} says otherwise); a file converted with --inputs-as-nchw is bound with the transpose.
    The other arguments are PyTorch's prove()'s. Raises onnxproof.UsageError for bad arguments."""
    from . import require_tensorflow
    from .export import InMemoryModel
    require_tensorflow()
    if dynamic_shapes is not None:
        raise UsageError("dynamic_shapes is torch.export's spelling; give a TensorFlow model's axes as dynamic_axes "
                         "{input: {axis: label}}, or leave them to its input signature")
    if kwargs:
        raise UsageError("kwargs: a TensorFlow model's inputs are positional, in its input signature's order")
    if generate:
        raise UsageError("generate=N proves PyTorch decoders; TensorFlow models are not supported by it yet")
    checks.check_arguments(exporter=exporter, targets=targets, providers=providers, opset=opset, rtol=rtol, atol=atol,
                           samples=samples, data_batches=data_batches, dynamic_shapes=None,
                           dynamic_axes=dynamic_axes, sweep=sweep, kwargs=None, out=out, golden=golden,
                           exporters=EXPORTERS)
    targets, providers = name_list(targets), name_list(providers)
    if data is not None and (isinstance(data, (str, bytes, dict)) or not isinstance(data, collections.abc.Iterable)):
        raise UsageError(f"data must be a list (or an iterable) of samples, not {type(data).__name__}")
    source, example = _source_and_example(model, args, dynamic_axes)
    names = [name for name, _, _ in source.signature]
    config = proving.export_config(_describe(model), [_input_spec(name, example[name]) for name in names],
                                   _dynamic_from(dynamic_axes, source), opset=opset, exporter=exporter, sweep=sweep,
                                   samples=samples, framework="tensorflow")
    config.update(checks.given_file_config(onnx, bind, exporter=exporter, opset=opset))
    proving.check_config(config)
    out = os.path.abspath(out or _default_out(model, config))
    samples_given = None
    if data is not None:
        samples_given = [{name: _fitted(name, array, source) if name in names else array
                          for name, array in sample.items()}
                         for sample in samples_from(itertools.islice(iter(data), int(data_batches)), names, "data")]
    given = InMemoryModel(source, config["model"], example, samples_given)
    command = proving.engine_command(out, targets, providers, rtol=rtol, atol=atol, localize=localize, golden=golden,
                                         quantize=quantize, repair=repair, repair_budget=repair_budget)

    def export(config):
        from .export import Exporter, keras_home_inside
        with keras_home_inside(config["out"]):
            Exporter(config, given).run()

    def capture(folder, model_file, case):  # divergence localization, TensorFlow's half
        from .export import keras_home_inside
        from .localize import write_localization
        with keras_home_inside(folder):
            write_localization(folder, model_file, case, source)
    return proving.run_attached(command, config, export, capture, out, quiet)


def _source_and_example(model, args, dynamic_axes):
    """The model's Source and the example ({input name: array} in its dtypes). A subclassed Keras
    model without Input layers takes its signature from args (input_0, ...), free on the axes
    dynamic_axes names."""
    from .source import object_source
    values = [as_array(value) for value in (list(args) if isinstance(args, (tuple, list)) else [args])]
    inputs = [{"name": f"input_{index}", "dims": list(value.shape), "dtype": str(value.dtype)}
              for index, value in enumerate(values)]
    # The args' shapes and dynamic_axes are the signature only of a model without one of its own.
    dynamic = [{"input": name, "axis": int(axis)} for name, axes in (dynamic_axes or {}).items()
               for axis in (axes if not isinstance(axes, dict) else axes.keys())]
    source = object_source(model, _describe(model), inputs, dynamic)
    if len(values) != len(source.signature):
        raise UsageError(f"args has {len(values)} value(s); the model's input signature has {len(source.signature)} "
                         f"({', '.join(name for name, _, _ in source.signature)})")
    example = {}
    for (name, shape, dtype), array in zip(source.signature, values):
        if array.ndim != len(shape) or any(d is not None and d != s for d, s in zip(shape, array.shape)):
            raise UsageError(f"input {name!r}: args gives shape {tuple(array.shape)}, the model's signature is "
                             f"{tuple(shape)}")
        example[name] = _fitted(name, array, source)
    return source, example


def _fitted(name, array, source):
    """`array` in the input's dtype when the values survive the cast (float64 data for a float32
    model); UsageError when they would not (floats for an int input, negatives for an unsigned one)."""
    import numpy as np
    dtype = dict((n, d) for n, _, d in source.signature).get(name)
    if dtype is None or str(array.dtype) == dtype:
        return array
    try:
        wanted = np.dtype(dtype)
    except TypeError as error:
        raise UsageError(f"input {name!r} is {dtype}: not supported yet") from error
    cast = array.astype(wanted)
    lossless = wanted.kind == "f" and array.dtype.kind in "fiub" or np.array_equal(cast, array)
    if not lossless:
        raise UsageError(f"input {name!r}: the model takes {dtype}, and the {array.dtype} values given do not "
                         f"survive the cast; give {dtype} values")
    return cast


def _input_spec(name, array):
    spec = {"name": name, "dims": [int(d) for d in array.shape], "dtype": str(array.dtype)}
    if array.dtype.kind in "iu" and array.size:
        spec["range"] = [int(array.min()), int(array.max()) + 1]
    return spec


def _dynamic_from(dynamic_axes, source):
    """The config's dynamic axes: dynamic_axes as given, else empty (the export then frees every
    None axis of the signature, signature.py)."""
    if dynamic_axes is None:
        return []
    names = [name for name, _, _ in source.signature]
    dynamic = []
    for name, axes in dict(dynamic_axes).items():
        if name not in names:
            raise UsageError(f"a dynamic axis names input {name!r}; the inputs are {', '.join(names)}")
        items = axes.items() if isinstance(axes, dict) else ((axis, f"{name}_dim{axis}") for axis in axes)
        dynamic += [{"input": name, "axis": int(axis), "label": re.sub(r"\W", "_", str(label))} for axis, label in items]
    return dynamic


def _describe(model):
    kind = type(model)
    name = getattr(model, "name", None)
    return f"{kind.__module__}.{kind.__qualname__}" + (f" '{name}'" if isinstance(name, str) and name else "")


def _default_out(model, config):
    """onnxproof-out/<model name>-<8 hex digits of the inputs and the weights>: a retrained model
    gets a folder of its own."""
    digest = hashlib.sha256(json.dumps([config["model"], config["inputs"], config["dynamic"]], sort_keys=True).encode())
    for variable in getattr(model, "variables", None) or getattr(model, "weights", None) or []:
        digest.update(variable.name.encode())
        digest.update(as_array(variable).tobytes())
    name = re.sub(r"[^A-Za-z0-9._-]", "_", getattr(model, "name", None) or type(model).__name__).lstrip(".")
    return os.path.join("onnxproof-out", f"{name or 'model'}-{digest.hexdigest()[:8]}")


