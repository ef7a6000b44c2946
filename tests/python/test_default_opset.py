"""The default opset chosen for portability (issue 63): the lowest of the engine's ceiling, what the
exporter writes, the exporter's own default and what every ONNX Runtime release of the last 18
months loads; an IR version no higher than the model needs; a newer opset only where an operator
needs it. A dynamo export with the defaults loads on ONNX Runtime 1.17 and later.

Unit cases on the choice and the IR version; one proof through the engine this checkout built."""
import json
import os
import shutil
import subprocess
import tempfile
import unittest

import onnx
from onnx import TensorProto, helper

from onnxproof.core import ir_version, opset_choice
from onnxproof.torch import export_fallback
from onnxproof.torch.state import TorchState

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CONFIG = {"opset_ceiling": 26, "opset_ceiling_reason": "ONNX Runtime 1.31.1 runs up to 26",
          "opset_portable": 22, "opset_portable_reason": "every ONNX Runtime release of the 18 months ... up to 22"}


def choose(config, newest=23, default=20):
    return opset_choice.choose_opset(config, lambda: newest, ("the dynamo exporter of torch", "the dynamo exporter"),
                                     lambda n: (17, "fallback"), exporter_default=default)


class Choice(unittest.TestCase):
    def test_the_exporters_default_when_it_is_the_lowest(self):
        opset, why = choose(CONFIG)
        self.assertEqual(opset, 20)
        self.assertIn("defaults to 20", why)
        self.assertIn("runs up to 26", why)  # the ceiling is said too

    def test_the_recent_releases_bound_a_newer_exporter_default(self):
        opset, why = choose(CONFIG, default=24)
        self.assertEqual(opset, 22)
        self.assertIn("18 months", why)

    def test_a_target_below_both_wins_and_an_opset_given_is_kept(self):
        opset, why = choose(dict(CONFIG, opset_ceiling=19, opset_ceiling_reason="tensorrt supports up to 19"))
        self.assertEqual((opset, "tensorrt" in why), (19, True))
        self.assertEqual(choose(dict(CONFIG, opset=23)), (23, "--opset"))


def model_at(opset, data_type=TensorProto.FLOAT, functions=()):
    weight = helper.make_tensor("w", data_type, [2], [1, 2] if data_type != TensorProto.FLOAT else [1.0, 2.0])
    node = helper.make_node("Cast", ["w"], ["y"], to=TensorProto.FLOAT)
    graph = helper.make_graph([node], "g", [], [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])],
                              initializer=[weight])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], functions=list(functions))
    model.ir_version = 10
    return model


class IrVersion(unittest.TestCase):
    def setUp(self):
        self.folder = tempfile.mkdtemp(prefix="onnxproof-ir-")
        self.addCleanup(shutil.rmtree, self.folder, ignore_errors=True)

    def test_what_the_opsets_and_types_need(self):
        self.assertEqual(ir_version.needed_ir_version(model_at(20)), 9)
        self.assertEqual(ir_version.needed_ir_version(model_at(17)), 8)
        self.assertEqual(ir_version.needed_ir_version(model_at(17, TensorProto.FLOAT8E4M3FN)), 9)
        self.assertEqual(ir_version.needed_ir_version(model_at(20, TensorProto.INT4)), 10)
        self.assertEqual(ir_version.needed_ir_version(model_at(20, TensorProto.FLOAT4E2M1)), 0)
        function = helper.make_function("local", "f", ["a"], ["b"], [helper.make_node("Identity", ["a"], ["b"])],
                                        [helper.make_opsetid("", 20)])
        self.assertEqual(ir_version.needed_ir_version(model_at(20, functions=[function])), 0)

    def test_the_file_is_lowered_in_place_and_stays_the_same_model(self):
        path = os.path.join(self.folder, "model.onnx")
        onnx.save(model_at(20), path)
        with open(path, "rb") as handle:
            before = handle.read()
        lowered = ir_version.lower_ir_version(path)
        self.assertEqual(lowered["code"], "IR_VERSION_LOWERED")
        with open(path, "rb") as handle:
            after = handle.read()
        self.assertEqual(after[:2], b"\x08\x09")
        self.assertEqual(after[2:], before[2:])  # one byte changed
        onnx.checker.check_model(onnx.load(path), full_check=True)
        self.assertIsNone(ir_version.lower_ir_version(path))  # minimal now: nothing to do


class NewerOpset(unittest.TestCase):
    def state(self, message, **config):
        state = TorchState(dict(CONFIG, out=tempfile.gettempdir(), inputs=[], **config))
        state.opset = 20
        state.findings = [{"code": "UNSUPPORTED_ATEN_OP", "severity": "error", "message": message, "where": ""}]
        return state

    def test_only_a_missing_translation_at_the_default_opset_raises_it(self):
        named = "Exporting the operator 'aten::x' to ONNX opset version 20 is not supported. " \
                "Support for this operator was added in version 21, try exporting with this version."
        self.assertEqual(export_fallback.newer_opset_needed(self.state(named), "dynamo", 0), 21)
        self.assertIsNone(export_fallback.newer_opset_needed(self.state("no translation"), "dynamo", 0))
        self.assertIsNone(export_fallback.newer_opset_needed(self.state(named, opset=20), "dynamo", 0))
        self.assertIsNone(export_fallback.newer_opset_needed(self.state(named), "torchscript", 0))  # writes up to 20


class DefaultProof(unittest.TestCase):
    def test_a_dynamo_export_with_the_defaults_loads_on_the_releases_of_2024_on(self):
        folder = tempfile.mkdtemp(prefix="onnxproof-default-opset-")
        self.addCleanup(shutil.rmtree, folder, ignore_errors=True)
        models = os.path.join(folder, "models.py")
        with open(models, "w", encoding="utf-8") as handle:
            handle.write("import torch\n\ndef model():\n    torch.manual_seed(0)\n"
                         "    return torch.nn.Sequential(torch.nn.Linear(8, 4), torch.nn.LayerNorm(4)).eval()\n")
        out = os.path.join(folder, "run")
        done = subprocess.run([os.environ["ONNXPROOF_ENGINE"], "pipeline", "--model", f"{models}:model", "--input",
                               "x=2x8:float32", "--dynamic", "x:0=batch", "--exporter", "dynamo", "--samples", "1",
                               "--out", out], capture_output=True, text=True, timeout=600, stdin=subprocess.DEVNULL)
        self.assertEqual(done.returncode, 0, done.stdout + done.stderr)
        with open(os.path.join(out, "export.json"), encoding="utf-8") as handle:
            exported = json.load(handle)
        self.assertEqual(exported["opset"]["value"], 20, exported["opset"])
        self.assertIn("defaults to 20", exported["opset"]["chosen_by"])
        self.assertNotIn("EXPORTER_FALLBACK", [f["code"] for f in exported["findings"]])  # exported once
        self.assertEqual(onnx.load(os.path.join(out, "model.onnx")).ir_version, 9)
        with open(os.path.join(out, "report.json"), encoding="utf-8") as handle:
            report = json.load(handle)
        ops = next(step for step in report["steps"] if step["name"] == "ops")
        loading = [release["version"] for release in ops["releases"] if release["loads"]]
        self.assertIn("1.17.3", loading, ops["releases"])  # the forecast: 1.17.3 and every later release load it
        self.assertEqual(loading[-1], ops["releases"][-1]["version"])


if __name__ == "__main__":
    unittest.main()
