"""Where a TensorFlow model comes from, and how it is called: a Source wraps a Keras model, a
tf.function or a SavedModel's serving signature behind one interface (its input signature, a call
on numpy arrays, a tf.function for the exporters, a float64 twin).

Model specs (docs/tensorflow.md): `keras:NAME[:key=value,...]` (a keras.applications architecture,
weights=None: nothing downloaded), `saved_model:DIR` (its serving_default signature), `FILE.keras`,
and `FILE.py:CALLABLE` returning a keras.Model, a tf.Module whose __call__ is a tf.function with an
input signature, or such a tf.function."""
import os
import re

from ..core.data import did_you_mean, model_from_callable
from ..core.errors import FrontEndError, UsageError


class Source:
    """A model as the export sees it. `signature`: [(name, shape with None for a free axis, dtype
    name)]; `output_names`: the names the ONNX outputs get; `keras_model`: the keras.Model when
    there is one (Keras's exporter and the float64 twin need it)."""

    def __init__(self, description, signature, function, keras_model=None, output_names=None):
        self.description = description
        self.signature = signature
        self._function = function  # called with one tf tensor per input, in signature order
        self.keras_model = keras_model
        self.output_names = output_names
        self.vocabularies = {}  # {input name: the input_dim of the Embedding reading it}
        self.saved_model = None  # a SavedModel's loaded object, kept alive for its variables
        self.owner = None  # the object a bound tf.function belongs to, kept alive
        self.input_keys = None  # a Keras model built on a dict of inputs: its keys, in signature order

    def tf_function(self, specs):
        """A tf.function of the model on `specs` (tf.TensorSpec per input, in signature order),
        its flat outputs out: what tf2onnx converts, its outputs in call()'s order."""
        import tensorflow as tf
        return tf.function(lambda *values: tf.nest.flatten(self._function(*values)), input_signature=specs)

    def call(self, arrays):
        """The model's flat outputs as numpy arrays on {input name: array}."""
        import tensorflow as tf
        values = [tf.constant(arrays[name]) for name, _, _ in self.signature]
        return [value.numpy() for value in tf.nest.flatten(self._function(*values))]


def load(spec, inputs, dynamic=()):
    """The Source of a --model spec; `inputs` and `dynamic`: the --input and --dynamic given (a
    subclassed Keras model takes its signature from them)."""
    if spec.startswith("keras:"):
        return keras_source(application(spec), spec, inputs, dynamic)
    if spec.startswith("saved_model:"):
        return saved_model_source(spec[len("saved_model:"):], spec)
    if spec.endswith(".keras"):
        import keras
        if not os.path.isfile(spec):
            raise FrontEndError(f"no such file: {spec}")
        try:
            model = keras.models.load_model(spec, compile=False)
        except Exception as error:
            raise FrontEndError(f"{spec} is not a Keras model file Keras can load: {type(error).__name__}: "
                                f"{error}") from error
        return keras_source(model, f"Keras model file {spec}", inputs, dynamic)
    model = model_from_callable(spec)
    return object_source(model, spec, inputs, dynamic)


def object_source(model, description, inputs, dynamic=()):
    """The Source of a model object: a keras.Model, a tf.Module or a tf.function."""
    import keras
    import tensorflow as tf
    if isinstance(model, keras.Model):
        return keras_source(model, description, inputs, dynamic)
    function = model.__call__ if isinstance(model, tf.Module) and not isinstance(model, keras.layers.Layer) else model
    if isinstance(function, tf.types.experimental.GenericFunction):
        specs = function.input_signature
        if not specs:
            raise UsageError(f"{description}: the tf.function has no input_signature; give it one "
                             "(@tf.function(input_signature=[tf.TensorSpec([None, 8], tf.float32, name='x')]))")
        signature = [(spec.name or f"input_{index}", _shape(spec, description), spec.dtype.name)
                     for index, spec in enumerate(specs)]
        source = Source(description, signature, function)
        source.owner = model  # a tf.function binds its tf.Module by a weak reference
        return source
    raise UsageError(f"{description} is a {type(model).__name__}: TensorFlow models are a keras.Model, a tf.Module "
                     "whose __call__ is a tf.function with an input_signature, or such a tf.function")


