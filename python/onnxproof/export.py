"""The export step: a PyTorch model becomes OUT/model.onnx, OUT/reference/ (PyTorch's inputs and
outputs for every shape case) and OUT/export.json (versions, options, timings, findings, sha256).

    /usr/bin/python3 -m onnxproof --config-json '{"model": "torchvision:resnet18", ...}'

`onnxproof export` (C++) builds the configuration from its options and runs this module. Progress
goes to stderr; a user error ends with one line `onnxproof: error: ...` and exit code 2 or 3; a
model problem is a finding in export.json and exit code 1.
"""
import argparse
import contextlib
import hashlib
import inspect
import io
import json
import os
import platform
import re
import shutil
import sys
import time
import typing
import warnings

from . import __version__, contract
from .exact import ExactReference
from .cases import (cap_offsets, coupled_cases, coupled_groups, domain_of, example_sizes, generate_in_domain,
                    shape_for, size_ranges)
from .errors import EXIT_FAIL, FrontEndError, UsageError
from .findings import finding
from . import spec as specs
from . import dynamo, families
from . import traps

# Used only when the engine gives no ceiling (the front end run by hand): every runtime of 2022 on.
FALLBACK_OPSET = 17


def torch_version():
    import torch
    return torch.__version__.split("+")[0]


def progress(message):
    print(f"onnxproof export: {message}", file=sys.stderr, flush=True)


def temporary_path(path):
    """A name beside `path` that no other run uses (the engine's convention: NAME.tmp-PID)."""
    return f"{path}.tmp-{os.getpid()}"


def write_atomically(path, data):
    mode = "wb" if isinstance(data, bytes) else "w"
    temporary = temporary_path(path)
    try:
        with open(temporary, mode) as handle:
            handle.write(data)
        os.replace(temporary, path)
    finally:
        if os.path.exists(temporary):
            os.remove(temporary)


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


def choose_opset(config, exporter):
    """(opset, why): --opset when given, else the newest that both the engine (ONNX, ONNX Runtime,
    the target tables) and the exporter support."""
    requested = int(config.get("opset") or 0)
    if requested:
        return requested, "--opset"
    ceiling = int(config.get("opset_ceiling") or 0)
    newest = exporter_newest_opset(exporter)
    if not ceiling:
        return min(FALLBACK_OPSET, newest), f"no ceiling from the engine: the fallback {FALLBACK_OPSET}"
    reason = config.get("opset_ceiling_reason", "")
    if newest < ceiling:
        return newest, f"the {exporter} exporter of torch writes up to {newest} ({reason})"
    return ceiling, f"{reason}; the {exporter} exporter writes up to {newest}"


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
        import onnxruntime
    except ImportError:
        return engine_refusal(path, example)
    options = onnxruntime.SessionOptions()
    options.log_severity_level = 3  # its own warnings would flood export.log; the error is returned
    try:
        session = onnxruntime.InferenceSession(path, options, providers=["CPUExecutionProvider"])
        session.run(None, {i.name: example[i.name] for i in session.get_inputs() if i.name in example})
    except Exception as error:  # onnxruntime raises its own classes (Fail, InvalidGraph, ...)
        text = " ".join(str(error).split())
        return text[:400] + ("..." if len(text) > 400 else "")
    return None


def engine_refusal(path, example):
    """runtime_refusal through `onnxproof run` (the engine's ONNX Runtime): None when it runs the
    example, else its error line; None too when no engine is found (nothing to ask)."""
    import subprocess
    import tempfile
    import numpy as np
    from .engine import EngineError, engine_path
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


class InMemoryModel(typing.NamedTuple):
    """A model handed over as an object (onnxproof.prove): exported as it is, at `example`
    ({input name: array}), and proved on `samples` (a list of such dicts) when given, else on
    generated shape cases."""
    model: object
    description: str
    example: dict
    samples: list = None


