"""The float16 variant of the proof (`--precision fp16`) on ONNX Runtime's CPU provider, through the
engine ($ONNXPROOF_ENGINE, set by CTest): a planted model that overflows in float16 while float32
is fine must fail with a NaN/Inf finding naming the first node, and a small correct convnet must
pass. Real converter (onnxruntime.transformers.float16), real ONNX Runtime, real PyTorch."""
import json
import os
import subprocess
import sys
import tempfile
import unittest

import numpy as np
import onnx
import torch
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
ENGINE = os.environ.get("ONNXPROOF_ENGINE", os.path.join(HERE, "..", "..", "build", "bin", "onnxproof"))


def write_reference(folder, inputs, outputs, exact_outputs):
    """reference/test_data_set_0 with input_K.pb, output_K.pb (float32) and exact_output_K.pb (float64)."""
    data_set = os.path.join(folder, "test_data_set_0")
    os.makedirs(data_set)
    for kind, tensors in (("input", inputs), ("output", outputs), ("exact_output", exact_outputs)):
        for k, (name, array) in enumerate(tensors):
            with open(os.path.join(data_set, f"{kind}_{k}.pb"), "wb") as f:
                f.write(numpy_helper.from_array(array, name).SerializeToString())


def overflow_model(path):
    """y = LayerNorm((x * 1000)^2): (x*1000)^2 passes 65504 for |x| > 0.256, so float16 gives Inf
    and the normalization NaN, while float32 (and PyTorch) stay finite."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 4])
    initializers = [numpy_helper.from_array(np.array(1000, np.float32), "k"),
                    numpy_helper.from_array(np.ones(4, np.float32), "gamma"),
                    numpy_helper.from_array(np.zeros(4, np.float32), "beta")]
    nodes = [helper.make_node("Mul", ["x", "k"], ["scaled"], name="scale"),
             helper.make_node("Mul", ["scaled", "scaled"], ["squared"], name="square"),
             helper.make_node("LayerNormalization", ["squared", "gamma", "beta"], ["y"], name="norm")]
    graph = helper.make_graph(nodes, "overflow", [x], [y], initializers)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, path)


def inf_model(path):
    """Outputs whose float32 values are legitimately infinite or NaN, in float16 at the same places:
    y = Softmax(x + mask), the mask -inf over all of row 1 (a fully masked attention row: NaN), and
    z = x / 0 (+inf and -inf by the sign of x)."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 4])
    outputs = [helper.make_tensor_value_info(name, TensorProto.FLOAT, [2, 4]) for name in ("y", "z")]
    mask = np.zeros((2, 4), np.float32)
    mask[0, 3] = -np.inf  # one masked position in row 0: a 0 there
    mask[1, :] = -np.inf
    initializers = [numpy_helper.from_array(mask, "mask"), numpy_helper.from_array(np.zeros(1, np.float32), "zero")]
    nodes = [helper.make_node("Add", ["x", "mask"], ["masked"], name="mask"),
             helper.make_node("Softmax", ["masked"], ["y"], name="softmax", axis=-1),
             helper.make_node("Div", ["x", "zero"], ["z"], name="divide")]
    model = helper.make_model(helper.make_graph(nodes, "infinite", [x], outputs, initializers),
                              opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, path)
    return mask


def inf_reference(x, mask, dtype):
    """inf_model's outputs computed in `dtype` (NaN and infinities where the model has them)."""
    with np.errstate(all="ignore"):
        masked = x.astype(dtype) + mask.astype(dtype)
        shifted = np.exp(masked - masked.max(axis=-1, keepdims=True))
        return shifted / shifted.sum(axis=-1, keepdims=True), x.astype(dtype) / dtype(0)


def layer_norm(values):
    mean = values.mean(axis=-1, keepdims=True)
    variance = ((values - mean) ** 2).mean(axis=-1, keepdims=True)
    return (values - mean) / np.sqrt(variance + 1e-5)


