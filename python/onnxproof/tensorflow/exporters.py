"""The export of a TensorFlow model by tf2onnx (tf2onnx.convert.from_function on the model's
tf.function) or by Keras's own model.export(format="onnx") (which calls tf2onnx too, through an
ExportArchive), with `auto` falling back from the first to the second (EXPORTER_FALLBACK). The
written model is then given the proof's names: the labels for tf2onnx's unk__N dimensions, the
model's output names for tf2onnx's Identity:0, and operators it left unconverted are findings."""
import os

from ..core import opset_choice
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
    """(opset, why): --opset when given, else the lowest of the engine's ceiling (ONNX, ONNX
    Runtime, the target tables), what tf2onnx writes, its own preferred opset (the one it is
    tested on) and what the ONNX Runtime releases of the last 18 months load (core/opset_choice.py)."""
    from tf2onnx import constants
    return opset_choice.choose_opset(config, newest_opset, ("tf2onnx", "tf2onnx"), _preferred_opset,
                                     exporter_default=int(getattr(constants, "PREFERRED_OPSET", 0) or 0))


def _preferred_opset(_newest):
    """tf2onnx's own choice, where an older engine sent no ceiling."""
    from tf2onnx import constants
    return constants.PREFERRED_OPSET, f"no ceiling from the engine: tf2onnx's preferred {constants.PREFERRED_OPSET}"


def export_with_fallback(state, source, exporters):
    """Exports with the first exporter that writes a model without unconverted operators; the
    findings say which failed and why. False when none exported."""
    state.opset, state.opset_reason = choose_opset(state.config)
    failures = []
    for exporter in exporters:
        state.exporter = exporter
        progress(f"exporting with {_exporter_title(exporter)} at opset {state.opset}")
        found = export_at_newer_if_needed(state, source, exporter, export_at(state, source, exporter))
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


def export_at_newer_if_needed(state, source, exporter, found):
    """`found` where the export at the default opset went well; else the export again at the newest
    opset the exporter writes under the engine's ceiling (a converter that has some operator only
    at a later opset: tf2onnx's default is 15, it writes up to 18), kept when it goes well, with a
    note; where the opset was given or none is newer, `found` as it is."""
    if not any(f["severity"] == "error" for f in found) or not state.opset_is_default():
        return found
    newer = min(newest_opset(), int(state.config.get("opset_ceiling") or 0) or newest_opset())
    if newer <= state.opset:
        return found
    first, first_reason = state.opset, state.opset_reason
    cause = next(f for f in found if f["severity"] == "error")
    state.opset, state.opset_reason = newer, f"opset {first} replaced: {cause['code']} at the default opset"
    progress(f"exporting again with {_exporter_title(exporter)} at opset {newer}")
    again = export_at(state, source, exporter)
    if any(f["severity"] == "error" for f in again):
        state.opset, state.opset_reason = first, first_reason
        return found
    return again + [finding(
        "EXPORTER_FALLBACK", "info",
        f"the {exporter} export at the default opset {first} failed ({cause['code']}: {cause['message'][:200]}), so the "
        f"model was exported again at opset {newer}", f"opset {first}",
        "nothing to do; --opset pins one", source=exporter)]


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
        return finalize(state, written, source, specs)
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


def finalize(state, written, source=None, specs=None):
    """The exported file with the proof's names, saved as model.onnx; findings for operators the
    exporter left unconverted and for constants it made inputs."""
    import onnx
    model = onnx.load(written)
    found = unconverted_operators(model) + constants_made_inputs(model, state, source, specs)
    newer = opset_choice.operators_newer_than(model, state.opset)
    if newer:
        said = ", ".join(f"{op} (from opset {first})" for op, first in sorted(newer.items()))
        found.append(finding("EXPORT_FAILED", "error", f"the exporter wrote operators ONNX has only after opset "
                             f"{state.opset}: {said}; no runtime loads the file", sorted(newer)[0],
                             f"--opset {max(newer.values())} or newer", source=state.exporter))
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


def constants_made_inputs(model, state, source, specs):
    """The graph inputs the model does not take, put back as initializers where they are constants
    the traced function captured (tf2onnx turns a Keras Normalization layer's adapted mean and
    variance into inputs): one CONSTANTS_MADE_INPUTS warning per layer; an input that is no such
    constant is one EXPORT_FAILED error naming them all (30 cases would otherwise each fail to run)."""
    import onnx
    from onnx import numpy_helper
    declared = {spec["name"] for spec in state.inputs} | {tensor.name for tensor in model.graph.initializer}
    extra = [value.name for value in model.graph.input if value.name not in declared]
    if not extra:
        return []
    constants = _captured_constants(source, specs)
    folded = {}
    for value in list(model.graph.input):
        if value.name in extra and value.name in constants:
            model.graph.initializer.append(numpy_helper.from_array(constants[value.name], value.name))
            model.graph.input.remove(value)
            folded.setdefault(_layer_of_capture(value.name), []).append(value.name)
    found = [finding("CONSTANTS_MADE_INPUTS", "warning",
                     f"the exporter made {len(names)} constant(s) of layer {layer} model inputs ({', '.join(names)}); "
                     "onnxproof wrote their values into model.onnx as initializers", layer,
                     "a file exported by hand with the same converter takes these inputs too: fold them the same way",
                     source=state.exporter)
             for layer, names in folded.items()]
    left = [name for name in extra if not any(name in names for names in folded.values())]
    if left:
        layers = sorted({_layer_of_capture(name) for name in left})
        found.append(finding("EXPORT_FAILED", "error", f"the export takes {len(left)} input(s) the model does not: "
                             f"{', '.join(left)} (of layer(s) {', '.join(layers)})", layers[0],
                             "another --exporter; or keep the layer's values as variables"))
    onnx.checker.check_model(model)
    return found


def _layer_of_capture(name):
    """The layer of a captured tensor's placeholder (model/normalization/Sub/y:0 -> model/normalization)."""
    return _layer_of(_layer_of(name.partition(":")[0]))


def _captured_constants(source, specs):
    """{placeholder tensor name: value} of the constants (not variables) the model's traced function
    captures: the names tf2onnx gives the inputs it makes of them."""
    import numpy as np
    if source is None:
        return {}
    try:
        concrete = source.tf_function(specs).get_concrete_function()
        return {internal.name: np.asarray(external.numpy()) for external, internal in concrete.graph.captures
                if hasattr(external, "numpy") and getattr(external, "dtype", None) is not None
                and external.dtype.name != "resource"}
    except Exception:  # noqa: BLE001 -- no captures to read: the inputs stay, and the error says so
        return {}


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
