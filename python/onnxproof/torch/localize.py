"""Divergence localization, PyTorch's half (the engine compares; src/localize/).

For one reference case, writes RUN/localize/modules.json (schema onnxproof.localize/1): every
PyTorch module call in the order the calls finished, with its class, the source line of its
forward(), the ONNX nodes the exporter attributed to it and the ONNX values that carry its inputs
and outputs across the module's boundary, each paired with PyTorch's tensor and the float64
twin's (.pb files beside it), so the engine judges each module by the calibrated rule. The module of a node comes from what the exporter left: the dynamo exporter's node
metadata (pkg.torch.onnx.name_scopes), the TorchScript exporter's scoped node names
(/layer1/layer1.0/conv1/Conv). What cannot be matched is recorded with the reason, never guessed.

    python -m onnxproof --localize-json '{"run": RUN, "model": "model.onnx", "case": "test_data_set_3"}'
"""
import ast
import inspect
import json
import os
import re

from ..core import contract
from ..core.localization import float_values, integer_values, module_boundaries
from ..core.errors import FrontEndError, UsageError
from .arrays import to_torch

SCHEMA = contract.LOCALIZE
NAME_SCOPES = "pkg.torch.onnx.name_scopes"
_REPEATED_CALL = re.compile(r"_(\d+)$")  # relu_1: the second call of module relu


def _resolve(name, prefix, modules):
    """The module a scope component names, nearest first: the name under `prefix`, then under each
    of prefix's ancestors up to the root (TorchScript names a Sequential's child block.0 under the
    Sequential's parent: /features/features.1/block/block.0/...), with or without a repeated-call
    suffix; None when no module has it. So layer1.0's conv1 is never the top-level conv1."""
    parts = prefix.split(".") if prefix else []
    for depth in range(len(parts), -1, -1):
        candidate = ".".join(parts[:depth] + [name])
        if candidate in modules:
            return candidate
        base = _REPEATED_CALL.sub("", candidate)
        if base != candidate and base in modules:
            return base
    return None


def node_module(node, modules):
    """The qualified name of the innermost module a node belongs to ('' for the root), or None."""
    props = {prop.key: prop.value for prop in node.metadata_props}
    if NAME_SCOPES in props:
        try:
            scopes = ast.literal_eval(props[NAME_SCOPES])
        except (ValueError, SyntaxError):
            return None
        return _deepest(scopes[1:-1], modules)  # [root '', modules..., the op itself]
    if not node.name.startswith("/"):
        return None
    return _deepest(node.name.split("/")[1:-1], modules)


def _deepest(scopes, modules):
    """The qualified name `scopes` (outermost first) resolve to, one level at a time, as far as
    they resolve ('' when the first does not)."""
    path = ""
    for scope in scopes:
        resolved = _resolve(scope, path, modules)
        if resolved is None:
            break
        path = resolved
    return path


def _tensors(value):
    """The tensors in a module's arguments or result, flattened in order."""
    import torch
    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, dict):
        return [t for item in value.values() for t in _tensors(item)]
    if isinstance(value, (list, tuple)):
        return [t for item in value for t in _tensors(item)]
    if hasattr(value, "__dataclass_fields__"):
        return [t for name in value.__dataclass_fields__ for t in _tensors(getattr(value, name))]
    return []


def _source(module):
    try:
        function = inspect.unwrap(type(module).forward)
        return f"{inspect.getsourcefile(function)}:{inspect.getsourcelines(function)[1]}"
    except (TypeError, OSError):
        return ""


def capture(model, args):
    """Runs model(*args) with hooks on every module; returns (calls in the order they finished,
    the model's outputs). A call: {module, call, class, source, inputs, outputs} with tensors."""
    import torch
    calls, counts, handles, copies = [], {}, [], {}
    names = {id(module): name for name, module in model.named_modules()}

    def copy(tensor):
        # One copy per tensor state: a block's output is its last child's, and the next module's
        # input; the version counter tells an in-place change (ReLU(inplace=True)) apart. The
        # original is kept alive with its copy, so its id is never reused by a later tensor.
        key = (id(tensor), tensor._version)
        if key not in copies:
            copies[key] = (tensor, tensor.detach().clone())
        return copies[key][1]

    def hook(module, inputs, output):
        name = names[id(module)]
        counts[name] = counts.get(name, -1) + 1
        calls.append({"module": name, "call": counts[name],
                      "class": f"{type(module).__module__}.{type(module).__qualname__}", "source": _source(module),
                      "inputs": [copy(t) for t in _tensors(inputs)], "outputs": [copy(t) for t in _tensors(output)]})

    for module in model.modules():
        handles.append(module.register_forward_hook(hook))
    try:
        with torch.no_grad():
            outputs = model(*args)
    finally:
        for handle in handles:
            handle.remove()
    return calls, outputs


