"""prove()'s checks of a PyTorch model's arguments (core/api_checks.py has those every framework's
prove() takes): the inputs and data, the sweep's sizes, and the run folder's default name."""
import collections.abc
import itertools
import math
import os
import re

from ..core.api_checks import MAX_INPUT_BYTES
from ..core.errors import UsageError


def check_inputs(args, data):
    """Raises UsageError unless args is a tensor or a tuple/list, and data None, a tensor or an
    iterable of samples (a list, a DataLoader)."""
    import torch
    if not isinstance(args, (torch.Tensor, tuple, list)):
        raise UsageError(f"args must be a tensor or a tuple of tensors, not {type(args).__name__}")
    if data is not None and not isinstance(data, (torch.Tensor, collections.abc.Iterable)) or isinstance(
            data, (str, bytes, collections.abc.Mapping)):
        raise UsageError(f"data must be a tensor, a list of samples or a DataLoader, not {type(data).__name__}")


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
