"""The dynamo exporter (torch.export, then torch.onnx's translation), run in two steps so that each
failure is explained where it starts:

1. torch.export.export(strict=False) with one torch.export.Dim per --dynamic label (shared across
   inputs, with the --dynamic range when one is given). Its failures are data-dependent guards
   (DATA_DEPENDENT_CONTROL_FLOW), dynamic dimensions the code specialized to a constant or
   holds only in part of the declared range (FROZEN_DIMENSION, named by label, with the guard
   that did it and the range to declare) or anything else
   (EXPORT_FAILED), each at the user's own source line.
2. torch.onnx.export(ExportedProgram, report=True): its failures are operators with no ONNX
   translation (UNSUPPORTED_ATEN_OP, at the line that called the operator) or anything else.

torch.onnx.export given the nn.Module itself would, on a failed torch.export, try weaker capture
strategies (draft_export) that specialize what the user declared dynamic without saying so; a proof
tool takes the exact path or none.
"""
import contextlib
import glob
import inspect
import logging
import os
import re
import shutil
import traceback

from ..core.cases import size_ranges
from ..core.findings import finding
from .rnn_loops import dynamic_rnn_decompositions
from .given_file import forward_names
from .traps import ANSI, exception_chain, first_line, user_frame, users_frame

# The oldest opset the dynamo exporter writes (an older opset_version still gives 18).
OLDEST_OPSET = 18
# The exporter's own report, kept in the run folder (linked from report.md).
REPORT_NAME = "exporter_report.md"
# Above this size the model's weights go to model.onnx.data beside it, as torch.onnx.export's
# own default (external_data=True) puts any model's. Written in one file, a 1.1 GB model's save
# built its ModelProto and the serialized bytes beside the weights: the export stage peaked at
# 5.3 GB against 2.0 GB with external data, and ONNX Runtime maps external weights from the file
# instead of copying them (bench/RESULTS.md, issue 47). Small models stay in one portable file.
EXTERNAL_DATA_BYTES = 256 * 1024**2


class DynamoExportFailed(Exception):
    """The export stopped; `finding` says where and why."""

    def __init__(self, finding_):
        super().__init__(finding_["message"])
        self.finding = finding_


def dynamic_shapes(model, inputs, dynamic, narrowed=frozenset()):
    """torch.export's dynamic_shapes for the positional inputs: one Dim per label, shared by every
    input axis that carries it, bounded by the --dynamic range when given. Labels in `narrowed`
    (whose declared range torch.export found the code narrows) become Dim.DYNAMIC: torch keeps
    the range its guards allow, and the shape sweep proves the sizes."""
    import torch
    ranges = size_ranges(dynamic)
    dims = {}
    for axis in dynamic:
        if axis["label"] in narrowed:
            dims[axis["label"]] = torch.export.Dim.DYNAMIC
        elif axis["label"] not in dims and "derived" not in axis:
            bounds = dict(zip(("min", "max"), ranges[axis["label"]])) if axis["label"] in ranges else {}
            dims[axis["label"]] = torch.export.Dim(_identifier(axis["label"]), **bounds)
    for axis in dynamic:  # a derived Dim (d + 1) as torch.export spells it, from its root's Dim
        if "derived" in axis and axis["label"] not in dims:
            root, relation = dims.get(axis["derived"]["label"]), axis["derived"]
            plain = root is None or root is torch.export.Dim.DYNAMIC
            dims[axis["label"]] = torch.export.Dim.DYNAMIC if plain else (
                root * relation["scale"] + relation["offset"] if relation["scale"] != 1 else root + relation["offset"])
    shapes = tuple({axis["axis"]: dims[axis["label"]] for axis in dynamic if axis["input"] == spec["name"]} or None
                   for spec in inputs)
    # Keyed like forward()'s parameters when they can be: torch.export matches a tuple only when
    # forward takes exactly these positional parameters.
    names = forward_names(model)
    if names and len(names) == len(shapes):
        return dict(zip(names, shapes))
    rest = _var_positional(model)
    if rest and len(names) < len(shapes):  # forward(self, x, *args): the rest are one tuple, `args`
        return dict(zip(names, shapes[:len(names)]), **{rest: tuple(shapes[len(names):])})
    return shapes


