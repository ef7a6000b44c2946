"""The export step of a TensorFlow model: it becomes OUT/model.onnx, OUT/reference/ (TensorFlow's
inputs and outputs for every shape case, with a float64 twin's) and OUT/export.json, the same
contract as PyTorch's (core/). `python -m onnxproof --config-json ...` calls export() for a spec
this framework owns; prove() hands an InMemoryModel to the same Exporter.

Stages: load (source.py), inputs from the signature (signature.py), the forward check and output
axes (below), the export with its fallback (exporters.py), the reference (reference.py), finish."""
import contextlib
import os
import shutil
import typing

import numpy as np

from ..core.cases import example_sizes, size_ranges
from ..core.export_finish import finish
from ..core.export_io import progress, temporary_path
from ..core.findings import finding
from ..core.output_axes import label_axes_by_resizing
from . import given_file
from . import signature as signatures
from . import source as sources
from .source import error_text
from .exact import Twin
from .exporters import choose_opset, export_with_fallback, resolve_exporters
from .reference import write_reference
from .state import TensorFlowState


class InMemoryModel(typing.NamedTuple):
    """A model handed over as an object (onnxproof.prove): a Source, exported as it is at
    `example` ({input name: array}) and proved on `samples` when given."""
    model: object
    description: str
    example: dict
    samples: list = None


class Exporter:
    """One export run over one TensorFlowState; export.json written at the end."""

    def __init__(self, config, given=None):
        self.state = TensorFlowState(config, given)

    def run(self):
        """Exports; the exit code (0 exported with no error finding, 1 otherwise). UsageError for
        a malformed spec or inputs that do not fit the model's signature."""
        state = self.state
        source = self.load()
        given_onnx = bool(state.config.get("onnx"))  # a file the user made: proved as it is, never exported
        exporters = ["file"] if given_onnx else resolve_exporters(state, source)
        state.exporter = exporters[0]
        if not given_onnx:  # a given file's opset is the file's (core/given_binding.py)
            state.opset, state.opset_reason = choose_opset(state.config)  # until an export chooses
        signatures.declare_inputs(state, source)
        if given_onnx:
            source = given_file.bind_source(state, source)
        state.examples = example_sizes(state.inputs, state.dynamic)
        example = state.take_example(state.examples)
        progress("running the forward pass on the example input")
        outputs = state.timed("forward", check_forward, state, source, example)
        if outputs is None:
            return finish(state, exported=False)
        state.output_axes = state.timed("output_axes", label_output_axes, state, source, outputs)
        if given_onnx:
            exported = state.timed("export", given_file.adopt, state, source)
        else:
            exported = state.timed("export", export_with_fallback, state, source, exporters)
        if exported:
            progress("capturing TensorFlow's reference outputs")
            twin = state.timed("exact_reference", Twin, source) if not given_onnx else \
                given_file.bound_twin(state.timed("exact_reference", Twin, source.source), source)
            state.timed("reference", write_reference, state, source, twin)
        return finish(state, exported=exported)

    def load(self):
        state = self.state
        if state.given is not None:
            state.description = state.given.description
            return state.given.model
        spec = state.config["model"]
        progress(f"loading {spec}")
        import tensorflow as tf
        import keras
        seed = int(state.config.get("seed", 0))
        keras.utils.set_random_seed(seed)  # random weights: the same model when it is loaded again
        tf.random.set_seed(seed)
        source = state.timed("load", sources.load, spec, state.inputs, state.dynamic)
        state.description = source.description
        return source


