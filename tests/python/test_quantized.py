"""Quantized models proved in quantization steps (docs/quantization.md), against the engine this
checkout built ($ONNXPROOF_ENGINE): a real PT2E model (torchao's XNNPACK-style quantizer) exported
with its Q/DQ nodes, the same network quantized by ONNX Runtime's quantize_static under
--quantize static, export defects planted into the Q/DQ graph (quantized_plants.py) that must
fail, and the rounding audit on a real ONNX Runtime release whose float16 QuantizeLinear
truncates (1.18, which setup fetches)."""
import glob
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import quantized_plants  # noqa: E402

ENGINE = os.environ.get("ONNXPROOF_ENGINE", os.path.join(HERE, "..", "..", "build", "bin", "onnxproof"))
MODELS = os.path.join(HERE, "quantized_models.py")
SHAPE = ["--input", "x=2x3x16x16:float32", "--no-golden"]
CACHE = os.environ.get("ONNXPROOF_ORT_CACHE") or os.path.join(
    os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "onnxproof", "onnxruntime")


def run(*arguments, env=None):
    return subprocess.run([ENGINE, *arguments], capture_output=True, text=True, timeout=900, env=env)


def report_of(folder):
    with open(os.path.join(folder, "report.json"), encoding="utf-8") as handle:
        return json.load(handle)


def step_of(report, name):
    return next(step for step in report["steps"] if step["name"] == name)


@unittest.skipUnless(os.access(ENGINE, os.X_OK), "build the engine first")
class PT2EModelTest(unittest.TestCase):
    """One PT2E export, proved once; the plants reuse its reference."""

    @classmethod
    def setUpClass(cls):
        cls.folder = tempfile.mkdtemp(prefix="onnxproof-quantized-")
        cls.out = os.path.join(cls.folder, "run")
        cls.done = run("pipeline", "--model", MODELS + ":small_cnn", *SHAPE, "--out", cls.out)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.folder, ignore_errors=True)

    def test_passes_in_steps_with_the_histogram_and_the_rounding_audit(self):
        self.assertEqual(self.done.returncode, 0, self.done.stdout + self.done.stderr)
        report = report_of(self.out)
        graph = onnx.load(os.path.join(self.out, "model.onnx"))
        kinds = [node.op_type for node in graph.graph.node]
        self.assertGreaterEqual(kinds.count("QuantizeLinear"), 5)  # the Q/DQ nodes are kept
        rows = report["parity"]
        self.assertTrue(rows and all(row["rule"] == "steps" for row in rows), rows)
        for row in rows:
            onnx_steps = row["steps"]["onnx"]
            self.assertEqual(onnx_steps["zero"] + onnx_steps["one"] + onnx_steps["over"], onnx_steps["elements"])
            self.assertEqual(onnx_steps["over"], 0)
            self.assertLess(onnx_steps["off_grid"], 1e-3)
            self.assertIsNotNone(row["steps"]["source"])  # PyTorch's float64 twin ran on the PT2E graph
        audits = report["summary"]["rounding"]
        self.assertEqual([(a["provider"], a["input"], a["output"], a["mode"], a["mismatches"]) for a in audits],
                         [("cpu", "float32", "int8", "half to even", 0)])
        with open(os.path.join(self.out, "report.md"), encoding="utf-8") as handle:
            markdown = handle.read()
        self.assertIn("### Rounding audit", markdown)
        self.assertIn("### Steps from the reference", markdown)

    def test_simplify_keeps_every_dequantize(self):
        """Constant folding leaves a quantized weight's DequantizeLinear (folded, the weight turns
        float32 and ONNX Runtime's fused kernels quantize it again their own way: 2 steps off)."""
        exported = os.path.join(self.out, "model.onnx")
        simplified = os.path.join(self.folder, "simplified.onnx")
        done = run("simplify", exported, "--output", simplified)
        self.assertIn(done.returncode, (0, 1), done.stdout + done.stderr)
        count = lambda path: [n.op_type for n in onnx.load(path).graph.node].count("DequantizeLinear")  # noqa: E731
        self.assertEqual(count(simplified), count(exported))
        self.assertGreaterEqual(count(exported), 3)

    def test_every_planted_defect_fails_in_steps(self):
        self.assertEqual(self.done.returncode, 0, self.done.stdout + self.done.stderr)
        for name, plant in quantized_plants.PLANTS.items():
            with self.subTest(plant=name):
                planted = os.path.join(self.folder, f"{name}.onnx")
                onnx.save(plant(onnx.load(os.path.join(self.out, "model.onnx"))), planted)
                report = os.path.join(self.folder, f"{name}.json")
                done = run("parity", planted, "--reference", os.path.join(self.out, "reference"), "--json", report)
                self.assertEqual(done.returncode, 1, done.stdout + done.stderr)
                with open(report, encoding="utf-8") as handle:
                    findings = json.load(handle)["findings"]
                mismatch = [f for f in findings if f["code"] == "PARITY_MISMATCH"]
                self.assertTrue(mismatch, findings)
                self.assertIn("fails in quantization steps", mismatch[0]["message"])
                if name == "scale_float16":  # the output's own DequantizeLinear reads a changed scale
                    self.assertIn("off the grid", mismatch[0]["message"])


    def test_an_output_scale_of_zero_is_no_grid_and_fails_by_the_other_rules(self):
        """A zero scale makes an output of zeros: no element would be counted in steps, so the
        output is judged by the calibrated rule instead, with STEPS_NOT_APPLIED saying why."""
        self.assertEqual(self.done.returncode, 0, self.done.stdout + self.done.stderr)
        model = onnx.load(os.path.join(self.out, "model.onnx"))
        first = model.graph.output[0].name
        dequantize = next(n for n in model.graph.node if n.op_type == "DequantizeLinear" and n.output[0] == first)
        dequantize.input[1] = "zero_scale"
        model.graph.initializer.append(numpy_helper.from_array(np.array(0.0, np.float32), "zero_scale"))
        planted = os.path.join(self.folder, "zero_scale.onnx")
        onnx.save(model, planted)
        report = os.path.join(self.folder, "zero_scale.json")
        done = run("parity", planted, "--reference", os.path.join(self.out, "reference"), "--json", report)
        self.assertEqual(done.returncode, 1, done.stdout + done.stderr)
        with open(report, encoding="utf-8") as handle:
            findings = json.load(handle)["findings"]
        codes = {f["code"] for f in findings}
        self.assertIn("STEPS_NOT_APPLIED", codes)
        self.assertIn("PARITY_MISMATCH", codes)