def _var_positional(model):
    """The name of forward()'s *args parameter, '' when it has none."""
    try:
        parameters = inspect.signature(model.forward).parameters.values()
    except (TypeError, ValueError):
        return ""
    return next((p.name for p in parameters if p.kind == p.VAR_POSITIONAL), "")


def _identifier(label):
    """Dim names must be Python identifiers; a label like 'seq-len' becomes 'seq_len'."""
    name = re.sub(r"\W", "_", label)
    return name if name and not name[0].isdigit() else f"d_{name}"


class GuardLog(logging.Handler):
    """Records what torch.export's shape environment decides while it traces: which symbol stands
    for which input axis, each guard with the user's frame that raised it, and which symbols were
    specialized to a constant (and by which guard)."""

    _SYMBOL = re.compile(r"create_symbol (\w+) = (-?\d+) for L\['(\w+)'\](?:\[(\d+)\])?\.size\(\)\[(\d+)\]")
    _GUARD = re.compile(r"(?:eval|runtime_assert) (.+?) \[guard added\]")
    _SPECIALIZED = re.compile(r"set_replacement (\w+) = (-?\d+) ")

    def __init__(self, parameter_names, inputs, dynamic):
        super().__init__(logging.INFO)
        self.positions = {name: index for index, name in enumerate(parameter_names)}
        self.inputs = inputs
        self.dynamic = dynamic
        self.symbols = {}  # symbol -> label
        self.last_guard = None  # (expression, user frame)
        self.specialized = {}  # label -> (value, expression, user frame)

    def emit(self, record):
        try:
            text = record.getMessage()
        except Exception:  # a record torch formats lazily and cannot: not ours to break on
            return
        if match := self._SYMBOL.search(text):
            label = self._label_of(match.group(3), match.group(4), int(match.group(5)))
            if label:
                self.symbols[match.group(1)] = label
        elif match := self._GUARD.search(text):
            # This runs inside the guard's evaluation: the user's frame is on the stack now.
            self.last_guard = (match.group(1), _user_frame_on_stack())
        elif match := self._SPECIALIZED.search(text):
            label = self.symbols.get(match.group(1))
            if label and label not in self.specialized and self.last_guard:
                self.specialized[label] = (int(match.group(2)), *self.last_guard)

    def _label_of(self, parameter, element, axis):
        """The --dynamic label of forward parameter `parameter` (or args[element]), axis `axis`."""
        index = int(element) if parameter == "args" and element is not None else self.positions.get(parameter)
        if index is None or index >= len(self.inputs):
            return ""
        name = self.inputs[index]["name"]
        return next((a["label"] for a in self.dynamic if a["input"] == name and a["axis"] == axis), "")

    @contextlib.contextmanager
    def recording(self):
        logger = logging.getLogger("torch.fx.experimental.symbolic_shapes")
        saved = (logger.level, logger.propagate)
        # INFO is where torch logs guards; not propagated, so torch's own handlers print nothing.
        logger.setLevel(logging.INFO)
        logger.propagate = False
        logger.addHandler(self)
        try:
            yield self
        finally:
            logger.removeHandler(self)
            logger.setLevel(saved[0])
            logger.propagate = saved[1]


def _user_frame_on_stack():
    return users_frame((frame.filename, frame.lineno) for frame in traceback.extract_stack())


