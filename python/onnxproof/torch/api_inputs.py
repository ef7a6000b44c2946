"""prove()'s inputs as torch.export and torch.onnx.export take them: arguments bound to forward()'s
parameters in its own order, containers of tensors (dicts, lists, tuples: pytrees) flattened into
one named input per tensor, `input_names` renaming the flat inputs in order, and `dynamic_shapes`
walked with the same structure (a tuple matched in forward()'s order)."""
import collections.abc
import inspect
import re

from ..core.errors import UsageError


class FlatInputs:
    """The model's arguments bound to forward(): `tensors` {flat input name: tensor} in forward()'s
    order, `paths` {flat name: (parameter, key path)} and `call`, the module the exporters see
    (the model itself when every input is a plain positional tensor)."""

    def __init__(self, call, tensors, paths, bound):
        self.call, self.tensors, self.paths, self.bound = call, tensors, paths, bound


def signature_of(model):
    """forward()'s signature, None when it has no Python one (TorchScript, C++)."""
    try:
        return inspect.signature(model.forward)
    except (TypeError, ValueError):
        return None


def bind(model, args, kwargs):
    """args and kwargs bound to forward()'s parameters (inspect.BoundArguments), in its order;
    UsageError when forward() does not take them."""
    signature = signature_of(model)
    if signature is None:
        return None
    try:
        return signature.bind(*args, **kwargs)
    except TypeError as error:
        raise UsageError(f"forward{signature} does not take these args/kwargs: {error}") from error


def leaves(value, path=()):
    """[(key path, tensor)] of every tensor in `value` (a tensor, or dicts, lists and tuples of
    them), depth first; other values are fixed arguments, not inputs."""
    import torch
    if isinstance(value, torch.Tensor):
        return [(path, value)]
    if isinstance(value, collections.abc.Mapping):
        return [leaf for key, item in value.items() for leaf in leaves(item, path + (key,))]
    if isinstance(value, (list, tuple)):
        return [leaf for index, item in enumerate(value) for leaf in leaves(item, path + (index,))]
    return []


def flat_name(parameter, path):
    """batch["extras"][0] -> batch_extras_0: an identifier, as torch.export names inputs."""
    name = "_".join([parameter] + [str(key) for key in path])
    name = re.sub(r"\W", "_", name)
    return name if not name[0].isdigit() else f"input_{name}"


def _leaf_name(bound, parameter, path):
    """A flat input's name: its parameter's and its path's (batch_extras_0); a **kwargs entry's by
    its key; with *args, every positional tensor input_K by its position, as forward(*args) wrappers
    have always been named."""
    kinds = {name: p.kind for name, p in bound.signature.parameters.items()}
    kind = kinds[parameter]
    if kind == inspect.Parameter.VAR_KEYWORD and path:
        return flat_name(str(path[0]), path[1:])
    variadic = next((name for name, k in kinds.items() if k == inspect.Parameter.VAR_POSITIONAL), None)
    if variadic is not None and bound.arguments.get(variadic):
        positional = [name for name, k in kinds.items()
                      if k in (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)]
        if kind == inspect.Parameter.VAR_POSITIONAL:
            return flat_name(f"input_{len(positional) + path[0]}", path[1:])
        if parameter in positional:
            return flat_name(f"input_{positional.index(parameter)}", path)
    return flat_name(parameter, path)


def replaced(value, path, tensor):
    """`value` with the item at key path `path` replaced by `tensor` (containers copied, never
    changed: the caller's arguments stay as given)."""
    if not path:
        return tensor
    key, rest = path[0], path[1:]
    if isinstance(value, collections.abc.Mapping):
        copy = dict(value)
        copy[key] = replaced(value[key], rest, tensor)
        return type(value)(copy) if type(value) is not dict else copy
    items = list(value)
    items[key] = replaced(items[key], rest, tensor)
    if isinstance(value, tuple) and hasattr(value, "_fields"):  # a namedtuple
        return type(value)(*items)
    return type(value)(items)


