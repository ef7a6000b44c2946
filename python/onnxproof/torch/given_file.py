"""A PyTorch model proved against an ONNX file the user made (`--onnx FILE`, prove(onnx=...)): the
file's inputs bound to forward()'s (core/given_file.py), the model called through a module that
takes the file's inputs and returns the file's outputs (so the forward check, the output axes,
the reference and its float64 twin all speak the file's names), the axes the file fixes while
the model runs other sizes, and the file copied in as model.onnx, its weights compared with the
model's (given_weights.py)."""
import inspect

from ..core import given_file
from ..core.errors import UsageError
from ..core.export_io import progress
from ..core.findings import finding


def forward_names(model):
    """forward()'s positional parameter names, or [] where it has no Python signature."""
    try:
        parameters = inspect.signature(model.forward).parameters.values()
    except (TypeError, ValueError):
        return []
    return [p.name for p in parameters if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]


def bind_inputs(state, model):
    """Reads the file, binds its inputs to the model's (declared, a family's, prove()'s, else
    forward()'s parameters) and makes state.inputs the file's (its names and dtypes, the model's
    example sizes and ranges) and state.dynamic the file's symbolic dimensions. Returns the
    binding the wrapper needs: [(file input, model input, model dtype or None)]."""
    interface = given_file.read_interface(state.config["onnx"])
    state.interface = interface
    declared = {spec["name"]: spec for spec in state.inputs}
    model_names = list(declared) or forward_names(model) or [spec["name"] for spec in interface.inputs]
    pairs = given_file.bind_inputs(interface.inputs, model_names, state.config.get("bind"))
    declared_axes = {(axis["input"], axis["axis"]): axis for axis in state.dynamic}
    check_axis_names(state.dynamic, [s["name"] for s in interface.inputs], model_names,
                     [s["name"] for s in interface.outputs])
    user_axes = state.inputs_given  # prove()'s dynamic_axes and --dynamic: the user's; a family's are not
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
        for axis, dim in enumerate(spec["dims"]):
            # Declared by the model's input name (--input, prove()) or by the file's (--dynamic alone).
            declared_axis = declared_axes.get((model_name, axis)) or declared_axes.get((name, axis))
            if isinstance(dim, int) and dim > 0:
                if dims[axis] != dim or declared_axis:
                    state.findings.append(axis_fixed(name, axis, dim, dims[axis], declared_axis, user_axes))
                dims[axis] = dim
                continue
            label = declared_axis["label"] if declared_axis else given_file.dimension_label(name, axis, dim)
            entry = {"input": name, "axis": axis, "label": label}
            for key in ("min", "max", "derived"):
                if declared_axis and key in declared_axis:
                    entry[key] = declared_axis[key]
            dynamic.append(entry)
        inputs.append(dict({"name": name, "dims": dims, "dtype": spec["dtype"]},
                           **({"range": model_spec["range"]} if model_spec and model_spec.get("range") else {})))
        binding.append((name, model_name, spec["dtype"], model_dtype))
        record.append({"file": name, "model": model_name, "by": how,
                       **({"cast": f"{spec['dtype']} -> {model_dtype}"} if model_dtype != spec["dtype"] else {})})
    if state.given is not None:
        state.given = state.given._replace(
            example=renamed(state.given.example, binding),
            samples=None if state.given.samples is None else [renamed(s, binding) for s in state.given.samples])
    state.inputs, state.dynamic = inputs, dynamic
    state.given_file = {"path": interface.path, "inputs": record, "outputs": []}
    progress("the file's inputs: " + ", ".join(f"{r['file']} <- {r['model']} ({r['by']})" for r in record))
    return binding, model_names


def adopt(state, model):
    """The export stage of a given file: copied in as model.onnx (the user's file is never
    written), its opset read, its weights compared with the model's, the axes it fixes while the
    model runs others found. True: the file is there to prove."""
    from ..core.export_finish import declared_opsets
    from .given_weights import weight_findings
    state.given_file.update(given_file.copy_into(state.interface, state.model_path))
    opsets = declared_opsets(state.model_path)
    state.opset = int(opsets.get("", opsets.get("ai.onnx", 0)))
    state.opset_reason = "the given file's"
    progress("comparing the file's weights with the model's")
    state.findings += state.timed("weights", weight_findings, model.model, state.model_path, state.interface)
    state.timed("fixed_axes", fixed_axes_the_model_runs, state, model, state.example)
    import torch
    with torch.no_grad():
        produced = model.model_outputs(*state.args_for(state.example))[1]
    left = [name for name, _ in produced if name not in {r["model"] for r in state.given_file["outputs"]}]
    state.findings.append(finding(
        "FILE_BINDING", "info", "the file is proved as given: inputs " + ", ".join(
            f"{r['file']} <- {r['model']} (by {r['by']}{', ' + r['cast'] if 'cast' in r else ''})"
            for r in state.given_file["inputs"]) + "; outputs " + ", ".join(
            f"{r['file']} <- {r['model']} (by {r['by']})" for r in state.given_file["outputs"]) +
        (f"; the model's outputs {', '.join(left)} are not in the file and not proved" if left else ""),
        state.given_file["path"], "--bind FILE_INPUT=MODEL_INPUT binds an input otherwise"))
    return True