class Exporter:
    """One export run; collects findings and timings as it goes."""

    def __init__(self, config, given=None):
        """`given`: an InMemoryModel (the Python API's model object, example and data) in place
        of loading config["model"] and generating the example."""
        self.config = config
        self.given = given
        self.out = config["out"]
        self.model_path = os.path.join(self.out, "model.onnx")
        self.inputs = config["inputs"]
        self.dynamic = config.get("dynamic", [])
        self.opset = None  # chosen once the exporter is known
        self.opset_reason = ""
        self.findings = []
        self.timings = {}
        self.output_names = []
        self.output_dataclasses = []
        self.output_axes = {}

    def timed(self, stage, function, *args):
        start = time.perf_counter()
        try:
            return function(*args)
        finally:
            self.timings[stage] = round(self.timings.get(stage, 0.0) + time.perf_counter() - start, 4)

    def run(self):
        import numpy as np
        import torch
        model_spec = self.config["model"]
        if self.given is None:
            specs.check_model_spec(model_spec)
        if not self.inputs and not families.is_family(model_spec):
            raise UsageError("declare the model's inputs with --input NAME=DIMS:DTYPE")
        exporters = resolve_exporters(self.config.get("exporter", "auto"), int(self.config.get("opset") or 0))
        if self.given is None:
            progress(f"loading {model_spec}")
            # Seeded: a model built with random weights is the same model when it is loaded again
            # (divergence localization reruns it).
            torch.manual_seed(int(self.config.get("seed", 0)))
            model, self.description, defaults = self.timed("load", specs.load_model, model_spec)
        else:
            model, self.description, defaults = self.given.model, self.given.description, None
        if not self.inputs:
            # The family's own inputs; a --dynamic given alone is not mixed with them.
            self.inputs, self.dynamic = defaults["inputs"], defaults["dynamic"]
            progress("inputs: " + ", ".join(f"{spec['name']} {'x'.join(map(str, spec['dims']))} {spec['dtype']}"
                                            for spec in self.inputs))
        self.examples = example_sizes(self.inputs, self.dynamic)
        self.exporter = exporters[0]
        self.opset, self.opset_reason = choose_opset(self.config, self.exporter)  # until an export chooses
        model = self.prepare(model)

        example = self.example_arrays()
        progress("running the forward pass on the example input")
        outputs = self.timed("forward", self.check_forward, model, example)
        if outputs is None:
            return self.finish(exported=False)

        self.output_axes = self.timed("output_axes", self.label_output_axes, model, example, outputs)
        if not self.timed("export", self.export_with_fallback, model, example, exporters):
            return self.finish(exported=False)
        if self.exporter == "torchscript":
            progress("tracing again with other values and sizes")
            self.timed("differential_trace", self.differential_trace, model, example, self.model_path)
        else:
            # The differential trace compares two TorchScript traces; a dynamo graph is symbolic
            # and is not comparable with one. Said, not passed silently.
            self.findings.append(finding(
                "DIFFERENTIAL_TRACE_NOT_RUN", "info", "the differential trace was not run: it compares TorchScript traces, "
                "and this model was exported with the dynamo exporter", "",
                "the shape cases of the parity step still prove every size; --exporter torchscript runs it"))
        progress("capturing PyTorch's reference outputs")
        model.eval()  # whatever an exporter restored: the reference is eval mode's, as the export was
        self.timed("reference", self.write_reference, model)
        return self.finish(exported=True)

    def prepare(self, model):
        import torch
        if model.training:
            # Modules whose forward differs in training mode; without any, the mode only matters to
            # code that reads self.training itself.
            changing = sorted({type(m).__name__ for m in model.modules()
                               if isinstance(m, (torch.nn.modules.dropout._DropoutNd, torch.nn.modules.batchnorm._NormBase))})
            self.findings.append(finding(
                "TRAINING_MODE", "warning" if changing else "info",
                f"the model came in training mode ({', '.join(changing)} behave differently in it); exported in eval mode"
                if changing else "the model came in training mode; exported in eval mode (it holds no dropout or "
                "batch norm, so only code reading self.training could differ)",
                "", "call model.eval() before exporting; onnxproof did it for you"))
            model.eval()
        devices = {parameter.device.type for parameter in model.parameters()}
        if devices - {"cpu"}:
            self.findings.append(finding("MOVED_TO_CPU", "info", f"the model was on {', '.join(sorted(devices))}; "
                                         "moved to the CPU for export and reference outputs", "", ""))
            model.cpu()
        return model

    def args_for(self, arrays):
        """Fresh tensors for every call: a forward that mutates an input in place (x[i] += u) must
        not change the stored arrays, which are what ONNX Runtime is fed later. np.array also turns
        a 0-d numpy scalar (numpy.bool_) into the 0-d array torch.from_numpy needs."""
        import numpy as np
        import torch
        return tuple(torch.from_numpy(np.array(arrays[spec["name"]], copy=True)) for spec in self.inputs)

    def example_arrays(self):
        """The example: the user's own arrays (the Python API), whose values set the domain every
        generated input keeps, or generated ones. Also the candidate groups of coupled labels."""
        import numpy as np
        self.couplings = []  # groups of labels PyTorch needs at one size (label_output_axes finds them)
        self.coupling_candidates = coupled_groups(self.inputs, self.dynamic)
        if self.given:
            self.domains = {name: domain_of(name, array) for name, array in self.given.example.items()}
            self.example = dict(self.given.example)
        else:
            self.domains = {}
            self.example = self.generate_inputs(self.examples, np.random.default_rng(int(self.config.get("seed", 0))))
        return self.example

    def generate_inputs(self, sizes, rng):
        """{input name: array} at the axis sizes `sizes`, inside the example's value domain."""
        arrays = {spec["name"]: generate_in_domain(spec, shape_for(spec, self.dynamic, sizes), rng,
                                                   getattr(self, "domains", {}).get(spec["name"]))
                  for spec in self.inputs}
        return cap_offsets(arrays, getattr(self, "domains", {}))

    def forward(self, model, arrays):
        import torch
        with torch.no_grad():
            return model(*self.args_for(arrays))

    def check_forward(self, model, example):
        try:
            result = self.forward(model, example)
        except Exception as error:
            self.findings.append(finding("EXPORT_FAILED", "error",
                                         f"the model's forward fails on the example input: {type(error).__name__}: {error}",
                                         "", "check the --input names, shapes and dtypes against forward()'s arguments"))
            return None
        outputs, problems = traps.flatten_outputs(result)
        self.output_dataclasses = traps.dataclass_types(result)
        self.output_lists = traps.has_lists(result)
        self.output_groups = traps.output_groups(result)
        self.output_ranks = [tensor.dim() for _, tensor in outputs]
        if problems:
            location = traps.forward_location(model)
            for problem in problems:
                if location:
                    problem["where"] += f" (returned by forward, {location})"
            self.findings += problems
            return None
        self.output_names = [name for name, _ in outputs]
        again, _ = traps.flatten_outputs(self.forward(model, example))
        differing = traps.compare_forwards(outputs, again)
        if differing:
            where = traps.op_source_line(model, self.args_for(example), traps.RANDOM_OPS) or ", ".join(differing)
            self.findings.append(finding(
                "NONDETERMINISTIC_FORWARD", "error",
                f"two forward passes on the same input differ (output {', '.join(differing)}): the forward draws random numbers",
                where,
                "remove random ops from inference (torch.rand*, bernoulli, F.dropout(training=True)) or seed them "
                "outside the model; no parity proof can hold otherwise"))
        return outputs

    def other_size(self, label, size):
        """A size next to the example's on a dynamic axis, inside its --dynamic range."""
        low, high = size_ranges(self.dynamic).get(label, (1, size + 1))
        return size + 1 if size + 1 <= high else max(size - 1, low)

    def label_output_axes(self, model, example, outputs):
        """{output name: {axis: label}}: resize one label at a time and see which output axes follow.
        A size PyTorch itself rejects is no ONNX defect: the label is resized with the labels that
        share its example size (coupled: an RNN's input batch and h0 batch), then at twice its size
        (divisibility: pixel_shuffle channels); only when no variation runs is the axis frozen."""
        import numpy as np
        axes = {name: {} for name in self.output_names}
        rng = np.random.default_rng(7)
        for label, size in self.examples.items():
            resized, failure = self.resized_forward(model, label, size, rng)
            if resized is None:
                other = self.other_size(label, size)
                self.findings.append(finding(
                    "FROZEN_DIMENSION", "error",
                    f"PyTorch's own forward fails when '{label}' is {other} (example: {size}), alone or with the "
                    f"labels of the same size: {failure}", label,
                    "the model itself only accepts the example's size on this axis; drop the --dynamic axis or fix "
                    "the model", axis=label))
                continue
            for (name, before), (_, after) in zip(outputs, resized):
                for axis, (a, b) in enumerate(zip(before.shape, after.shape)):
                    if a != b:
                        axes[name].setdefault(axis, label)
        return axes

    def resized_forward(self, model, label, size, rng):
        """(PyTorch's flat outputs with `label` resized, None) or (None, PyTorch's error): tries the
        label alone, then with each candidate group of coupled labels (recorded in self.couplings
        when PyTorch needs it), at the next size and at twice the example's."""
        low, high = size_ranges(self.dynamic).get(label, (1, None))
        others = [other for other in dict.fromkeys((self.other_size(label, size), 2 * size))
                  if other != size and other >= low and (high is None or other <= high)]
        if not others:
            return [], ""  # a range of one size: nothing to resize, nothing frozen either
        groups = [[label]] + [group for group in self.coupling_candidates if label in group]
        failure = ""
        for other in others:
            for group in groups:
                sizes = dict(self.examples, **{member: other for member in group})
                try:
                    resized, _ = traps.flatten_outputs(self.forward(model, self.generate_inputs(sizes, rng)))
                except Exception as error:  # noqa: BLE001 -- PyTorch's own refusal, reported by the caller
                    failure = failure or f"{type(error).__name__}: {error}"
                    continue
                if len(group) > 1 and group not in self.couplings:
                    self.couplings.append(group)
                return resized, ""
        return None, failure

    def dynamic_axes(self):
        axes = {}
        for axis in self.dynamic:
            axes.setdefault(axis["input"], {})[axis["axis"]] = axis["label"]
        for name, labels in self.output_axes.items():
            if labels:
                axes[name] = dict(labels)
        return axes

    def export_with_fallback(self, model, example, exporters):
        """Exports with the first exporter; when it fails, or ONNX Runtime cannot run its model
        (checked unless --exporter and --opset were both given), with the next one allowed
        (--exporter auto). Each fallback is an EXPORTER_FALLBACK finding quoting its cause. When
        every exporter fails, each one's findings stand; when ONNX Runtime refuses every export,
        the first one is kept for the proof to report."""
        failures, refused = [], []  # (exporter, its findings); (exporter, opset, ONNX Runtime's message)
        kept = None  # the first refused export's findings, its files in the stash
        for exporter in exporters:
            before = len(self.findings)
            self.opset_notes = []
            cause = self.export_runnable(model, example, exporter)
            if cause == "":
                self.findings += self.opset_notes
                for failed, found in failures:
                    self.findings.append(fallback_finding(failed, exporter, found, self.out))
                self.findings += [refusal_finding(failed, opset, said, exporter) for failed, opset, said in refused]
                shutil.rmtree(self.stash_folder(), ignore_errors=True)
                return True
            if cause is None:
                failures.append((exporter, self.findings[before:]))
            else:
                refused.append((exporter, self.opset, cause))
                if kept is None:
                    kept = (exporter, self.opset, self.opset_reason, self.findings[before:] + self.opset_notes)
                    self.stash_export()
            del self.findings[before:]
        if kept is not None:
            self.restore_export(kept, refused)
            return True
        for _, found in failures:
            self.findings += found
        return False

    def export_at(self, model, example, exporter, opset=0, reason=""):
        """One export at `opset` (0: the default for this exporter); True when it wrote model.onnx."""
        self.exporter = exporter
        self.opset, self.opset_reason = (opset, reason) if opset else choose_opset(self.config, exporter)
        progress(f"exporting with the {exporter} exporter at opset {self.opset}")
        export = self.export_with_dynamo if exporter == "dynamo" else self.export_with_torchscript
        return export(model, example, self.model_path)

    def opset_is_default(self):
        return not int(self.config.get("opset") or 0)

    def export_runnable(self, model, example, exporter):
        """Exports with `exporter`: None when it could not export, else "" when the model may be
        kept, or ONNX Runtime's reason for refusing it. Under the default opset the model is
        exported again at the opset the --target tables support for its operators, and once more
        at the newest lower opset when ONNX Runtime cannot load or run it on the example."""
        start = len(self.findings)
        if not self.export_at(model, example, exporter):
            return None
        if self.opset_is_default():
            limit, operators = table_opset_limit(self.model_path, self.opset, self.config.get("opset_op_limits") or {})
            if limit:
                self.export_again(model, example, start, limit,
                                  f"the --target tables support {', '.join(operators)} only up to opset {limit}")
        if not self.opset_is_default() and self.config.get("exporter", "auto") != "auto":
            return ""  # both chosen by the user: respected, and the proof reports what fails
        cause = self.timed("runtime_check", runtime_refusal, self.model_path, example)
        oldest = dynamo.OLDEST_OPSET if exporter == "dynamo" else 7
        lower = lower_opset(self.model_path, self.opset, cause, oldest) if cause and self.opset_is_default() else None
        if lower and self.export_again(model, example, start, lower,
                                       f"ONNX Runtime cannot run it on the example: {cause}"):
            again = self.timed("runtime_check", runtime_refusal, self.model_path, example)
            cause = f"{cause}; at opset {lower}: {again}" if again else None
        return cause or ""

    def export_again(self, model, example, start, opset, cause):
        """Replaces the export (and its findings from `start` on) by one at `opset`, noting why;
        when that export fails, the first one stands. True when replaced."""
        first, first_reason, before = self.opset, self.opset_reason, len(self.findings)
        if self.export_at(model, example, self.exporter, opset, f"opset {first} replaced: {cause}"):
            del self.findings[start:before]
            self.opset_notes.append(finding(
                "EXPORTER_FALLBACK", "info",
                f"the {self.exporter} exporter's model at the default opset {first} was exported again at opset "
                f"{opset}: {cause}", f"opset {first}",
                "nothing to do; --opset pins one (then a model the runtime refuses is reported, not replaced)",
                source=self.exporter))
            return True
        del self.findings[before:]
        self.opset, self.opset_reason = first, first_reason
        return False

    def stash_folder(self):
        return os.path.join(self.out, ".refused-export")

    def stash_export(self):
        """Moves model.onnx (and its weights file) aside while other exports are tried."""
        stash = self.stash_folder()
        shutil.rmtree(stash, ignore_errors=True)
        os.makedirs(stash)
        for path in (self.model_path, self.model_path + ".data"):
            if os.path.exists(path):
                os.replace(path, os.path.join(stash, os.path.basename(path)))

    def restore_export(self, kept, refused):
        """Puts the first refused export back, with its findings and one finding naming every refusal."""
        self.exporter, self.opset, self.opset_reason, found = kept
        for path in (self.model_path, self.model_path + ".data"):
            if os.path.exists(path):
                os.remove(path)
            stashed = os.path.join(self.stash_folder(), os.path.basename(path))
            if os.path.exists(stashed):
                os.replace(stashed, path)
        shutil.rmtree(self.stash_folder(), ignore_errors=True)
        said = "; ".join(f"{exporter} at opset {opset}: {cause}" for exporter, opset, cause in refused)
        self.findings += found + [finding(
            "EXPORTER_FALLBACK", "warning",
            f"ONNX Runtime refused every export tried ({said}); the {self.exporter} export at opset {self.opset} "
            "is kept and proved", f"opset {self.opset}",
            "the quoted runtime errors name the operator; --exporter and --opset choose another export",
            source=self.exporter)]

    def dynamo_example(self, example):
        """The example torch.export traces: a dynamic axis of size 0 or 1 is traced at 2, since
        torch.export specializes those sizes (and would refuse the axis as dynamic)."""
        import numpy as np
        ranges = size_ranges(self.dynamic)
        sizes = {label: 2 if size < 2 and ranges.get(label, (1, 2))[1] >= 2 else size
                 for label, size in self.examples.items()}
        if sizes == self.examples:
            return example
        rng = np.random.default_rng(int(self.config.get("seed", 0)))
        return self.generate_inputs(sizes, rng)

    def export_with_dynamo(self, model, example, path):
        import shutil
        args = self.args_for(self.dynamo_example(example))
        # Saved in a folder of its own first: the weights file of a model over 2 GiB is named after
        # the model file, so both get their final names there and are moved together.
        staging = temporary_path(os.path.join(self.out, ".dynamo"))
        os.makedirs(staging, exist_ok=True)
        try:
            program = dynamo.capture(model, args, self.inputs, self.dynamic, self.output_dataclasses, self.findings)
            progress("translating the exported program into ONNX")
            staged = os.path.join(staging, os.path.basename(path))
            # A model with custom ops carries their translations (torch.onnx's custom_translation_table).
            dynamo.translate(program, args, self.inputs, self.dynamic, self.output_names, self.opset, staged,
                             self.out, translations=translation_table(model))
            if os.path.exists(staged + ".data"):
                os.replace(staged + ".data", path + ".data")
            os.replace(staged, path)
            return True
        except dynamo.DynamoExportFailed as failed:
            self.findings.append(failed.finding)
            return False
        finally:
            shutil.rmtree(staging, ignore_errors=True)

    def call_torchscript_exporter(self, model, arrays, target):
        import torch
        # The TorchScript exporter takes tuples, lists and dicts only, and writes a list as one
        # sequence output: both become the flat tuple of tensors the reference holds. A scripted
        # model cannot be wrapped (its calls are not traced): its sequence outputs are expanded
        # after the export (expand_sequence_outputs).
        scripted_lists = self.scripted_lists(model)
        if (self.output_dataclasses or getattr(self, "output_lists", False)) and not scripted_lists:
            model = traps.with_flat_outputs(model)
        kwargs = dict(opset_version=self.opset, input_names=[spec["name"] for spec in self.inputs],
                      output_names=None if scripted_lists else self.output_names, do_constant_folding=True,
                      export_params=True)
        if "dynamo" in inspect.signature(torch.onnx.export).parameters:
            kwargs["dynamo"] = False
        return torch.onnx.export(model, self.args_for(arrays), target, dynamic_axes=self.dynamic_axes(), **kwargs)

    def scripted_lists(self, model):
        import torch
        return isinstance(model, torch.jit.ScriptModule) and getattr(self, "output_lists", False)

    def export_with_torchscript(self, model, example, path):
        import torch
        attempts = [("no_grad", torch.no_grad)]
        while attempts:
            mode, context = attempts.pop(0)
            with warnings.catch_warnings(record=True) as records:
                warnings.simplefilter("always")
                try:
                    with context():
                        self.call_torchscript_exporter(model, example, temporary_path(path))
                    if self.scripted_lists(model):
                        traps.expand_sequence_outputs(temporary_path(path), self.output_names, self.output_groups,
                                                      self.output_ranks)
                    os.replace(temporary_path(path), path)
                    self.findings += traps.classify_tracer_warnings(records)
                    return True
                except Exception as error:
                    aten = traps.unsupported_aten_op(error)
                    if aten in traps.ATEN_FAST_PATHS and mode == "no_grad":
                        self.findings.append(finding(
                            "UNSUPPORTED_ATEN_OP", "info",
                            f"{aten} is PyTorch's fused inference fast path, which ONNX cannot express; "
                            "exported again with the fast path off (autograd enabled during the export)", aten,
                            "nothing to do; on torch 2.x torch.backends.mha.set_fastpath_enabled(False) does the same"))
                        attempts.append(("enable_grad", torch.enable_grad))
                        continue
                    self.report_torchscript_error(model, example, error, aten)
                    return False
                finally:
                    if os.path.exists(temporary_path(path)):
                        os.remove(temporary_path(path))
        return False

    def report_torchscript_error(self, model, example, error, aten):
        message = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        if aten:
            message = message.split(". Please feel free")[0]
            where = traps.op_source_line(model, self.args_for(example), (aten,)) or aten
            self.findings.append(finding(
                "UNSUPPORTED_ATEN_OP", "error",
                f"the exporter cannot translate {aten} at opset {self.opset}: {message}", where,
                f"try a newer --opset, the dynamo exporter (--exporter dynamo, torch 2.5+), or rewrite {aten} "
                "with supported ops (a decomposition); a custom op needs a plugin in every target runtime",
                source=aten))
        else:
            self.findings.append(finding("EXPORT_FAILED", "error", f"{type(error).__name__}: {message}", "",
                                         "see the exporter's message; --exporter dynamo may get further"))

    def differential_trace(self, model, example, path):
        """Export again with other values and every dynamic axis resized; compare the graphs."""
        import numpy as np
        import onnx
        other = {label: self.other_size(label, size) for label, size in self.examples.items()}
        for group in getattr(self, "couplings", []):  # labels PyTorch needs at one size move together
            other.update({label: other[group[0]] for label in group})
        rng = np.random.default_rng(11)
        arrays = self.generate_inputs(other, rng)
        flipped = False  # whether some input's values moved to the other side of zero
        for spec in self.inputs:
            values = arrays[spec["name"]]
            domain = getattr(self, "domains", {}).get(spec["name"]) or {}
            if values.dtype.kind == "f" and values.size and domain.get("low", -1) < 0 and "constant" not in domain:
                # move the mean to the other side of zero: value branches flip (where the example
                # itself has both signs: a domain of non-negative values stays in it)
                values = (values - values.mean() - 2 * example[spec["name"]].mean()).astype(values.dtype)
                flipped = True
            arrays[spec["name"]] = values
        buffer = io.BytesIO()
        import torch
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                with torch.no_grad() if not self.fast_path_retried() else torch.enable_grad():
                    self.call_torchscript_exporter(model, arrays, buffer)
        except Exception as error:
            self.findings.append(finding("TRACER_WARNING", "warning",
                                         f"the second trace (at {other}) failed, so it proves nothing: {type(error).__name__}: {error}",
                                         "", "make the model accept every size production sends"))
            return
        first = onnx.load(path)
        second = onnx.load_from_string(buffer.getvalue())
        if self.scripted_lists(model):  # as the first export was
            traps.expand_sequences(second, self.output_names, self.output_groups, self.output_ranks)
        differences = traps.diff_graphs(first, second, self.examples, other)
        self.findings += differences
        if not any(f["code"] == "DATA_DEPENDENT_CONTROL_FLOW" for f in differences):
            # The branch the tracer warned about took the same path at other values and sizes
            # (e.g. a test on a fixed image size): still a risk, no longer a proven problem.
            for f in self.findings:
                if f["code"] == "DATA_DEPENDENT_CONTROL_FLOW" and f["severity"] == "error":
                    f["severity"] = "warning"
                    tried = ("values of the other sign" if flipped else
                             "other values in the example's domain (no input has negative values, so no other "
                             "sign was tried)")
                    f["message"] += (f"; tracing again at {other} with {tried} gave the same graph, "
                                     "so it held for the shapes and values tried")

    def fast_path_retried(self):
        return any(f["code"] == "UNSUPPORTED_ATEN_OP" and f["severity"] == "info" for f in self.findings)

    def reference_samples(self, model):
        """(sizes, sample index, source, arrays) for every reference data set."""
        import numpy as np
        input_names = [spec["name"] for spec in self.inputs]
        if self.given and self.given.samples is not None:
            for index, arrays in enumerate(self.given.samples):
                sizes = {axis["label"]: int(arrays[axis["input"]].shape[axis["axis"]]) for axis in self.dynamic
                         if axis["axis"] < arrays[axis["input"]].ndim}
                yield sizes, index, "data", arrays
            return
        if self.config.get("data") or self.config.get("data_dir"):
            if self.config.get("data"):
                samples, source = specs.load_data(self.config["data"], input_names), self.config["data"]
            else:
                samples, source = specs.load_data_dir(self.config["data_dir"], input_names), self.config["data_dir"]
            for index, arrays in enumerate(samples):
                sizes = {axis["label"]: int(arrays[axis["input"]].shape[axis["axis"]]) for axis in self.dynamic
                         if axis["axis"] < arrays[axis["input"]].ndim}
                yield sizes, index, source, arrays
            return
        sweep = {label: [int(size) for size in sizes] for label, sizes in (self.config.get("sweep") or {}).items()}
        samples = int(self.config.get("samples", 3))
        rng = np.random.default_rng(int(self.config.get("seed", 0)) + 1)
        for number, sizes in enumerate(coupled_cases(self.examples, sweep, size_ranges(self.dynamic),
                                                     getattr(self, "couplings", []))):
            for index in range(samples):
                # The example the user gave is always a case, the first.
                if number == 0 and index == 0 and getattr(self, "example", None) is not None:
                    yield sizes, index, "example", self.example
                    continue
                yield sizes, index, "generated", self.generate_inputs(sizes, rng)

    def reference_failed(self, sizes, source, error):
        """PyTorch's forward raised on a reference case. On the example or the user's data it is
        REFERENCE_FAILED (an error: the proof lacks the case the user asked for); on a generated
        case it is a size or value of ours the model does not take: the case is dropped, and
        finish() says so in one CASE_REJECTED_BY_PYTORCH finding."""
        text = f"{type(error).__name__}: {str(error).strip().splitlines()[0] if str(error).strip() else ''}"
        if source != "generated":
            self.findings.append(finding(
                "REFERENCE_FAILED", "error", f"PyTorch's forward fails at {sizes} ({source}): {text}",
                json.dumps(sizes), "the model does not accept this input in PyTorch either"))
            return
        self.rejected_cases = getattr(self, "rejected_cases", {})
        self.rejected_cases.setdefault(json.dumps(sizes, sort_keys=True), text)

    def rejected_finding(self):
        """The one finding for the generated cases PyTorch rejected (None when there were none): a
        warning when a dynamic label was left proved at its example size only, else info."""
        rejected = getattr(self, "rejected_cases", {})
        if not rejected:
            return None
        listed = "; ".join(f"{sizes}: {text[:200]}" for sizes, text in list(rejected.items())[:6])
        more = f" (and {len(rejected) - 6} more)" if len(rejected) > 6 else ""
        proved = {}
        try:
            with open(os.path.join(self.out, "reference", "cases.json"), encoding="utf-8") as handle:
                for case in json.load(handle).get("cases", []):
                    for label, size in (case.get("sizes") or {}).items():
                        proved.setdefault(label, set()).add(size)
        except (OSError, ValueError):
            pass
        unproved = [label for label, size in self.examples.items() if proved.get(label, {size}) <= {size}
                    and any(json.loads(sizes).get(label) != size for sizes in rejected)]
        severity = "warning" if unproved else "info"
        left = f"; '{', '.join(unproved)}' was proved at its example size only" if unproved else ""
        return finding("CASE_REJECTED_BY_PYTORCH", severity,
                       f"PyTorch itself rejects {len(rejected)} generated case(s), left out of the proof{left}: "
                       f"{listed}{more}", ", ".join(rejected)[:300],
                       "declare the sizes the model takes (--sweep, a --dynamic range, one label for axes that "
                       "share a size) or prove on real data")

    def write_reference(self, model):
        """Writes reference/ into a fresh folder, then swaps it in: no data set of an earlier run
        survives, and an interrupted run leaves the old reference whole."""
        import shutil
        final = os.path.join(self.out, "reference")
        reference = final + ".partial"
        shutil.rmtree(reference, ignore_errors=True)
        os.makedirs(reference)
        try:
            self.fill_reference(model, reference)
        except BaseException:
            shutil.rmtree(reference, ignore_errors=True)  # a failed capture leaves no half folder
            raise
        if os.path.exists(final):
            shutil.rmtree(final + ".old", ignore_errors=True)
            os.replace(final, final + ".old")
        os.replace(reference, final)
        shutil.rmtree(final + ".old", ignore_errors=True)

    def fill_reference(self, model, reference):
        """PyTorch's inputs and outputs of every case, and cases.json, into the folder `reference`."""
        from onnx import numpy_helper
        cases = []
        exact = self.timed("exact_reference", ExactReference, model)
        for sizes, sample, source, arrays in self.reference_samples(model):
            data_set = f"test_data_set_{len(cases)}"
            try:
                start = time.perf_counter()
                outputs, problems = traps.flatten_outputs(self.forward(model, arrays))
                exact.last_float32_seconds = time.perf_counter() - start
                exact.float32_seconds += exact.last_float32_seconds
            except Exception as error:
                self.reference_failed(sizes, source, error)
                continue
            folder = os.path.join(reference, data_set)
            os.makedirs(folder, exist_ok=True)
            for index, spec in enumerate(self.inputs):
                tensor = numpy_helper.from_array(arrays[spec["name"]], spec["name"])
                write_atomically(os.path.join(folder, f"input_{index}.pb"), tensor.SerializeToString())
            for index, (name, value) in enumerate(outputs):
                tensor = numpy_helper.from_array(value.detach().cpu().numpy(), name)
                write_atomically(os.path.join(folder, f"output_{index}.pb"), tensor.SerializeToString())
            exact_values = self.timed("exact_reference", self.write_exact, exact, folder, arrays, outputs)
            if specs.LABELS in arrays and specs.LABELS not in [spec["name"] for spec in self.inputs]:
                labels = numpy_helper.from_array(arrays[specs.LABELS].astype("int64"), specs.LABELS)
                write_atomically(os.path.join(folder, "labels.pb"), labels.SerializeToString())
            cases.append({"data_set": data_set, "sizes": sizes, "sample": sample, "source": source,
                          "exact_outputs": [index for index, value in enumerate(exact_values) if value is not None]})
        if exact.missing_reason():
            self.findings.append(finding(
                "EXACT_REFERENCE_MISSING", "info",
                f"no float64 reference for some outputs, compared with the fixed tolerance instead: {exact.missing_reason()}",
                "", "the calibrated rule needs the model to run in float64 (model.double()); the fixed rule still holds"))
        self.timings["exact_cases"] = exact.cases_run
        manifest = {
            "schema": contract.CASES,
            "inputs": [spec["name"] for spec in self.inputs],
            "outputs": self.output_names,
            "dynamic_axes": {label: size for label, size in self.examples.items()},
            "cases": cases,
        }
        write_atomically(os.path.join(reference, "cases.json"), contract.dumps(manifest, "cases", indent=2) + "\n")

    def write_exact(self, exact, folder, arrays, outputs):
        """The float64 outputs of one case into `folder` (exact_output_K.pb), when the float64 pass
        is within its time budget; the list of them (None where an output has none)."""
        from onnx import numpy_helper
        if not exact.wanted():
            return [None] * len(outputs)
        values = exact.outputs(self.forward, arrays, [name for name, _ in outputs], [value for _, value in outputs])
        for index, value in enumerate(values):
            if value is not None:
                tensor = numpy_helper.from_array(value, outputs[index][0])
                write_atomically(os.path.join(folder, f"exact_output_{index}.pb"), tensor.SerializeToString())
        return values

    def exporter_options(self):
        """How the exporter that wrote model.onnx was called (what export.json promises)."""
        exporter = getattr(self, "exporter", "")
        if exporter == "dynamo":
            ranges = size_ranges(self.dynamic)
            return {"call": "torch.export.export(strict=False), then torch.onnx.export(ExportedProgram, dynamo=True)",
                    "dynamic_shapes": {label: {"min": ranges.get(label, (None, None))[0],
                                               "max": ranges.get(label, (None, None))[1]} for label in self.examples},
                    "report": dynamo.REPORT_NAME if os.path.exists(os.path.join(self.out, dynamo.REPORT_NAME)) else None,
                    "external_data": os.path.exists(os.path.join(self.out, "model.onnx.data"))}
        if exporter == "torchscript":
            return {"call": "torch.onnx.export(dynamo=False)", "dynamic_axes": self.dynamic_axes(),
                    "do_constant_folding": True, "grad": "enabled (fast path retried)" if self.fast_path_retried()
                    else "no_grad"}
        return {}

    def finish(self, exported):
        import torch
        import onnx
        path = self.model_path
        model_info = None
        if exported and os.path.exists(path):
            with open(path, "rb") as handle:
                data = handle.read()
            model_info = {"path": "model.onnx", "bytes": len(data), "sha256": hashlib.sha256(data).hexdigest()}
        rejected = self.rejected_finding()
        if rejected:
            self.findings.append(rejected)
        manifest = {
            "schema": contract.EXPORT,
            "status": "exported" if model_info else "failed",
            "model": self.config["model"],
            "description": getattr(self, "description", ""),
            "exporter": getattr(self, "exporter", self.config.get("exporter", "auto")),
            "exporter_options": self.exporter_options(),
            "opset": {"value": self.opset, "chosen_by": self.opset_reason},
            # The inputs and axes in effect: a model family's own when none were given.
            "options": dict({key: value for key, value in self.config.items() if key != "out"},
                            inputs=self.inputs, dynamic=self.dynamic),
            "versions": {"onnxproof": __version__, "python": platform.python_version(), "torch": torch.__version__,
                         "onnx": onnx.__version__},
            "inputs": self.inputs,
            "outputs": [{"name": name, "dynamic_axes": {str(axis): label for axis, label in
                                                         self.output_axes.get(name, {}).items()}}
                        for name in self.output_names],
            "timings_s": self.timings,
            "findings": self.findings,
            "onnx_model": model_info,
        }
        write_atomically(os.path.join(self.out, "export.json"), contract.dumps(manifest, "export", indent=2) + "\n")
        errors = [f for f in self.findings if f["severity"] == "error"]
        return EXIT_FAIL if errors or not model_info else 0


