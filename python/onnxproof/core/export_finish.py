"""Export stage 5, finish: export.json (onnxproof.export/1) from the state, with the model's
sha256, the exporter's options, the opset and why, versions, timings and findings; the exit code."""
import hashlib
import os
import platform

from . import contract
from .errors import EXIT_FAIL
from .export_io import write_atomically
from .reference import rejected_finding


def written_opset(state):
    """export.json's opset: the one model.onnx declares (an exporter may write another than it was
    asked for: the dynamo exporter writes its own opset when asked for a newer one), and why."""
    opsets = declared_opsets(state.model_path)
    written = opsets.get("", opsets.get("ai.onnx"))
    if written is None or written == state.opset:
        return {"value": state.opset, "chosen_by": state.opset_reason}
    return {"value": int(written),
            "chosen_by": f"{state.opset_reason}: {state.opset} asked, the {state.exporter} exporter wrote {written}"}


def declared_opsets(path):
    """{domain: version} of a model file's opset_import, read from the protobuf wire format with
    the graph skipped: a model under 2 GiB holds its weights inside it, and onnx.load read all of
    them (a 1.1 GB model: +1.1 GB of peak memory) for these few bytes."""
    import onnx
    opsets = {}
    with open(path, "rb") as handle:
        while True:
            tag = read_varint(handle)
            if tag is None:
                return opsets
            field, wire_type = tag >> 3, tag & 7
            if wire_type == 0:
                read_varint(handle)
            elif wire_type in (1, 5):
                handle.seek(8 if wire_type == 1 else 4, os.SEEK_CUR)
            elif wire_type == 2:
                length = read_varint(handle)
                if field == 8:  # ModelProto.opset_import
                    entry = onnx.OperatorSetIdProto.FromString(handle.read(length))
                    opsets[entry.domain] = entry.version
                else:
                    handle.seek(length, os.SEEK_CUR)
            else:
                raise ValueError(f"{path}: not an ONNX model (wire type {wire_type})")


def read_varint(handle):
    """The next base-128 varint of the stream; None at its end."""
    value, shift = 0, 0
    while True:
        byte = handle.read(1)
        if not byte:
            if shift:
                raise ValueError("the model file ends inside a number")
            return None
        value |= (byte[0] & 0x7F) << shift
        if byte[0] < 0x80:
            return value
        shift += 7


def file_digest(path):
    """(bytes, sha256) of a file read in blocks: never the whole model in memory at once."""
    digest, size = hashlib.sha256(), 0
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
            size += len(block)
    return size, digest.hexdigest()


def finish(state, exported):
    import onnx
    from . import ONNXPROOF_VERSION
    path = state.model_path
    model_info = None
    if exported and os.path.exists(path):
        size, sha256 = file_digest(path)
        model_info = {"path": "model.onnx", "bytes": size, "sha256": sha256}
    rejected = rejected_finding(state)
    if rejected:
        state.findings.append(rejected)
    manifest = {
        "schema": contract.EXPORT,
        "status": "exported" if model_info else "failed",
        "model": state.config["model"],
        "description": state.description,
        "exporter": state.exporter or state.config.get("exporter", "auto"),
        "framework": state.framework,
        "exporter_options": state.exporter_options(),
        "opset": written_opset(state) if model_info else {"value": state.opset, "chosen_by": state.opset_reason},
        # The inputs and axes in effect: a model family's own when none were given.
        # A label the model fixes (AXIS_FIXED_BY_MODEL) is no longer among them: fixed_by_model.
        "options": dict({key: value for key, value in state.config.items() if key != "out"},
                        inputs=state.inputs, dynamic=state.dynamic,
                        **({"fixed_by_model": state.fixed_axes} if state.fixed_axes else {})),
        "versions": {"onnxproof": ONNXPROOF_VERSION, "python": platform.python_version(), **state.framework_versions(),
                     "onnx": onnx.__version__},
        "inputs": state.inputs,
        "outputs": [{"name": name, "dynamic_axes": {str(axis): label for axis, label in
                                                    state.output_axes.get(name, {}).items()}}
                    for name in state.output_names],
        "timings_s": state.timings,
        "findings": state.findings,
        "onnx_model": model_info,
    }
    if state.given_file and "sha256" in state.given_file:
        manifest["given_file"] = state.given_file
    write_atomically(os.path.join(state.out, "export.json"), contract.dumps(manifest, "export", indent=2) + "\n")
    errors = [f for f in state.findings if f["severity"] == "error"]
    return EXIT_FAIL if errors or not model_info else 0