def check_axis_names(dynamic, file_inputs, model_inputs, file_outputs):
    """A declared axis names an input of the file or of the model (or an output of the file, whose
    own dimensions say what it does); anything else is a typo, refused with the name meant."""
    from ..core.data import did_you_mean
    known = list(dict.fromkeys(file_inputs + model_inputs + file_outputs))
    for axis in dynamic:
        if axis["input"] not in known:
            raise UsageError(f"--dynamic names '{axis['input']}', which is no input of the file or the model "
                             f"({', '.join(known)}){did_you_mean(axis['input'], known)}")


def renamed(arrays, binding):
    """prove()'s arrays (by the model's input names) by the file's names, in the file's dtypes."""
    from ..core.cases import numpy_dtype
    return {name: arrays[model_name] if file_dtype == model_dtype else
            arrays[model_name].astype(numpy_dtype(file_dtype)) for name, model_name, file_dtype, model_dtype in binding}


def axis_fixed(name, axis, size, wanted, declared, user_declared):
    """FILE_AXIS_FIXED: the file takes only `size` at the axis; an error where the user declared it
    dynamic or gave an example of another size, else a warning."""
    error = user_declared and (bool(declared) or wanted != size)
    said = f"declared dynamic ({declared['label']})" if declared else f"the model's example has {wanted}"
    return finding("FILE_AXIS_FIXED", "error" if error else "warning",
                   f"the file accepts only {size} at axis {axis} of input {name}; {said}", f"{name}:{axis}",
                   fixed_axis_hint(name, axis), axis=declared["label"] if declared else "")


def fixed_axis_hint(name, axis):
    return (f"export the file again with the axis dynamic: torch.onnx.export(..., dynamic_axes={{'{name}': "
            f"{{{axis}: 'batch'}}}}) (dynamo: dynamic_shapes); or declare the sizes production sends")


def fixed_axes_the_model_runs(state, model, example):
    """FILE_AXIS_FIXED warnings for the file's fixed axes 0 and 1 (a batch, a sequence) at which the
    model runs another size and its outputs follow: the file accepts one size where the model
    takes many. Inputs fixed at the same size on the same axis are resized together."""
    import numpy as np
    groups = {}
    for spec in state.interface.inputs:
        for axis, dim in enumerate(spec["dims"][:2]):
            if isinstance(dim, int) and dim > 0 and not any(f["where"] == f"{spec['name']}:{axis}"
                                                            for f in state.findings if f["code"] == "FILE_AXIS_FIXED"):
                groups.setdefault((axis, dim), []).append(spec["name"])
    before = [tuple(t.shape) for t in state.forward(model, example).values()]
    for (axis, size), names in groups.items():
        resized = {}
        for name, array in example.items():
            if name in names:
                resized[name] = np.take(array, [i % size for i in range(size + 1)], axis=axis)
            else:
                resized[name] = array
        try:
            after = [tuple(t.shape) for t in state.forward(model, resized).values()]
        except Exception:  # noqa: BLE001 -- the model takes no other size there either: nothing to say
            continue
        if after != before:
            for name in names:
                state.findings.append(finding(
                    "FILE_AXIS_FIXED", "warning", f"the file accepts only {size} at axis {axis} of input {name}; "
                    f"the model runs {size + 1} too, and its outputs follow", f"{name}:{axis}",
                    fixed_axis_hint(name, axis)))


def bound_model(model, binding, model_order, file_outputs, record):
    """The model as a module taking the file's inputs in the file's order, each cast to the dtype
    the model takes (integers to its integer type, narrow floats widened to float32; a float64
    input, the float64 twin's, is left as it is), and returning {file output: tensor}, the
    outputs bound on the first call (core/given_file.bind_outputs, recorded in `record`).
    `model_order`: the model's input names in the order forward() takes them."""
    import torch
    from . import traps

    class Bound(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.model = model
            self.outputs = None

        def model_outputs(self, *args):
            """(the model's flat output tensors, [(name, shape)]), or its result as it is when
            that holds something else than tensors."""
            values = {}
            for (_, model_name, file_dtype, model_dtype), arg in zip(binding, args):
                if file_dtype != model_dtype and arg.dtype not in (torch.float32, torch.float64):
                    arg = arg.to(torch.float32 if arg.is_floating_point() else getattr(torch, model_dtype))
                values[model_name] = arg
            given = [name for name in model_order if name in values]
            if given == model_order[:len(given)]:
                result = self.model(*[values[name] for name in given])
            else:
                result = self.model(**values)  # a model input the file does not take: its default
            flat, problems = traps.flatten_outputs(result)
            if problems:
                return result
            return [value for _, value in flat], [(name, tuple(value.shape)) for name, value in flat]

        def forward(self, *args):
            produced = self.model_outputs(*args)
            if not isinstance(produced, tuple):
                return produced  # no tensors: check_forward says NON_TENSOR_OUTPUT
            values, shapes = produced
            if self.outputs is None:
                self.outputs = given_file.bind_outputs(file_outputs, shapes)
                record[:] = [{"file": name, "model": shapes[index][0], "by": how} for name, index, how in self.outputs]
            return {name: values[index] for name, index, _ in self.outputs}

    return Bound()
