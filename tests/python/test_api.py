"""The Python API (onnxproof.prove and friends) against the engine this checkout built
($ONNXPROOF_ENGINE, set by CTest): real exports, real ONNX Runtime, the run folder's report."""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

import torch
from torch import nn
from torch.export import Dim

import onnxproof
from onnxproof.torch import api_inputs

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "fixtures"))
import divergence_models  # noqa: E402
import trap_models  # noqa: E402


def read_json(path):
    with open(path, encoding="utf-8") as handle:
        return json.load(handle)


class KeywordModel(nn.Module):
    """Takes its second tensor and a fixed flag by keyword."""

    def __init__(self):
        super().__init__()
        self.linear = nn.Linear(6, 3)

    def forward(self, x, mask=None, scale=1.0):
        return self.linear(x) * scale + mask.sum(dim=1, keepdim=True)


class Pairwise(nn.Module):
    def forward(self, x, y):
        return x.sum() + y.sum()


class DynamicSpellings(unittest.TestCase):
    flat = api_inputs.flatten(Pairwise(), (torch.zeros(2, 3, 5), torch.zeros(2, 7)), {})

    def dynamic(self, shapes, axes):
        return api_inputs.dynamic_from(shapes, axes, self.flat)[0]

    def test_dynamic_axes_dict_and_list(self):
        self.assertEqual(self.dynamic(None, {"x": {0: "batch", 2: "seq"}, "y": [0]}),
                         [{"input": "x", "axis": 0, "label": "batch"}, {"input": "x", "axis": 2, "label": "seq"},
                          {"input": "y", "axis": 0, "label": "y_dim0"}])

    def test_dynamic_shapes_by_name_and_by_position_keep_dim_names_and_ranges(self):
        batch = Dim("batch", min=1, max=64)
        by_name = self.dynamic({"x": {0: batch}, "y": {0: batch}}, None)
        by_position = self.dynamic(({0: batch}, {0: batch}), None)
        self.assertEqual(by_name, by_position)
        self.assertEqual(by_name[0], {"input": "x", "axis": 0, "label": "batch", "min": 1, "max": 64})

    def test_unbounded_dim_has_no_range(self):
        self.assertEqual(self.dynamic({"x": {1: Dim("channels")}}, None), [{"input": "x", "axis": 1, "label": "channels"}])

    def test_an_axis_on_a_name_no_input_has_is_an_outputs(self):
        self.assertEqual(api_inputs.dynamic_from(None, {"z": {0: "batch"}}, self.flat), ([], {"z": {"0": "batch"}}))

    def test_bad_axes_are_usage_errors(self):
        with self.assertRaises(onnxproof.UsageError):
            self.dynamic(None, {"x": {3: "batch"}})
        with self.assertRaises(onnxproof.UsageError):
            self.dynamic({}, {})
        with self.assertRaises(onnxproof.UsageError):
            self.dynamic({"z": {0: Dim("batch")}}, None)