# keras:NAME's defaults where the spec gives none: logits, not softmax probabilities (random
# weights give near-uniform probabilities, which prove little: EVIDENCE_WEAK), and the usual
# 224x224 RGB image where the architecture leaves its size free (MobileNetV3 builds (None, None, 3),
# whose padding is computed for one size), so that batch is the one dynamic axis, as torchvision:'s.
APPLICATION_DEFAULTS = {"classifier_activation": None, "input_shape": (224, 224, 3)}


def application(spec):
    """keras:NAME[:key=value,...]: the keras.applications architecture with weights=None."""
    import inspect
    import keras
    name, _, options = spec[len("keras:"):].partition(":")
    builders = {n: getattr(keras.applications, n) for n in dir(keras.applications)
                if n[:1].isupper() and callable(getattr(keras.applications, n))}
    if name not in builders:
        raise UsageError(f"keras:{name} is not a keras.applications architecture{did_you_mean(name, builders)}")
    kwargs = dict(weights=None)
    for item in _top_level_items(options):
        key, sep, value = item.partition("=")
        if not sep:
            raise UsageError(f"{spec}: option '{item}' is not key=value")
        kwargs[key.strip()] = _literal(value.strip())
    accepted = inspect.signature(builders[name]).parameters
    for key, value in APPLICATION_DEFAULTS.items():
        if key in accepted and key not in kwargs:
            kwargs[key] = value
    try:
        return builders[name](**kwargs)
    except Exception as error:
        raise UsageError(f"{spec}: keras.applications.{name}({_kwargs_text(kwargs)}) fails: "
                         f"{type(error).__name__}: {error}") from error


def _top_level_items(options):
    """key=value items split at the commas outside brackets (input_shape=(96, 96, 3) is one)."""
    items, depth, start = [], 0, 0
    for index, char in enumerate(options):
        depth += char in "([{"
        depth -= char in ")]}"
        if char == "," and depth == 0:
            items.append(options[start:index])
            start = index + 1
    items.append(options[start:])
    return [item for item in (i.strip() for i in items) if item]


def _literal(text):
    import ast
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return text


def _kwargs_text(kwargs):
    return ", ".join(f"{key}={value!r}" for key, value in kwargs.items())


def keras_source(model, description, inputs, dynamic=()):
    """A Keras model called with training=False: a functional or Sequential model's signature is
    its Input layers'; a subclassed model's comes from --input and --dynamic (prove(): its
    arguments), its first call builds it. A functional model built on a dict of inputs is called
    with a dict."""
    signature = keras_signature(model, inputs, dynamic)
    structure = getattr(model, "_inputs_struct", None)

    keys = _dict_keys(model, structure) if isinstance(structure, dict) else None

    def call(*values):
        if keys is not None:
            return model(dict(zip(keys, values)), training=False)
        return model(list(values) if len(values) > 1 else values[0], training=False)

    outputs = getattr(model, "output_names", None)
    source = Source(description, signature, call, keras_model=model, output_names=list(outputs) if outputs else None)
    source.vocabularies = embedding_vocabularies(model, signature)
    source.input_keys = keys
    return source


def _dict_keys(model, structure):
    """The dict's keys in the order of model.inputs (the signature's; Keras flattens the dict in
    its own order): each key is found by the Input tensor it holds."""
    by_tensor = {id(tensor): key for key, tensor in structure.items()}
    return [by_tensor.get(id(tensor), key) for tensor, key in zip(model.inputs, structure)]


