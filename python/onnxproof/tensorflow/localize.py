"""Divergence localization, TensorFlow's half (the engine compares; src/localize/): for one
reference case, every layer of a functional or Sequential Keras model with the ONNX values that
carry its inputs and outputs across its boundary, each paired with TensorFlow's tensor and the
float64 twin's, in RUN/localize/modules.json (schema onnxproof.localize/1, as PyTorch's).

A node's layer comes from tf2onnx's node names, which keep the Keras name scopes
(text_classifier_1/lstm_1/transpose: layer lstm). Values are paired only where the counts and the
shapes agree, a layer's NHWC tensor moved channels first where tf2onnx computes the convolution in
NCHW; what cannot be paired is recorded with the reason, never guessed.

    python -m onnxproof --localize-json '{"run": RUN, "model": "model.onnx", "case": "test_data_set_3"}'
"""
import json
import os
import re
import shutil

import numpy as np

from ..core import contract
from ..core.errors import FrontEndError, UsageError
from ..core.export_io import write_atomically
from ..core.localization import float_values, module_boundaries

_CALL_SUFFIX = re.compile(r"_\d+$")  # Keras's name scope of layer `head` is head_1


def main(request):
    """python -m onnxproof --localize-json for a run TensorFlow exported: the model is loaded
    again from export.json's spec, seeded as the export was."""
    from . import source as sources
    run, case = request["run"], request["case"]
    with open(os.path.join(run, "export.json"), encoding="utf-8") as handle:
        manifest = json.load(handle)
    import keras
    import tensorflow as tf
    seed = int(manifest["options"].get("seed", 0))
    keras.utils.set_random_seed(seed)
    tf.random.set_seed(seed)
    source = sources.load(manifest["model"], manifest["options"].get("inputs", []), manifest["options"].get("dynamic", []))
    write_localization(run, request.get("model") or "model.onnx", case, source)
    return 0


def node_layer(layers, model_scope):
    """The reading of a tf2onnx node name for module_boundaries: the top-level layer whose name
    scope the node is in ('' for the model's own nodes), None for an unscoped node."""
    def read(node, modules):
        parts = node.name.split("/")
        if len(parts) < 2:
            return None
        start = 1 if _CALL_SUFFIX.sub("", parts[0]) == model_scope or parts[0] == model_scope else 0
        for candidate in (_CALL_SUFFIX.sub("", parts[start]), parts[start]):
            if candidate in layers:
                return candidate
        return "" if start else None
    return read


def write_localization(run, model_file, case, source):
    """Every layer's tensors on the reference case `case`, paired with model_file's values."""
    import onnx
    model = source.keras_model
    if model is None or not _functional(model):
        raise FrontEndError(f"divergence localization reads a functional or Sequential Keras model's layers; "
                            f"{source.description} has none to read")
    arrays = _read_inputs(os.path.join(run, "reference", case), source, case)
    layers = [layer for layer in model.layers if not isinstance(layer, _input_layer_class())]
    float32 = _layer_tensors(model, layers, arrays, np.float32)
    _check_same_model(model, arrays, os.path.join(run, "reference", case), source, case)
    exact = _exact_tensors(model, layers, arrays)
    onnx_model = onnx.load(os.path.join(run, model_file), load_external_data=False)
    for initializer in onnx_model.graph.initializer:
        if len(initializer.raw_data) > 4096:  # only the graph's structure is needed here
            initializer.ClearField("raw_data")
    names = {layer.name for layer in layers}
    boundaries = module_boundaries(onnx_model.graph, names, node_layer(names, model.name))
    shapes = _value_shapes(onnx_model, arrays)
    floats = float_values(onnx_model)
    folder = os.path.join(run, "localize")
    shutil.rmtree(os.path.join(folder, "pytorch"), ignore_errors=True)  # the schema's folder name for the source's tensors
    os.makedirs(os.path.join(folder, "pytorch"))
    modules = [_record(order, layer, boundaries, float32, exact, shapes, floats, folder)
               for order, layer in enumerate(layers)]
    manifest = {"schema": contract.LOCALIZE, "case": case, "model": model_file, "modules": modules}
    write_atomically(os.path.join(folder, "modules.json"), contract.dumps(manifest, "localize", indent=2) + "\n")