def _pair(values, tensors, exacts, floats, integers=frozenset()):
    """(pairs, reason): ONNX values paired in order with PyTorch's floating-point tensors and
    their float64 twins (None where there is none); no pairs and the reason when they do not line
    up one to one (nothing is claimed then). Integer tensors are paired too where they line up one
    to one with the integer ONNX values (an Embedding's indices): a module reading a wrong index
    computed before it then has disagreeing inputs, and is not blamed for it."""
    import torch
    kept = [(t, e) for t, e in zip(tensors, exacts) if t.is_floating_point()]
    values_kept = [v for v in values if (floats is None or v in floats) and v not in integers]
    whole = [t for t in tensors if not t.is_floating_point() and not t.is_complex() and t.dtype != torch.bool]
    indices = [v for v in values if v in integers]
    integer_pairs = [(v, t, None) for v, t in zip(indices, whole)] if whole and len(indices) == len(whole) else []
    if kept and len(values_kept) == len(kept):
        return [(value, tensor, exact) for value, (tensor, exact) in zip(values_kept, kept)] + integer_pairs, ""
    if integer_pairs and not kept and not values_kept:  # integers alone (an Embedding's indices)
        return integer_pairs, ""
    return [], f"{len(values_kept)} floating-point ONNX values and {len(kept)} PyTorch tensors cross its boundary"


def _folded_after(entry, later, boundaries):
    """The modules after `entry` the exporter folded into its nodes: each has no ONNX node of its
    own and takes the one tensor the one before it returned (Conv -> BatchNorm in eval mode, which
    TorchScript and the dynamo exporter fold into the Conv's weights). The ONNX value leaving
    `entry`'s nodes is then the last one's output, not `entry`'s own."""
    import torch
    chain, current = [], entry
    for candidate in later:
        if (candidate["module"] in boundaries or len(current["outputs"]) != 1 or len(candidate["inputs"]) != 1
                or candidate["calls"] != 1 or current["calls"] != 1):
            break
        before, after = current["outputs"][0], candidate["inputs"][0]
        if before.shape != after.shape or not torch.equal(before, after):
            break
        chain.append(candidate)
        current = candidate
    return chain


def _grouped(calls):
    """One entry per module, in the order its first call finished; a module called several times
    (a shared activation) has its calls' tensors one after the other, as the graph has them."""
    grouped = {}
    for call in calls:
        entry = grouped.setdefault(call["module"], dict(call, calls=0, inputs=[], outputs=[], exact_inputs=[],
                                                        exact_outputs=[]))
        entry["calls"] += 1
        for side in ("inputs", "outputs"):
            entry[side] += call[side]
            entry["exact_" + side] += call.get("exact_" + side) or [None] * len(call[side])
    return list(grouped.values())


def capture_exact(model, args, calls):
    """The float64 twin's tensors at every boundary `calls` (capture's, in float32) has: {(module,
    call): (inputs, outputs)}, each list aligned with the float32 call's, None where the twin's
    tensor is not a float64 of the same shape. Empty when the model has no float64 run (then the
    engine judges by the fixed rule, as parity does)."""
    import torch
    from .exact import ExactReference, default_dtype
    exact = ExactReference(model, in_place=False)
    with exact.float64_model():
        if exact.model is None:
            return {}
        widened = tuple(arg.double() if arg.is_floating_point() else arg for arg in args)
        try:
            with default_dtype(torch.float64):
                twin_calls, _ = capture(exact.model, widened)
        except Exception:  # noqa: BLE001 -- no float64 run: the fixed rule judges, as in parity
            return {}
    twins = {(call["module"], call["call"]): call for call in twin_calls}
    aligned = {}
    for call in calls:
        twin = twins.get((call["module"], call["call"]))
        if twin is None:
            continue
        sides = []
        for side in ("inputs", "outputs"):
            ours, theirs = call[side], twin[side]
            sides.append([t if len(ours) == len(theirs) and t.dtype == torch.float64 and t.shape == o.shape else None
                          for o, t in zip(ours, theirs)] if len(ours) == len(theirs) else [None] * len(ours))
        aligned[(call["module"], call["call"])] = tuple(sides)
    return aligned