def embedding_vocabularies(model, signature):
    """{input name: input_dim} for the inputs an Embedding layer reads directly: their generated
    ids stay inside its vocabulary (other integer inputs, a mask among them, keep their own range)."""
    import keras
    try:
        tensors = list(model.inputs)
    except (AttributeError, ValueError):
        return {}
    vocabularies = {}
    for layer in model._flatten_layers(include_self=False, recursive=True):
        if not isinstance(layer, keras.layers.Embedding):
            continue
        try:
            read = layer.input
        except (AttributeError, ValueError):  # a shared or never-connected layer: no one input
            continue
        for (name, _, _), tensor in zip(signature, tensors):
            if read is tensor:
                vocabularies[name] = min(vocabularies.get(name, layer.input_dim), layer.input_dim)
    return vocabularies


def keras_signature(model, inputs, dynamic=()):
    try:
        tensors = list(model.inputs)
    except (AttributeError, ValueError):
        tensors = []
    if tensors:
        return [(_input_name(tensor, index), tuple(tensor.shape), _dtype(tensor.dtype))
                for index, tensor in enumerate(tensors)]
    if not inputs:
        raise UsageError(f"{type(model).__name__} is a subclassed Keras model with no Input layers: give its inputs "
                         "with --input NAME=DIMS:DTYPE (and --dynamic for the free axes)")
    free = {(axis["input"], axis["axis"]) for axis in dynamic}
    return [(spec["name"], tuple(None if (spec["name"], index) in free else dim for index, dim in enumerate(spec["dims"])),
             spec["dtype"]) for spec in inputs]


def _input_name(tensor, index):
    """The Input layer's name; Keras's automatic keras_tensor_N (an Input given no name, as
    keras.applications' are) becomes input_N."""
    name = (getattr(tensor, "name", None) or "").split(":")[0]
    return f"input_{index}" if not name or re.fullmatch(r"keras_tensor(_\d+)?", name) else name


def _dtype(dtype):
    return getattr(dtype, "name", None) or str(dtype)


def saved_model_source(folder, description):
    """A SavedModel's serving_default signature: inputs by the signature's names (sorted, as
    TensorFlow flattens a dict), outputs the signature's dict in sorted key order."""
    import tensorflow as tf
    if not os.path.isdir(folder):
        raise FrontEndError(f"no such SavedModel folder: {folder}")
    try:
        loaded = tf.saved_model.load(folder)
    except Exception as error:
        raise FrontEndError(f"{folder} is not a SavedModel TensorFlow can load: {type(error).__name__}: "
                            f"{error}") from error
    signatures = dict(getattr(loaded, "signatures", {}) or {})
    if "serving_default" not in signatures:
        raise UsageError(f"{folder} has no serving_default signature (it has: {', '.join(signatures) or 'none'})")
    serving = signatures["serving_default"]
    specs = serving.structured_input_signature[1]
    names = sorted(specs)
    signature = [(name, _shape(specs[name], description), specs[name].dtype.name) for name in names]
    outputs = sorted(serving.structured_outputs)

    def call(*values):
        result = serving(**dict(zip(names, values)))
        return [result[name] for name in outputs]

    source = Source(description, signature, call, output_names=outputs)
    source.saved_model = loaded
    return source


def _shape(spec, description):
    """A TensorSpec's shape as a tuple (None on free axes); UsageError for an unknown rank."""
    if spec.shape.rank is None:
        raise UsageError(f"{description}: input '{spec.name}' has no known rank (TensorSpec(None, ...)); give its "
                         "signature a shape with None on the free axes")
    return tuple(spec.shape.as_list())


def error_text(error):
    """`Type: message` in one line: the line that says what went wrong (a tf.function's error
    starts with 'in user code:' and the frames, and ends with the exception itself)."""
    lines = [line.strip() for line in str(error).strip().splitlines() if line.strip()]
    line = (lines[-1] if lines[0].startswith("in user code") else lines[0])[:300] if lines else ""
    kind = type(error).__name__
    return line if line.startswith(kind) else f"{kind}: {line}"
