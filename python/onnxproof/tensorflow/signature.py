"""A TensorFlow model's inputs come from its input signature: every `None` dimension is a dynamic
axis with a label (batch, sequence, height, width, ...; one label for the same axis of several
inputs), unless --dynamic names the axes itself; --input gives the example's sizes and dtypes (an
input it leaves out takes the sizes of the labels it shares). Integer inputs an Embedding reads
are generated inside its vocabulary."""
import numpy as np

from ..core.data import did_you_mean
from ..core.errors import UsageError

# The example's size of a free axis no --input sized, by label.
EXAMPLE_SIZES = {"batch": 2, "sequence": 8, "height": 32, "width": 32, "depth": 8}
OTHER_EXAMPLE_SIZE = 4


def default_label(rank, axis):
    """The label of a free axis: batch first; NHWC images' height and width (NDHWC's depth too);
    the second axis of a (batch, time[, features]) input its sequence; else dimN."""
    if axis == 0:
        return "batch"
    if rank == 4 and axis in (1, 2):
        return ("height", "width")[axis - 1]
    if rank == 5 and axis in (1, 2, 3):
        return ("depth", "height", "width")[axis - 1]
    if rank in (2, 3) and axis == 1:
        return "sequence"
    return f"dim{axis}"


def declare_inputs(state, source):
    """state.inputs and state.dynamic from the signature and what the user declared: names and
    ranks must fit the signature, a dimension the signature fixes stays fixed."""
    declared = {spec["name"]: spec for spec in state.inputs}
    names = [name for name, _, _ in source.signature]
    for name in declared:
        if name not in names:
            raise UsageError(f"--input {name}: the model's input signature has no input '{name}'"
                             f"{did_you_mean(name, names)} (its inputs: {', '.join(names)})")
    free = [{"input": name, "axis": axis, "label": default_label(len(shape), axis)}
            for name, shape, _ in source.signature for axis, dim in enumerate(shape) if dim is None]
    for axis in state.dynamic:
        shape = dict((name, shape) for name, shape, _ in source.signature).get(axis["input"])
        if shape is None:
            raise UsageError(f"--dynamic {axis['input']}:{axis['axis']}: the model has no input '{axis['input']}' "
                             f"(its inputs: {', '.join(names)})")
        if axis["axis"] >= len(shape) or shape[axis["axis"]] is not None:
            raise UsageError(f"--dynamic {axis['input']}:{axis['axis']}: the model's input signature fixes that axis "
                             f"({_shape_text(shape)}); only its None axes can be dynamic")
    dynamic = state.dynamic or free
    sizes = _declared_sizes(declared, dynamic)
    inputs = []
    for name, shape, dtype in source.signature:
        spec = dict(declared.get(name) or {"name": name, "dtype": dtype})
        _check_dtype(name, spec["dtype"])
        spec["dims"] = _example_dims(name, shape, spec.get("dims"), dynamic, sizes)
        if name in source.vocabularies and "range" not in spec and _integer(spec["dtype"]):
            spec["range"] = [0, int(source.vocabularies[name])]
        inputs.append(spec)
    state.inputs, state.dynamic = inputs, dynamic


def _check_dtype(name, dtype):
    """The dtypes the export generates and compares: numpy's; a string or bfloat16 input is refused."""
    try:
        np.dtype(dtype)
    except TypeError as error:
        raise UsageError(f"input '{name}' is {dtype}: onnxproof proves TensorFlow models with numeric and bool inputs "
                         "only (strings and bfloat16 are not supported yet)") from error


def _declared_sizes(declared, dynamic):
    """{label: size} the --input dims give (an undeclared input sharing a label takes that size)."""
    sizes = {}
    for axis in dynamic:
        spec = declared.get(axis["input"])
        if spec is not None and axis["axis"] < len(spec["dims"]):
            sizes.setdefault(axis["label"], int(spec["dims"][axis["axis"]]))
    return sizes


def _example_dims(name, shape, given, dynamic, sizes):
    if given is not None:
        if len(given) != len(shape) or any(dim is not None and dim != size for dim, size in zip(shape, given)):
            raise UsageError(f"--input {name}={'x'.join(map(str, given))}: the model's input signature is "
                             f"{_shape_text(shape)}")
        return list(given)
    labels = {axis["axis"]: axis for axis in dynamic if axis["input"] == name}
    dims = []
    for index, dim in enumerate(shape):
        axis = labels.get(index)
        if dim is not None:
            dims.append(dim)
        elif axis is None:
            dims.append(OTHER_EXAMPLE_SIZE)
        else:  # the declared size, else the label's usual one, inside a --dynamic range
            size = sizes.get(axis["label"], EXAMPLE_SIZES.get(axis["label"], OTHER_EXAMPLE_SIZE))
            dims.append(min(max(size, axis.get("min", 1)), axis.get("max", size)))
    return dims


def _shape_text(shape):
    return "(" + ", ".join("None" if dim is None else str(dim) for dim in shape) + ")"


def _integer(dtype):
    return dtype != "bool" and np.dtype(dtype).kind in "iu"
