"""The export step of a PyTorch model: it becomes OUT/model.onnx, OUT/reference/ (PyTorch's inputs
and outputs for every shape case) and OUT/export.json (versions, options, timings, findings,
sha256). `python -m onnxproof --config-json ...` (core/main.py) calls export() for a spec this
framework owns; prove() hands an InMemoryModel to the same Exporter.
"""
import contextlib
import os
import typing

from ..core.export_finish import finish
from ..core.export_io import progress, temporary_path
from ..core.findings import finding
from ..core.output_axes import check_declared_output_names, declared_output_findings
from . import given_file, quantized, reference_ahead
from .export_exporters import differential_trace
from .export_fallback import export_with_fallback
from .export_forward import check_forward, detection_sets, label_output_axes
from .export_load import example_arrays, load_and_prepare
from .export_reference import write_reference
from .state import TorchState


class InMemoryModel(typing.NamedTuple):
    """A model handed over as an object (onnxproof.prove): exported as it is, at `example`
    ({input name: array}), and proved on `samples` (a list of such dicts) when given, else on
    generated shape cases."""
    model: object
    description: str
    example: dict
    samples: list = None
    defaults: dict = None  # inputs of its own (a cache decoder for generate=N: generation.py)


class Exporter:
    """One export run: its stages in order over one TorchState, export.json written at the end
    (export_load, export_forward, export_fallback with export_exporters, export_reference,
    export_finish)."""

    def __init__(self, config, given=None):
        """`given`: an InMemoryModel (the Python API's model object, example and data) in place
        of loading config["model"] and generating the example."""
        self.state = TorchState(config, given)

    def run(self):
        """Exports; the exit code (0 exported with no error finding, 1 otherwise). UsageError for
        a malformed spec or undeclared inputs."""
        state = self.state
        model, exporters = load_and_prepare(state)
        example = example_arrays(state, model)
        progress("running the forward pass on the example input")
        outputs = state.timed("forward", check_forward, state, model, example)
        if outputs is None:
            return finish(state, exported=False)
        check_declared_output_names(state)
        state.output_axes = state.timed("output_axes", label_output_axes, state, model, example, outputs)
        detection_sets(state, model, outputs)
        ahead = reference_ahead.start(state, model)  # the reference's first cases, beside the export
        try:
            exported = self.export(model, example, exporters)
            if exported:
                progress("capturing PyTorch's reference outputs")
                model.eval()  # whatever an exporter restored: the reference is eval mode's, as the export was
                state.timed("reference", write_reference, state, model, ahead)
        finally:
            if ahead is not None:
                ahead.close()
        return finish(state, exported=exported)

    def export(self, model, example, exporters):
        """The export with its fallbacks, then the differential trace of a TorchScript export;
        False when no exporter could export."""
        state = self.state
        if exporters == ["file"]:
            return state.timed("export", given_file.adopt, state, model)
        if not state.timed("export", export_with_fallback, state, model, example, exporters):
            return False
        state.findings += declared_output_findings(state)
        lost = quantized.lost_finding(model, state.model_path)  # a PT2E graph's Q/DQ nodes all kept?
        if lost:
            state.findings.append(lost)
        if state.exporter == "torchscript":
            progress("tracing again with other values and sizes")
            state.timed("differential_trace", differential_trace, state, model, example, state.model_path)
        else:
            # The differential trace compares two TorchScript traces; a dynamo graph is symbolic
            # and is not comparable with one. Said, not passed silently.
            state.findings.append(finding(
                "DIFFERENTIAL_TRACE_NOT_RUN", "info", "the differential trace was not run: it compares TorchScript traces, "
                "and this model was exported with the dynamo exporter", "",
                "the shape cases of the parity step still prove every size; --exporter torchscript runs it"))
        return True


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


def export(config):
    """The export of config["model"] into config["out"]: the exit code (0, or 1 with an error finding)."""
    with caches_inside(config["out"]):
        return Exporter(config).run()
