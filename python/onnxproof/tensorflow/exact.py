"""The exact reference of a TensorFlow model: a float64 twin computing on the same inputs.

Keras keeps a dtype policy in every layer's config, so a model rebuilt after
keras.config.set_dtype_policy("float64") still computes in float32; the twin of a functional or
Sequential model (keras.applications included) is a clone whose every layer's config is widened,
with the weights widened. Every other model (a subclassed Keras model, a tf.function, a tf.Module,
a SavedModel's signature) is traced, its variables frozen into constants, and the graph's float32
types and constants widened to float64. A twin that cannot be had, or fails, has a reason
(EXACT_REFERENCE_MISSING)."""
import time

import numpy as np

from .source import error_text

# The float64 pass may take this many times the float32 capture's time (the first case always
# runs): the same budget as PyTorch's (torch/exact.py says why), but never less than
# MIN_BUDGET_SECONDS: a small model's float32 forwards take milliseconds, and the twin's first call
# (tracing the clone or importing the graph) alone would exhaust a budget of their multiple.
TIME_BUDGET = 1.3
MIN_BUDGET_SECONDS = 2.0

# TensorFlow kernels that compute in float32 whatever their input's type (their output is float32
# by the op's definition, tensorflow/core/ops/image_ops.cc): a twin holding one is exact only to
# float32, and the exact rule would then judge ONNX Runtime against a reference no closer to the
# truth than itself (a Keras Resizing layer: the twin was 6e-6 from a true float64 resize, ONNX
# Runtime 4-6e-6). Its outputs get no float64 values: the fixed rule judges them, said.
FLOAT32_KERNELS = frozenset({"ResizeBilinear", "ResizeBicubic", "ResizeArea", "ScaleAndTranslate", "CropAndResize",
                             "ResizeBilinearGrad", "ExtractGlimpse", "ExtractGlimpseV2", "SampleDistortedBoundingBox"})


class Twin:
    """The float64 model of a Source, or the reason there is none."""

    def __init__(self, source):
        self.source = source
        self.reason = ""
        self.call = None
        self.float32_seconds = 0.0
        self.exact_seconds = 0.0
        self.cases_run = 0
        try:
            narrow = float32_kernels(source)
            if narrow:
                self.reason = (f"the float64 twin would not be exact: TensorFlow's {', '.join(narrow)} kernel(s) compute "
                               "in float32 whatever the input type")
                return
            self.call = _twin_call(source)
        except Exception as error:  # any refusal is a reason, not a crash
            self.reason = error_text(error)

    def wanted(self):
        """Whether the next case gets a float64 run: the first always, later ones while the
        float64 pass stays within TIME_BUDGET of the float32 capture's time."""
        if self.call is None:
            return False
        return self.cases_run == 0 or self.exact_seconds <= max(TIME_BUDGET * self.float32_seconds, MIN_BUDGET_SECONDS)

    def outputs(self, arrays, float32_outputs):
        """The float64 outputs of one case (None for an integer output, or where the twin failed)."""
        start = time.perf_counter()
        try:
            values = self.call({name: _widened(value) for name, value in arrays.items()})
        except Exception as error:  # said once; no later case tries again
            self.reason = self.reason or f"the float64 twin fails: {error_text(error)}"
            self.call = None
            return [None] * len(float32_outputs)
        finally:
            self.exact_seconds += time.perf_counter() - start
            self.cases_run += 1
        result = []
        for value, reference in zip(values, float32_outputs):
            exact = np.asarray(value)
            usable = reference.dtype.kind == "f" and exact.dtype == np.float64 and exact.shape == reference.shape
            if reference.dtype.kind == "f" and not usable:
                self.reason = self.reason or f"the float64 twin returns {exact.dtype} {exact.shape} where the model " \
                                             f"returns {reference.dtype} {reference.shape}"
            result.append(exact if usable else None)
        return result


def float32_kernels(source):
    """The op types of FLOAT32_KERNELS in the model's traced graph (its functions included), sorted."""
    import tensorflow as tf
    specs = [tf.TensorSpec(shape, dtype, name=name) for name, shape, dtype in source.signature]
    graph = source.tf_function(specs).get_concrete_function().graph.as_graph_def()
    found = {node.op for node in graph.node if node.op in FLOAT32_KERNELS}
    for function in graph.library.function:
        found |= {node.op for node in function.node_def if node.op in FLOAT32_KERNELS}
    return sorted(found)


