"""Verdicts IV (issue 57): findings that mislead while the verdict is right.

- A branch traced on the wrong side changes classes by margins far above float noise: each such
  row is an ARGMAX_FLIP, none an ARGMAX_TIE (ONNX Runtime's own error is no noise).
- Localization does not blame a module for an index computed wrongly before it: an Embedding
  reading a wrong integer division's result has disagreeing inputs.
- A signed integer input declared without a range is generated with negative values where the
  model takes them, so TorchScript's truncating `//` fails; an index input keeps [0, 10).

Own models, real exports, real ONNX Runtime, the engine this checkout built ($ONNXPROOF_ENGINE).
"""
import json
import os
import shutil
import subprocess
import tempfile
import unittest

import torch
from torch import nn

import onnxproof


class Proofs(unittest.TestCase):
    def setUp(self):
        self.folder = tempfile.mkdtemp(prefix="onnxproof-findings-iv-")
        self.addCleanup(shutil.rmtree, self.folder, ignore_errors=True)

    def prove(self, name, model, args, **options):
        options = dict(dict(samples=1, quiet=True, exporter="torchscript"), **options)
        report = onnxproof.prove(model, args, out=os.path.join(self.folder, name), **options)
        self.assertIsInstance(report, onnxproof.Report)
        return report


class Branching(nn.Module):
    """Scores negated when the input sums to a positive number: TorchScript traces the example's
    branch only, so every row of a case on the other side predicts another class in ONNX."""

    def __init__(self):
        super().__init__()
        torch.manual_seed(6)
        self.layer = nn.Linear(5, 4)

    def forward(self, x):
        scores = self.layer(x)
        if x.sum() > 0:
            scores = -scores
        return scores


class Flips(Proofs):
    def test_a_wrong_branchs_changed_classes_are_flips_not_ties(self):
        torch.manual_seed(7)
        example = torch.randn(6, 5).abs()  # sums above 0: the traced branch negates
        data = [(example,), (-torch.randn(6, 5).abs(),), (-torch.randn(3, 5).abs(),)]  # the other branch
        report = self.prove("branching", Branching().eval(), (example,), data=data,
                            dynamic_axes={"x": {0: "batch"}}, localize=False)
        self.assertEqual(report.verdict, "fail")
        self.assertNotIn("ARGMAX_TIE", {f.code for f in report.findings})
        rows = [row for row in report.parity if row.optimization == "all" and row.argmax_flips is not None]
        self.assertGreater(sum(row.argmax_flips for row in rows), 0)
        for row in rows:  # margins of a linear layer's scores are far above float noise
            self.assertEqual(row.extra.get("argmax_ties"), 0, row)



class Bucketed(nn.Module):
    """Token ids bucketed by a floor division, then embedded: TorchScript's `//` on integers
    truncates (ONNX Div), so negative ids land in another bucket."""

    def __init__(self):
        super().__init__()
        torch.manual_seed(8)
        self.embed = nn.Embedding(12, 4)
        self.head = nn.Linear(4, 3)

    def forward(self, ids):
        return self.head(self.embed(ids // 3 + 4))


class Localization(Proofs):
    def test_the_module_reading_a_wrong_index_is_not_blamed(self):
        ids = torch.arange(-9, 9).reshape(3, 6)
        report = self.prove("bucketed", Bucketed().eval(), (ids,), dynamic_axes={"ids": {0: "batch"}})
        self.assertEqual(report.verdict, "fail")
        self.assertIsNotNone(report.localization)
        self.assertNotEqual(report.located, "embed", report.localization)
        embed = next(m for m in report.localization["modules"] if m["module"] == "embed")
        self.assertFalse(embed["inputs_agree"], embed)


MODELS = """
import torch
from torch import nn

class Halves(nn.Module):
    def forward(self, n):
        return (n // 2).float() * 1.5

class Lookup(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(10, 3)
    def forward(self, ids):
        return self.embed(ids)

def halves():
    return Halves().eval()

def lookup():
    torch.manual_seed(9)
    return Lookup().eval()
"""


class SignedIntegers(Proofs):
    def pipeline(self, factory, name):
        models = os.path.join(self.folder, "ints.py")
        with open(models, "w", encoding="utf-8") as handle:
            handle.write(MODELS)
        out = os.path.join(self.folder, factory)
        engine = os.environ["ONNXPROOF_ENGINE"]
        result = subprocess.run([engine, "pipeline", "--model", f"{models}:{factory}", "--input", f"{name}=3x4:int64",
                                 "--exporter", "torchscript", "--samples", "1", "--out", out], capture_output=True,
                                text=True, timeout=600)
        with open(os.path.join(out, "export.json"), encoding="utf-8") as handle:
            return result.returncode, json.load(handle)["inputs"][0]

    def test_a_floor_division_of_a_signed_input_is_tried_on_negative_values(self):
        code, spec = self.pipeline("halves", "n")
        self.assertEqual(spec.get("range"), [-10, 10])
        self.assertEqual(code, 1)  # ONNX Div truncates: -3 // 2 is -1 there, -2 in PyTorch

    def test_an_index_keeps_non_negative_values(self):
        code, spec = self.pipeline("lookup", "ids")
        self.assertIsNone(spec.get("range"))
        self.assertEqual(code, 0)


if __name__ == "__main__":
    unittest.main()
