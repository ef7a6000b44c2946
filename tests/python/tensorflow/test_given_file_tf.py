"""A file the user made from a TensorFlow model, proved as it is (`pipeline --onnx`, prove(onnx=...)),
in TensorFlow's own environment: the tf2onnx command line on a SavedModel (with and without
--inputs-as-nchw) and Keras's model.export(format="onnx"), each proved against the Keras model by
the engine ($ONNXPROOF_ENGINE); planted: a file from another checkpoint."""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
MODELS = os.path.join(HERE, "models.py")
sys.path.insert(0, HERE)

import models  # noqa: E402  (the models' module, beside this file)


def engine():
    from onnxproof.core.engine import engine_path
    return engine_path()


def onnx_inputs(path):
    import onnx
    return {value.name: [dim.dim_value or dim.dim_param for dim in value.type.tensor_type.shape.dim]
            for value in onnx.load(path).graph.input}


class GivenTensorFlowFile(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.folder = tempfile.mkdtemp(prefix="onnxproof-given-tf-")
        model = models.small_cnn()
        model.export(os.path.join(cls.folder, "saved"), format="tf_saved_model")
        model.export(os.path.join(cls.folder, "keras.onnx"), format="onnx")
        for name, extra in (("tf2onnx.onnx", []), ("nchw.onnx", ["--inputs-as-nchw", "image"])):
            subprocess.run([sys.executable, "-m", "tf2onnx.convert", "--saved-model", os.path.join(cls.folder, "saved"),
                            "--output", os.path.join(cls.folder, name), *extra], check=True, capture_output=True,
                           timeout=600)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.folder, ignore_errors=True)

    def pipeline(self, spec, file, out):
        folder = os.path.join(self.folder, out)
        done = subprocess.run([engine(), "pipeline", "--model", spec, "--onnx", os.path.join(self.folder, file),
                               "--out", folder, "--no-golden"], capture_output=True, text=True, timeout=900,
                              env=dict(os.environ, ONNXPROOF_TF_PYTHON=sys.executable), check=False)
        with open(os.path.join(folder, "report.json"), encoding="utf-8") as handle:
            return done, json.load(handle)

    def test_the_tf2onnx_command_lines_and_keras_export_files_are_proved_as_given(self):
        for file in ("tf2onnx.onnx", "keras.onnx", "nchw.onnx"):
            done, document = self.pipeline(f"{MODELS}:small_cnn", file, file + "-run")
            self.assertEqual(document["verdict"], "pass", (file, done.stdout[-3000:], done.stderr[-2000:]))
            self.assertEqual(document["given_file"]["path"], os.path.join(self.folder, file))
            self.assertIn(f"ship {os.path.join(self.folder, file)}", done.stdout)
        self.assertEqual(onnx_inputs(os.path.join(self.folder, "nchw.onnx"))["image"][1], 3)  # the file is NCHW
        self.assertEqual(document["given_file"]["inputs"][0].get("layout"), "NHWC -> NCHW")

    def test_a_file_from_another_checkpoint_fails_naming_the_weights(self):
        done, document = self.pipeline(f"{MODELS}:small_cnn_other_weights", "tf2onnx.onnx", "stale")
        self.assertEqual(document["verdict"], "fail", done.stdout[-3000:])
        self.assertEqual(document["ship"]["cause"], "FILE_WEIGHTS_NOT_FROM_MODEL")

    def test_a_folder_is_one_usage_error(self):  # generation folders are read for PyTorch decoders only
        folder = os.path.join(self.folder, "a-folder")
        os.makedirs(folder, exist_ok=True)
        shutil.copyfile(os.path.join(self.folder, "keras.onnx"), os.path.join(folder, "model.onnx"))
        done = subprocess.run([engine(), "pipeline", "--model", f"{MODELS}:small_cnn", "--onnx", folder, "--out",
                               os.path.join(self.folder, "folder-run"), "--no-golden"], capture_output=True, text=True,
                              timeout=900, env=dict(os.environ, ONNXPROOF_TF_PYTHON=sys.executable), check=False)
        self.assertEqual(done.returncode, 2, done.stdout[-2000:] + done.stderr[-2000:])
        self.assertIn("generation folders are proved against PyTorch decoders", done.stderr)

    def test_prove_takes_the_file_and_a_binding(self):
        import onnxproof
        image = np.random.default_rng(0).standard_normal((2, 20, 20, 3)).astype(np.float32)
        result = onnxproof.prove(models.small_cnn(), (image,), onnx=os.path.join(self.folder, "tf2onnx.onnx"),
                                 bind={"image": "image"}, out=os.path.join(self.folder, "api"), quiet=True,
                                 localize=False)
        self.assertEqual(result.verdict, "pass", str(result))
        self.assertEqual(result.given_file["inputs"][0]["by"], "--bind")


if __name__ == "__main__":
    unittest.main()
