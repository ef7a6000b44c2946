"""The default opset and --exporter auto give a model ONNX Runtime runs (issue 22, item 7), and the
frozen-dimension analysis knows axes (item 9): real exports, the real ONNX Runtime, the engine
this checkout built ($ONNXPROOF_ENGINE, set by CTest)."""
import json
import os
import shutil
import tempfile
import unittest
import warnings

import torch
from torch import nn

import onnxproof
from onnxproof.torch import export_opset


def read_json(path):
    with open(path, encoding="utf-8") as handle:
        return json.load(handle)


class RoiAlignModel(nn.Module):
    """torchvision's RoIAlign: RoiAlign-22 (opset 22 on) has no ONNX Runtime 1.30 or 1.31 CPU kernel."""

    def __init__(self):
        super().__init__()
        import torchvision
        self.pool = torchvision.ops.RoIAlign((5, 5), 1.0, 2)

    def forward(self, features, boxes):
        return self.pool(features, boxes)


def roi_args():
    return torch.rand(1, 2, 10, 10), torch.tensor([[0, 0, 0, 4, 4], [0, 1, 1, 9, 8]], dtype=torch.float32)


class QkvSplit(nn.Module):
    """ViT's attention input: q, k, v split off an axis of fixed size 3 (correct at every batch)."""

    def __init__(self):
        super().__init__()
        self.qkv = nn.Linear(8, 24)

    def forward(self, x):
        batch, tokens, _ = x.shape
        qkv = self.qkv(x).reshape(batch, tokens, 3, 2, 4).permute(2, 0, 3, 1, 4)
        q, k, v = qkv.unbind(0)  # as timm's Attention does
        return (q * k + v).sum(-1)


class RepeatToThree(nn.Module):
    """Repeats a batch statistic into a fixed 3 x 8 table: the Tile's 3 makes an axis, so the
    static analysis keeps it as a suspect at batch 3; every batch size is correct."""

    def forward(self, x):
        return x.mean(0, keepdim=True)[:, :1].repeat(3, 8) * 2


class FrozenBatch(nn.Module):
    """Freezes the batch: the traced int becomes a constant in the graph (a real defect)."""

    def forward(self, x):
        return x.reshape(int(x.shape[0]), -1)[:, :4] * 2


class Helpers(unittest.TestCase):
    def test_lower_opset_follows_the_operator_onnx_runtime_names(self):
        with tempfile.TemporaryDirectory() as folder:
            path = os.path.join(folder, "m.onnx")
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                torch.onnx.export(RoiAlignModel().eval(), roi_args(), path, opset_version=22, dynamo=True)
            self.assertIn("RoiAlign", export_opset.model_operators(path))
            refusal = export_opset.runtime_refusal(path, dict(zip(("features", "boxes"), (a.numpy() for a in roi_args()))))
            self.assertIn("RoiAlign(22)", refusal)
            self.assertEqual(export_opset.lower_opset(path, 22, refusal, 18), 21)
            self.assertIsNone(export_opset.lower_opset(path, 22, refusal, 22))
            self.assertEqual(export_opset.table_opset_limit(path, 22, {"RoiAlign": 21, "Conv": 11}), (21, ["RoiAlign"]))
            self.assertEqual(export_opset.table_opset_limit(path, 21, {"RoiAlign": 21}), (None, []))