def capture(model, args, inputs, dynamic, output_dataclasses=(), findings=None, derived=(), couplings=()):
    """(the ExportedProgram, the labels exported as Dim.DYNAMIC), or DynamoExportFailed with the
    finding. Dataclasses the forward returns
    are registered with torch.export first (it flattens only the types it knows). An axis whose
    declared range the code narrows (a guard like `n // 2 <= n` torch cannot prove, or a real
    lower bound such as reflection padding's) is exported once more as Dim.DYNAMIC, with a
    FROZEN_DIMENSION warning naming the guard appended to `findings`: the sweep decides, and sizes
    PyTorch itself rejects are no cases. Labels the forward check found PyTorch needs resized
    together (`couplings`: x + y with x's axis 'a' and y's 'b', a pixel shuffle's skip at twice
    the size) are separate Dims torch.export refuses ("b must always be equal to a"): when the
    export fails, they are exported once more as Dim.DYNAMIC, and torch.export ties them itself."""
    import torch
    import torch.utils._pytree as pytree
    for kind in output_dataclasses:
        if kind not in pytree.SUPPORTED_NODES:
            torch.export.register_dataclass(kind)
    # A derived axis (a sum of other axes) is Dim.DYNAMIC: torch.export finds the relation itself.
    narrowed = {label: None for label, parts in dict(derived).items() if not isinstance(parts, dict)}
    while True:
        shapes = dynamic_shapes(model, inputs, dynamic, frozenset(narrowed))
        guards = GuardLog(forward_names(model), inputs, dynamic)
        try:
            with guards.recording(), dynamic_rnn_decompositions(shapes if dynamic else None):
                program = torch.export.export(model, args, dynamic_shapes=shapes if dynamic else None, strict=False)
            break
        except Exception as error:
            traceback.print_exc()  # the whole story goes to export.log
            more = {label: guard for label, guard in narrowed_labels(error, dynamic, guards).items()
                    if label not in narrowed}
            if not more and refused_relation(error):  # the coupled labels tied, once
                more = {label: None for group in couplings for label in group if label not in narrowed}
            if not more:
                raise DynamoExportFailed(classify_export_error(error, guards)) from error
            narrowed.update(more)
    for label, guard in narrowed.items():
        if findings is not None and guard is not None:
            findings.append(finding(
                "FROZEN_DIMENSION", "warning",
                f"dynamic axis '{label}' holds only where {guard} by torch.export's guards; exported with the "
                "range torch.export allows (Dim.DYNAMIC) and left to the shape sweep", "",
                "if production sends sizes outside it, the sweep's cases at them fail; declare the range with "
                "--dynamic NAME:AXIS=LABEL:MIN..MAX", axis=label))
    return program, frozenset(narrowed)


# torch 2.14 quotes a declared range here ("in the specified range 400 <= n <= 480000"), older
# torch and an undeclared range do not.
SPECIFIED_RANGE = r"in the specified range(?: [^\n]*?)?"


def refused_relation(error):
    """True when torch.export refused Dims the code relates ("a and b must always be equal",
    "... must always be related to the values of h by ... = 2*h", then "Suggested fixes"): the
    error coupled labels declared apart give."""
    return any(re.search(r"must always be (?:equal|related to)", ANSI.sub("", str(cause)))
               for cause in exception_chain(error))


def narrowed_labels(error, dynamic, guards):
    """{label: guard} for each declared axis that torch.export says holds only in part of its range
    ("Not all values of n = ... satisfy the generated guard ..."), not one it specialized to a
    constant."""
    labels = {_identifier(axis["label"]): axis["label"] for axis in dynamic}
    found = {}
    for cause in exception_chain(error):
        text = ANSI.sub("", str(cause))
        for match in re.finditer(rf"Not all values of (\w+) = (\S+) {SPECIFIED_RANGE} satisfy the generated "
                                 r"guard (.+)", text):
            label = labels.get(match.group(1), match.group(1))
            if label in guards.specialized or label not in labels.values():
                continue
            found[label] = match.group(3).strip().rstrip(".").replace(match.group(2), label)
    return found