def is_plain(bound):
    """True when every argument is one tensor given positionally, as the model is exported as it is."""
    import torch
    if bound is None:
        return True
    kinds = {name: p.kind for name, p in bound.signature.parameters.items()}
    return not bound.kwargs and all(
        isinstance(value, torch.Tensor) and kinds[name] in (inspect.Parameter.POSITIONAL_ONLY,
                                                            inspect.Parameter.POSITIONAL_OR_KEYWORD)
        for name, value in bound.arguments.items())


def flatten(model, args, kwargs, input_names=None, output_names=None):
    """FlatInputs of model(*args, **kwargs); `input_names` (torch.onnx.export's) renames the flat
    inputs in order, `output_names` the flat outputs (the module then returns them by name)."""
    import torch
    for index, value in enumerate(args):
        if not leaves(value) and not isinstance(value, torch.Tensor):
            raise UsageError(f"args[{index}] is a {type(value).__name__} with no tensor: positional inputs are tensors "
                             "or dicts, lists and tuples of them (pass fixed values as kwargs)")
    bound = bind(model, args, kwargs)
    if bound is None:  # no Python signature: positional tensors only, named input_K
        tensors = {f"input_{index}": value for index, value in enumerate(args)}
        paths = {name: (None, (index,)) for index, name in enumerate(tensors)}
    else:
        tensors, paths = {}, {}
        for parameter, value in bound.arguments.items():
            for path, tensor in leaves(value):
                name = _leaf_name(bound, parameter, path)
                if name in tensors:
                    raise UsageError(f"two inputs flatten to the name {name!r}; name them with input_names")
                tensors[name], paths[name] = tensor, (parameter, path)
    renamed = rename(list(tensors), input_names)
    tensors = dict(zip(renamed, tensors.values()))
    paths = dict(zip(renamed, paths.values()))
    plain = is_plain(bound) and output_names is None
    call = model if plain else FlatCall.module(model, bound, paths, output_names)
    return FlatInputs(call, tensors, paths, bound)


def rename(names, input_names):
    """The flat inputs' names with the first len(input_names) replaced, as torch.onnx.export's
    input_names does; UsageError for more names than inputs, duplicates or empty names."""
    if input_names is None:
        return names
    if isinstance(input_names, str) or not isinstance(input_names, collections.abc.Sequence) or not all(
            isinstance(name, str) and name for name in input_names):
        raise UsageError(f"input_names must be a list of non-empty names, not {input_names!r}")
    if len(input_names) > len(names):
        raise UsageError(f"input_names names {len(input_names)} inputs; the model takes {len(names)} "
                         f"tensor(s): {', '.join(names)}")
    result = list(input_names) + names[len(input_names):]
    if len(set(result)) != len(result):
        raise UsageError(f"input names must be unique: {result}")
    return result


class FlatCall:
    """A module taking one tensor per flat input, under its name, that puts them back where the
    caller's arguments had them and calls the model: torch.export and the TorchScript tracer see
    plain tensors, the model gets its dicts, lists and keywords."""

    @staticmethod
    def module(model, bound, paths, output_names=None):
        import torch

        names = list(paths)
        signature = bound.signature if bound is not None else None

        class FlatInputsOf(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.model = model

            def forward(self, *values):
                if signature is None:
                    result = self.model(*values)
                else:
                    arguments = dict(bound.arguments)
                    for name, value in zip(names, values):
                        parameter, path = paths[name]
                        arguments[parameter] = replaced(arguments[parameter], path, value)
                    call = inspect.BoundArguments(signature, arguments)
                    result = self.model(*call.args, **call.kwargs)
                return result if output_names is None else named_outputs(result, output_names)

        parameters = [inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD)]
        parameters += [inspect.Parameter(_identifier(name), inspect.Parameter.POSITIONAL_OR_KEYWORD) for name in names]
        FlatInputsOf.forward.__signature__ = inspect.Signature(parameters)
        FlatInputsOf.__qualname__ = type(model).__qualname__
        wrapper = FlatInputsOf()
        wrapper.train(model.training)
        return wrapper