class Prove(unittest.TestCase):
    def setUp(self):
        self.folder = tempfile.mkdtemp(prefix="onnxproof-api-")
        self.addCleanup(shutil.rmtree, self.folder, ignore_errors=True)

    def out(self, name):
        return os.path.join(self.folder, name)

    def test_a_clean_model_passes_with_the_report_typed(self):
        model = nn.Sequential(nn.Conv2d(3, 4, 3), nn.ReLU(), nn.Flatten(), nn.LazyLinear(5))
        model(torch.randn(1, 3, 8, 8))
        report = onnxproof.prove(model.eval(), (torch.randn(2, 3, 8, 8),),
                                 dynamic_shapes={"input": {0: Dim("batch", min=1, max=32)}}, out=self.out("clean"),
                                 golden=self.out("golden-clean"), quiet=True)
        self.assertEqual(report.verdict, "pass", str(report))
        self.assertTrue(report.passed)
        self.assertEqual(report.model, "torch.nn.modules.container.Sequential")
        self.assertEqual(set(report.steps.values()), {"pass"})
        self.assertEqual(len(report.headline), 6)  # MISSION.md's five questions and the evidence's strength
        self.assertEqual(report.headline[4].question, "How strong is the evidence?")
        self.assertEqual(report.headline[4].answer, "strong")
        self.assertTrue(all(row.extra.get("rule") in ("calibrated", "pooled") for row in report.parity))
        self.assertEqual({row.sizes["batch"] for row in report.parity}, {1, 2, 3, 4})
        self.assertTrue(all(row.status == "pass" for row in report.parity))
        self.assertEqual(report.to_dict()["verdict"], "pass")
        self.assertIn("pass", str(report))
        for name in ("model.onnx", "export.json", "export.log", "report.html", "reference/cases.json"):
            self.assertTrue(os.path.exists(report.path(name)), name)
        # golden= names the golden set's own folder; the run folder holds none.
        self.assertTrue(os.path.exists(self.out("golden-clean/manifest.json")))
        self.assertFalse(os.path.exists(report.path("golden")))
        self.assertIn("frozen now", report.headline[5].evidence)
        self.assertFalse([name for name in os.listdir(self.folder) if name.startswith(".onnxproof-export-")])
        manifest = read_json(report.path("export.json"))
        self.assertEqual(manifest["exporter"], "dynamo")
        self.assertEqual(manifest["exporter_options"]["dynamic_shapes"]["batch"], {"min": 1, "max": 32})

    def test_a_trap_fails_at_the_users_line(self):
        report = onnxproof.prove(trap_models.BranchOnValue().eval(), torch.randn(2, 8),
                                 dynamic_axes={"x": {0: "batch"}}, exporter="torchscript", out=self.out("trap"),
                                 quiet=True)
        self.assertEqual(report.verdict, "fail")
        branch = [f for f in report.findings if f.code == "DATA_DEPENDENT_CONTROL_FLOW"]
        self.assertTrue(branch, report.codes())
        self.assertIn("trap_models.py:11", branch[0].where)

    def test_a_model_no_exporter_can_translate_is_a_failed_report_not_an_exception(self):
        report = onnxproof.prove(trap_models.BesselI0().eval(), (torch.randn(2, 8),), out=self.out("i0"), quiet=True)
        self.assertEqual(report.verdict, "fail")
        self.assertEqual(report.steps["export"], "fail")
        self.assertIn("UNSUPPORTED_ATEN_OP", report.codes("error"))

    def test_a_golden_folder_is_frozen_then_verified_and_a_failed_re_prove_leaves_it(self):
        out, golden = self.out("kept"), self.out("tests/onnx/linear")
        model = nn.Linear(3, 2).eval()
        first = onnxproof.prove(model, (torch.randn(2, 3),), out=out, golden=golden, quiet=True)
        self.assertEqual(first.verdict, "pass", str(first))
        with open(os.path.join(golden, "manifest.json"), encoding="utf-8") as handle:
            frozen = handle.read()
        again = onnxproof.prove(model, (torch.randn(2, 3),), out=out, golden=golden, quiet=True)
        self.assertEqual(again.verdict, "pass", str(again))
        self.assertIn("verified the new export against the golden set in", again.headline[5].evidence)
        failed = onnxproof.prove(trap_models.BesselI0().eval(), (torch.randn(2, 8),), out=out, golden=golden,
                                 quiet=True)
        self.assertEqual(failed.steps["export"], "fail")
        with open(os.path.join(golden, "manifest.json"), encoding="utf-8") as handle:
            self.assertEqual(handle.read(), frozen)
        self.assertTrue(os.path.exists(os.path.join(out, ".onnxproof-run")))
        with self.assertRaisesRegex(onnxproof.UsageError, "may neither lie in nor hold the run folder"):
            onnxproof.prove(model, (torch.randn(2, 3),), out=out, golden=os.path.join(out, "golden"), quiet=True)

    def test_a_folder_onnxproof_did_not_make_is_never_replaced(self):
        os.makedirs(self.out("project"))
        with open(self.out("project/train.py"), "w") as handle:
            handle.write("# the user's own file\n")
        with self.assertRaisesRegex(onnxproof.UsageError, "refusing to replace"):
            onnxproof.prove(nn.Linear(3, 2).eval(), (torch.randn(2, 3),), out=self.out("project"), quiet=True)
        self.assertEqual(os.listdir(self.out("project")), ["train.py"])
        self.assertEqual([name for name in os.listdir(self.folder) if name.startswith(".")], [])

    def test_the_callers_model_keeps_its_training_mode(self):
        model = nn.Sequential(nn.Linear(3, 2), nn.Dropout(0.1))
        report = onnxproof.prove(model, (torch.randn(2, 3),), out=self.out("training"), quiet=True)
        self.assertIn("TRAINING_MODE", report.codes("warning"))
        self.assertTrue(model.training)
        self.assertEqual(report.verdict, "pass", str(report))

    def test_a_parity_failure_is_localized_in_this_process(self):
        report = onnxproof.prove(divergence_models.shifted_dynamo(), (torch.randn(4, 16),),
                                 dynamic_axes={"x": {0: "batch"}}, exporter="dynamo", out=self.out("planted"), quiet=True)
        self.assertEqual(report.verdict, "fail")
        self.assertEqual(report.located, "blocks.7.act")
        located = [f for f in report.findings if f.code == "DIVERGENCE_LOCATED"]
        self.assertEqual(len(located), 1)
        self.assertIn("divergence_models.py:", located[0].where)
        # The engine localized as `pipeline` does, with the module outputs this process captured.
        self.assertTrue(os.path.exists(report.path("report-localize.svg")))
        self.assertTrue(os.path.exists(report.path("localize/modules.json")))

    def test_keyword_tensors_are_inputs_and_other_keywords_stay_fixed(self):
        report = onnxproof.prove(KeywordModel().eval(), (torch.randn(2, 6),), {"mask": torch.ones(2, 4), "scale": 2.0},
                                 dynamic_axes={"x": {0: "batch"}, "mask": {0: "batch"}}, out=self.out("keywords"),
                                 quiet=True)
        self.assertEqual(report.verdict, "pass", str(report))
        inputs = [spec["name"] for spec in read_json(report.path("export.json"))["inputs"]]
        self.assertEqual(inputs, ["x", "mask"])

    def test_a_data_loader_of_inputs_and_labels_is_proved_with_accuracy(self):
        model = nn.Sequential(nn.Linear(4, 3)).eval()
        data = torch.utils.data.TensorDataset(torch.randn(40, 4), torch.randint(0, 3, (40,)))
        loader = torch.utils.data.DataLoader(data, batch_size=8)
        report = onnxproof.prove(model, (torch.randn(8, 4),), dynamic_axes={"input": {0: "batch"}}, data=loader,
                                 data_batches=3, out=self.out("loader"), quiet=True)
        self.assertEqual(report.verdict, "pass", str(report))
        self.assertEqual({row.case for row in report.parity}, {f"test_data_set_{i}" for i in range(3)})
        self.assertTrue(os.path.exists(report.path("reference/test_data_set_0/labels.pb")))

    def test_bad_arguments_raise_usage_errors_before_any_export(self):
        with self.assertRaises(onnxproof.UsageError):
            onnxproof.prove(nn.Linear(2, 2), (3,), out=self.out("bad"))
        with self.assertRaises(onnxproof.UsageError):
            onnxproof.prove(lambda x: x, (torch.zeros(1),), out=self.out("bad"))
        with self.assertRaises(onnxproof.UsageError):
            onnxproof.prove(nn.Linear(2, 2), (torch.zeros(1, 2),), exporter="both", out=self.out("bad"))
        with self.assertRaisesRegex(onnxproof.UsageError, "complex32"):  # no ONNX tensor type
            onnxproof.prove(nn.Linear(2, 2), (torch.zeros(1, 2, dtype=torch.complex32),), out=self.out("bad"))
        self.assertFalse(os.path.exists(self.out("bad")))

    def test_check_and_parity_on_a_run_folder(self):
        report = onnxproof.prove(nn.Linear(3, 2).eval(), (torch.randn(2, 3),), out=self.out("linear"), quiet=True,
                                 targets="ort-cpu,tensorrt", golden=self.out("linear-golden"))
        self.assertIn("tensorrt", report.headline[2].evidence)
        checked = onnxproof.check(report.path("model.onnx"))
        self.assertEqual(checked["checker"], "pass")
        proved = onnxproof.parity(report.path("model.onnx"), report.path("reference"))
        self.assertEqual(proved["verdict"], "pass")
        held, printed = onnxproof.golden.verify(report.model_path, self.out("linear-golden"))
        self.assertTrue(held, printed)