def _write_tensor(path, tensor):
    import torch
    from onnx import numpy_helper
    data = tensor.float().numpy() if tensor.dtype == torch.bfloat16 else tensor.numpy()
    with open(path, "wb") as handle:
        handle.write(numpy_helper.from_array(data).SerializeToString())


def _read_case(folder, prefix):
    from onnx import TensorProto, numpy_helper
    arrays, index = [], 0
    while os.path.exists(os.path.join(folder, f"{prefix}_{index}.pb")):
        proto = TensorProto()
        with open(os.path.join(folder, f"{prefix}_{index}.pb"), "rb") as handle:
            proto.ParseFromString(handle.read())
        arrays.append(numpy_helper.to_array(proto))
        index += 1
    return arrays


def _check_same_model(outputs, expected, case, bound_outputs=None):
    """The rerun must be the model that was exported: its outputs equal the reference's (for a
    given file, the model's outputs the file's are bound to, in the file's order)."""
    import numpy as np
    from .traps import flatten_outputs
    named, _ = flatten_outputs(outputs)
    if bound_outputs is not None:
        by_name = dict(named)
        named = [(name, by_name[name]) for name in bound_outputs if name in by_name]
    got = [value.detach().cpu().numpy() for _, value in named]
    if len(got) != len(expected) or not all(
            a.shape == b.shape and np.allclose(a, b, rtol=1e-4, atol=1e-5, equal_nan=True) for a, b in zip(got, expected)):
        raise FrontEndError(f"the model loaded again does not reproduce PyTorch's reference outputs of {case} "
                            "(random weights without a seed, or a nondeterministic forward): nothing to localize against")


def _given_file(run):
    """export.json's given_file of a run that proved a file the user made (--onnx), else None."""
    with open(os.path.join(run, "export.json"), encoding="utf-8") as handle:
        return json.load(handle).get("given_file")


def _model_arguments(given, inputs):
    """A reference case's inputs (the file's, in its order, dtypes and layout) as the model's
    forward() takes them; FrontEndError where the file leaves out one of the model's inputs."""
    import numpy as np
    from ..core.cases import numpy_dtype
    from ..core.given_binding import layout_permutation
    by_model = {record["model"]: (record, array) for record, array in zip(given["inputs"], inputs)}
    arguments = []
    for name in given.get("model_inputs") or [record["model"] for record in given["inputs"]]:
        if name not in by_model:
            if len(arguments) == len(by_model):
                break  # the inputs after the file's: forward()'s defaults
            raise FrontEndError(f"the file leaves out the model's input {name}: its modules cannot be called as "
                                "the file was bound")
        record, array = by_model[name]
        perm = layout_permutation(record.get("layout"))
        array = array if perm is None else np.transpose(array, np.argsort(perm))
        if "cast" in record:
            array = array.astype(numpy_dtype(record["cast"].split("->")[-1].strip()))
        arguments.append(array)
    return arguments


