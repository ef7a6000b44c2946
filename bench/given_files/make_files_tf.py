"""The TensorFlow side's ONNX files, made as a user's own script makes them (never by onnxproof),
into OUT (outside the repository), with OUT/manifest-tf.json: one entry per file with its exporter
and the spec that gives its weights (the .keras file, or the SavedModel the file was converted from).

    .venv-tf/bin/python bench/given_files/make_files_tf.py OUT

Models: a small Keras convnet (NHWC 32x32x3 images, two Conv2D + BatchNorm + ReLU, a Dense head;
BatchNorm statistics and biases drawn, seeded) and a Keras LSTM text classifier (int32 tokens,
batch and time free), each saved as .keras and as a SavedModel (model.export(format="tf_saved_model")).
Files: the convnet through Keras's model.export(format="onnx"), the tf2onnx command line from its
SavedModel, and the tf2onnx command line with --inputs-as-nchw; the LSTM through the tf2onnx
command line and Keras's model.export(format="onnx"). The tf2onnx files are proved against the
.keras file and against the SavedModel; the convnet's also, as a control, against the same
architecture with other weights (convnet_other_weights.keras)."""
import json
import os
import subprocess
import sys
import time
import traceback

import numpy as np
import keras

HERE = os.path.dirname(os.path.abspath(__file__))
SEED = 0


def convnet(seed=SEED):
    keras.utils.set_random_seed(seed)
    inputs = keras.Input((32, 32, 3), name="image")
    x = keras.layers.Conv2D(16, 3, padding="same", name="conv1")(inputs)
    x = keras.layers.BatchNormalization(name="norm1")(x)
    x = keras.layers.ReLU()(x)
    x = keras.layers.Conv2D(32, 3, strides=2, padding="same", name="conv2")(x)
    x = keras.layers.BatchNormalization(name="norm2")(x)
    x = keras.layers.ReLU()(x)
    x = keras.layers.GlobalAveragePooling2D()(x)
    outputs = keras.layers.Dense(10, name="logits")(x)
    model = keras.Model(inputs, outputs, name="convnet")
    rng = np.random.default_rng(seed)
    for layer in model.layers:
        if isinstance(layer, keras.layers.BatchNormalization):
            gamma, beta, mean, variance = layer.get_weights()
            layer.set_weights([rng.uniform(0.5, 1.5, gamma.shape), rng.normal(0, 0.1, beta.shape),
                               rng.normal(0, 0.5, mean.shape), rng.uniform(0.5, 2.0, variance.shape)])
        elif isinstance(layer, (keras.layers.Conv2D, keras.layers.Dense)):
            kernel, bias = layer.get_weights()
            layer.set_weights([kernel, rng.normal(0, 0.1, bias.shape)])
    return model


def lstm_classifier():
    keras.utils.set_random_seed(SEED)
    tokens = keras.Input((None,), dtype="int32", name="tokens")
    x = keras.layers.Embedding(1000, 32, name="embedding")(tokens)
    x = keras.layers.LSTM(32, name="lstm")(x)
    outputs = keras.layers.Dense(3, name="logits")(x)
    return keras.Model(tokens, outputs, name="lstm_classifier")


def make(name, exporter, model_spec, path, action):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    started = time.perf_counter()
    entry = {"name": name, "framework": "tensorflow", "exporter": exporter, "spec": model_spec, "onnx": path,
             "multi_file": False}
    try:
        action()
    except Exception as error:  # noqa: BLE001 -- recorded: the exporter's failure is a row of its own
        entry["export_error"] = f"{type(error).__name__}: {str(error).strip().splitlines()[-1] if str(error) else ''}"[:400]
        traceback.print_exc()
    entry["export_seconds"] = round(time.perf_counter() - started, 1)
    print(json.dumps(entry), flush=True)
    return entry


def tf2onnx_cli(saved_model, path, *extra):
    """`python -m tf2onnx.convert --saved-model DIR --output F`, as a user runs it."""
    command = [sys.executable, "-m", "tf2onnx.convert", "--saved-model", saved_model, "--output", path, *extra]
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode:
        raise RuntimeError(f"tf2onnx exit {done.returncode}: {done.stderr.strip().splitlines()[-1]}")
    return " ".join(["python", "-m", "tf2onnx.convert", "--saved-model", os.path.basename(saved_model), "--output",
                     os.path.basename(path), *extra])


def signature_input(saved_model):
    import tensorflow as tf
    signature = tf.saved_model.load(saved_model).signatures["serving_default"]
    return list(signature.structured_input_signature[1])[0]


def files_of(out, name, model, entries, nchw):
    keras_file = os.path.join(out, f"{name}.keras")
    model.save(keras_file)
    saved_model = os.path.join(out, f"{name}_saved_model")
    model.export(saved_model, format="tf_saved_model")
    folder = os.path.join(out, "files")
    path = os.path.join(folder, f"{name}-keras-export.onnx")
    entries.append(make(f"{name}-keras-export", 'keras model.export(format="onnx")', keras_file, path,
                        lambda: model.export(path, format="onnx")))
    path = os.path.join(folder, f"{name}-tf2onnx.onnx")
    entries.append(make(f"{name}-tf2onnx", "tf2onnx CLI (--saved-model)", keras_file, path,
                        lambda: tf2onnx_cli(saved_model, path)))
    # The same file proved against the SavedModel it was converted from.
    entries.append(dict(entries[-1], name=f"{name}-tf2onnx-vs-saved-model", spec=f"saved_model:{saved_model}",
                        same_file_as=f"{name}-tf2onnx"))
    if nchw:
        path = os.path.join(folder, f"{name}-tf2onnx-nchw.onnx")
        input_name = signature_input(saved_model)
        entries.append(make(f"{name}-tf2onnx-nchw", f"tf2onnx CLI (--saved-model, --inputs-as-nchw {input_name})",
                            keras_file, path, lambda: tf2onnx_cli(saved_model, path, "--inputs-as-nchw", input_name)))


def main():
    out = os.path.abspath(sys.argv[1])
    repository = os.path.dirname(os.path.dirname(HERE))
    if os.path.commonpath([out, repository]) == repository:
        sys.exit(f"{out} is inside the repository: give a folder outside it")
    os.makedirs(os.path.join(out, "files"), exist_ok=True)
    entries = []
    files_of(out, "convnet", convnet(), entries, nchw=True)
    files_of(out, "lstm", lstm_classifier(), entries, nchw=False)
    # Control: the convnet's tf2onnx file against the same architecture with other weights (seed 1):
    # expected to fail, naming the weights.
    other = os.path.join(out, "convnet_other_weights.keras")
    convnet(seed=1).save(other)
    entry = next(e for e in entries if e["name"] == "convnet-tf2onnx")
    entries.append(dict(entry, name="convnet-tf2onnx-vs-other-weights", spec=other, control=True,
                        same_file_as="convnet-tf2onnx"))
    with open(os.path.join(out, "manifest-tf.json"), "w", encoding="utf-8") as handle:
        json.dump(entries, handle, indent=1)


if __name__ == "__main__":
    main()
