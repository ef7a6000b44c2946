"""The export of a TensorFlow model by tf2onnx (tf2onnx.convert.from_function on the model's
tf.function) or by Keras's own model.export(format="onnx") (which calls tf2onnx too, through an
ExportArchive), with `auto` falling back from the first to the second (EXPORTER_FALLBACK). The
written model is then given the proof's names: the labels for tf2onnx's unk__N dimensions, the
model's output names for tf2onnx's Identity:0, and operators it left unconverted are findings."""
import os

from ..core.errors import UsageError
from ..core.export_io import progress, temporary_path
from ..core.findings import finding
from .source import error_text

EXPORTERS = ("tf2onnx", "keras")



def resolve_exporters(state, source):
    """The exporters to try, in order; UsageError for one this model cannot use."""
    requested = state.config.get("exporter", "auto")
    if requested in ("dynamo", "torchscript"):
        raise UsageError(f"--exporter {requested} is a PyTorch exporter; {state.config['model']} is a TensorFlow model "
                         "(its exporters: auto, tf2onnx, keras, both)")
    if requested == "keras" and source.keras_model is None:
        raise UsageError(f"--exporter keras exports Keras models; {source.description} is no keras.Model: use tf2onnx")
    if requested in EXPORTERS:
        return [requested]
    return list(EXPORTERS) if source.keras_model is not None else ["tf2onnx"]


def newest_opset():
    """The newest opset tf2onnx writes (its table of opsets to IR versions)."""
    from tf2onnx import constants
    return max(constants.OPSET_TO_IR_VERSION)


def choose_opset(config):
    """(opset, why): --opset when given, else the newest both the engine (ONNX, ONNX Runtime, the
    target tables) and tf2onnx support."""
    requested = int(config.get("opset") or 0)
    if requested:
        return requested, "--opset"
    ceiling, newest = int(config.get("opset_ceiling") or 0), newest_opset()
    if not ceiling:  # an older engine: tf2onnx's own choice
        from tf2onnx import constants
        return constants.PREFERRED_OPSET, f"no ceiling from the engine: tf2onnx's preferred {constants.PREFERRED_OPSET}"
    reason = config.get("opset_ceiling_reason", "")
    if newest < ceiling:
        return newest, f"tf2onnx writes up to {newest} ({reason})"
    return ceiling, f"{reason}; tf2onnx writes up to {newest}"


def export_with_fallback(state, source, exporters):
    """Exports with the first exporter that writes a model without unconverted operators; the
    findings say which failed and why. False when none exported."""
    state.opset, state.opset_reason = choose_opset(state.config)
    failures = []
    for exporter in exporters:
        state.exporter = exporter
        progress(f"exporting with {_exporter_title(exporter)} at opset {state.opset}")
        found = export_at(state, source, exporter)
        if not any(f["severity"] == "error" for f in found):
            state.findings += found
            if failures:
                failed, cause = failures[0]
                state.findings.append(finding(
                    "EXPORTER_FALLBACK", "info",
                    f"the {failed} exporter failed, so the model was exported with the {exporter} exporter; "
                    f"{failed}'s finding: {cause['code']}: {cause['message']}", cause["where"],
                    f"fix the cause to use {failed}, or choose an exporter with --exporter", source=failed))
            return True
        failures.append((exporter, next(f for f in found if f["severity"] == "error")))
        if exporter == exporters[-1]:
            state.findings += found
    return False


def _exporter_title(exporter):
    return "tf2onnx" if exporter == "tf2onnx" else "Keras's model.export(format='onnx')"


def export_at(state, source, exporter):
    """The findings of one export into model.onnx (none when it went well)."""
    specs = _tensor_specs(state, source)
    written = temporary_path(state.model_path) + ".onnx"
    try:
        if exporter == "tf2onnx":
            _tf2onnx(source, specs, state.opset, written)
            state.call = "tf2onnx.convert.from_function(tf.function(model(..., training=False)), input_signature)"
        else:
            _keras_export(source, specs, state.opset, written)
            state.call = "keras.Model.export(format='onnx', input_signature, opset_version)"
        return finalize(state, written)
    except Exception as error:
        return [finding("EXPORT_FAILED", "error", f"the {exporter} exporter raised {error_text(error)}", "",
                        "read the exporter's message in export.log; another --exporter or --opset may help",
                        source=exporter)]
    finally:
        if os.path.exists(written):
            os.remove(written)


def _tensor_specs(state, source):
    """One tf.TensorSpec per input in signature order: None on the declared dynamic axes, the
    example's size on every other (a None axis --dynamic left out is exported fixed)."""
    import tensorflow as tf
    specs = []
    for spec in state.inputs:
        free = {axis["axis"] for axis in state.dynamic if axis["input"] == spec["name"]}
        shape = [None if index in free else dim for index, dim in enumerate(spec["dims"])]
        specs.append(tf.TensorSpec(shape, tf.as_dtype(spec["dtype"]), name=spec["name"]))
    return specs