def classify_export_error(error, guards):
    """A finding for a failed torch.export: the cause deep in the exception chain, at the user's own
    source line, with the fix; EXPORT_FAILED when it is none of the known kinds."""
    chain = exception_chain(error)
    where = user_frame(chain)
    for cause in reversed(chain):  # innermost first: the outer errors quote it
        text = ANSI.sub("", str(cause))
        if type(cause).__name__ == "GuardOnDataDependentSymNode" or "data-dependent expression" in text:
            return finding(
                "DATA_DEPENDENT_CONTROL_FLOW", "error",
                f"torch.export cannot follow a branch on a tensor's value: {first_line(cause)}", where,
                check_suggestion(where) or
                "express the branch with torch.cond or torch.where (or a mask); if the value is known to hold "
                "a property, state it with torch._check(...) before the branch")
        violated = re.search(r"Constraints violated \(([^)]*)\)", text)
        if violated:
            return _specialized_finding(violated.group(1), text, guards, where)
    root = chain[-1]
    return finding("EXPORT_FAILED", "error", f"torch.export failed: {type(root).__name__}: {first_line(root)}", where,
                   "the line named is where the export stopped in your code; the whole traceback is in "
                   "export.log; --exporter torchscript may get further")


def check_suggestion(where):
    """The torch._check that states the usual path of the `if COND:` at `where` ('file:line: code'),
    so torch.export can take it: `if x.numel() == 0:` (an empty-input early return) becomes
    torch._check(x.numel() != 0). '' when the line is no plain if."""
    code = where.split(": ", 1)[1].strip() if ": " in where else ""
    match = re.fullmatch(r"(?:el)?if (.+):", code)
    if not match:
        return ""
    condition = match.group(1).strip()
    equal = re.fullmatch(r"(.+?)\s*==\s*(.+)", condition)
    check = f"torch._check({equal.group(1)} != {equal.group(2)})" if equal else f"torch._check(not ({condition}))"
    location = where.split(": ", 1)[0]
    return (f"insert {check} just before {location} (in that library: patch it or wrap the call) to state the path "
            f"the example took, so torch.export follows it; an input that takes the other path then fails at run "
            f"time. Or keep --exporter torchscript (auto falls back to it), or make the branch "
            f"torch.fx.experimental.symbolic_shapes.guard_or_false({condition})")


def _specialized_finding(labels_text, text, guards, where):
    """FROZEN_DIMENSION for a constraint violation: an axis the code specialized to one size, or
    one that holds only in part of its declared range (then the fix is the range torch found)."""
    labels = [label.strip() for label in labels_text.split(",") if label.strip()]
    label = next((label for label in labels if label in guards.specialized), labels[0] if labels else "")
    also = f" (also: {', '.join(other for other in labels if other != label)})" if len(labels) > 1 else ""
    partial = re.search(rf"Not all values of {re.escape(label)} = (\S+) {SPECIFIED_RANGE} satisfy the "
                        r"generated guard (.+)", text)
    if label in guards.specialized:
        value, expression, guard_where = guards.specialized[label]
        for symbol, name in guards.symbols.items():  # Eq(s77, 2) -> Eq(batch, 2)
            expression = re.sub(rf"\b{symbol}\b", name, expression)
        message = (f"dynamic axis '{label}' was specialized to the constant {value} by the guard {expression} "
                   f"raised in your code; torch.export refuses to call it dynamic")
        where = guard_where or where
        hint = ("use the size as a tensor shape (x.shape[0], or -1 in reshape/view) instead of a Python int or a "
                "fixed number; a branch on a size needs torch.cond")
    elif partial:
        guard = partial.group(2).strip().replace(partial.group(1), label)
        bounds = _range_from_guard(guard, label)
        message = f"dynamic axis '{label}' holds only where {guard}: the model's code needs that, the axis was declared wider"
        axis = next((a for a in guards.dynamic if a["label"] == label), None)
        spelled = f"{axis['input']}:{axis['axis']}={label}" if axis else f"NAME:AXIS={label}"
        hint = (f"declare the range the model supports: --dynamic {spelled}:{bounds[0]}..{bounds[1]}" if bounds else
                "declare the range the model supports: --dynamic NAME:AXIS=LABEL:MIN..MAX")
    else:
        value = re.search(r"specialized it to be a constant \((-?\d+)\)", text)
        message = (f"dynamic axis '{label}' was specialized to a constant" + (f" ({value.group(1)})" if value else "")
                   + "; torch.export refuses to call it dynamic")
        hint = "use the size as a tensor shape (x.shape[0], or -1 in reshape/view) instead of a Python int"
    return finding("FROZEN_DIMENSION", "error", message + also, where, hint, axis=label)


