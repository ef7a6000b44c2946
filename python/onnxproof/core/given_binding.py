"""A given file's binding applied to an export run's state, whatever the framework: state.inputs
become the file's inputs (its names and dtypes, the model's example sizes and ranges, in the
file's layout), state.dynamic the file's symbolic dimensions, the axes the file fixes are
checked against what the user declared and what the model runs, and the file is adopted as
model.onnx with the findings that say how it was bound. A framework wraps its model so that it
takes the file's inputs (torch/given_file.py, tensorflow/given_file.py)."""
import numpy as np

from . import given_file
from .data import did_you_mean
from .errors import UsageError
from .export_io import progress
from .findings import finding

# Layouts a converter gives an image input (tf2onnx --inputs-as-nchw): the file's axes in the
# model's order (file = model.transpose(perm)).
_LAYOUTS = {(0, 3, 1, 2): "NHWC -> NCHW", (0, 2, 3, 1): "NCHW -> NHWC"}


class Bound:
    """One file input bound to a model input: its dtypes and the axis order between them."""

    def __init__(self, file, model, file_dtype, model_dtype, perm=None):
        self.file, self.model, self.file_dtype, self.model_dtype, self.perm = file, model, file_dtype, model_dtype, perm

    def to_model(self, array):
        """The file's array as the model takes it: its axes back in the model's order (the dtype is
        the framework's to cast)."""
        return array if self.perm is None else np.transpose(array, np.argsort(self.perm))

    def to_file(self, array):
        """A model's array (prove()'s example) as the file takes it."""
        from .cases import numpy_dtype
        array = array if self.perm is None else np.transpose(array, self.perm)
        return array if self.file_dtype == self.model_dtype else array.astype(numpy_dtype(self.file_dtype))


def layout_permutation(name):
    """The permutation a recorded layout ("NHWC -> NCHW") names; None for none."""
    return next((perm for perm, said in _LAYOUTS.items() if said == name), None) if name else None


def layout_of(file_dims, model_dims):
    """The permutation that takes the model's axes to the file's where the file's fixed sizes only
    agree with the model's in another layout (NHWC against NCHW); None where they agree as they are."""
    def agrees(dims):
        return all(not isinstance(f, int) or f <= 0 or f == m for f, m in zip(file_dims, dims))
    if agrees(model_dims) or len(model_dims) != 4:
        return None
    return next((perm for perm in _LAYOUTS if agrees([model_dims[axis] for axis in perm])), None)


