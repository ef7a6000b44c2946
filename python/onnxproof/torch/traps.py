"""The trace traps: tracer warnings, outputs that are not tensors, nondeterministic forwards,
operators the exporter cannot translate, and graphs that change when the inputs change."""
import contextlib
import dataclasses
import os
import re
import warnings

import numpy as np

from ..core.findings import finding

_TORCH_DIR = None


def inside_torch(filename):
    """True for PyTorch's own source files (their warnings are not the user's to fix)."""
    global _TORCH_DIR
    if _TORCH_DIR is None:
        import torch
        _TORCH_DIR = os.path.dirname(os.path.abspath(torch.__file__))
    return os.path.abspath(filename).startswith(_TORCH_DIR + os.sep)


def source_line(filename, lineno):
    try:
        with open(filename, encoding="utf-8", errors="replace") as source:
            for number, line in enumerate(source, start=1):
                if number == lineno:
                    return line.strip()
    except OSError:
        pass
    return ""


def classify_tracer_warnings(records):
    """Findings for recorded warnings; one per (file, line, kind)."""
    results = []
    seen = set()
    torch_warnings = []
    for record in records:
        if record.category.__name__ != "TracerWarning":
            continue
        text = str(record.message)
        key = (record.filename, record.lineno, text[:60])
        if key in seen:
            continue
        seen.add(key)
        where = f"{record.filename}:{record.lineno}"
        line = source_line(record.filename, record.lineno)
        if line:
            where += f": {line}"
        first_sentence = text.split(". ")[0]
        if inside_torch(record.filename):
            torch_warnings.append(f"{os.path.basename(record.filename)}:{record.lineno}")
        elif "Python boolean" in text:
            results.append(finding(
                "DATA_DEPENDENT_CONTROL_FLOW", "error",
                "a branch depends on a tensor's value; the trace recorded only the path the example took", where,
                "compute both sides and select with torch.where (or mask), instead of `if tensor:`"))
        elif re.search(r"Python (integer|float|number|index)", text):
            results.append(finding(
                "FROZEN_DIMENSION", "warning",
                "a tensor value or size became a Python number; the trace froze it as a constant", where,
                "keep sizes as tensors: x.reshape(x.shape[0], -1) or -1 instead of int(x.shape[0]); torch ops instead of .item()"))
        else:
            results.append(finding("TRACER_WARNING", "warning", first_sentence, where,
                                   "the trace may not generalize to other inputs; check the line named"))
    if torch_warnings:
        results.append(finding("TRACER_WARNING", "info",
                               f"{len(torch_warnings)} tracer warning(s) inside PyTorch's own code",
                               ", ".join(torch_warnings[:6]) + (" ..." if len(torch_warnings) > 6 else ""),
                               "not the model's code; the differential trace checks whether they matter"))
    return results


def flatten_outputs(value, path="output"):
    """(list of (name, tensor), list of findings) for a forward's result as the exporters write it:
    tensors, and tuples, lists, dicts and dataclasses of them (named output_0.. or by key or
    field; None is left out, as torch.export leaves it out), a complex tensor as its real view (a
    last axis of 2), a Python number (a size the forward computed) as a 0-d tensor: int64, bool,
    or float of the default dtype (float64 in the float64 twin); anything else is NON_TENSOR_OUTPUT."""
    import torch
    if isinstance(value, torch.Tensor):
        return [(path, torch.view_as_real(value.resolve_conj()) if value.is_complex() else value)], []
    if isinstance(value, (bool,) + _symbolic("SymBool")):
        return [(path, torch.tensor(bool(value)))], []
    if isinstance(value, (int,) + _symbolic("SymInt")):
        return [(path, torch.tensor(int(value), dtype=torch.int64))], []
    if isinstance(value, (float,) + _symbolic("SymFloat")):
        return [(path, torch.tensor(float(value)))], []
    if dataclasses.is_dataclass(value) and not isinstance(value, (type, dict)):
        value = {field.name: getattr(value, field.name) for field in dataclasses.fields(value)
                 if getattr(value, field.name) is not None}
    if isinstance(value, dict):
        items = [(f"{key}", item) for key, item in value.items()]
        if path != "output":
            items = [(f"{path}_{key}", item) for key, item in value.items()]
    elif isinstance(value, (tuple, list)):
        items = [(f"{path}_{index}", item) for index, item in enumerate(value)]
    else:
        return [], [finding("NON_TENSOR_OUTPUT", "error",
                            f"the model returns a {type(value).__name__} at {path}; ONNX outputs must be tensors",
                            path, "return tensors, numbers or tuples/dicts of them; drop other Python objects "
                            "(strings, classes) from forward's result")]
    tensors, problems = [], []
    for name, item in items:
        if item is None:
            continue
        sub_tensors, sub_problems = flatten_outputs(item, name)
        tensors += sub_tensors
        problems += sub_problems
    return tensors, problems


