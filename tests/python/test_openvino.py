"""OpenVINO as a runtime of the proof (providers=("cpu", "openvino")), through the engine this
checkout built and the OpenVINO release setup fetched. Planted: an integer hash past int32, which
OpenVINO's CPU plugin computes in int32 (its "CPU Device" page: integer inference precision i32)
and ONNX Runtime in int64; a classifier whose classes are near-tied, whose predictions OpenVINO's
default bfloat16 changes while its float32 rows pass."""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest
import unittest.mock

import onnx
import torch
from onnx import TensorProto, helper
from torch import nn

import onnxproof

ENGINE = os.environ.get("ONNXPROOF_ENGINE", "onnxproof")


class WideHash(nn.Module):
    """Integer arithmetic past int32: token ids scaled by three billion, then hashed into a table."""

    def forward(self, ids):
        return (ids * 3_000_000_000) % 1009


class HashedEmbedding(nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.hash = WideHash()
        self.table = nn.Embedding(1009, 8)
        self.head = nn.Linear(8, 3)

    def forward(self, ids):
        return self.head(self.table(self.hash(ids)).mean(1))


class NearTiedClassifier(nn.Module):
    """Ten classes whose weights differ by about 0.1%: float32 tells them apart, bfloat16 (8 bits
    of mantissa) often does not."""

    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.head = nn.Linear(64, 10, bias=False)
        with torch.no_grad():
            base = torch.rand(64) + 0.5
            self.head.weight.copy_(base + 1e-3 * torch.randn(10, 64))

    def forward(self, x):
        return self.head(x)


class ConfidentBoxes(nn.Module):
    """torchvision's batched_nms after a score filter nothing passes: its scripted `if boxes.numel()
    == 0` exports as an If whose branch is an empty Constant, which OpenVINO 2026.4.1's CPU plugin
    returns as one element (2025.4.1 and ONNX Runtime: none)."""

    def forward(self, boxes, scores):
        import torchvision
        keep = scores.sigmoid() > 0.9999
        kept_boxes, kept_scores = boxes[keep], scores[keep]
        order = torchvision.ops.batched_nms(kept_boxes, kept_scores, torch.zeros_like(kept_scores, dtype=torch.int64),
                                            0.5)
        return kept_boxes[order], kept_scores[order]


class SmallConv(nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(2)
        self.conv = nn.Conv2d(3, 8, 3, padding=1)
        self.head = nn.Linear(8, 4)

    def forward(self, x):
        return self.head(torch.relu(self.conv(x)).mean(dim=(2, 3)))


class OpenvinoProof(unittest.TestCase):
    def setUp(self):
        self.folder = tempfile.mkdtemp(prefix="onnxproof-openvino-")

    def tearDown(self):
        shutil.rmtree(self.folder, ignore_errors=True)

    def prove(self, model, args, name, **options):
        return onnxproof.prove(model.eval(), args, localize=False, quiet=True,
                               out=os.path.join(self.folder, name), **options)

    def findings(self, report, code):
        return [f for f in report.findings if f.code == code]

    def rows(self, name):
        with open(os.path.join(self.folder, name, "report.json"), encoding="utf-8") as f:
            return json.load(f)["parity"]

    def test_a_model_passes_on_openvino_in_float32_at_every_batch(self):
        report = self.prove(SmallConv(), (torch.randn(2, 3, 16, 16),), "conv", providers=("cpu", "openvino"),
                            dynamic_axes={"x": {0: "batch"}})
        self.assertEqual(report.verdict, "pass", str(report))
        rows = [r for r in self.rows("conv") if r["provider"] == "openvino"]
        self.assertTrue(rows)
        self.assertTrue(all(r["status"] == "pass" and r["precision"] == "f32" for r in rows), rows)
        self.assertGreater(len({json.dumps(r["sizes"], sort_keys=True) for r in rows}), 1)  # several batches
        summary = self.findings(report, "RUNTIME_DEFAULT_PRECISION")
        self.assertEqual(len(summary), 1, str(report))  # the default configuration, said beside

    def test_integers_past_int32_fail_on_openvino_alone_and_the_hash_is_named(self):
        ids = torch.randint(1, 1000, (2, 6))
        report = onnxproof.prove(HashedEmbedding().eval(), (ids,), quiet=True, exporter="torchscript",
                                 providers=("cpu", "openvino:f32"), out=os.path.join(self.folder, "wide"))
        self.assertEqual(report.verdict, "fail", str(report))
        mismatches = self.findings(report, "PARITY_MISMATCH")
        self.assertTrue(mismatches, str(report))
        self.assertTrue(all("on openvino (f32)" in f.message for f in mismatches), [f.message for f in mismatches])
        rows = self.rows("wide")
        self.assertTrue(all(r["status"] == "pass" for r in rows if r["provider"] == "cpu"))
        self.assertTrue(any(r["status"] == "fail" for r in rows if r["provider"] == "openvino"))
        located = self.findings(report, "DIVERGENCE_LOCATED")
        self.assertEqual(len(located), 1, str(report))
        self.assertIn("/hash/Mul", located[0].message)  # localized on OpenVINO itself
        self.assertIn("openvino", located[0].message)

    def test_the_default_precision_that_changes_predictions_is_a_warning_beside_a_float32_pass(self):
        report = self.prove(NearTiedClassifier(), (torch.rand(16, 64),), "tied", providers=("cpu", "openvino"),
                            dynamic_axes={"x": {0: "batch"}})
        rows = [r for r in self.rows("tied") if r["provider"] == "openvino:default"]
        self.assertTrue(rows)
        if rows[0]["precision"] == "f32":
            self.skipTest("this CPU has no bfloat16 or float16 arithmetic: OpenVINO's default is float32 here")
        self.assertEqual(report.verdict, "pass", str(report))  # the float32 rows are the proof
        summary = self.findings(report, "RUNTIME_DEFAULT_PRECISION")
        self.assertEqual([f.severity for f in summary], ["warning"], str(report))
        self.assertIn("INFERENCE_PRECISION_HINT", summary[0].hint)
        self.assertRegex(summary[0].message, r"[1-9]\d* of \d+ predictions changed")

    def test_the_operator_audit_asks_the_installed_openvino(self):
        value = lambda name: helper.make_tensor_value_info(name, TensorProto.FLOAT, [2])  # noqa: E731
        nodes = [helper.make_node("Relu", ["x"], ["r"], name="relu_0"),
                 helper.make_node("NoSuchOperator", ["r"], ["y"], name="made_up_1")]
        model = helper.make_model(helper.make_graph(nodes, "g", [value("x")], [value("y")]),
                                  opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
        path = os.path.join(self.folder, "made_up.onnx")
        onnx.save(model, path)
        result = subprocess.run([ENGINE, "ops", path, "--target", "openvino", "--json", os.path.join(self.folder, "a.json")],
                                capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
        self.assertEqual(result.returncode, 1, result.stdout + result.stderr)
        self.assertIn("CPU plugin (refused this model)", result.stdout)
        with open(os.path.join(self.folder, "a.json"), encoding="utf-8") as f:
            operators = {o["op_type"]: o for o in json.load(f)["operators"]}
        self.assertEqual(operators["Relu"]["targets"]["openvino"]["status"], "supported")
        made_up = operators["NoSuchOperator"]
        self.assertEqual(made_up["targets"]["openvino"]["status"], "unsupported")
        self.assertIn("no conversion rule", made_up["targets"]["openvino"]["detail"])
        self.assertEqual(made_up["nodes"], ["made_up_1"])
        self.assertEqual(result.stdout.count("OP_UNSUPPORTED_BY_TARGET"), 1, result.stdout)

    def test_an_older_openvino_release_gets_its_own_rows(self):
        report = self.prove(SmallConv(), (torch.randn(2, 3, 16, 16),), "release", targets=("ort-cpu", "openvino@2025.4"),
                            dynamic_axes={"x": {0: "batch"}})
        self.assertEqual(report.verdict, "pass", str(report))
        release = os.path.join(self.folder, "release", "runtimes", "openvino-2025.4.1")
        with open(os.path.join(release, "parity.json"), encoding="utf-8") as f:
            rows = json.load(f)["parity"]
        self.assertTrue(rows and all(r["provider"] == "openvino" and r["status"] == "pass" for r in rows), rows)
        with open(os.path.join(release, "ops.json"), encoding="utf-8") as f:
            self.assertIn("OpenVINO 2025.4.1 CPU plugin", json.load(f)["targets"][0]["runtime"])
        with open(os.path.join(self.folder, "release", "report.json"), encoding="utf-8") as f:
            answers = {h["question"]: h for h in json.load(f)["headline"]}
        said = answers["Does every runtime release named by --target load the model and match?"]
        self.assertIn("loads and matches on OpenVINO 2025.4.1", json.dumps(said))

    def test_an_empty_branch_openvino_2026_returns_as_one_element_fails_there_and_passes_on_2025(self):
        boxes = torch.rand(6, 4) * 10
        boxes[:, 2:] += boxes[:, :2]
        report = self.prove(ConfidentBoxes(), (boxes, torch.randn(6)), "empty", exporter="torchscript",
                            providers=("cpu", "openvino:f32"), targets=("ort-cpu", "openvino@2025.4"))
        self.assertEqual(report.verdict, "fail", str(report))
        mismatches = [f.message for f in self.findings(report, "PARITY_MISMATCH")]
        self.assertTrue(mismatches and all("on openvino (f32)" in m and "0x4" in m or "gives 0 " in m
                                           for m in mismatches), mismatches)
        self.assertTrue(all(r["status"] == "pass" for r in self.rows("empty") if r["provider"] == "cpu"))
        with open(os.path.join(self.folder, "empty", "report.json"), encoding="utf-8") as f:
            answers = {h["question"]: h for h in json.load(f)["headline"]}
        said = answers["Does every runtime release named by --target load the model and match?"]
        self.assertEqual(said["answer"], "yes", said)  # OpenVINO 2025.4.1 returns the empty tensor

    def test_a_release_not_fetched_says_how_to_fetch_it(self):
        result = subprocess.run([ENGINE, "pipeline", "--model", "torchvision:resnet18", "--target", "openvino@2024.1",
                                 "--out", os.path.join(self.folder, "never")], capture_output=True, text=True,
                                timeout=60, stdin=subprocess.DEVNULL)
        self.assertEqual(result.returncode, 2, result.stderr)
        self.assertIn("scripts/fetch-openvino.sh", result.stderr)
        self.assertFalse(os.path.exists(os.path.join(self.folder, "never")))

    def test_a_release_whose_library_will_not_load_is_one_line_and_exit_3(self):
        cache = os.path.join(self.folder, "cache")
        os.makedirs(os.path.join(cache, "openvino", "2099.1.0", "lib"))
        open(os.path.join(cache, "openvino", "2099.1.0", "lib", "libopenvino_c.so.99910"), "w").close()  # no ELF
        result = subprocess.run([ENGINE, "pipeline", "--model", "torchvision:resnet18", "--target", "openvino@2099.1",
                                 "--out", os.path.join(self.folder, "never")], capture_output=True, text=True,
                                timeout=120, stdin=subprocess.DEVNULL, env=dict(os.environ, ONNXPROOF_ORT_CACHE=cache))
        self.assertEqual(result.returncode, 3, result.stderr)
        self.assertEqual(len(result.stderr.strip().splitlines()), 1, result.stderr)
        self.assertIn("OpenVINO 2099.1.0", result.stderr)
        self.assertIn("cannot start", result.stderr)
        self.assertFalse(os.path.exists(os.path.join(self.folder, "never")))

    def test_prove_finds_the_openvino_package_installed_beside_it(self):
        from onnxproof.core import engine
        package = os.path.join(self.folder, "site", "openvino")
        os.makedirs(os.path.join(package, "libs"))
        open(os.path.join(package, "__init__.py"), "w").close()
        open(os.path.join(package, "libs", "libopenvino_c.so.2641"), "w").close()
        sys.path.insert(0, os.path.join(self.folder, "site"))
        try:
            self.assertEqual(engine.installed_openvino_libraries(), os.path.join(package, "libs"))
            environment = dict(os.environ)
            environment.pop("ONNXPROOF_OPENVINO", None)
            with unittest.mock.patch.dict(os.environ, environment, clear=True):
                self.assertEqual(engine.engine_environment()["ONNXPROOF_OPENVINO"], os.path.join(package, "libs"))
            with unittest.mock.patch.dict(os.environ, {"ONNXPROOF_OPENVINO": "/chosen"}):
                self.assertEqual(engine.engine_environment()["ONNXPROOF_OPENVINO"], "/chosen")  # the user's stands
        finally:
            sys.path.remove(os.path.join(self.folder, "site"))

    def test_without_openvino_installed_the_provider_is_one_line_and_exit_3(self):
        environment = dict(os.environ, ONNXPROOF_OPENVINO=os.path.join(self.folder, "absent"))
        result = subprocess.run([ENGINE, "parity", os.path.join(self.folder, "none.onnx"), "--reference",
                                 os.path.join(self.folder, "reference"), "--provider", "cpu,openvino"],
                                env=environment, capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
        self.assertEqual(result.returncode, 3, result.stderr)
        self.assertEqual(len(result.stderr.strip().splitlines()), 1, result.stderr)
        self.assertIn("OpenVINO is not installed", result.stderr)
        self.assertEqual(os.listdir(self.folder), [])


if __name__ == "__main__":
    unittest.main()