def bind_state_inputs(state, parameters):
    """Reads the file (config["onnx"]), binds its inputs to the model's (state.inputs as declared,
    a family's or a signature's; else `parameters`, the names forward() takes) and makes
    state.inputs and state.dynamic the file's. Returns [Bound] in the file's order."""
    from .export_finish import declared_opsets
    interface = given_file.read_interface(state.config["onnx"])
    state.interface = interface
    opsets = declared_opsets(interface.path)  # the file's, whatever stops the run before it is adopted
    state.opset, state.opset_reason = int(opsets.get("", opsets.get("ai.onnx", 0))), "the given file's"
    declared = {spec["name"]: spec for spec in state.inputs}
    model_names = list(declared) or list(parameters) or [spec["name"] for spec in interface.inputs]
    pairs = given_file.bind_inputs(interface.inputs, model_names, state.config.get("bind"), parameters)
    check_axis_names(state.dynamic, [s["name"] for s in interface.inputs], model_names,
                     [s["name"] for s in interface.outputs])
    declared_axes = {(axis["input"], axis["axis"]): axis for axis in state.dynamic}
    # What the user declared (--input, --dynamic, prove()'s arguments), not a family's defaults or
    # a signature's free axes: a file that refuses it is an error, otherwise a warning.
    user_axes = {(axis["input"], axis["axis"]) for axis in state.config.get("dynamic") or []}
    user_example = bool(state.config.get("inputs"))
    inputs, dynamic, binding, record = [], [], [], []
    for spec, model_name, how in pairs:
        name, model_spec = spec["name"], declared.get(model_name)
        dims = list(model_spec["dims"]) if model_spec else given_file.example_dims(spec)
        if len(dims) != len(spec["dims"]):
            raise UsageError(f"the file's input {name} has rank {len(spec['dims'])}; the model's input {model_name} "
                             f"has rank {len(dims)} ({'x'.join(map(str, dims))})")
        model_dtype = model_spec["dtype"] if model_spec else spec["dtype"]
        if not given_file.castable(spec["dtype"], model_dtype):
            raise UsageError(f"the file's input {name} is {spec['dtype']}; the model's input {model_name} is "
                             f"{model_dtype}: no values carry over")
        perm = layout_of(spec["dims"], dims)
        if perm is not None:
            dims = [dims[axis] for axis in perm]
        for axis, dim in enumerate(spec["dims"]):
            # Declared by the model's input name (--input, prove()) or by the file's (--dynamic alone).
            keys = [(model_name, axis if perm is None else perm[axis])] + ([(name, axis)] if perm is None else [])
            declared_axis = next((declared_axes[key] for key in keys if key in declared_axes), None)
            if isinstance(dim, int) and dim > 0:
                if dims[axis] != dim or declared_axis:
                    error = any(key in user_axes for key in keys) or (dims[axis] != dim and user_example)
                    state.findings.append(axis_fixed(name, axis, dim, dims[axis], declared_axis, error))
                dims[axis] = dim
                continue
            label = declared_axis["label"] if declared_axis else given_file.dimension_label(name, axis, dim)
            entry = {"input": name, "axis": axis, "label": label}
            for key in ("min", "max", "derived"):
                if declared_axis and key in declared_axis:
                    entry[key] = declared_axis[key]
            dynamic.append(entry)
        known = model_spec.get("range") if model_spec else None
        known = known or interface.index_ranges.get(name)  # the rows of the table it indexes
        inputs.append(dict({"name": name, "dims": dims, "dtype": spec["dtype"]}, **({"range": known} if known else {})))
        binding.append(Bound(name, model_name, spec["dtype"], model_dtype, perm))
        record.append(dict({"file": name, "model": model_name, "by": how},
                           **({"cast": f"{spec['dtype']} -> {model_dtype}"} if model_dtype != spec["dtype"] else {}),
                           **({"layout": _LAYOUTS[perm]} if perm else {})))
    if state.given is not None and state.given.example:  # prove()'s arrays, by the model's names: the file's now
        state.given = state.given._replace(
            example=file_arrays(state.given.example, binding),
            samples=None if state.given.samples is None else [file_arrays(s, binding) for s in state.given.samples])
    state.inputs, state.dynamic = inputs, dynamic
    state.given_file = {"path": interface.path, "inputs": record, "outputs": []}
    progress("the file's inputs: " + ", ".join(f"{r['file']} <- {r['model']} ({r['by']})" for r in record))
    return binding


def file_arrays(arrays, binding):
    """{model input: array} as {file input: array}, in the file's dtypes and layouts."""
    return {bound.file: bound.to_file(arrays[bound.model]) for bound in binding}


def check_axis_names(dynamic, file_inputs, model_inputs, file_outputs):
    """A declared axis names an input of the file or of the model (or an output of the file, whose
    own dimensions say what it does); anything else is a typo, refused with the name meant."""
    known = list(dict.fromkeys(file_inputs + model_inputs + file_outputs))
    for axis in dynamic:
        if axis["input"] not in known:
            raise UsageError(f"--dynamic names '{axis['input']}', which is no input of the file or the model "
                             f"({', '.join(known)}){did_you_mean(axis['input'], known)}")


def axis_fixed(name, axis, size, wanted, declared, error):
    """FILE_AXIS_FIXED: the file takes only `size` at the axis (`declared` dynamic, or `wanted` by
    the example); an error where the user declared the axis or gave the example, else a warning."""
    said = f"declared dynamic ({declared['label']})" if declared else f"the model's example has {wanted}"
    return finding("FILE_AXIS_FIXED", "error" if error else "warning",
                   f"the file accepts only {size} at axis {axis} of input {name}; {said}", f"{name}:{axis}",
                   fixed_axis_hint(name, axis), axis=declared["label"] if declared else "")


