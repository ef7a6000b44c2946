"""Which exporter and opset an export uses, and what to do when ONNX Runtime or a --target
table refuses the opset chosen: the exporters to try, the default opset under the engine's
ceiling, the findings that say why an export was replaced, and the lower opset to try."""
import inspect
import os
import re

from ..core import opset_choice
from ..core.errors import FrontEndError, UsageError
from ..core.findings import finding
from ..core.memory import release_freed_memory
from ..core.runtime import import_onnxruntime
from . import dynamo

# Used only when the engine gives no ceiling (the front end run by hand): every runtime of 2022 on.
FALLBACK_OPSET = 17


def torch_version():
    import torch
    return torch.__version__.split("+")[0]


def resolve_exporters(requested, opset=0):
    """The exporters to try, in order: one for 'torchscript' and 'dynamo'; for 'auto', what the
    installed torch does by default (dynamo from torch 2.9 on), then the other one when it has it.
    The dynamo exporter writes opset 18 and newer: an older --opset leaves the TorchScript one."""
    import torch
    if requested not in ("auto", "torchscript", "dynamo"):
        raise UsageError(f"--exporter must be auto, torchscript or dynamo, not '{requested}'")
    parameter = inspect.signature(torch.onnx.export).parameters.get("dynamo")
    if requested == "dynamo" and parameter is None:
        raise FrontEndError(f"the dynamo exporter needs torch 2.5 or newer; this is torch {torch.__version__}")
    if requested == "dynamo" and 0 < opset < dynamo.OLDEST_OPSET:
        raise UsageError(f"--opset {opset}: the dynamo exporter writes opset {dynamo.OLDEST_OPSET} and newer; "
                         "use --exporter torchscript for older opsets")
    if requested != "auto":
        return [requested]
    if parameter is None or 0 < opset < dynamo.OLDEST_OPSET:
        return ["torchscript"]
    return ["dynamo", "torchscript"] if parameter.default is True else ["torchscript", "dynamo"]


def exporter_newest_opset(exporter):
    """The newest opset this torch's exporter writes: the TorchScript exporter stops at 20 on
    torch 2.x (at 17 on 1.13); the dynamo exporter goes further (ONNX_MAX_OPSET)."""
    from torch.onnx import _constants
    if exporter == "torchscript":
        return getattr(_constants, "ONNX_TORCHSCRIPT_EXPORTER_MAX_OPSET", _constants.ONNX_MAX_OPSET)
    return _constants.ONNX_MAX_OPSET


def exporter_default_opset():
    """The opset torch.onnx.export writes when given none (20 on torch 2.15, both exporters): the
    one its makers test most; 0 where this torch does not say."""
    from torch.onnx import _constants
    return int(getattr(_constants, "ONNX_DEFAULT_OPSET", 0) or 0)


def choose_opset(config, exporter):
    """(opset, why): --opset when given, else the lowest of the engine's ceiling (ONNX, ONNX
    Runtime, the target tables), what the exporter writes, torch's own default and what the
    ONNX Runtime releases of the last 18 months load (core/opset_choice.py)."""
    return opset_choice.choose_opset(
        config, lambda: exporter_newest_opset(exporter), (f"the {exporter} exporter of torch", f"the {exporter} exporter"),
        lambda newest: (min(FALLBACK_OPSET, newest), f"no ceiling from the engine: the fallback {FALLBACK_OPSET}"),
        exporter_default=exporter_default_opset())


def fallback_finding(failed, used, found, out):
    """EXPORTER_FALLBACK: `failed` could not export, `used` did; quotes failed's first error."""
    cause = next((f for f in found if f["severity"] == "error"), found[0] if found else None)
    said = (f"{cause['code']}: {cause['message']}" + (f" at {cause['where']}" if cause["where"] else "")) \
        if cause else "no finding"
    kept = failed == "dynamo" and os.path.exists(os.path.join(out, dynamo.REPORT_NAME))
    report = f" (its report: {dynamo.REPORT_NAME})" if kept else ""
    return finding(
        "EXPORTER_FALLBACK", "info",
        f"the {failed} exporter, torch {torch_version()}'s default, failed{report}, so the model was exported with "
        f"the {used} exporter; the {failed} exporter's finding: {said}", cause["where"] if cause else "",
        f"fix the cause to use the {failed} exporter, or choose one with --exporter", source=failed)


def refusal_finding(refused, opset, cause, used):
    """EXPORTER_FALLBACK: ONNX Runtime could not run `refused`'s model, so `used`'s was kept."""
    return finding(
        "EXPORTER_FALLBACK", "info",
        f"ONNX Runtime cannot run the {refused} exporter's model (opset {opset}) on the example, so the model was "
        f"exported with the {used} exporter; ONNX Runtime said: {cause}", f"{refused} opset {opset}",
        f"the {refused} export works once ONNX Runtime runs the quoted operator; --exporter pins one exporter",
        source=refused)


def model_operators(path):
    """The default-domain operator types of the ONNX model at `path`, subgraphs included (the
    weights are not read)."""
    import onnx
    model = onnx.load(path, load_external_data=False)
    found = set()

    def walk(graph):
        for node in graph.node:
            if node.domain in ("", "ai.onnx"):
                found.add(node.op_type)
            for attribute in node.attribute:
                for body in ([attribute.g] if attribute.HasField("g") else []) + list(attribute.graphs):
                    walk(body)
    walk(model.graph)
    return found