def output_leaves(value):
    """The values a forward returns, in the order the export flattens them (traps.flatten_outputs):
    dict values, dataclass fields and sequence items depth first, None left out."""
    import dataclasses
    if value is None:
        return []
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        value = {field.name: getattr(value, field.name) for field in dataclasses.fields(value)}
    if isinstance(value, collections.abc.Mapping):
        return [leaf for item in value.values() for leaf in output_leaves(item)]
    if isinstance(value, (list, tuple)):
        return [leaf for item in value for leaf in output_leaves(item)]
    return [value]


def named_outputs(result, output_names):
    """The forward's flat outputs as a dict by torch.onnx.export's output_names (in order; outputs
    past the names keep output_K); UsageError for more names than outputs."""
    values = output_leaves(result)
    if len(output_names) > len(values):
        raise UsageError(f"output_names names {len(output_names)} outputs; forward() returns {len(values)}")
    names = list(output_names) + [f"output_{index}" for index in range(len(output_names), len(values))]
    return dict(zip(names, values))


def _identifier(name):
    name = re.sub(r"\W", "_", name)
    return name if name and not name[0].isdigit() and name != "self" else f"input_{name}"


def flat_dynamic_shapes(dynamic_shapes, flat):
    """{flat input name: its axes spec} from torch.export's dynamic_shapes: a dict by forward()'s
    parameter names (or by flat input names), or a tuple in forward()'s parameter order, each
    entry shaped like its argument (a dict of specs for a dict input, a list for a list)."""
    bound = flat.bound
    parameters = list(bound.arguments) if bound is not None else [f"input_{i}" for i in range(len(flat.tensors))]
    if isinstance(dynamic_shapes, collections.abc.Mapping):
        by_parameter = dict(dynamic_shapes)
    else:
        entries = list(dynamic_shapes)
        if len(entries) != len(parameters) and len(entries) == len(flat.tensors):
            return {name: spec for name, spec in zip(flat.tensors, entries) if spec is not None}  # one per tensor
        if len(entries) != len(parameters):
            raise UsageError(f"dynamic_shapes has {len(entries)} entries; forward() is given {len(parameters)} "
                             f"argument(s) ({', '.join(parameters)}), matched in forward()'s order")
        by_parameter = dict(zip(parameters, entries))
    result = {}
    for name, (parameter, path) in flat.paths.items():
        if name in by_parameter and name not in (bound.arguments if bound is not None else {}):
            result[name] = by_parameter[name]  # keyed by the flat (or renamed) input name itself
            continue
        spec = by_parameter.get(parameter if parameter is not None else parameters[path[0]])
        for key in (path if parameter is not None else ()):
            spec = _child(spec, key)
        if spec is not None:
            result[name] = spec
    known = set(flat.paths) | set(parameters)
    unknown = [key for key in by_parameter if key not in known]
    if unknown:
        raise UsageError(f"dynamic_shapes names {unknown[0]!r}, which is no input; the inputs are "
                         f"{', '.join(flat.paths)}")
    return result


def _child(spec, key):
    if isinstance(spec, collections.abc.Mapping):
        return spec.get(key)
    if isinstance(spec, (list, tuple)) and isinstance(key, int) and key < len(spec):
        return spec[key]
    return None


def input_spec(name, tensor):
    """The input as the export contract declares it; integer inputs are generated inside the
    range the example spans (token ids stay inside what the example used)."""
    import torch
    spec = {"name": name, "dims": [int(d) for d in tensor.shape], "dtype": str(tensor.dtype).replace("torch.", "")}
    if tensor.dtype in (torch.int8, torch.int16, torch.int32, torch.int64, torch.uint8) and tensor.numel():
        spec["range"] = [int(tensor.min()), int(tensor.max()) + 1]
    return spec


def default_label(name, axis):
    return re.sub(r"\W", "_", f"{name}_dim{axis}")