def _functional(model):
    return bool(getattr(model, "_is_graph_network", False) or type(model).__name__ in ("Functional", "Sequential")
                or hasattr(model, "_functional"))


def _input_layer_class():
    import keras
    return keras.layers.InputLayer


def _read_inputs(folder, source, case):
    from onnx import TensorProto, numpy_helper
    arrays = {}
    for index, (name, _, _) in enumerate(source.signature):
        path = os.path.join(folder, f"input_{index}.pb")
        if not os.path.exists(path):
            raise UsageError(f"{folder} holds no input_{index}.pb: no such reference case ({case})")
        proto = TensorProto()
        with open(path, "rb") as handle:
            proto.ParseFromString(handle.read())
        arrays[name] = numpy_helper.to_array(proto)
    return arrays


def _layer_tensors(model, layers, arrays, dtype, twin=None):
    """{layer name: (input arrays, output arrays)} from one call of an extractor model (of `twin`,
    the float64 clone, when given) whose outputs are every layer's inputs and outputs; `arrays`
    in the signature's order."""
    import keras
    import tensorflow as tf
    network = twin or model
    wanted = []
    for layer in layers:
        own = network.get_layer(layer.name)
        wanted.append((tf.nest.flatten(own.input), tf.nest.flatten(own.output)))
    flat = [tensor for inputs, outputs in wanted for tensor in inputs + outputs]
    extractor = keras.Model(network.inputs, flat)
    values = [value.astype(dtype) if value.dtype.kind == "f" else value for value in arrays.values()]
    called = extractor(values, training=False)  # built on the network's list of inputs
    results = [np.asarray(value) for value in tf.nest.flatten(called)]
    tensors, position = {}, 0
    for layer, (inputs, outputs) in zip(layers, wanted):
        tensors[layer.name] = (results[position:position + len(inputs)],
                               results[position + len(inputs):position + len(inputs) + len(outputs)])
        position += len(inputs) + len(outputs)
    return tensors


def _exact_tensors(model, layers, arrays):
    """The float64 clone's tensors at the same boundaries; {} when the model has no clone (then
    the engine judges by the fixed rule, as parity does)."""
    from .exact import keras_twin
    try:
        twin = keras_twin(model)
        return _layer_tensors(model, layers, arrays, np.float64, twin)
    except Exception:  # noqa: BLE001 -- no float64 run: the fixed rule judges
        return {}


def _check_same_model(model, arrays, folder, source, case):
    """The model loaded again must be the one exported: its outputs equal the reference's."""
    from onnx import TensorProto, numpy_helper
    got = source.call(arrays)
    for index, value in enumerate(got):
        proto = TensorProto()
        with open(os.path.join(folder, f"output_{index}.pb"), "rb") as handle:
            proto.ParseFromString(handle.read())
        expected = numpy_helper.to_array(proto)
        if value.shape != expected.shape or not np.allclose(value, expected, rtol=1e-4, atol=1e-5, equal_nan=True):
            raise FrontEndError(f"the model loaded again does not reproduce TensorFlow's reference outputs of {case} "
                                "(random weights without a seed, or a nondeterministic call): nothing to localize against")


def _value_shapes(onnx_model, arrays):
    """{value name: shape} by ONNX shape inference at the case's input shapes."""
    import onnx
    model = onnx.ModelProto()
    model.CopyFrom(onnx_model)
    for value in model.graph.input:
        if value.name in arrays:
            for dim, size in zip(value.type.tensor_type.shape.dim, arrays[value.name].shape):
                dim.Clear()
                dim.dim_value = int(size)
    try:
        inferred = onnx.shape_inference.infer_shapes(model, data_prop=True)
    except Exception:  # noqa: BLE001 -- no shapes: nothing is paired
        return {}
    shapes = {}
    for info in list(inferred.graph.value_info) + list(inferred.graph.output):
        dims = info.type.tensor_type.shape.dim
        if all(dim.HasField("dim_value") for dim in dims):
            shapes[info.name] = tuple(dim.dim_value for dim in dims)
    return shapes


