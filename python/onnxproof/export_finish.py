"""Export stage 5, finish: export.json (onnxproof.export/1) from the state, with the model's
sha256, the exporter's options, the opset and why, versions, timings and findings; the exit code."""
import hashlib
import os
import platform

from . import __version__, contract, dynamo
from .cases import size_ranges
from .errors import EXIT_FAIL
from .export_io import write_atomically
from .export_reference import rejected_finding


def exporter_options(state):
    """How the exporter that wrote model.onnx was called (what export.json promises)."""
    exporter = state.exporter
    if exporter == "dynamo":
        ranges = size_ranges(state.dynamic)
        return {"call": "torch.export.export(strict=False), then torch.onnx.export(ExportedProgram, dynamo=True)",
                "dynamic_shapes": {label: {"min": ranges.get(label, (None, None))[0],
                                           "max": ranges.get(label, (None, None))[1]} for label in state.examples},
                "report": dynamo.REPORT_NAME if os.path.exists(os.path.join(state.out, dynamo.REPORT_NAME)) else None,
                "external_data": os.path.exists(os.path.join(state.out, "model.onnx.data"))}
    if exporter == "torchscript":
        return {"call": "torch.onnx.export(dynamo=False)", "dynamic_axes": state.dynamic_axes(),
                "do_constant_folding": True, "grad": "enabled (fast path retried)" if state.fast_path_retried()
                else "no_grad"}
    return {}


def written_opset(state):
    """export.json's opset: the one model.onnx declares (an exporter may write another than it was
    asked for: the dynamo exporter writes its own opset when asked for a newer one), and why."""
    import onnx
    model = onnx.load(state.model_path, load_external_data=False)
    written = next((entry.version for entry in model.opset_import if entry.domain in ("", "ai.onnx")), None)
    if written is None or written == state.opset:
        return {"value": state.opset, "chosen_by": state.opset_reason}
    return {"value": int(written),
            "chosen_by": f"{state.opset_reason}: {state.opset} asked, the {state.exporter} exporter wrote {written}"}


def finish(state, exported):
    import torch
    import onnx
    path = state.model_path
    model_info = None
    if exported and os.path.exists(path):
        with open(path, "rb") as handle:
            data = handle.read()
        model_info = {"path": "model.onnx", "bytes": len(data), "sha256": hashlib.sha256(data).hexdigest()}
    rejected = rejected_finding(state)
    if rejected:
        state.findings.append(rejected)
    manifest = {
        "schema": contract.EXPORT,
        "status": "exported" if model_info else "failed",
        "model": state.config["model"],
        "description": state.description,
        "exporter": state.exporter or state.config.get("exporter", "auto"),
        "exporter_options": exporter_options(state),
        "opset": written_opset(state) if model_info else {"value": state.opset, "chosen_by": state.opset_reason},
        # The inputs and axes in effect: a model family's own when none were given.
        "options": dict({key: value for key, value in state.config.items() if key != "out"},
                        inputs=state.inputs, dynamic=state.dynamic),
        "versions": {"onnxproof": __version__, "python": platform.python_version(), "torch": torch.__version__,
                     "onnx": onnx.__version__},
        "inputs": state.inputs,
        "outputs": [{"name": name, "dynamic_axes": {str(axis): label for axis, label in
                                                    state.output_axes.get(name, {}).items()}}
                    for name in state.output_names],
        "timings_s": state.timings,
        "findings": state.findings,
        "onnx_model": model_info,
    }
    write_atomically(os.path.join(state.out, "export.json"), contract.dumps(manifest, "export", indent=2) + "\n")
    errors = [f for f in state.findings if f["severity"] == "error"]
    return EXIT_FAIL if errors or not model_info else 0