class NotebookDefaults(unittest.TestCase):
    """prove() with no out= and no golden=, as a notebook calls it: a run folder per model (class
    and a hash of its inputs and weights), nothing frozen, so a retrained model proves again."""

    def setUp(self):
        self.folder = tempfile.mkdtemp(prefix="onnxproof-notebook-")
        self.addCleanup(shutil.rmtree, self.folder, ignore_errors=True)
        self.addCleanup(os.chdir, os.getcwd())
        os.chdir(self.folder)

    def test_retrained_weights_prove_again_and_two_sequentials_do_not_collide(self):
        torch.manual_seed(0)
        model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 3)).eval()
        first = onnxproof.prove(model, (torch.randn(2, 4),), dynamic_axes={"input": {0: "batch"}}, quiet=True)
        with torch.no_grad():  # "retraining": the same model object, other weights
            for parameter in model.parameters():
                parameter.add_(0.5 * torch.randn_like(parameter))
        second = onnxproof.prove(model, (torch.randn(2, 4),), dynamic_axes={"input": {0: "batch"}}, quiet=True)
        other = onnxproof.prove(nn.Sequential(nn.Conv2d(1, 2, 3), nn.Flatten()).eval(), (torch.randn(1, 1, 5, 5),),
                                quiet=True)
        for report in (first, second, other):
            self.assertEqual(report.verdict, "pass", str(report))
            self.assertNotIn("GOLDEN_DRIFT", report.codes())
            self.assertFalse(os.path.exists(report.path("golden")))
            self.assertEqual(report.headline[5].answer, "not checked")
            self.assertEqual(os.path.dirname(report.folder), os.path.join(self.folder, "onnxproof-out"))
            self.assertRegex(os.path.basename(report.folder), r"^Sequential-[0-9a-f]{8}$")
        self.assertEqual(len({first.folder, second.folder, other.folder}), 3)
        self.assertNotIn("golden", second.steps)
        # The same model proved again reuses its folder.
        again = onnxproof.prove(model, (torch.randn(2, 4),), dynamic_axes={"input": {0: "batch"}}, quiet=True)
        self.assertEqual(again.folder, second.folder)
        self.assertEqual(sorted(os.listdir("onnxproof-out")), sorted(os.path.basename(r.folder)
                                                                     for r in (first, second, other)))