def check_forward(state, source, example):
    """The model's flat outputs on the example, or None with an EXPORT_FAILED finding; a forward
    that differs on the same input is said (NONDETERMINISTIC_FORWARD) and its outputs are
    checked for shape, dtype and domain only."""
    try:
        outputs = source.call(example)
    except Exception as error:
        state.findings.append(finding(
            "EXPORT_FAILED", "error",
            f"the model's call fails on the example input: {error_text(error)}", "",
            "check the --input names, shapes and dtypes against the model's input signature"))
        return None
    names = source.output_names if source.output_names and len(source.output_names) == len(outputs) else \
        [f"output_{index}" for index in range(len(outputs))]
    # A given file's outputs are named as the file names them ("Identity:0" from Keras's export).
    state.output_names = list(names) if getattr(source, "file_names", False) else _unique(
        [_onnx_name(name, index) for index, name in enumerate(names)], [spec["name"] for spec in state.inputs])
    state.output_ranks = [np.ndim(value) for value in outputs]
    again = source.call(example)
    differing = [name for name, a, b in zip(state.output_names, outputs, again)
                 if a.shape != b.shape or not np.array_equal(a, b, equal_nan=True)]
    if differing:
        state.random_outputs = differing
        state.findings.append(finding(
            "NONDETERMINISTIC_FORWARD", "info",
            f"two calls on the same input differ (output {', '.join(differing)}) with training=False: the model draws "
            "random numbers, so these outputs are checked for shape, dtype and value domain only", ", ".join(differing),
            "if inference should be deterministic, remove the random ops (tf.random.*, a layer called with "
            "training=True) or take the random values as an input; the other outputs are proved as usual"))
    return outputs


def _onnx_name(name, index):
    """An output's name in model.onnx: the model's own (a Keras output layer's)."""
    text = str(name).split(":")[0].strip()
    return text or f"output_{index}"


def _unique(names, taken):
    """`names` with a repeated one (a layer giving several outputs: an LSTM's states) or an input's
    name numbered: lstm, lstm_1, lstm_2."""
    seen, result = set(taken), []
    for name in names:
        candidate, number = name, 0
        while candidate in seen:
            number += 1
            candidate = f"{name}_{number}"
        seen.add(candidate)
        result.append(candidate)
    return result


def label_output_axes(state, source, outputs):
    """{output name: {axis: label}}: each label resized in turn, and the output axes that follow
    it; a label TensorFlow rejects at every other size tried is fixed by the model
    (AXIS_FIXED_BY_MODEL) and the export keeps it at the example's size."""

    def resized_shapes(label, size, rng):
        resized, failure, tried = None, "", []
        for other in _other_sizes(state, label, size):
            tried.append(other)
            try:
                resized = source.call(state.generate_inputs(dict(state.examples, **{label: other}), rng))
                break
            except Exception as error:
                failure = failure or error_text(error)
        return (None if resized is None else [np.shape(v) for v in resized]), failure, tried
    return label_axes_by_resizing(state, [np.shape(v) for v in outputs], resized_shapes)


def _other_sizes(state, label, size):
    low, high = size_ranges(state.dynamic).get(label, (1, None))
    return [other for other in dict.fromkeys((state.other_size(label, size), 2 * size, 1))
            if other != size and low <= other and (high is None or other <= high)]


@contextlib.contextmanager
def keras_home_inside(out):
    """Keras writes its settings file (~/.keras/keras.json) the first time it is imported where
    none exists: onnxproof writes nothing outside the run folder, so KERAS_HOME points into it for
    the run, removed at the end, unless the user has set KERAS_HOME or has a ~/.keras already."""
    if os.environ.get("KERAS_HOME") or os.path.isdir(os.path.expanduser("~/.keras")):
        yield
        return
    home = temporary_path(os.path.join(out, ".keras-home"))
    os.environ["KERAS_HOME"] = home
    try:
        yield
    finally:
        shutil.rmtree(home, ignore_errors=True)
        os.environ.pop("KERAS_HOME", None)


def export(config):
    """The export of config["model"] into config["out"]: the exit code (0, or 1 with an error finding)."""
    from . import require_tensorflow
    with keras_home_inside(config["out"]):
        require_tensorflow()
        return Exporter(config).run()