def fixed_axis_hint(name, axis):
    label = "batch" if axis == 0 else "sequence" if axis == 1 else f"dim{axis}"
    return (f"export the file again with the axis dynamic: torch.onnx.export(..., dynamic_axes={{'{name}': "
            f"{{{axis}: '{label}'}}}}) (dynamo: dynamic_shapes; tf2onnx: a None in the input signature); or declare "
            "the sizes production sends")


def fixed_axes_the_model_runs(state, output_shapes):
    """FILE_AXIS_FIXED warnings for the file's fixed axes 0 and 1 (a batch, a sequence) at which the
    model runs another size and its outputs follow: the file accepts one size where the model
    takes many. Inputs fixed at one size on one axis are resized together. `output_shapes(arrays)`:
    the model's output shapes on {file input: array}."""
    groups = {}
    said = {f["where"] for f in state.findings if f["code"] == "FILE_AXIS_FIXED"}
    # A decoder step that takes one new token is made so: its new tokens' axis is no defect.
    said |= {f"{name}:1" for name in (state.given_layout.token_inputs if state.given_layout else ()) if name}
    for spec in state.interface.inputs:
        for axis, dim in enumerate(spec["dims"][:2]):
            if isinstance(dim, int) and dim > 0 and f"{spec['name']}:{axis}" not in said:
                groups.setdefault((axis, dim), []).append(spec["name"])
    before = output_shapes(state.example)
    for (axis, size), names in groups.items():
        resized = {name: np.take(array, [i % size for i in range(size + 1)], axis=axis) if name in names else array
                   for name, array in state.example.items()}
        try:
            after = output_shapes(resized)
        except Exception:  # noqa: BLE001 -- the model takes no other size there either: nothing to say
            continue
        if after != before:  # one finding for the inputs fixed together
            said = f"input {names[0]}" if len(names) == 1 else f"inputs {', '.join(names)}"
            state.findings.append(finding(
                "FILE_AXIS_FIXED", "warning", f"the file accepts only {size} at axis {axis} of {said}; "
                f"the model runs {size + 1} too, and its outputs follow", f"{names[0]}:{axis}",
                fixed_axis_hint(names[0], axis)))


def adopt(state, parameters, output_shapes, model_outputs):
    """The export stage of a given file: copied in as model.onnx (the user's file is never
    written), its opset read, its weights compared with `parameters` (the model's, as numpy
    arrays), the axes it fixes while the model runs others found, and how it was bound said
    (FILE_BINDING, naming `model_outputs` the file leaves out). True: the file is there to prove."""
    from .given_weights import weight_findings
    state.given_file.update(given_file.copy_into(state.interface, state.model_path))
    components = ""
    if state.given_layout is not None:  # a generation folder: the files beside the step file
        from .given_folder import copy_components
        copied = copy_components(state.given_layout, state.out)
        for role, entry in copied.items():  # their names and sha256 in generation.json
            if state.generation and role in state.generation:
                state.generation[role].update(entry)
        components = "; beside it " + ", ".join(f"{entry['model']} ({role})" for role, entry in copied.items())
        if state.given_layout.folder:
            state.given_file["folder"] = state.given_layout.folder
    progress("comparing the file's weights with the model's")
    state.findings += state.timed("weights", weight_findings, parameters, state.model_path, state.interface)
    state.timed("fixed_axes", fixed_axes_the_model_runs, state, output_shapes)
    bound = {r["model"] for r in state.given_file["outputs"]}
    left = [name for name in model_outputs if name not in bound]

    def said(record):
        extras = [record[key] for key in ("cast", "layout") if key in record]
        return f"{record['file']} <- {record['model']} (by {', '.join([record['by']] + extras)})"
    state.findings.append(finding(
        "FILE_BINDING", "info", "the file is proved as given: inputs " +
        ", ".join(said(r) for r in state.given_file["inputs"]) + "; outputs " +
        ", ".join(said(r) for r in state.given_file["outputs"]) +
        (f"; the model's outputs {', '.join(left)} are not in the file and not proved" if left else "") + components,
        state.given_file["path"], "--bind FILE_INPUT=MODEL_INPUT binds an input otherwise"))
    return True