def table_opset_limit(path, opset, limits):
    """(opset, operators): the newest opset the --target tables support for every operator of the
    model when that is below `opset` (the engine's `opset_op_limits`: {op type: newest opset}),
    else (None, [])."""
    over = sorted(op for op in model_operators(path) if 0 < int(limits.get(op, opset)) < opset)
    if not over:
        return None, []
    return min(int(limits[op]) for op in over), over


def runtime_refusal(path, example):
    """None when ONNX Runtime's CPU provider loads the model and runs it on the example; else its
    message. The proof runs the same runtime later: a model it refuses proves nothing. Without the
    onnxruntime Python package (the wheel does not need it) the engine's own runtime is asked."""
    try:
        onnxruntime = import_onnxruntime()
    except ImportError:
        return engine_refusal(path, example)
    options = onnxruntime.SessionOptions()
    options.log_severity_level = 3  # its own warnings would flood export.log; the error is returned
    # Only whether it loads and runs matters here: no pre-packed weight copies, no memory arena
    # (a 1.3 GB model's check peaks at 1.0 GB instead of 1.3 GB above the process).
    options.add_session_config_entry("session.disable_prepacking", "1")
    options.enable_cpu_mem_arena = False
    try:
        session = onnxruntime.InferenceSession(path, options, providers=["CPUExecutionProvider"])
        session.run(None, {i.name: ort_feed(onnxruntime, example[i.name]) for i in session.get_inputs()
                           if i.name in example})
    except Exception as error:  # onnxruntime raises its own classes (Fail, InvalidGraph, ...)
        text = " ".join(str(error).split())
        return text[:400] + ("..." if len(text) > 400 else "")
    finally:
        session = None
        release_freed_memory(model_bytes(path))  # the session's copy of the weights, before the capture
    return None


def ort_feed(onnxruntime, array):
    """An input as ONNX Runtime's Python API takes it: a complex array as its real view (as the
    reference files hold it), bfloat16 and float8 (ml_dtypes' types, which it cannot convert) as
    an OrtValue of their bits."""
    import numpy as np
    from onnx import helper
    from ..core.reference import real_view
    array = real_view(array)
    if array.dtype.kind != "V":
        return array
    element = helper.np_dtype_to_tensor_dtype(array.dtype)
    bits = np.uint8 if array.dtype.itemsize == 1 else np.uint16
    return onnxruntime.OrtValue.ortvalue_from_numpy_with_onnx_type(np.ascontiguousarray(array).view(bits), element)


def model_bytes(path):
    """The bytes of a model file and its external weights file, when it has one."""
    return sum(os.path.getsize(name) for name in (path, path + ".data") if os.path.exists(name))


def engine_refusal(path, example):
    """runtime_refusal through `onnxproof run` (the engine's ONNX Runtime): None when it runs the
    example, else its error line; None too when no engine is found (nothing to ask)."""
    import subprocess
    import tempfile
    import numpy as np
    from ..core.engine import EngineError, engine_path
    try:
        engine = engine_path()
    except EngineError:
        return None
    import onnx
    graph = onnx.load(path, load_external_data=False).graph
    inputs = {value.name for value in graph.input} - {tensor.name for tensor in graph.initializer}
    with tempfile.TemporaryDirectory(prefix="onnxproof-runtime-check-") as folder:
        arguments = [engine, "run", path, "--output-dir", os.path.join(folder, "out")]
        for name, value in ((name, value) for name, value in example.items() if name in inputs):
            file = os.path.join(folder, f"input_{len(arguments)}.npy")
            np.save(file, np.asarray(value))
            arguments += ["--input", f"{name}={file}"]
        process = subprocess.run(arguments, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                 text=True, errors="replace")
    if process.returncode == 0:
        return None
    lines = [line for line in process.stderr.splitlines() if line.strip()]
    return (lines[-1] if lines else f"exit code {process.returncode}")[:400]


# How ONNX Runtime names the operator it refused: "running RotaryEmbedding node",
# "implementation for RoiAlign(22)", "Op type not registered 'X'".
_NAMED_OPERATOR = re.compile(r"running (\w+) node|implementation for (\w+)\(|Op type not registered '(\w+)'")


def lower_opset(path, opset, refusal, oldest):
    """The newest opset under `opset` at which the operator ONNX Runtime named (when it named
    none: the model's operator with the newest schema) resolves to an older schema, so the
    exporter writes it differently or not at all; None when that is below `oldest`."""
    import onnx.defs
    named = {name for match in _NAMED_OPERATOR.finditer(refusal or "") for name in match.groups() if name}
    operators = model_operators(path)
    suspects = (named & operators) or operators
    since = []
    for op in suspects:
        try:
            since.append(onnx.defs.get_schema(op, opset).since_version)
        except onnx.defs.SchemaError:
            continue
    if not since:
        return None
    lower = min(max(since) - 1, opset - 1)
    return lower if lower >= oldest else None