def _patched_tf2onnx():
    """tf2onnx 1.17 predates numpy 2 (tf2onnx#2373); Keras ships the patch it applies before it
    calls tf2onnx, and the direct call needs it too."""
    from keras.src.export.tf2onnx_lib import patch_tf2onnx
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)  # patch_tf2onnx probes np.object
        patch_tf2onnx()
    import tf2onnx
    return tf2onnx


def _tf2onnx(source, specs, opset, path):
    tf2onnx = _patched_tf2onnx()
    tf2onnx.convert.from_function(source.tf_function(specs), specs, opset=opset, output_path=path)


def _keras_export(source, specs, opset, path):
    """Keras's input_signature: one spec, a list of them for several inputs ([[x, y]]: the model
    takes one list), or the dict a model built on a dict of inputs takes."""
    if source.input_keys is not None:
        signature = [dict(zip(source.input_keys, specs))]
    else:
        signature = specs if len(specs) == 1 else [specs]
    source.keras_model.export(path, format="onnx", input_signature=signature, opset_version=opset, verbose=False)


def finalize(state, written):
    """The exported file with the proof's names, saved as model.onnx; findings for operators the
    exporter left unconverted."""
    import onnx
    model = onnx.load(written)
    found = unconverted_operators(model)
    if len(model.graph.output) != len(state.output_names):
        found.append(finding("EXPORT_FAILED", "error",
                             f"the export has {len(model.graph.output)} outputs where the model returns "
                             f"{len(state.output_names)}", "", "report the model to onnxproof with its spec"))
        return found
    name_inputs(model, state)
    name_outputs(model, state)
    final = temporary_path(state.model_path)
    onnx.save(model, final)
    os.replace(final, state.model_path)
    return found


def unconverted_operators(model):
    """UNCONVERTED_OP for every operator type outside ONNX's schemas in the standard domain (what
    tf2onnx leaves when it cannot convert a TensorFlow op) or a TensorFlow call left in place."""
    import onnx
    found = {}
    for node in _nodes(model.graph):
        if node.domain in ("", "ai.onnx") and not onnx.defs.has(node.op_type):
            found.setdefault(node.op_type, []).append(node.name)
    return [finding("UNCONVERTED_OP", "error",
                    f"the exporter left the TensorFlow operator {op} unconverted in {len(nodes)} node(s), e.g. "
                    f"{nodes[0]}: ONNX Runtime cannot load the model", _layer_of(nodes[0]),
                    "another --exporter or --opset, a tf2onnx custom op handler, or rewriting that layer with ops "
                    "tf2onnx converts")
            for op, nodes in found.items()]


def _nodes(graph):
    """Every node of the graph and of the graphs its nodes hold (Loop and If bodies)."""
    for node in graph.node:
        yield node
        for attribute in node.attribute:
            for body in ([attribute.g] if attribute.HasField("g") else []) + list(attribute.graphs):
                yield from _nodes(body)


def _layer_of(node_name):
    """The Keras layer path in a tf2onnx node name (model_1/dense_1/MatMul -> model_1/dense_1)."""
    return node_name.rpartition("/")[0] or node_name


def name_inputs(model, state):
    """The declared labels on the inputs' dynamic dimensions (tf2onnx writes unk__N)."""
    labels = {(axis["input"], axis["axis"]): axis["label"] for axis in state.dynamic}
    for value in model.graph.input:
        for index, dim in enumerate(value.type.tensor_type.shape.dim):
            label = labels.get((value.name, index))
            if label is not None:
                dim.dim_param = label


def name_outputs(model, state):
    """The model's output names (a Keras output layer's) in place of tf2onnx's Identity:0, and
    the output axes' names (the label an axis follows, else OUTPUT_dimN) in place of unk__N."""
    renames = {}
    taken = {value.name for value in model.graph.input}
    for value, name in zip(model.graph.output, state.output_names):
        if value.name != name and name not in taken:
            renames[value.name] = name
        taken.add(renames.get(value.name, value.name))
    for node in model.graph.node:
        node.output[:] = [renames.get(name, name) for name in node.output]
        node.input[:] = [renames.get(name, name) for name in node.input]
    for value in model.graph.output:
        value.name = renames.get(value.name, value.name)
    state.output_names = [value.name for value in model.graph.output]
    names = state.dynamic_axes()
    for value in model.graph.output:
        for index, dim in enumerate(value.type.tensor_type.shape.dim):
            if dim.dim_param:
                dim.dim_param = str(names.get(value.name, {}).get(index, f"{value.name}_dim{index}"))
