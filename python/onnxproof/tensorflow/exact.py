"""The exact reference of a TensorFlow model: a float64 twin computing on the same inputs.

Keras keeps a dtype policy in every layer's config, so a model rebuilt after
keras.config.set_dtype_policy("float64") still computes in float32; the twin is a clone whose
every layer's config is widened (functional and Sequential models, keras.applications included),
else the user's factory called again under the float64 policy (a subclassed model), with the
weights widened. A tf.function is called again on float64 inputs when it holds no float32
variables; a SavedModel's signature is traced at its saved dtypes, so it has none. Each missing
twin has a reason (EXACT_REFERENCE_MISSING)."""
import time

import numpy as np

# The float64 pass may take this many times the float32 capture's time (the first case always
# runs): the same budget as PyTorch's (torch/exact.py says why).
TIME_BUDGET = 1.3


class Twin:
    """The float64 model of a Source, or the reason there is none."""

    def __init__(self, source, factory=None):
        self.source = source
        self.reason = ""
        self.call = None
        self.float32_seconds = 0.0
        self.exact_seconds = 0.0
        self.cases_run = 0
        try:
            self.call = _twin_call(source, factory)
        except Exception as error:  # any refusal is a reason, not a crash
            self.reason = f"{type(error).__name__}: {str(error).strip().splitlines()[0] if str(error).strip() else ''}"

    def wanted(self):
        """Whether the next case gets a float64 run: the first always, later ones while the
        float64 pass stays within TIME_BUDGET of the float32 capture's time."""
        if self.call is None:
            return False
        return self.cases_run == 0 or self.exact_seconds <= TIME_BUDGET * self.float32_seconds

    def outputs(self, arrays, float32_outputs):
        """The float64 outputs of one case (None for an integer output, or where the twin failed)."""
        start = time.perf_counter()
        try:
            values = self.call({name: _widened(value) for name, value in arrays.items()})
        except Exception as error:
            self.reason = self.reason or f"the float64 twin fails: {type(error).__name__}: {str(error)[:200]}"
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


def _widened(array):
    array = np.asarray(array)
    return array.astype(np.float64) if array.dtype.kind == "f" else array


def _twin_call(source, factory):
    if source.keras_model is not None:
        model = keras_twin(source.keras_model, factory, source)
        many = len(source.signature) > 1

        def call(arrays):
            import tensorflow as tf
            values = [arrays[name] for name, _, _ in source.signature]
            result = model(values if many else values[0], training=False)
            return [value.numpy() for value in tf.nest.flatten(result)]
        return call
    if getattr(source, "saved_model", None) is not None:
        raise ValueError("a SavedModel's serving signature is traced at its saved dtypes and cannot run in float64")
    return function_twin(source)


def keras_twin(model, factory, source):
    """A float64 copy of a Keras model with its weights; ValueError when none computes in float64."""
    import keras
    try:
        twin = keras.models.clone_model(model, clone_function=_widened_layer, recursive=True)
    except Exception as error:  # a subclassed model has no config to clone from
        if factory is None:
            raise ValueError(f"the model cannot be cloned in float64 ({type(error).__name__}: {error})") from error
        twin = _rebuilt_in_float64(factory, source)
    weights = model.get_weights()
    if not twin.weights and weights:  # a subclassed twin is built by its first call
        twin(_example(source, np.float64), training=False)
    twin_weights = twin.get_weights()
    if [w.shape for w in weights] != [w.shape for w in twin_weights]:
        raise ValueError("the float64 twin's weights do not line up with the model's")
    twin.set_weights([w.astype(np.float64) if w.dtype.kind == "f" else w for w in weights])
    narrow = sorted({str(w.dtype) for w in twin.weights if "float" in str(w.dtype) and str(w.dtype) != "float64"})
    if narrow:
        raise ValueError(f"layers of the float64 twin keep {', '.join(narrow)} weights (a layer fixes its dtype)")
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


def _rebuilt_in_float64(factory, source):
    import keras
    before = keras.config.dtype_policy()
    keras.config.set_dtype_policy("float64")
    try:
        return factory()
    finally:
        keras.config.set_dtype_policy(before)


def _example(source, float_dtype):
    arrays = [np.zeros([d if d is not None else 1 for d in shape],
                       dtype=float_dtype if "float" in dtype else dtype) for _, shape, dtype in source.signature]
    return arrays if len(arrays) > 1 else arrays[0]


def function_twin(source):
    """A tf.function's Python function called eagerly on float64 inputs: a function of its inputs
    alone runs; one that holds float32 variables fails, and that is the reason."""
    import tensorflow as tf
    python_function = getattr(source._function, "python_function", None)
    if python_function is None:
        raise ValueError("the function has no Python function to call again in float64")

    def call(arrays):
        values = [tf.constant(arrays[name]) for name, _, _ in source.signature]
        return [value.numpy() for value in tf.nest.flatten(python_function(*values))]
    return call