def _record(order, layer, boundaries, float32, exact, shapes, floats, folder):
    nodes, onnx_inputs, onnx_outputs = boundaries.get(layer.name, ([], [], []))
    record = {"module": layer.name, "class": f"{type(layer).__module__}.{type(layer).__qualname__}",
              "source": _source(layer), "calls": 1, "nodes": nodes, "inputs": [], "outputs": []}
    if not nodes:
        return dict(record, matched=False, reason="no ONNX node carries this layer's name scope (fused, folded or "
                                                  "renamed by tf2onnx)")
    reasons = {}
    for side, values, index in (("inputs", onnx_inputs, 0), ("outputs", onnx_outputs, 1)):
        tensors = float32[layer.name][index]
        twins = exact.get(layer.name, ([None] * len(float32[layer.name][0]), [None] * len(tensors)))[index]
        pairs, reasons[side] = _pair(values, tensors, twins, shapes, floats)
        for k, (value, tensor, twin) in enumerate(pairs):
            item = {"onnx": value}
            for key, saved in (("pytorch", tensor), ("exact", twin)):
                if saved is not None:
                    item[key] = os.path.join("pytorch", f"{order:05d}_{side[:-1]}_{k}_{key}.pb")
                    _write_tensor(os.path.join(folder, item[key]), saved)
            record[side].append(item)
    matched = bool(record["outputs"])
    if not matched:
        record["inputs"] = []
    return dict(record, matched=matched, reason="" if matched else reasons["outputs"])


def _source(layer):
    """file:line of the layer's call()."""
    import inspect
    try:
        function = inspect.unwrap(type(layer).call)
        return f"{inspect.getsourcefile(function)}:{inspect.getsourcelines(function)[1]}"
    except (TypeError, OSError, AttributeError):
        return ""


def _pair(values, tensors, twins, shapes, floats):
    """(pairs, reason): each of the layer's floating tensors, in order, paired with the first
    floating ONNX value crossing its boundary whose shape is the tensor's (or its channels-first
    form); tf2onnx may let a value cross twice, before and after a transpose back to NHWC. None
    and the reason when a tensor finds no value."""
    kept = [(t, e) for t, e in zip(tensors, twins) if t.dtype.kind == "f"]
    values = [v for v in values if floats is None or v in floats]
    if not kept or len(values) < len(kept):
        return [], f"{len(values)} floating-point ONNX values and {len(kept)} TensorFlow tensors cross its boundary"
    pairs, free = [], list(values)
    for tensor, twin in kept:
        found = next((v for v in free if shapes.get(v) == tuple(tensor.shape)), None) or next(
            (v for v in free if _in_layout(tensor, shapes.get(v)) is not None), None)
        if found is None:
            crossing = ", ".join(f"{v} {shapes.get(v, 'of unknown shape')}" for v in values)
            return [], f"no ONNX value crossing its boundary ({crossing}) has its tensor's shape {tuple(tensor.shape)}"
        free.remove(found)
        usable = twin is not None and twin.dtype == np.float64 and twin.shape == tensor.shape
        pairs.append((found, _in_layout(tensor, shapes.get(found)),
                      _in_layout(twin, shapes.get(found)) if usable else None))
    return pairs, ""


def _in_layout(tensor, shape):
    """The tensor in the ONNX value's layout: as it is when the shapes agree, channels first when
    the value is the NCHW form tf2onnx computes a convolution in; None when neither fits."""
    if shape is None:
        return None
    if tuple(tensor.shape) == shape:
        return tensor
    if tensor.ndim >= 3:
        first = np.moveaxis(tensor, -1, 1)
        if first.shape == shape:
            return first
    return None


def _write_tensor(path, array):
    from onnx import numpy_helper
    with open(path, "wb") as handle:
        handle.write(numpy_helper.from_array(np.ascontiguousarray(array)).SerializeToString())