@unittest.skipUnless(os.access(ENGINE, os.X_OK), "build the engine first")
class StaticQuantizationTest(unittest.TestCase):
    def test_quantize_static_writes_and_proves_model_quant_onnx(self):
        with tempfile.TemporaryDirectory() as folder:
            out = os.path.join(folder, "run")
            done = run("pipeline", "--model", MODELS + ":small_cnn_float", *SHAPE, "--quantize", "static", "--out", out)
            self.assertEqual(done.returncode, 0, done.stdout + done.stderr)
            report = report_of(out)
            step = step_of(report, "quantize")  # its details are the step object's own keys
            self.assertEqual(step["status"], "pass", step)
            quantized = onnx.load(os.path.join(out, "model.quant.onnx"))
            self.assertGreater([n.op_type for n in quantized.graph.node].count("QuantizeLinear"), 0)
            self.assertTrue(all(row["rule"] == "steps" and row["status"] == "pass" for row in step["rows"]))
            errors = {entry["output"]: entry for entry in step["quantization_error"]}
            self.assertEqual(errors["output_0"]["rows"], 6)  # class scores: top-1 agreement counted
            self.assertGreater(errors["output_1"]["max_abs"], 0.0)  # quantizing changes the numbers
            self.assertEqual(step["summary"]["rounding"][0]["mode"], "half to even")
            # The float export stays what it was, and its reference is PyTorch's.
            self.assertTrue(all(row["rule"] != "steps" for row in report["parity"]))
            # A later run replaces the folder, model.quant.onnx and reference-quant/ included.
            again = run("pipeline", "--model", MODELS + ":small_cnn_float", *SHAPE, "--out", out)
            self.assertEqual(again.returncode, 0, again.stdout + again.stderr)
            self.assertFalse(os.path.exists(os.path.join(out, "model.quant.onnx")))

    def test_a_planted_defect_in_the_quantized_model_fails(self):
        with tempfile.TemporaryDirectory() as folder:
            out = os.path.join(folder, "run")
            done = run("pipeline", "--model", MODELS + ":small_cnn_float", *SHAPE, "--quantize", "static", "--out", out)
            self.assertEqual(done.returncode, 0, done.stdout + done.stderr)
            planted = os.path.join(folder, "planted.onnx")
            onnx.save(quantized_plants.zero_point_off_by_one(onnx.load(os.path.join(out, "model.quant.onnx"))), planted)
            failed = run("parity", planted, "--reference", os.path.join(out, "reference-quant"))
            self.assertEqual(failed.returncode, 1, failed.stdout + failed.stderr)
            self.assertIn("fails in quantization steps", failed.stdout + failed.stderr)

    def test_quantize_takes_static_only(self):
        done = run("pipeline", "--model", MODELS + ":small_cnn_float", *SHAPE, "--quantize", "dynamic")
        self.assertEqual(done.returncode, 2, done.stderr)
        self.assertEqual(len(done.stderr.strip().splitlines()), 1, done.stderr)


