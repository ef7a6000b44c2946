"""The calibrated proof end to end (onnxproof.prove, the engine this checkout built, real ONNX
Runtime): ONNX Runtime judged against the float64 answer with PyTorch's own float noise as the
yardstick, at any output scale; evidence that cannot see a bug says so; padded masks reach the
code that reads them."""
import os
import shutil
import tempfile
import unittest

import torch
from torch import nn

import onnxproof


class _SiLU(torch.autograd.Function):
    """SiLU with its exact ONNX translation (_WrongSiLU: 1.2 times too large, a planted 20% error)."""

    @staticmethod
    def forward(ctx, x):
        return x * torch.sigmoid(x)

    @staticmethod
    def symbolic(g, x):
        return g.op("Mul", x, g.op("Sigmoid", x))


class _WrongSiLU(_SiLU):
    @staticmethod
    def symbolic(g, x):
        silu = g.op("Mul", x, g.op("Sigmoid", x))
        return g.op("Mul", silu, g.op("Constant", value_t=torch.tensor(1.2)))


class TinyRegression(nn.Module):
    """One regression output around 1e-6 (a physical quantity in SI units, say)."""

    def __init__(self, activation):
        super().__init__()
        torch.manual_seed(3)
        self.hidden = nn.Linear(8, 32)
        self.head = nn.Linear(32, 1)
        self.activation = activation
        with torch.no_grad():
            self.head.weight.mul_(1e-6)
            self.head.bias.fill_(2e-7)

    def forward(self, x):
        return self.head(self.activation.apply(self.hidden(x)))


class VanishingSignal(nn.Module):
    """What random weights often give: the input's signal vanishes and the output is a constant
    of about 1e-9."""

    def __init__(self):
        super().__init__()
        torch.manual_seed(4)
        self.layers = nn.Sequential(nn.Linear(16, 16), nn.ReLU(), nn.Linear(16, 10))
        with torch.no_grad():
            self.layers[2].weight.mul_(1e-18)
            self.layers[2].bias.copy_(torch.linspace(1e-9, 2e-9, 10))

    def forward(self, x):
        return self.layers(x)


class _MaskedMean(torch.autograd.Function):
    """Mean of the unpadded positions (_MaskIgnored plants an ONNX translation that divides by the
    full length, padding included)."""

    @staticmethod
    def forward(ctx, x, mask):
        weights = mask.to(x.dtype).unsqueeze(-1)
        return (x * weights).sum(1) / weights.sum(1).clamp(min=1.0)

    @staticmethod
    def symbolic(g, x, mask):
        weights = g.op("Unsqueeze", g.op("Cast", mask, to_i=1), g.op("Constant", value_t=torch.tensor([-1])))
        total = g.op("ReduceSum", g.op("Mul", x, weights), g.op("Constant", value_t=torch.tensor([1])), keepdims_i=0)
        count = g.op("ReduceSum", weights, g.op("Constant", value_t=torch.tensor([1])), keepdims_i=0)
        return g.op("Div", total, g.op("Max", count, g.op("Constant", value_t=torch.tensor(1.0))))


class _MaskIgnored(_MaskedMean):
    @staticmethod
    def symbolic(g, x, mask):
        # The classic masking bug: padded positions zeroed, but the mean taken over the full length.
        weights = g.op("Unsqueeze", g.op("Cast", mask, to_i=1), g.op("Constant", value_t=torch.tensor([-1])))
        return g.op("ReduceMean", g.op("Mul", x, weights), axes_i=[1], keepdims_i=0)


class TextPooler(nn.Module):
    def __init__(self, pooling):
        super().__init__()
        torch.manual_seed(5)
        self.embed = nn.Embedding(50, 12)
        self.head = nn.Linear(12, 3)
        self.pooling = pooling

    def forward(self, input_ids, attention_mask):
        return self.head(self.pooling.apply(self.embed(input_ids), attention_mask))


class CalibratedProof(unittest.TestCase):
    def setUp(self):
        self.folder = tempfile.mkdtemp(prefix="onnxproof-calibrated-")
        self.addCleanup(shutil.rmtree, self.folder, ignore_errors=True)

    def prove(self, model, args, name, **options):
        options.setdefault("dynamic_axes", {"x": {0: "batch"}})
        return onnxproof.prove(model.eval(), args, exporter="torchscript", opset=17, localize=False,
                               out=os.path.join(self.folder, name), quiet=True, **options)

    def test_a_twenty_percent_error_at_one_millionth_fails(self):
        report = self.prove(TinyRegression(_WrongSiLU), (torch.randn(4, 8),), "wrong")
        self.assertEqual(report.verdict, "fail", str(report))
        self.assertIn("PARITY_MISMATCH", report.codes("error"))
        rows = [row for row in report.parity if row.status == "fail"]
        self.assertTrue(rows)
        # The first case always gets a float64 run; later ones only while the float64 pass stays
        # inside its time budget (exact.TIME_BUDGET), so on a loaded machine they are judged by
        # the pooled noise instead. The calibrated rows are the ones this test is about.
        self.assertTrue(all(row.extra.get("rule") in ("calibrated", "pooled") for row in rows))
        calibrated = [row for row in rows if row.extra.get("rule") == "calibrated"]
        self.assertTrue(calibrated, [row.extra for row in rows])
        self.assertTrue(all(row.extra.get("error_ratio") > 1000 for row in calibrated))

    def test_the_same_model_translated_correctly_passes_by_the_calibrated_rule(self):
        report = self.prove(TinyRegression(_SiLU), (torch.randn(4, 8),), "right")
        self.assertEqual(report.verdict, "pass", str(report))
        compared = [row for row in report.parity if row.status == "pass"]
        self.assertTrue(compared)
        self.assertTrue(all(row.extra.get("rule") in ("calibrated", "pooled") for row in compared))
        self.assertNotIn("EVIDENCE_WEAK", report.codes("warning"))

    def test_a_vanishing_output_is_weak_evidence_and_says_so(self):
        report = self.prove(VanishingSignal(), (torch.randn(2, 16),), "vanishing")
        self.assertIn("EVIDENCE_WEAK", report.codes("warning"), str(report))
        evidence = [a for a in report.headline if a.question.startswith("How strong")]
        self.assertEqual(evidence[0].answer, "weak")

    def test_padded_mask_cases_catch_a_translation_that_ignores_the_mask(self):
        ids = torch.randint(0, 50, (3, 7))
        mask = torch.ones(3, 7, dtype=torch.int64)
        axes = {"input_ids": {0: "batch", 1: "seq"}, "attention_mask": {0: "batch", 1: "seq"}}
        right = self.prove(TextPooler(_MaskedMean), (ids, mask), "mask-right", dynamic_axes=axes)
        self.assertEqual(right.verdict, "pass", str(right))
        wrong = self.prove(TextPooler(_MaskIgnored), (ids, mask), "mask-ignored", dynamic_axes=axes)
        self.assertEqual(wrong.verdict, "fail", str(wrong))
        self.assertIn("PARITY_MISMATCH", wrong.codes("error"))


if __name__ == "__main__":
    unittest.main()
