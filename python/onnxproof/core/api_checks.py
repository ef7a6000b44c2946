"""prove()'s argument checks every framework's prove() takes, all made before the engine starts or
the model runs: every bad argument is one onnxproof.UsageError naming it, never a TypeError, a
ValueError or a contract error from deep inside the export."""
import collections.abc
import keyword
import math
import numbers
import os

from .errors import MAX_GENERATED_BYTES, UsageError

# The oldest opset the exporters write and the engine reads (the CLI's --opset has the same floor).
OLDEST_OPSET = 7
# A generated input may take at most this many bytes, at the example's shape and at every --sweep
# size alike (the engine's limit for --input and --sweep, export/validation.cpp).
MAX_INPUT_BYTES = MAX_GENERATED_BYTES


def check_arguments(*, exporter, targets, providers, opset, rtol, atol, samples, data_batches,
                    dynamic_shapes, dynamic_axes, sweep, kwargs, out, golden=None, exporters=("dynamo", "torchscript")):
    """Raises UsageError for the first of prove()'s arguments that has the wrong type or value;
    `exporters`: the framework's (besides auto)."""
    if exporter not in ("auto",) + tuple(exporters):
        raise UsageError(f"exporter must be auto, {' or '.join(exporters)}, not {exporter!r}")
    for name, value in (("targets", targets), ("providers", providers)):
        if not isinstance(value, str) and not (_iterable(value) and all(isinstance(v, str) for v in value)):
            raise UsageError(f"{name} must be a name, comma-separated names or a list of names, not {value!r}")
    if opset is not None and opset != 0 and not (_integer(opset) and opset >= OLDEST_OPSET):
        raise UsageError(f"opset must be an opset number, {OLDEST_OPSET} or newer (None: the newest the targets "
                         f"support), not {opset!r}")
    for name, value in (("rtol", rtol), ("atol", atol)):
        if value is not None and not (isinstance(value, numbers.Real) and not isinstance(value, bool)
                                      and math.isfinite(value) and value >= 0):
            raise UsageError(f"{name} must be a finite number >= 0, not {value!r}")
    for name, value in (("samples", samples), ("data_batches", data_batches)):
        if not (_integer(value) and value >= 1):
            raise UsageError(f"{name} must be a whole number >= 1, not {value!r}")
    _check_dynamic_spelling(dynamic_shapes, dynamic_axes)
    if sweep is not None and not (isinstance(sweep, collections.abc.Mapping) and all(
            isinstance(label, str) and _iterable(sizes) and all(_integer(s) and s >= 1 for s in sizes)
            for label, sizes in sweep.items())):
        raise UsageError(f"sweep must map each dynamic label to whole sizes >= 1, e.g. {{'batch': [1, 8]}}, "
                         f"not {sweep!r}")
    if kwargs is not None and not isinstance(kwargs, collections.abc.Mapping):
        raise UsageError(f"kwargs must be a dict of keyword arguments, not {type(kwargs).__name__}")
    for name in kwargs or {}:  # each becomes a parameter (and an input) name
        if not isinstance(name, str) or not name.isidentifier() or keyword.iskeyword(name):
            raise UsageError(f"kwargs: {name!r} is no keyword argument name (a Python identifier)")
    for name, value in (("out", out), ("golden", golden)):
        if value is not None and not isinstance(value, (str, os.PathLike)):
            raise UsageError(f"{name} must be a folder path, not {type(value).__name__}")


def output_names(names):
    """torch.onnx.export's output_names as a list of unique non-empty names; UsageError otherwise."""
    if isinstance(names, str) or not isinstance(names, collections.abc.Sequence) or not all(
            isinstance(name, str) and name for name in names) or len(set(names)) != len(names):
        raise UsageError(f"output_names must be a list of unique non-empty names, not {names!r}")
    return list(names)


def _check_dynamic_spelling(dynamic_shapes, dynamic_axes):
    """dynamic_shapes: a dict by input name or a tuple/list in argument order, each entry a dict
    {axis: Dim}, a tuple/list per axis or None; dynamic_axes: a dict {input: {axis: label} or [axis, ...]}."""
    if dynamic_shapes is not None:
        entries = dynamic_shapes.values() if isinstance(dynamic_shapes, collections.abc.Mapping) else (
            dynamic_shapes if isinstance(dynamic_shapes, (list, tuple)) else None)
        if entries is None or not all(e is None or isinstance(e, (collections.abc.Mapping, list, tuple))
                                      for e in entries):
            raise UsageError("dynamic_shapes must be a dict {input: {axis: Dim(...)}} or a tuple in argument order "
                             f"(torch.export's spelling), not {dynamic_shapes!r}")
    if dynamic_axes is not None:
        if not isinstance(dynamic_axes, collections.abc.Mapping) or not all(
                isinstance(axes, (collections.abc.Mapping, list, tuple)) for axes in dynamic_axes.values()):
            raise UsageError("dynamic_axes must be a dict {input: {axis: label}} or {input: [axis, ...]} "
                             f"(torch.onnx's spelling), not {dynamic_axes!r}")


def _integer(value):
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


def _iterable(value):
    return isinstance(value, collections.abc.Iterable) and not isinstance(value, (str, bytes))


def given_file_config(onnx, bind, *, exporter, opset, opset_version=None, generate=0):
    """The configuration's onnx and bind for prove(onnx=...); UsageError with an option that shapes
    an export, a file that is not there, or a bind that is no {file input: model input} dict."""
    if onnx is None:
        if bind is not None:
            raise UsageError("bind names the inputs of a given ONNX file: give onnx= too")
        return {}
    if not isinstance(onnx, (str, os.PathLike)) or not (os.path.isfile(onnx) or os.path.isdir(onnx)):
        raise UsageError(f"onnx={onnx!r}: no such file or folder")
    if exporter != "auto" or opset is not None or opset_version is not None:
        raise UsageError("exporter and opset shape an export; onnx= proves the file as it is")
    if bind is not None and not (isinstance(bind, dict) and all(isinstance(k, str) and isinstance(v, str)
                                                                for k, v in bind.items())):
        raise UsageError(f"bind must be a dict {{file input name: model input name}}, not {bind!r}")
    return dict({"onnx": os.path.abspath(onnx)}, **({"bind": dict(bind)} if bind else {}))