class ExampleScript(unittest.TestCase):
    def test_the_training_script_example_proves_its_model(self):
        with tempfile.TemporaryDirectory(prefix="onnxproof-example-") as folder:
            run = subprocess.run([sys.executable, os.path.join(HERE, "..", "..", "examples", "prove_in_python.py"),
                                  os.path.join(folder, "run")], capture_output=True, text=True, timeout=900)
        self.assertEqual(run.returncode, 0, run.stdout + run.stderr)
        self.assertIn(": pass", run.stdout)
        self.assertIn("0 predictions flipped", run.stdout)


class AssertProvedUnderPytest(unittest.TestCase):
    def test_fails_on_the_trap_with_its_finding_and_passes_the_clean_model(self):
        with tempfile.TemporaryDirectory(prefix="onnxproof-pytest-") as folder:
            run = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q",
                                  os.path.join(HERE, "assert_proved_cases.py")],
                                 env=dict(os.environ, ONNXPROOF_TEST_OUT=folder), capture_output=True, text=True,
                                 timeout=900)
            logged = os.path.exists(os.path.join(folder, "trap", "export.log"))
        self.assertTrue(logged)
        self.assertEqual(run.returncode, 1, run.stdout + run.stderr)
        self.assertIn("1 failed, 2 passed", run.stdout)
        self.assertIn("FAILED", run.stdout)
        self.assertIn("test_trap_model_is_not_proved", run.stdout)
        self.assertIn("AssertionError: onnxproof did not prove", run.stdout)
        self.assertIn("DATA_DEPENDENT_CONTROL_FLOW", run.stdout)
        # The failing test's section is the test's line and the findings: no torch traceback, log
        # record or progress line (those are in the run folder's export.log).
        section = run.stdout.split("test_trap_model_is_not_proved _", 1)[1].split("\n=", 1)[0]
        self.assertLessEqual(len(section.splitlines()), 30, section)
        for noise in ("Captured log", "Captured stderr", "Captured stdout", "onnxproof export:", "DEBUG"):
            self.assertNotIn(noise, section)



if __name__ == "__main__":
    unittest.main()