def _range_from_guard(guard, label):
    """(min, max) from a guard like '2 <= sequence and sequence <= 128'; None when it is not one."""
    low = re.search(rf"(\d+) <= {re.escape(label)}\b", guard)
    high = re.search(rf"\b{re.escape(label)} <= (\d+)", guard)
    if not high:
        return None
    # torch's guards start at 2 (it specializes 0 and 1); the exported graph takes 1 as well.
    return (1 if not low or int(low.group(1)) <= 2 else int(low.group(1))), int(high.group(1))


def translate(program, args, inputs, dynamic, output_names, opset, path, run_folder, translations=None):
    """Writes the ONNX model of an ExportedProgram to `path` (weights beside it over 2 GiB), its
    dynamic dimensions named by their labels; keeps the exporter's report as
    run_folder/exporter_report.md. `translations`: the model's own custom_translation_table
    (torch op -> onnxscript function), for custom ops. DynamoExportFailed when translation fails."""
    import torch
    artifacts = os.path.join(run_folder, f".exporter-artifacts.tmp-{os.getpid()}")
    try:
        try:
            with torchlib_listed_without_parsing(), dynamic_rnn_decompositions(dynamic):
                onnx_program = torch.onnx.export(program, args, None, dynamo=True, opset_version=opset,
                                                 input_names=[spec["name"] for spec in inputs],
                                                 output_names=output_names, report=True,
                                                 artifacts_dir=artifacts, custom_translation_table=translations)
        except Exception as error:
            traceback.print_exc()
            report = _keep_report(artifacts, run_folder)
            raise DynamoExportFailed(classify_translation_error(error, opset, report)) from error
        _keep_report(artifacts, run_folder)
        name_dynamic_dims(onnx_program.model, dynamic)
        size = sum(tensor.numel() * tensor.element_size() for tensor in program.state_dict.values())
        onnx_program.save(path, external_data=size > EXTERNAL_DATA_BYTES)
        # onnxscript's rewrite rules keep the last graph they matched (a module-level
        # SimplePatternMatcher's _graph) and through it every initializer, the model's weights:
        # the float64 pass could then not free a large model's float32 weights (1.1 GB held on).
        # Saved, the graph lets them go.
        for value in onnx_program.model.graph.initializers.values():
            value.const_value = None
    finally:
        shutil.rmtree(artifacts, ignore_errors=True)


@contextlib.contextmanager
def torchlib_listed_without_parsing():
    """torch.onnx builds its operator registry on every export from onnxscript's
    `get_torchlib_ops`, which parses the source of each of its 557 torchlib functions only to read
    their domain (`function_ir.domain`): about 0.9 s of CPU per export process. Within the block
    the same list is made with each function's own `domain` (its opset's, the same string;
    tests/python/test_front_end.py::TorchlibListing compares the two lists). Left as it is when
    onnxscript's internals are not the ones this was written against."""
    try:
        from torch.onnx._internal.exporter import _registration
        from onnxscript._framework_apis.torch_2_5 import _OnnxFunctionMeta
        from onnxscript.function_libs.torch_lib import registration
        apis = _registration.onnxscript_apis
        original = apis.get_torchlib_ops
    except (ImportError, AttributeError):
        yield
        return

    def listed():
        from onnxscript.function_libs.torch_lib import ops  # noqa: F401 -- registers the operators
        return [_OnnxFunctionMeta(qualified_name=name, function=function, domain=function.domain, name=function.name,
                                  is_complex=is_complex)
                for name, functions in registration.default_registry.items() if not name.startswith("internal::")
                for is_complex, group in ((False, functions.overloads), (True, functions.complex))
                for function in group]

    apis.get_torchlib_ops = listed
    try:
        yield
    finally:
        apis.get_torchlib_ops = original