def _symbolic(name):
    """(torch.SymInt,) and the like where this torch has them (the oldest torch the front end
    runs under has no SymBool), else ()."""
    import torch
    kind = getattr(torch, name, None)
    return (kind,) if isinstance(kind, type) else ()


def as_float_array(tensor):
    """A tensor as a numpy array, bfloat16 and float8 widened to float32 (numpy has no such types)."""
    from ..core.cases import NARROW_FLOATS
    tensor = tensor.detach().cpu()
    return tensor.float().numpy() if str(tensor.dtype).replace("torch.", "") in NARROW_FLOATS else tensor.numpy()


def compare_forwards(first, second):
    """Names of outputs that differ between two runs on the same input (exactly, NaNs equal)."""
    differing = []
    for (name, a), (_, b) in zip(first, second):
        a, b = (as_float_array(tensor) for tensor in (a, b))
        if a.shape != b.shape or not np.array_equal(a, b, equal_nan=a.dtype.kind == "f"):
            differing.append(name)
    return differing


ATEN_FAST_PATHS = ("aten::_native_multi_head_attention", "aten::_transformer_encoder_layer_fwd")


def unsupported_aten_op(error):
    """The 'aten::name' an exporter error is about, or None."""
    text = str(error)
    if type(error).__name__ != "UnsupportedOperatorError" and "is not supported" not in text:
        return None
    match = re.search(r"aten::\w+", text)
    return match.group(0) if match else None


RANDOM_OPS = ("aten::rand", "aten::rand_like", "aten::randn", "aten::randn_like", "aten::randint",
              "aten::randint_like", "aten::randperm", "aten::bernoulli", "aten::bernoulli_", "aten::normal",
              "aten::normal_", "aten::uniform_", "aten::multinomial", "aten::exponential_", "aten::dropout",
              "aten::feature_dropout", "aten::alpha_dropout", "aten::rrelu")


def op_source_line(model, example_args, op_names):
    """'file:line: source' of the first call to one of `op_names` in the model's own code, found
    through a TorchScript trace's source ranges; '' when unknown."""
    import torch
    try:
        with warnings_silenced():
            graph = torch.jit.trace(model, example_args, check_trace=False, strict=False).inlined_graph
    except Exception:
        return ""
    for node in graph.nodes():
        if node.kind() in op_names:
            # TorchScript writes the call stack as "file(line): function" lines, innermost first.
            frames = re.findall(r"^(.+?)\((\d+)\): \w+$", node.sourceRange(), flags=re.MULTILINE)
            found = users_frame(reversed(frames))
            if found:
                return found
    return ""