def dynamic_from(dynamic_shapes, dynamic_axes, flat):
    """(the config's dynamic axes [{"input", "axis", "label"[, "min", "max", "derived"]}], the axes
    declared on outputs {output name: {axis: label}}) from either spelling. dynamic_axes keys that
    name no input name outputs (torch.onnx.export's dynamic_axes names both); the export checks
    them once the outputs are known."""
    if dynamic_shapes is not None and dynamic_axes is not None:
        raise UsageError("give dynamic_shapes (torch.export's spelling) or dynamic_axes (torch.onnx's), not both")
    dynamic, outputs = [], {}
    if dynamic_axes is not None:
        for name, axes in dict(dynamic_axes).items():
            items = axes.items() if isinstance(axes, dict) else ((axis, default_label(name, axis)) for axis in axes)
            entries = {int(axis): str(label) for axis, label in items}
            if name in flat.tensors:
                dynamic += [{"input": name, "axis": axis, "label": label} for axis, label in entries.items()]
            else:
                outputs[str(name)] = {str(axis): label for axis, label in entries.items()}
    elif dynamic_shapes is not None:
        for name, axes in flat_dynamic_shapes(dynamic_shapes, flat).items():
            items = axes.items() if isinstance(axes, dict) else enumerate(axes or ())
            dynamic += [dim_axis(name, int(axis), dim) for axis, dim in items if dim is not None and not _static(dim)]
    for axis in dynamic:
        tensor = flat.tensors[axis["input"]]
        if not 0 <= axis["axis"] < tensor.dim():
            raise UsageError(f"input {axis['input']!r} has no axis {axis['axis']} (rank {tensor.dim()})")
    labels = {axis["label"] for axis in dynamic}
    for axis in dynamic:
        root = axis.get("derived", {}).get("label")
        if root is not None and root not in labels:
            raise UsageError(f"input {axis['input']!r} axis {axis['axis']} is derived from {root!r}, which no input "
                             "axis has")
    return dynamic, outputs


def _static(dim):
    """Dim.STATIC (an axis kept at the example's size), or a plain int as torch.export takes it."""
    import torch
    return dim is torch.export.Dim.STATIC or isinstance(dim, int)


def dim_axis(name, axis, dim):
    """One torch.export Dim as a dynamic axis: its name is the label, its bounds the range. A
    derived Dim (d + 1, 2 * d) is a label of its own whose size follows its root's:
    {"derived": {"label", "scale", "offset"}}."""
    root = getattr(dim, "root", None)
    if root is not None and callable(getattr(dim, "fn", None)):
        return {"input": name, "axis": axis, "label": "".join(str(dim.__name__).split()),
                "derived": {"label": root.__name__, **_affine(dim)}}
    label = getattr(dim, "__name__", None)
    if not isinstance(label, str) or label in ("AUTO", "DYNAMIC", "STATIC"):
        label = default_label(name, axis)  # Dim.AUTO / Dim.DYNAMIC: no name of the user's
    entry = {"input": name, "axis": axis, "label": label}
    low, high = getattr(dim, "min", None), getattr(dim, "max", None)
    if isinstance(high, int) and high < 2 ** 31:
        entry.update(min=max(int(low or 1), 1), max=int(high))
    elif isinstance(low, int) and low > 1:
        entry.update(min=int(low), max=2 ** 31 - 1)
    return entry


def _affine(dim):
    """{"scale", "offset"} of a derived Dim's function of its root (torch.export derives with
    + - and * by integers: an affine function); UsageError for another."""
    try:
        values = [int(dim.fn(size)) for size in (1, 2, 7)]
    except Exception as error:  # noqa: BLE001 -- a function of the user's that does not take ints
        raise UsageError(f"derived Dim {dim.__name__}: onnxproof cannot evaluate it ({error})") from error
    scale = values[1] - values[0]
    offset = values[0] - scale
    if values[2] != 7 * scale + offset or scale < 1:
        raise UsageError(f"derived Dim {dim.__name__}: only increasing affine relations (d + 1, 2 * d) are proved")
    return {"scale": scale, "offset": offset}