def _widened(array):
    array = np.asarray(array)
    return array.astype(np.float64) if array.dtype.kind == "f" else array


def _twin_call(source):
    """The twin's call: a Keras model's clone in float64, else (a subclassed model, a tf.function,
    a tf.Module, a SavedModel) its graph in float64."""
    if source.keras_model is not None:
        try:
            model = keras_twin(source.keras_model)
        except Exception:  # no config to clone from: the traced graph still has every op
            return graph_twin(source)
        from .source import keras_source
        twin = keras_source(model, "", [])  # called as the model is (a list, one tensor or a dict)

        def call(arrays):
            import tensorflow as tf
            values = [tf.constant(arrays[name]) for name, _, _ in source.signature]
            return [value.numpy() for value in tf.nest.flatten(twin._function(*values))]
        return call
    return graph_twin(source)


def keras_twin(model):
    """A float64 clone of a functional or Sequential Keras model with its weights; ValueError
    when the clone does not compute in float64."""
    import keras
    twin = keras.models.clone_model(model, clone_function=_widened_layer, recursive=True)
    weights = model.get_weights()
    if [w.shape for w in weights] != [w.shape for w in twin.get_weights()]:
        raise ValueError("the float64 clone's weights do not line up with the model's")
    twin.set_weights([w.astype(np.float64) if w.dtype.kind == "f" else w for w in weights])
    narrow = sorted({str(w.dtype) for w in twin.weights if "float" in str(w.dtype) and str(w.dtype) != "float64"})
    if narrow:
        raise ValueError(f"layers of the float64 clone keep {', '.join(narrow)} weights (a layer fixes its dtype)")
    return twin


def _widened_layer(layer):
    """The layer rebuilt from its config with a float64 policy where it computes in a float type
    (an integer lookup or an int Input keeps its own)."""
    config = layer.get_config()
    dtype = config.get("dtype")
    name = dtype.get("config", {}).get("name") if isinstance(dtype, dict) else dtype
    if name is not None and "float" in str(name):
        config["dtype"] = "float64"
    return layer.__class__.from_config(config)


def graph_twin(source):
    """A tf.function, tf.Module or SavedModel in float64: its graph with the variables frozen
    into constants, every float32 type, constant and function argument widened to float64, and
    imported again. An op without a float64 kernel fails at the first case, and that is the
    reason."""
    import tensorflow as tf
    from tensorflow.python.framework.convert_to_constants import convert_variables_to_constants_v2
    specs = [tf.TensorSpec(shape, dtype, name=name) for name, shape, dtype in source.signature]
    frozen = convert_variables_to_constants_v2(source.tf_function(specs).get_concrete_function())
    graph = frozen.graph.as_graph_def()
    for node in graph.node:
        _widen_node(node)
    for function in graph.library.function:
        for argument in list(function.signature.input_arg) + list(function.signature.output_arg):
            if argument.type == tf.float32.as_datatype_enum:
                argument.type = tf.float64.as_datatype_enum
        for node in function.node_def:
            _widen_node(node)
    inputs = [tensor.name for tensor in frozen.inputs]
    outputs = [tensor.name for tensor in frozen.outputs]
    imported = tf.compat.v1.wrap_function(lambda: tf.compat.v1.import_graph_def(graph, name=""), [])
    run = imported.prune(feeds=[imported.graph.get_tensor_by_name(name) for name in inputs],
                         fetches=[imported.graph.get_tensor_by_name(name) for name in outputs])

    def call(arrays):
        values = [tf.constant(arrays[name]) for name, _, _ in source.signature]
        return [value.numpy() for value in run(*values)]
    return call


def _widen_node(node):
    """float32 becomes float64 in a NodeDef's type attributes and constant tensors."""
    import tensorflow as tf
    single, double = tf.float32.as_datatype_enum, tf.float64.as_datatype_enum
    for attribute in node.attr.values():
        if attribute.type == single:
            attribute.type = double
        if attribute.list.type:
            attribute.list.type[:] = [double if kind == single else kind for kind in attribute.list.type]
        if attribute.HasField("tensor") and attribute.tensor.dtype == single:
            values = tf.make_ndarray(attribute.tensor).astype(np.float64)
            attribute.tensor.CopyFrom(tf.make_tensor_proto(values, dtype=tf.float64))
