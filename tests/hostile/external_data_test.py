"""Hostile external data for every command that reads a model (issue 61): the location and bounds
classes of ONNX's advisories (absolute, climbing, nested `a/../../`, Windows drive and UNC forms,
a link out of the folder, an offset or length past the file's end, a negative offset, a location
naming a folder), each given to check, ops, simplify, parity, run and golden verify. Each must end
with exit 3 and one `onnxproof: error:` line naming the model, write nothing, and never copy a byte
of the file outside the model's folder anywhere."""
import os
import shutil
import subprocess
import tempfile
import unittest

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

ENGINE = os.environ.get("ONNXPROOF_ENGINE", "")
SECRET = b"S3CRET-OUTSIDE-THE-MODEL-FOLDER" * 8

# class -> (location, extra external-data entries, whether the folder holds a link to the secret)
CLASSES = {
    "absolute": ("{secret}", {}, False),
    "climbing": ("../secret.bin", {}, False),
    "nested": ("a/../../secret.bin", {}, False),
    "windows_drive": ("C:\\secret.bin", {}, False),
    "unc": ("\\\\host\\share\\secret.bin", {}, False),
    "link_out": ("link.bin", {}, True),
    "offset_past_end": ("w.bin", {"offset": "1000000"}, False),
    "length_past_end": ("w.bin", {"length": "1000000000000"}, False),
    "negative_offset": ("w.bin", {"offset": "-8"}, False),
    "folder": ("sub", {}, False),
}

COMMANDS = {
    "check": "check {model}",
    "ops": "ops {model}",
    "simplify": "simplify {model} -o {out}/sim.onnx",
    "parity": "parity {model} --reference {work}/ref",
    "run": "run {model} --input x={work}/x.pb --output-dir {out}/outputs",
    "golden_verify": "golden verify {model} --golden {work}/golden",
}


def add_model(location, entries):
    """y = x + w with w (16 floats) in external data at `location`."""
    weight = numpy_helper.from_array(np.arange(16, dtype=np.float32).reshape(1, 16), "w")
    weight.ClearField("raw_data")
    weight.data_location = TensorProto.EXTERNAL
    weight.external_data.add(key="location", value=location)
    for key, value in entries.items():
        weight.external_data.add(key=key, value=value)
    graph = helper.make_graph([helper.make_node("Add", ["x", "w"], ["y"])], "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 16])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 16])], [weight])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model.SerializeToString()


class HostileExternalData(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.work = tempfile.mkdtemp(prefix="onnxproof-external-")
        with open(os.path.join(cls.work, "secret.bin"), "wb") as handle:
            handle.write(SECRET)
        x = np.ones((1, 16), dtype=np.float32)
        with open(os.path.join(cls.work, "x.pb"), "wb") as handle:
            handle.write(numpy_helper.from_array(x, "x").SerializeToString())
        case = os.path.join(cls.work, "ref", "test_data_set_0")
        os.makedirs(case)
        for name, array, tensor in (("input_0.pb", x, "x"), ("output_0.pb", x, "y")):
            with open(os.path.join(case, name), "wb") as handle:
                handle.write(numpy_helper.from_array(array, tensor).SerializeToString())
        os.makedirs(os.path.join(cls.work, "golden"))
        for name, (location, entries, link) in CLASSES.items():
            folder = os.path.join(cls.work, name)
            os.makedirs(os.path.join(folder, "sub"))
            with open(os.path.join(folder, "w.bin"), "wb") as handle:
                handle.write(np.arange(16, dtype=np.float32).tobytes())
            if link:
                os.symlink(os.path.join(cls.work, "secret.bin"), os.path.join(folder, "link.bin"))
            with open(os.path.join(folder, "model.onnx"), "wb") as handle:
                handle.write(add_model(location.format(secret=os.path.join(cls.work, "secret.bin")), entries))

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.work, ignore_errors=True)

    def test_every_command_refuses_every_class_in_one_line(self):
        self.assertTrue(ENGINE, "ONNXPROOF_ENGINE names the engine under test")
        for name in CLASSES:
            model = os.path.join(self.work, name, "model.onnx")
            for command, template in COMMANDS.items():
                with self.subTest(external=name, command=command):
                    out = tempfile.mkdtemp(prefix="out-", dir=self.work)
                    argv = template.format(model=model, out=out, work=self.work).split()
                    done = subprocess.run([ENGINE, *argv], capture_output=True, stdin=subprocess.DEVNULL, timeout=60,
                                          check=False)
                    stderr = done.stderr.decode("utf-8", "replace")
                    self.assertEqual(done.returncode, 3, stderr + done.stdout.decode("utf-8", "replace"))
                    lines = stderr.strip().splitlines()
                    self.assertEqual(len(lines), 1, stderr)
                    self.assertTrue(lines[0].startswith("onnxproof: error:") and model in lines[0], lines[0])
                    self.assertNotIn(SECRET[:16], done.stdout + done.stderr)
                    self.assertEqual(os.listdir(out), [], (name, command))  # nothing written


if __name__ == "__main__":
    unittest.main()
