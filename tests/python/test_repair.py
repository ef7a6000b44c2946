"""prove(..., repair=True): the engine repairs a failed proof of a model object, asking this process
for each new export (export_again in the attach protocol), and the Report points at the proved fix.
The models are tests/fixtures/repair_models.py's (each says which single change fixes it)."""
import os
import sys
import tempfile
import unittest

import torch

import onnxproof
from onnxproof import UsageError

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "fixtures"))
import repair_models  # noqa: E402  -- the fixtures folder, put on the path above


class ProveRepair(unittest.TestCase):
    def setUp(self):
        self.folder = tempfile.TemporaryDirectory()
        self.addCleanup(self.folder.cleanup)

    def prove(self, model, **options):
        return onnxproof.prove(model, (torch.randn(2, 8, 16),), dynamic_axes={"x": {0: "batch"}}, samples=1,
                               out=os.path.join(self.folder.name, "run"), quiet=True, **options)

    def test_a_lower_opset_exported_in_this_process_repairs_the_proof(self):
        report = self.prove(repair_models.opset_only(), exporter="dynamo", opset=23, repair=True)
        self.assertEqual(report.verdict, "fail")  # the export as made still fails
        repair = report.repair
        self.assertTrue(repair["repaired"], repair)
        statuses = {attempt["name"]: attempt["status"] for attempt in repair["attempts"]}
        self.assertEqual(statuses["exporter-torchscript"], "fail")  # TorchScript cannot translate rms_norm
        self.assertEqual(repair["repair"]["folder"], "repair/02-opset-22")
        self.assertEqual(repair["repair"]["diff"]["opset"], {"from": 23, "to": 22})
        self.assertIn("onnxproof repair found a proved fix: export at opset 22", report.what_to_do)
        proved = onnxproof.read_report(os.path.join(report.folder, "repair", "02-opset-22"))
        self.assertEqual(proved.verdict, "pass")

    def test_without_repair_nothing_is_tried_and_a_bad_budget_is_refused(self):
        report = self.prove(repair_models.opset_only(), exporter="dynamo", opset=23)
        self.assertEqual(report.verdict, "fail")
        self.assertIsNone(report.repair)
        with self.assertRaisesRegex(UsageError, "repair_budget must be a positive number"):
            self.prove(repair_models.opset_only(), repair=True, repair_budget=0)
        with self.assertRaisesRegex(UsageError, "repair must be True or False"):
            self.prove(repair_models.opset_only(), repair="yes")


if __name__ == "__main__":
    unittest.main()