def translation_table(model):
    """The model's `onnx_translation_table` ({torch op: onnxscript function}), looked for on the
    model and on the module a wrapper holds as `.model`; None when it has none."""
    for candidate in (model, getattr(model, "model", None)):
        table = getattr(candidate, "onnx_translation_table", None)
        if table:
            return dict(table)
    return None


@contextlib.contextmanager
def caches_inside(out):
    """torch.export compiles through Inductor, whose caches go to $TMPDIR/torchinductor_USER by
    default: onnxproof writes nothing outside the run folder, so they go to a temporary folder in
    it, removed at the end."""
    import shutil
    cache = temporary_path(os.path.join(out, ".torch-cache"))
    saved = {name: os.environ.get(name) for name in ("TORCHINDUCTOR_CACHE_DIR", "TRITON_CACHE_DIR")}
    os.environ["TORCHINDUCTOR_CACHE_DIR"] = os.path.join(cache, "inductor")
    os.environ["TRITON_CACHE_DIR"] = os.path.join(cache, "triton")
    try:
        yield
    finally:
        shutil.rmtree(cache, ignore_errors=True)
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def main(argv=None):
    parser = argparse.ArgumentParser(prog="onnxproof.export", description=__doc__.splitlines()[0])
    parser.add_argument("--config-json", help="the export options as JSON")
    parser.add_argument("--localize-json", help="divergence localization: {run, model, case} as JSON")
    args = parser.parse_args(argv)
    if bool(args.config_json) == bool(args.localize_json):
        parser.error("give --config-json or --localize-json")
    try:
        if args.localize_json:
            from . import localize
            return localize.main(json.loads(args.localize_json))
        config = json.loads(args.config_json)
        contract.check_config(config)
        os.makedirs(config["out"], exist_ok=True)
        with caches_inside(config["out"]):
            return Exporter(config).run()
    except FrontEndError as error:
        print(f"onnxproof: error: {error}", file=sys.stderr)
        return error.exit_code
    except (json.JSONDecodeError, contract.ContractError) as error:
        print(f"onnxproof: error: the export configuration breaks {contract.CONFIG}: {error}", file=sys.stderr)
        return 3
    except ImportError as error:
        print(f"onnxproof: error: a dependency is missing: {error}", file=sys.stderr)
        return 3


if __name__ == "__main__":
    sys.exit(main())