@contextlib.contextmanager
def warnings_silenced():
    """No warnings while the source-line trace runs: they were recorded by the export already."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield


def forward_location(model):
    """'file:line' of the model's forward definition; '' when it has no Python source. A model
    onnxproof wrapped (a given file's binding: torch/given_file.py) is the user's model inside."""
    import inspect
    model = getattr(model, "wrapped_model", model)
    try:
        forward = type(model).forward
        return f"{inspect.getsourcefile(forward)}:{inspect.getsourcelines(forward)[1]}"
    except (TypeError, OSError):
        return ""


def diff_graphs(first, second, example_sizes, other_sizes):
    """Findings from two exports of the same model traced with different values and sizes:
    a different node sequence means the trace followed another path (data-dependent control
    flow); equal structure with different small integer constants means a size was frozen."""
    nodes_a, nodes_b = list(first.graph.node), list(second.graph.node)
    ops_a = [node.op_type for node in nodes_a]
    ops_b = [node.op_type for node in nodes_b]
    if ops_a != ops_b:
        index = next((i for i, (a, b) in enumerate(zip(ops_a, ops_b)) if a != b), min(len(ops_a), len(ops_b)))
        name_a = nodes_a[index].name if index < len(nodes_a) else "(end)"
        op_b = ops_b[index] if index < len(ops_b) else "(end)"
        op_a = ops_a[index] if index < len(ops_a) else "(end)"
        return [finding(
            "DATA_DEPENDENT_CONTROL_FLOW", "error",
            f"tracing with other values and sizes gives another graph ({len(ops_a)} vs {len(ops_b)} nodes; "
            f"node {index} is {op_a} in one and {op_b} in the other)", name_a,
            "the forward branches on tensor values or sizes in Python; use torch.where / masking, "
            "or script the branch (torch.jit.script) so ONNX gets an If node")]

    constants_a, constants_b = _small_int_constants(first), _small_int_constants(second)
    results = []
    for node_a, node_b in zip(nodes_a, nodes_b):
        for slot, (input_a, input_b) in enumerate(zip(node_a.input, node_b.input)):
            value_a, value_b = constants_a.get(input_a), constants_b.get(input_b)
            if value_a is None or value_b is None or value_a == value_b:
                continue
            frozen = [label for label, size in example_sizes.items()
                      if size in value_a and other_sizes.get(label) in value_b and size != other_sizes.get(label)]
            axis_text = f"dynamic axis '{frozen[0]}' frozen at {example_sizes[frozen[0]]}" if frozen else "a size was frozen"
            results.append(finding(
                "FROZEN_DIMENSION", "error",
                f"{node_a.op_type} input {slot} is the constant {value_a} when traced at {example_sizes} and "
                f"{value_b} at {other_sizes}: {axis_text}",
                node_a.name or node_a.op_type,
                "compute the size from the tensor (x.shape[0] without int(), or -1 in reshape) instead of a Python number",
                axis=frozen[0] if frozen else ""))
    return results


def load_small_external_tensors(model, folder):
    """Reads into `model` (loaded without its external data) the integer initializers of at most
    16 elements whose bytes lie in files in `folder`: what _small_int_constants compares, without
    the weights (a model over 2 GiB keeps every initializer outside)."""
    import math
    from onnx import TensorProto
    from onnx.external_data_helper import load_external_data_for_tensor, uses_external_data
    integers = {TensorProto.INT64, TensorProto.INT32, TensorProto.INT16, TensorProto.INT8, TensorProto.UINT8}
    for tensor in model.graph.initializer:
        if uses_external_data(tensor) and tensor.data_type in integers and math.prod(tensor.dims) <= 16:
            load_external_data_for_tensor(tensor, folder)
            tensor.data_location = TensorProto.DEFAULT
            del tensor.external_data[:]


def _small_int_constants(model):
    """{value name: list of ints} for int64/int32 initializers and Constant outputs of <= 16 elements."""
    from onnx import numpy_helper
    values = {}

    def keep(name, tensor):
        array = numpy_helper.to_array(tensor)
        if array.dtype.kind in "iu" and array.size <= 16:
            values[name] = [int(v) for v in array.reshape(-1)]

    for tensor in model.graph.initializer:
        if tensor.data_location != tensor.EXTERNAL:  # a weight left in its file (small integers are read in)
            keep(tensor.name, tensor)
    for node in model.graph.node:
        if node.op_type == "Constant":
            for attribute in node.attribute:
                if attribute.name == "value":
                    keep(node.output[0], attribute.t)
    return values


ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # all of onnxproof/


def inside_onnxproof(filename):
    return os.path.abspath(filename).startswith(_PACKAGE_DIR + os.sep)


def exception_chain(error):
    """The error and its causes, outermost first (each at most once)."""
    chain = []
    while error is not None and error not in chain:
        chain.append(error)
        error = error.__cause__ or error.__context__
    return chain


def _stdlib_dirs():
    import sysconfig
    return tuple(os.path.abspath(sysconfig.get_paths()[key]) + os.sep for key in ("stdlib", "platstdlib"))


def _site_dirs():
    import sysconfig
    return tuple(os.path.abspath(sysconfig.get_paths()[key]) + os.sep for key in ("purelib", "platlib"))


def in_stdlib(filename):
    """True for Python's standard library. In a virtual environment platstdlib is the
    environment's lib/pythonX.Y, which holds site-packages: an installed model library
    (torchvision, transformers) is not the standard library."""
    path = os.path.abspath(filename)
    return path.startswith(_stdlib_dirs()) and not path.startswith(_site_dirs())


def users_frame(frames):
    """'file:line: code' of the deepest of `frames` ((filename, line) pairs, outermost first) that
    is the user's own code: not PyTorch's, not onnxproof's, not Python's standard library (a model
    library such as transformers counts as the user's). '' when none is."""
    for filename, lineno in reversed(list(frames)):
        if filename.startswith("<") or inside_torch(filename) or inside_onnxproof(filename) or \
                in_stdlib(filename) or not os.path.isfile(filename):
            continue
        line = source_line(filename, int(lineno))
        return f"{filename}:{lineno}" + (f": {line}" if line else "")
    return ""


def user_frame(chain):
    """The user's deepest frame in an exception chain's tracebacks (users_frame), innermost error first."""
    import traceback
    for error in reversed(chain):
        found = users_frame((frame.filename, frame.lineno) for frame in traceback.extract_tb(error.__traceback__))
        if found:
            return found
    return ""


def first_line(error):
    text = ANSI.sub("", str(error)).strip()
    return text.splitlines()[0] if text else type(error).__name__


def dataclass_types(value):
    """The dataclass types in a forward's result (torch.export must be told how to flatten them)."""
    found = []
    if dataclasses.is_dataclass(value) and not isinstance(value, (type, dict)):  # a dict one (transformers'
        found.append(type(value))                                                  # ModelOutput) is known
        value = [getattr(value, field.name) for field in dataclasses.fields(value)]
    items = value.values() if isinstance(value, dict) else value if isinstance(value, (tuple, list)) else []
    for item in items:
        found += [kind for kind in dataclass_types(item) if kind not in found]
    return found


def has_lists(value):
    """True when a forward's result holds a list anywhere (List[Tensor], a tuple of lists): the
    TorchScript exporter writes a list as one ONNX sequence output, not one output per tensor."""
    if isinstance(value, list):
        return True
    if dataclasses.is_dataclass(value) and not isinstance(value, (type, dict)):
        value = [getattr(value, field.name) for field in dataclasses.fields(value)]
    items = value.values() if isinstance(value, dict) else value if isinstance(value, tuple) else []
    return any(has_lists(item) for item in items)


def output_groups(value):
    """How the TorchScript exporter lays out a scripted model's result as ONNX outputs: one entry
    per ONNX output, the number of tensors it carries (a tensor 1, a list a sequence of len(list);
    tuples and dicts are flattened), in flatten_outputs' order."""
    if isinstance(value, list):
        return [len(value)] if all(hasattr(item, "shape") for item in value) else \
            [count for item in value for count in output_groups(item)]
    if isinstance(value, dict):
        value = tuple(value.values())
    if isinstance(value, tuple):
        return [count for item in value for count in output_groups(item)]
    return [1]


def expand_sequence_outputs(path, names, groups, ranks=None):
    """Rewrites the model at `path` so that each sequence output (a scripted List[Tensor]) becomes
    one tensor output per element (SequenceAt), and every output is named as flatten_outputs names
    it: the reference stores one tensor per element, and ONNX Runtime's outputs must pair with them.
    Leaves the model alone when its outputs do not match `groups` (False), else True."""
    import onnx
    model = onnx.load(path)
    if not expand_sequences(model, names, groups, ranks):
        return False
    onnx.save(model, path)
    return True


def expand_sequences(model, names, groups, ranks=None):
    """expand_sequence_outputs on a ModelProto, in place. `ranks`: each flat output's rank (the
    checker wants a shape on every graph output; its dimensions are left symbolic)."""
    import onnx
    from onnx import helper
    graph = model.graph
    if len(graph.output) != len(groups) or sum(groups) != len(names):
        return False
    outputs, position = [], 0
    ranks = list(ranks) if ranks is not None and len(ranks) == len(names) else [None] * len(names)
    shape = dict(zip(names, ([f"{name}_dim{i}" for i in range(rank)] if rank is not None else None
                             for name, rank in zip(names, ranks))))
    for index, (output, count) in enumerate(zip(list(graph.output), groups)):
        mine = names[position:position + count]
        position += count
        if output.type.HasField("sequence_type"):
            element = output.type.sequence_type.elem_type.tensor_type.elem_type
            for slot, name in enumerate(mine):
                constant = f"{name}_sequence_index"
                graph.node.extend([
                    helper.make_node("Constant", [], [constant], name=f"{constant}_node",
                                     value=helper.make_tensor(constant, onnx.TensorProto.INT64, [], [slot])),
                    helper.make_node("SequenceAt", [output.name, constant], [name], name=f"{name}_sequence_at")])
                outputs.append(helper.make_tensor_value_info(name, element, shape[name]))
        elif output.name != mine[0]:
            graph.node.append(helper.make_node("Identity", [output.name], [mine[0]], name=f"{mine[0]}_named"))
            outputs.append(helper.make_tensor_value_info(mine[0], output.type.tensor_type.elem_type, shape[mine[0]]))
        else:
            outputs.append(output)
    del graph.output[:]
    graph.output.extend(outputs)
    return True


def with_flat_outputs(model):
    """The model with its outputs as a flat tuple, in flatten_outputs' order (the TorchScript
    exporter takes tuples, lists and dicts, not dataclasses). torch is imported lazily here, as
    everywhere in the front end, so a missing torch is one clear line."""
    import torch

    class FlatOutputs(torch.nn.Module):
        def __init__(self, inner):
            super().__init__()
            self.model = inner

        def forward(self, *args):
            return tuple(tensor for _, tensor in flatten_outputs(self.model(*args))[0])

    # In the model's mode: the exporter restores the wrapper's mode afterwards, and a wrapper left
    # in training mode would switch the model's dropout on for every later forward pass.
    return FlatOutputs(model).train(model.training)
