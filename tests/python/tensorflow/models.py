"""Keras and TensorFlow models the TensorFlow front end's tests prove (correct ones, and ones an
exporter cannot take); the planted defects are made in their exported graphs by the tests. Each is
built by a function, with seeded random weights."""
import keras
import numpy as np
import tensorflow as tf


def text_classifier():
    """An LSTM text classifier over token ids with a free batch and time axis."""
    keras.utils.set_random_seed(1)
    tokens = keras.Input(shape=(None,), dtype="int32", name="tokens")
    x = keras.layers.Embedding(50, 16, name="embed")(tokens)
    x = keras.layers.LSTM(16, name="lstm")(x)
    out = keras.layers.Dense(3, activation="softmax", name="head")(x)
    return keras.Model(tokens, out, name="text_classifier")


def transformer_encoder():
    """A one-block transformer encoder over token ids with a 0/1 padding mask; pooled over the
    valid positions, so a dropped mask changes the outputs."""
    keras.utils.set_random_seed(2)
    tokens = keras.Input(shape=(None,), dtype="int32", name="input_ids")
    mask = keras.Input(shape=(None,), dtype="int32", name="attention_mask")
    x = keras.layers.Embedding(40, 16, name="embed")(tokens)
    valid = keras.ops.cast(mask, "bool")
    attention = keras.layers.MultiHeadAttention(num_heads=2, key_dim=8, name="attention")(
        x, x, attention_mask=valid[:, None, :])
    x = keras.layers.LayerNormalization(name="norm_1")(x + attention)
    x = keras.layers.LayerNormalization(name="norm_2")(x + keras.layers.Dense(16, activation="relu", name="ffn")(x))
    weights = keras.ops.cast(mask, "float32")[:, :, None]
    pooled = keras.ops.sum(x * weights, axis=1) / keras.ops.maximum(keras.ops.sum(weights, axis=1), 1.0)
    out = keras.layers.Dense(2, name="head")(pooled)
    return keras.Model([tokens, mask], out, name="transformer_encoder")


def small_cnn(seed=3):
    """A small NHWC convolutional classifier with a free batch and image size."""
    keras.utils.set_random_seed(seed)
    image = keras.Input(shape=(None, None, 3), name="image")
    x = keras.layers.Conv2D(8, 3, padding="same", activation="relu", name="conv")(image)
    x = keras.layers.BatchNormalization(name="bn")(x)
    x = keras.layers.GlobalAveragePooling2D(name="pool")(x)
    out = keras.layers.Dense(4, name="logits")(x)
    return keras.Model(image, out, name="small_cnn")


def small_cnn_other_weights():
    """small_cnn from another seed: the same architecture, another checkpoint."""
    return small_cnn(seed=30)


class Scaler(tf.Module):
    """A tf.Module whose __call__ is a tf.function with an input signature."""

    def __init__(self):
        super().__init__()
        rng = np.random.default_rng(4)
        self.weight = tf.Variable(rng.standard_normal((6, 3)).astype(np.float32), name="weight")

    @tf.function(input_signature=[tf.TensorSpec([None, 6], tf.float32, name="x")])
    def __call__(self, x):
        return tf.nn.tanh(tf.matmul(x, self.weight))


def scaler():
    return Scaler()


@tf.function(input_signature=[tf.TensorSpec([None, None], tf.float32, name="x")])
def smooth(x):
    """A tf.function of its input alone: its float64 twin is the same function on float64 inputs."""
    return tf.math.softplus(x) * tf.math.sigmoid(x) + tf.reduce_mean(x, axis=-1, keepdims=True)


def smooth_function():
    return smooth


def save_scaler(folder):
    """A SavedModel of Scaler with its serving signature."""
    module = Scaler()
    tf.saved_model.save(module, folder, signatures={"serving_default": module.__call__})
    return folder


class Residual(keras.Model):
    """A subclassed Keras model: no Input layers, so its signature comes from --input / args."""

    def __init__(self):
        super().__init__()
        self.inner = keras.layers.Dense(8, activation="tanh", name="inner")
        self.outer = keras.layers.Dense(3, name="outer")

    def call(self, x):
        return self.outer(self.inner(x) + x[:, :8])


def subclassed():
    keras.utils.set_random_seed(7)
    return Residual()


def dict_inputs():
    """A functional model built on a dict of inputs whose keys are not in sorted order."""
    keras.utils.set_random_seed(8)
    inputs = {"price": keras.Input(shape=(1,), name="price"), "age": keras.Input(shape=(1,), name="age"),
              "category": keras.Input(shape=(None,), dtype="int32", name="category")}
    embedded = keras.ops.mean(keras.layers.Embedding(12, 4, name="embed")(inputs["category"]), axis=1)
    x = keras.layers.Concatenate(name="join")([inputs["price"], 2.0 * inputs["age"], embedded])
    return keras.Model(inputs, keras.layers.Dense(2, name="score")(x), name="dict_inputs")


def lstm_states():
    """An LSTM returning its sequence and both states: three outputs of one layer (one name)."""
    keras.utils.set_random_seed(9)
    x = keras.Input(shape=(None, 4), name="frames")
    outputs = keras.layers.LSTM(6, return_sequences=True, return_state=True, name="lstm")(x)
    return keras.Model(x, outputs, name="lstm_states")


@tf.function(input_signature=[tf.TensorSpec([None, 5], tf.int32, name="x")])
def _masked(x):
    return tf.bitwise.bitwise_and(x, 6) + 1


def masked_function():
    """A bitwise AND: tf2onnx 1.17 writes ONNX's BitwiseAnd, which exists from opset 18 only, even
    into an opset-15 model (its default): the default export is raised to 18 for it."""
    return _masked


# --- models the exporters get wrong or cannot take ---------------------------------------------

def exact_gelu():
    """A Dense layer with Keras's exact GELU, which TensorFlow computes with Erfc: tf2onnx 1.17 has
    no conversion for Erfc and leaves it in the graph."""
    keras.utils.set_random_seed(6)
    x = keras.Input(shape=(8,), name="features")
    out = keras.layers.Dense(4, activation="gelu", name="ffn")(x)
    return keras.Model(x, out, name="exact_gelu")


@tf.function
def _unsigned(x):
    return x * 2.0


def unsigned_function():
    """A tf.function without an input signature: onnxproof cannot know its inputs."""
    return _unsigned
