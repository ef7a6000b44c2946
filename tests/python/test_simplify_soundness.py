"""End to end: models whose exports hold nodes that keep their input's shape and change its values
(the reversing Slice of torch.flip, the Pad of reflection padding) pass the whole pipeline with
both exporters, and the simplified model that ships keeps those nodes. The simplifier once dropped
the reversing Slice as a no-op (same shape in and out) and failed correct models."""
import os
import shutil
import tempfile
import unittest

import onnx
import torch
from torch import nn
from torch.nn import functional

import onnxproof


class FlipAndReflect(nn.Module):
    """torch.flip on two axes and reflection padding, each followed by arithmetic."""

    def forward(self, x):
        flipped = torch.flip(x, [0, 2]) + 1
        padded = functional.pad(x, (2, 2, 1, 1), mode="reflect")
        return flipped * 2, padded[..., 1:-1, 2:-2] - x


class FlipAndReflectionPadding(unittest.TestCase):
    def setUp(self):
        self.folder = tempfile.mkdtemp(prefix="onnxproof-flip-")
        self.addCleanup(shutil.rmtree, self.folder, ignore_errors=True)

    def prove(self, exporter, opset):
        x = torch.randn(2, 3, 5, 6)
        return onnxproof.prove(FlipAndReflect().eval(), (x,), exporter=exporter, opset=opset,
                               out=os.path.join(self.folder, exporter), quiet=True, localize=False)

    def check(self, report):
        self.assertEqual(report.verdict, "pass", str(report))
        self.assertNotIn("SIMPLIFY_CHANGED_OUTPUTS", report.codes())
        ops = [node.op_type for node in onnx.load(report.model_path).graph.node]
        self.assertIn("Pad", ops)
        # The flip stays a node: a reversing Slice (or whatever the exporter wrote for it).
        self.assertTrue({"Slice", "Gather", "ReverseSequence"} & set(ops), ops)

    def test_torchscript(self):
        self.check(self.prove("torchscript", 17))

    def test_dynamo(self):
        self.check(self.prove("dynamo", 18))  # its oldest opset


if __name__ == "__main__":
    unittest.main()