@unittest.skipUnless(os.access(ENGINE, os.X_OK), "build the engine first")
class ProveApiTest(unittest.TestCase):
    def test_prove_takes_a_pt2e_graph_and_gives_back_its_raising_mode_calls(self):
        import torch
        import onnxproof
        import quantized_models
        model = quantized_models.small_cnn()
        with tempfile.TemporaryDirectory() as folder:
            report = onnxproof.prove(model, (torch.randn(*quantized_models.SHAPE),), out=os.path.join(folder, "run"),
                                     quiet=True)
        self.assertEqual(report.verdict, "pass", [f.message for f in report.findings])
        with self.assertRaises(NotImplementedError):  # torchao's guard is the caller's again
            model.eval()

    def test_quantize_takes_static_or_none(self):
        import torch
        import onnxproof
        with self.assertRaisesRegex(onnxproof.UsageError, "quantize must be None or 'static'"):
            onnxproof.prove(torch.nn.Linear(2, 2), (torch.randn(1, 2),), quantize="dynamic")


@unittest.skipUnless(os.access(ENGINE, os.X_OK), "build the engine first")
class QuantizedOperatorAuditTest(unittest.TestCase):
    def test_tensorrt_refuses_integer_kernels_that_onnx_runtime_runs(self):
        """A QOperator-format model (QLinearConv): ONNX Runtime runs it, TensorRT's parser does not
        (data/op-support); OpenVINO's table says it converts, and the installed OpenVINO 2026.4.1,
        asked itself, converts it but cannot compile it for this CPU (u8 in and out)."""
        with tempfile.TemporaryDirectory() as folder:
            x = helper.make_tensor_value_info("x", TensorProto.UINT8, [1, 2, 4, 4])
            y = helper.make_tensor_value_info("y", TensorProto.UINT8, [1, 2, 2, 2])
            initializers = [numpy_helper.from_array(np.array(0.1, np.float32), "s"),
                            numpy_helper.from_array(np.array(128, np.uint8), "z"),
                            numpy_helper.from_array(np.ones((2, 2, 3, 3), np.uint8), "w"),
                            numpy_helper.from_array(np.array(0.05, np.float32), "ws"),
                            numpy_helper.from_array(np.array(0, np.uint8), "wz")]
            node = helper.make_node("QLinearConv", ["x", "s", "z", "w", "ws", "wz", "s", "z"], ["y"])
            model = helper.make_model(helper.make_graph([node], "q", [x], [y], initializers),
                                      opset_imports=[helper.make_opsetid("", 13)])
            model.ir_version = 8
            path = os.path.join(folder, "qlinear.onnx")
            onnx.save(model, path)
            report = os.path.join(folder, "ops.json")
            for openvino, expected in ((os.path.join(folder, "absent"), "supported"), (None, "restricted")):
                environment = dict(os.environ)
                if openvino:
                    environment["ONNXPROOF_OPENVINO"] = openvino  # the static table stands
                done = run("ops", path, "--target", "ort-cpu,tensorrt,openvino", "--json", report, env=environment)
                self.assertEqual(done.returncode, 1, done.stdout + done.stderr)
                self.assertIn("OP_UNSUPPORTED_BY_TARGET", done.stdout + done.stderr)
                with open(report, encoding="utf-8") as handle:
                    (operator,) = json.load(handle)["operators"]
                self.assertEqual(operator["op_type"], "QLinearConv")
                self.assertEqual({target: verdict["status"] for target, verdict in operator["targets"].items()},
                                 {"ort-cpu": "supported", "tensorrt": "unsupported", "openvino": expected})
            self.assertIn("OpenVINO refused the model", operator["targets"]["openvino"]["detail"])