class SmallConvNet(torch.nn.Module):
    """A resnet-like block: conv, batch norm, ReLU, a residual conv, pooling, a linear head."""

    def __init__(self):
        super().__init__()
        self.stem = torch.nn.Conv2d(3, 8, 3, padding=1)
        self.norm = torch.nn.BatchNorm2d(8)
        self.block = torch.nn.Conv2d(8, 8, 3, padding=1)
        self.head = torch.nn.Linear(8, 10)

    def forward(self, x):
        x = torch.relu(self.norm(self.stem(x)))
        x = torch.relu(x + self.block(x))
        return self.head(torch.flatten(torch.nn.functional.adaptive_avg_pool2d(x, 1), 1))


def parity(model, reference, *extra):
    return subprocess.run([ENGINE, "parity", model, "--reference", reference, "--precision", "fp16", *extra],
                          capture_output=True, text=True, timeout=600, check=False)


class Float16Variant(unittest.TestCase):
    def test_overflow_in_float16_fails_with_nan_naming_the_first_node(self):
        with tempfile.TemporaryDirectory() as folder:
            model = os.path.join(folder, "overflow.onnx")
            overflow_model(model)
            x = np.array([[1, 2, 3, 4], [0.1, 0.2, 0.3, 0.4]], np.float32)
            exact = layer_norm((x.astype(np.float64) * 1000) ** 2)
            reference = os.path.join(folder, "reference")
            write_reference(reference, [("x", x)], [("y", exact.astype(np.float32))], [("y", exact)])
            # float32 as exported: passes.
            plain = subprocess.run([ENGINE, "parity", model, "--reference", reference], capture_output=True,
                                   text=True, timeout=600, check=False)
            self.assertEqual(plain.returncode, 0, plain.stdout + plain.stderr)
            report = os.path.join(folder, "parity.json")
            run = parity(model, reference, "--json", report)
            self.assertEqual(run.returncode, 1, run.stdout + run.stderr)
            with open(report) as f:
                findings = json.load(f)["findings"]
            nan = [f for f in findings if f["code"] == "NAN_OR_INF"]
            self.assertTrue(nan, findings)
            self.assertIn("output 'y' on cpu", nan[0]["message"])
            self.assertIn("first node whose output is NaN/Inf: 'square' (Mul)", nan[0]["message"])
            self.assertTrue(os.path.exists(model), "the input model stays")
            self.assertEqual(sorted(os.listdir(folder)), ["overflow.onnx", "parity.json", "reference"])

    def test_small_convnet_passes_in_float16(self):
        torch.manual_seed(0)
        net = SmallConvNet().eval()
        x = torch.randn(2, 3, 16, 16)
        with tempfile.TemporaryDirectory() as folder:
            model = os.path.join(folder, "convnet.onnx")
            torch.onnx.export(net, (x,), model, input_names=["x"], output_names=["logits"], dynamo=False)
            with torch.no_grad():
                pytorch = net(x).numpy()
                exact = net.double()(x.double()).numpy()
            reference = os.path.join(folder, "reference")
            write_reference(reference, [("x", x.numpy())], [("logits", pytorch)], [("logits", exact)])
            run = parity(model, reference)
            self.assertEqual(run.returncode, 0, run.stdout + run.stderr)

    def test_pipeline_keeps_the_float16_model_and_fails_the_planted_overflow(self):
        spec = os.path.join(HERE, "..", "..", "bench", "gpu", "overflow_model.py") + ":build"
        with tempfile.TemporaryDirectory() as folder:
            out = os.path.join(folder, "run")
            args = [ENGINE, "pipeline", "--model", spec, "--input", "x=2x16:float32", "--no-golden", "--out", out]
            run = subprocess.run(args + ["--precision", "fp16"], capture_output=True, text=True, timeout=900,
                                 check=False)
            self.assertEqual(run.returncode, 1, run.stdout + run.stderr)
            self.assertTrue(os.path.isfile(os.path.join(out, "model.fp16.onnx")))
            with open(os.path.join(out, "report.json")) as f:
                report = json.load(f)
            parity_step = next(step for step in report["steps"] if step["name"] == "parity")
            self.assertEqual(parity_step["precision"], "fp16")
            self.assertEqual(parity_step["model"], "model.fp16.onnx")
            nan = [f for f in report["findings"] if f["code"] == "NAN_OR_INF"]
            self.assertTrue(nan, report["findings"])
            self.assertIn("first node whose output is NaN/Inf", nan[0]["message"])
            self.assertIn("(Pow)", nan[0]["message"])
            # The same folder again, in float32: the run that wrote model.fp16.onnx is replaced.
            again = subprocess.run(args, capture_output=True, text=True, timeout=900, check=False)
            self.assertEqual(again.returncode, 0, again.stdout + again.stderr)
            self.assertFalse(os.path.exists(os.path.join(out, "model.fp16.onnx")))

    def infinite_case(self, folder, change=None):
        """inf_model and its reference (`change(y32, z32)` may plant a difference in the float32 one)."""
        model = os.path.join(folder, "infinite.onnx")
        mask = inf_model(model)
        x = np.array([[0.5, -1.5, 2.0, 1.0], [-0.25, 0.75, 1.25, -2.0]], np.float32)
        y32, z32 = inf_reference(x, mask, np.float32)
        y64, z64 = inf_reference(x, mask, np.float64)
        self.assertTrue(np.isnan(y32[1]).all() and np.isposinf(z32).any() and np.isneginf(z32).any())
        if change:
            change(y32, z32)
        reference = os.path.join(folder, "reference")
        write_reference(reference, [("x", x)], [("y", y32), ("z", z32)], [("y", y64), ("z", z64)])
        return model, reference

    def test_infinities_and_nan_the_float32_model_has_are_no_defect_in_either_precision(self):
        with tempfile.TemporaryDirectory() as folder:
            model, reference = self.infinite_case(folder)
            for precision in ("fp32", "fp16"):
                with self.subTest(precision=precision):
                    report = os.path.join(folder, f"{precision}.json")
                    run = subprocess.run([ENGINE, "parity", model, "--reference", reference, "--precision", precision,
                                          "--json", report], capture_output=True, text=True, timeout=600, check=False)
                    self.assertEqual(run.returncode, 0, run.stdout + run.stderr)
                    with open(report) as f:
                        rows = json.load(f)["parity"]
                    self.assertEqual({row["output"] for row in rows}, {"y", "z"})
                    self.assertTrue(all(not row["nan_mismatch"] for row in rows), rows)

    def test_an_infinity_where_the_reference_has_none_or_another_fails(self):
        def finite_in_reference(y32, z32):
            z32[0, 0] = 3.0  # the model's +inf against a finite reference
        def sign_flipped(y32, z32):
            z32[0, 1] = np.inf  # the model's -inf against +inf
        def nan_against_finite(y32, z32):
            y32[1, 0] = 0.25  # the model's NaN (fully masked row) against a number
        for change in (finite_in_reference, sign_flipped, nan_against_finite):
            for precision in ("fp32", "fp16"):
                with self.subTest(change=change.__name__, precision=precision), tempfile.TemporaryDirectory() as folder:
                    model, reference = self.infinite_case(folder, change)
                    report = os.path.join(folder, "parity.json")
                    run = subprocess.run([ENGINE, "parity", model, "--reference", reference, "--precision", precision,
                                          "--json", report], capture_output=True, text=True, timeout=600, check=False)
                    self.assertEqual(run.returncode, 1, run.stdout + run.stderr)
                    with open(report) as f:
                        nan = [f["message"] for f in json.load(f)["findings"] if f["code"] == "NAN_OR_INF"]
                    if change is finite_in_reference:
                        # The node behind z, not the mask's -inf that only y reads.
                        self.assertEqual(len(nan), 1, nan)
                        self.assertIn("first node whose output is NaN/Inf: 'divide' (Div)", nan[0])

    def test_unknown_precision_is_a_usage_error(self):
        run = subprocess.run([ENGINE, "parity", "m.onnx", "--reference", "r", "--precision", "fp8"],
                             capture_output=True, text=True, timeout=60, check=False)
        self.assertEqual(run.returncode, 2, run.stderr)
        self.assertIn("--precision", run.stderr)


if __name__ == "__main__":
    unittest.main()
