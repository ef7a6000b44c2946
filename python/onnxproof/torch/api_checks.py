"""prove()'s argument checks, all made before the engine starts or the model runs: every bad
argument is one onnxproof.UsageError naming it, never a TypeError, a ValueError or a contract
error from deep inside the export. Also the run folder's default name and the staging folders
that killed prove() calls left behind."""
import collections.abc
import itertools
import math
import numbers
import os
import re
import shutil

from ..core.errors import MAX_GENERATED_BYTES, UsageError

# The oldest opset the exporters write and the engine reads (the CLI's --opset has the same floor).
OLDEST_OPSET = 7
# A generated input may take at most this many bytes, at the example's shape and at every --sweep
# size alike (the engine's limit for --input and --sweep, export/validation.cpp).
MAX_INPUT_BYTES = MAX_GENERATED_BYTES
# prove()'s staging folders: STAGING_PREFIX + the pid of the process exporting + "-" + random.
STAGING_PREFIX = ".onnxproof-export-"


def check_inputs(args, data):
    """Raises UsageError unless args is a tensor or a tuple/list, and data None, a tensor or an
    iterable of samples (a list, a DataLoader)."""
    import torch
    if not isinstance(args, (torch.Tensor, tuple, list)):
        raise UsageError(f"args must be a tensor or a tuple of tensors, not {type(args).__name__}")
    if data is not None and not isinstance(data, (torch.Tensor, collections.abc.Iterable)) or isinstance(
            data, (str, bytes, collections.abc.Mapping)):
        raise UsageError(f"data must be a tensor, a list of samples or a DataLoader, not {type(data).__name__}")


def check_arguments(*, exporter, targets, providers, opset, rtol, atol, samples, data_batches,
                    dynamic_shapes, dynamic_axes, sweep, kwargs, out, golden=None):
    """Raises UsageError for the first of prove()'s arguments that has the wrong type or value."""
    if exporter not in ("auto", "dynamo", "torchscript"):
        raise UsageError(f"exporter must be auto, dynamo or torchscript, not {exporter!r}")
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
    for name, value in (("out", out), ("golden", golden)):
        if value is not None and not isinstance(value, (str, os.PathLike)):
            raise UsageError(f"{name} must be a folder path, not {type(value).__name__}")


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


def check_sweep(sweep, dynamic, tensors):
    """Raises UsageError for a sweep label no dynamic axis has, or a sweep size at which an input
    would take over MAX_INPUT_BYTES (the engine refuses --sweep the same way)."""
    labels = {axis["label"] for axis in dynamic}
    for label in sweep or {}:
        if label not in labels:
            raise UsageError(f"sweep names '{label}', which no dynamic axis has (labels: {', '.join(sorted(labels))})")
    largest = {label: max(sizes) for label, sizes in (sweep or {}).items() if list(sizes)}
    for name, tensor in tensors.items():
        dims = list(tensor.shape)
        for axis in dynamic:
            if axis["input"] == name and axis["label"] in largest:
                dims[axis["axis"]] = largest[axis["label"]]
        if math.prod(dims) * tensor.element_size() > MAX_INPUT_BYTES:
            raise UsageError(f"sweep: input {name!r} at {'x'.join(map(str, dims))} of {tensor.dtype} is over 4 GiB; "
                             "sweep smaller sizes")


def check_opset(opset, ceiling, reason):
    """Raises UsageError for an opset newer than the engine can prove (its limit for the targets)."""
    if opset and ceiling and opset > ceiling:
        raise UsageError(f"opset {opset} is newer than onnxproof can prove ({reason}); the newest is {ceiling}")


def default_out(model, inputs=(), dynamic=()):
    """onnxproof-out/<class name>-<8 hex digits>: the name kept to [A-Za-z0-9._-] with no leading
    dot (no class name, `../..` or `a/b`, leads out of onnxproof-out/), the digits a hash of the
    inputs' signature, the dynamic axes and every parameter and buffer. A notebook that retrains
    and proves again gets a new folder; two models of one class in one folder do not collide."""
    name = re.sub(r"[^A-Za-z0-9._-]", "_", type(model).__name__).lstrip(".")
    return os.path.join("onnxproof-out", f"{name or 'model'}-{model_digest(model, inputs, dynamic)[:8]}")


def model_digest(model, inputs=(), dynamic=()):
    """sha256 (hex) of the model's class, the inputs' names, shapes and dtypes, the dynamic axes,
    and the name, dtype, shape and bytes of every parameter and buffer."""
    import hashlib
    import json
    import torch
    digest = hashlib.sha256()
    kind = type(model)
    digest.update(json.dumps([f"{kind.__module__}.{kind.__qualname__}", list(inputs), list(dynamic)],
                             sort_keys=True, default=str).encode())
    for name, tensor in itertools.chain(model.named_parameters(), model.named_buffers()):
        if isinstance(tensor, torch.nn.parameter.UninitializedTensorMixin):  # a lazy module not yet run
            digest.update(f"{name}:uninitialized".encode())
            continue
        data = tensor.detach().cpu().contiguous()
        digest.update(f"{name}:{data.dtype}:{tuple(data.shape)}".encode())
        try:
            digest.update(data.reshape(-1).view(torch.uint8).numpy().data)
        except (RuntimeError, TypeError):  # a quantized or other exotic tensor: its values, widened
            digest.update(data.dequantize().double().numpy().tobytes() if data.is_quantized
                          else data.double().numpy().tobytes())
    return digest.hexdigest()


def staging_prefix():
    return f"{STAGING_PREFIX}{os.getpid()}-"


def remove_dead_staging(folder):
    """Removes the staging folders in `folder` that a prove() of a process no longer running left
    (killed mid-export); a live process's folder is never touched."""
    try:
        names = os.listdir(folder)
    except OSError:
        return
    for name in names:
        match = re.fullmatch(re.escape(STAGING_PREFIX) + r"(\d+)-.+", name)
        if match and not _process_runs(int(match.group(1))):
            shutil.rmtree(os.path.join(folder, name), ignore_errors=True)


def _process_runs(pid):
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError, OSError):
        return True  # another user's process (or a number we cannot ask about): leave it
    return True


def _integer(value):
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


def _iterable(value):
    return isinstance(value, collections.abc.Iterable) and not isinstance(value, (str, bytes))