class Prove(unittest.TestCase):
    def setUp(self):
        self.folder = tempfile.mkdtemp(prefix="onnxproof-opset-")
        self.addCleanup(shutil.rmtree, self.folder, ignore_errors=True)

    def prove(self, model, args, name, **options):
        return onnxproof.prove(model.eval(), args, out=os.path.join(self.folder, name), quiet=True, localize=False,
                               **options)

    def test_roi_align_passes_at_the_default_opset_under_each_exporter(self):
        # Proved on the example itself: generated boxes with batch indices outside the batch are
        # the value-domain item of issue 22, not this one.
        for exporter in ("auto", "dynamo"):
            report = self.prove(RoiAlignModel(), roi_args(), f"roi_{exporter}", exporter=exporter, data=[roi_args()])
            self.assertEqual(report.verdict, "pass", f"{exporter}: {report}")
            manifest = read_json(report.path("export.json"))
            self.assertLessEqual(manifest["opset"]["value"], 21, manifest["opset"])
            if manifest["exporter"] == "dynamo":
                # The default (torch's own 20) is below the opset whose RoiAlign ONNX Runtime's CPU
                # provider lacks (22): exported once (issue 63; at a default of 23 it was twice).
                self.assertIn("defaults to 20", manifest["opset"]["chosen_by"])
                self.assertNotIn("EXPORTER_FALLBACK", report.codes())

    def test_an_explicit_opset_is_respected_and_its_failure_reported(self):
        report = self.prove(RoiAlignModel(), roi_args(), "roi_22", exporter="dynamo", opset=22, data=[roi_args()])
        self.assertNotEqual(report.verdict, "pass")
        self.assertEqual(read_json(report.path("export.json"))["opset"]["value"], 22)
        self.assertIn("OP_UNSUPPORTED_BY_TARGET", report.codes("error"))
        self.assertNotIn("EXPORTER_FALLBACK", report.codes())

    def test_a_fixed_split_of_three_at_batch_three_is_no_frozen_dimension(self):
        for exporter in ("torchscript", "dynamo"):
            report = self.prove(QkvSplit(), (torch.randn(3, 5, 8),), f"qkv_{exporter}", exporter=exporter,
                                dynamic_axes={"x": {0: "batch"}})
            self.assertEqual(report.verdict, "pass", f"{exporter}: {report}")
            self.assertNotIn("FROZEN_DIMENSION", report.codes(), exporter)

    def test_a_static_suspect_the_sweep_contradicts_is_demoted_to_info(self):
        report = self.prove(RepeatToThree(), (torch.randn(3, 5),), "broadcast", exporter="torchscript",
                            dynamic_axes={"x": {0: "batch"}})
        self.assertEqual(report.verdict, "pass", str(report))
        frozen = [f for f in report.findings if f.code == "FROZEN_DIMENSION"]
        self.assertTrue(frozen, report.codes())
        self.assertEqual({f.severity for f in frozen}, {"info"})
        self.assertIn("contradicted by the sweep", frozen[0].message)

    def test_a_model_that_freezes_the_batch_still_gets_it(self):
        report = self.prove(FrozenBatch(), (torch.randn(3, 6),), "frozen", exporter="torchscript",
                            dynamic_axes={"x": {0: "batch"}})
        self.assertEqual(report.verdict, "fail", str(report))
        self.assertIn("FROZEN_DIMENSION", report.codes("error"))


if __name__ == "__main__":
    unittest.main()


class RuntimeCheckWithoutThePythonRuntime(unittest.TestCase):
    """The wheel does not install the onnxruntime package: the check asks the engine instead."""

    def test_the_engine_answers_when_onnxruntime_cannot_be_imported(self):
        import sys
        import tempfile
        import numpy as np
        from unittest import mock
        from onnxproof.torch import export
        folder = tempfile.mkdtemp(prefix="onnxproof-engine-check-")
        path = os.path.join(folder, "linear.onnx")
        torch.onnx.export(torch.nn.Linear(4, 2).eval(), (torch.randn(2, 4),), path, input_names=["x"], dynamo=False,
                          opset_version=17)
        with mock.patch.dict(sys.modules, {"onnxruntime": None}):
            self.assertIsNone(export_opset.runtime_refusal(path, {"x": np.ones((2, 4), np.float32)}))
            refusal = export_opset.runtime_refusal(path, {"x": np.ones((2, 5), np.float32)})
        self.assertIn("axis 1 is fixed at 4", refusal)