def float16_qdq_model(folder):
    """x (float16) -> QuantizeLinear(scale 0.5, int8) -> DequantizeLinear -> y, and a reference
    whose inputs sit off the ties (the model's own comparison passes on any rounding)."""
    sys.path.insert(0, HERE)
    from test_float16 import write_reference
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT16, [4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT16, [4])
    initializers = [numpy_helper.from_array(np.array(0.5, np.float16), "scale"),
                    numpy_helper.from_array(np.array(0, np.int8), "zero_point")]
    nodes = [helper.make_node("QuantizeLinear", ["x", "scale", "zero_point"], ["q"]),
             helper.make_node("DequantizeLinear", ["q", "scale", "zero_point"], ["y"])]
    model = helper.make_model(helper.make_graph(nodes, "q16", [x], [y], initializers),
                              opset_imports=[helper.make_opsetid("", 19)])
    model.ir_version = 9
    path = os.path.join(folder, "q16.onnx")
    onnx.save(model, path)
    values = np.array([0.1, 0.3, -0.7, 1.2], np.float16)
    expected = (np.clip(np.round(values.astype(np.float32) / 0.5), -128, 127) * 0.5).astype(np.float16)
    write_reference(os.path.join(folder, "reference"), [("x", values)], [("y", expected)], [])
    return path, os.path.join(folder, "reference")


@unittest.skipUnless(os.access(ENGINE, os.X_OK), "build the engine first")
class RoundingAuditTest(unittest.TestCase):
    def audit(self, release=None):
        with tempfile.TemporaryDirectory() as folder:
            model, reference = float16_qdq_model(folder)
            env = dict(os.environ)
            if release:
                env["ONNXPROOF_ONNXRUNTIME"] = release
            report = os.path.join(folder, "parity.json")
            done = run("parity", model, "--reference", reference, "--json", report, env=env)
            with open(report, encoding="utf-8") as handle:
                return done, json.load(handle)

    def test_the_built_in_release_rounds_float16_ties_half_to_even(self):
        done, report = self.audit()
        self.assertEqual(done.returncode, 0, done.stdout + done.stderr)
        self.assertEqual([(a["input"], a["output"], a["mode"]) for a in report["summary"]["rounding"]],
                         [("float16", "int8", "half to even")])
        self.assertFalse([f for f in report["findings"] if f["code"] == "QUANTIZE_ROUNDING"])

    def test_a_release_that_truncates_float16_ties_is_named_with_its_mode(self):
        releases = sorted(glob.glob(os.path.join(CACHE, "1.18.*")))
        if not releases:  # setup fetches 1.18: a missing one is a broken setup, not a skip
            raise AssertionError(f"ONNX Runtime 1.18 is not in {CACHE}: run scripts/setup.sh")
        done, report = self.audit(releases[-1])
        rounding = [f for f in report["findings"] if f["code"] == "QUANTIZE_ROUNDING"]
        self.assertEqual(len(rounding), 1, report["findings"])
        self.assertEqual(rounding[0]["severity"], "warning")
        self.assertIn("truncation toward zero", rounding[0]["message"])
        self.assertIn("x/scale = -127.5 gave -127, half to even is -128", rounding[0]["message"])
        self.assertEqual(report["summary"]["rounding"][0]["mismatches"], 127)
        self.assertEqual(done.returncode, 0, done.stdout + done.stderr)  # the model's own values are off the ties


if __name__ == "__main__":
    unittest.main()