def write_localization(run, model_file, case, model):
    """Captures every module of `model` on the reference case `case` of the run folder and
    writes run/localize/modules.json with the ONNX values of `model_file` (in the run folder)."""
    import onnx
    import torch
    reference = os.path.join(run, "reference", case)
    inputs = _read_case(reference, "input")
    if not inputs:
        raise UsageError(f"{reference} holds no input_0.pb: no such reference case")
    given = _given_file(run)
    if given:
        inputs = _model_arguments(given, inputs)
    args = tuple(to_torch(array) for array in inputs)
    calls, outputs = capture(model, args)
    _check_same_model(outputs, _read_case(reference, "output"), case,
                      [record["model"] for record in given["outputs"]] if given else None)
    # The float64 twin's values at the same boundaries: the engine judges each module's error by
    # the calibrated rule (its distance from exact against PyTorch's own float32 noise there).
    for key, (exact_inputs, exact_outputs) in capture_exact(model, args, calls).items():
        call = next(call for call in calls if (call["module"], call["call"]) == key)
        call["exact_inputs"], call["exact_outputs"] = exact_inputs, exact_outputs
    onnx_model = onnx.load(os.path.join(run, model_file), load_external_data=False)
    for initializer in onnx_model.graph.initializer:
        if len(initializer.raw_data) > 4096:  # only the graph's structure is needed here, not its weights
            initializer.ClearField("raw_data")
    boundaries = module_boundaries(onnx_model.graph, {name for name, _ in model.named_modules()}, node_module)
    floats, integers = float_values(onnx_model), integer_values(onnx_model)
    import shutil
    folder = os.path.join(run, "localize")
    shutil.rmtree(os.path.join(folder, "pytorch"), ignore_errors=True)  # no tensor of an earlier capture stays
    os.makedirs(os.path.join(folder, "pytorch"))
    modules, written = [], {}
    grouped = _grouped(calls)
    for order, entry in enumerate(grouped):
        record = {key: entry[key] for key in ("module", "class", "source", "calls")}
        nodes, onnx_inputs, onnx_outputs = boundaries.get(entry["module"], ([], [], []))
        record["nodes"] = nodes
        folded = _folded_after(entry, grouped[order + 1:], boundaries) if nodes else []
        if folded:  # its ONNX output is the folded module's (a BatchNorm folded into a Conv)
            entry = dict(entry, outputs=folded[-1]["outputs"], exact_outputs=folded[-1]["exact_outputs"])
            record["folded"] = [later["module"] for later in folded]
        pairs = {}
        reason = "" if nodes else "no ONNX node carries this module's scope (fused, folded or inlined by the exporter)"
        for side, values in (("inputs", onnx_inputs), ("outputs", onnx_outputs)):
            pairs[side], why = _pair(values, entry[side], entry["exact_" + side], floats,
                                     integers if side == "inputs" else frozenset()) if nodes else ([], "")
            reason = reason or (why if side == "outputs" else "")
        record["matched"] = bool(pairs["outputs"])
        record["reason"] = "" if record["matched"] else reason
        for side in ("inputs", "outputs"):
            record[side] = []
            for k, (value, tensor, exact) in enumerate(pairs[side] if record["matched"] else []):
                item = {"onnx": value}
                for key, saved in (("pytorch", tensor), ("exact", exact)):
                    if saved is None:
                        continue
                    if id(saved) not in written:  # a tensor two modules share is written once
                        written[id(saved)] = os.path.join("pytorch", f"{order:05d}_{side[:-1]}_{k}_{key}.pb")
                        _write_tensor(os.path.join(folder, written[id(saved)]), saved)
                    item[key] = written[id(saved)]
                record[side].append(item)
        modules.append(record)
    manifest = {"schema": SCHEMA, "case": case, "model": model_file, "modules": modules}
    with open(os.path.join(folder, "modules.json.tmp"), "w", encoding="utf-8") as handle:
        handle.write(contract.dumps(manifest, "localize", indent=1))
    os.replace(os.path.join(folder, "modules.json.tmp"), os.path.join(folder, "modules.json"))
    return manifest


def main(request):
    """The engine's call: {"run", "model", "case"}; the model is loaded again from the run's
    export.json (its --model spec, seeded as the export was)."""
    import torch
    from . import spec as specs
    for key in ("run", "model", "case"):
        if not isinstance(request.get(key), str) or not request[key]:
            raise contract.ContractError(f"localize.{key}: expected a non-empty string")
    with open(os.path.join(request["run"], "export.json"), encoding="utf-8") as handle:
        exported = json.load(handle)
    options = exported.get("options", {})
    torch.manual_seed(int(options.get("seed", 0)))
    model, _, _ = specs.load_model(exported["model"])
    model.eval()
    model.cpu()
    write_localization(request["run"], request["model"], request["case"], model)
    return 0