def _keep_report(artifacts, run_folder):
    reports = sorted(glob.glob(os.path.join(artifacts, "onnx_export_*.md")))
    if not reports:
        return ""
    os.replace(reports[-1], os.path.join(run_folder, REPORT_NAME))
    return REPORT_NAME


def classify_translation_error(error, opset, report):
    chain = exception_chain(error)
    where = _failing_node_source(chain)
    for cause in reversed(chain):
        match = re.search(r"No ONNX function found for <OpOverload\(op='([\w.]+)'", str(cause))
        if match:
            op = match.group(1)
            return finding(
                "UNSUPPORTED_ATEN_OP", "error",
                f"the dynamo exporter has no ONNX translation for {op} at opset {opset}: {first_line(cause)}",
                where or op,
                f"rewrite the call with operators ONNX has, try a newer --opset, or give torch.onnx.export a "
                f"custom_translation_table entry for {op} (an onnxscript function); a custom op needs a plugin "
                "in every target runtime", source=op)
    root = chain[-1]
    return finding("EXPORT_FAILED", "error",
                   f"the ONNX translation failed: {type(root).__name__}: {first_line(root)}", where,
                   "the exporter's report" + (f" ({report})" if report else "") +
                   " and export.log have the details; --exporter torchscript may get further")


def _failing_node_source(chain):
    """'file:line: code' of the user's call that made the graph node being translated when the
    error struck (the node is a local variable of torch's translation frames)."""
    import torch
    for error in reversed(chain):
        tb = error.__traceback__
        nodes = []
        while tb is not None:
            nodes += [value for value in tb.tb_frame.f_locals.values() if isinstance(value, torch.fx.Node)]
            tb = tb.tb_next
        for node in reversed(nodes):
            found = users_frame(re.findall(r'File "([^"]+)", line (\d+)', node.meta.get("stack_trace") or ""))
            if found:
                return found
    return ""


def name_dynamic_dims(model, dynamic):
    """Renames the exporter's symbols for the dynamic axes (s77) to their --dynamic labels (batch)
    in every value's shape of the model (an onnx_ir.Model, before it is saved); symbols of other
    sizes keep their names."""
    import onnx_ir as ir
    renames = {}
    by_name = {value.name: value for value in model.graph.inputs}
    for axis in dynamic:
        value = by_name.get(axis["input"])
        shape = value.shape if value is not None else None
        if shape is not None and axis["axis"] < len(shape) and isinstance(shape[axis["axis"]], ir.SymbolicDim) \
                and shape[axis["axis"]].value:
            renames.setdefault(shape[axis["axis"]].value, axis["label"])  # tied labels: the first names it
    if not renames:
        return
    pattern = re.compile(r"\b(" + "|".join(map(re.escape, renames)) + r")\b")

    def renamed(dim):
        if isinstance(dim, ir.SymbolicDim) and dim.value:
            return ir.SymbolicDim(pattern.sub(lambda match: renames[match.group(1)], dim.value))
        return dim

    nodes = ir.traversal.RecursiveGraphIterator(model.graph)
    for value in [*model.graph.inputs, *model.graph.outputs, *(out for node in nodes for out in node.outputs)]:
        if value.shape is not None:
            value.shape = ir.Shape([renamed(dim) for dim in value.shape])
