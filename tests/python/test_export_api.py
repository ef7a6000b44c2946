"""Verdicts IV (issue 57): prove() takes what torch.onnx.export and torch.export.export take.

- torch.onnx.export's own call (input_names, output_names, opset_version, dynamic_axes naming
  inputs and outputs) is proved under both exporters, the names kept in model.onnx (r12's class).
- Inputs as torch.export takes them: dicts and lists of tensors (pytrees), bfloat16 inputs,
  keyword tensors with a tuple dynamic_shapes matched in forward()'s order, Dim.STATIC, a
  forward() with no inputs (r14's class).
- Outputs as the exporter writes them: a number computed from a size as a 0-d tensor, a complex
  spectrum as its real view, None left out (r13's class).
- Axes related by an expression (torch.export's derived Dim, d + 1) varied together (r15's class).
(Flips and localization: test_findings_iv.py.)

Own models, real exports, real ONNX Runtime, the engine this checkout built ($ONNXPROOF_ENGINE).
"""
import json
import os
import shutil
import subprocess
import tempfile
import unittest

import onnx
import torch
from torch import nn
from torch.export import Dim

import onnxproof


def errors(report):
    return sorted({f.code for f in report.findings if f.severity == "error"})


class Proofs(unittest.TestCase):
    def setUp(self):
        self.folder = tempfile.mkdtemp(prefix="onnxproof-export-api-")
        self.addCleanup(shutil.rmtree, self.folder, ignore_errors=True)

    def prove(self, name, model, args, **options):
        options = dict(dict(samples=1, quiet=True), **options)
        report = onnxproof.prove(model, args, out=os.path.join(self.folder, name), **options)
        self.assertIsInstance(report, onnxproof.Report)
        return report

    def cases(self, report):
        with open(report.path("reference/cases.json"), encoding="utf-8") as handle:
            return [case["sizes"] for case in json.load(handle)["cases"]]

    def graph(self, report):
        return onnx.load(report.path("model.onnx"), load_external_data=False).graph


class Digits(nn.Module):
    """A small CNN classifier, as the method's own example exports it."""

    def __init__(self):
        super().__init__()
        torch.manual_seed(3)
        self.conv = nn.Conv2d(3, 6, 3, padding=1)
        self.fc = nn.Linear(6 * 8 * 8, 5)

    def forward(self, x):
        return self.fc(torch.flatten(nn.functional.max_pool2d(torch.relu(self.conv(x)), 2), 1))


class Pooled(nn.Module):
    """Its output has one row whatever the batch: an output axis that cannot follow the batch."""

    def forward(self, x):
        return x.mean(0, keepdim=True) * 2


class TorchOnnxExportCall(Proofs):
    def test_the_methods_own_export_call_is_proved_under_both_exporters(self):
        for exporter in ("torchscript", "dynamo"):
            with self.subTest(exporter=exporter):
                report = self.prove(f"digits-{exporter}", Digits().eval(), (torch.randn(2, 3, 16, 16),),
                                    exporter=exporter, opset_version=18, input_names=["input_image"],
                                    output_names=["output_logits"],
                                    dynamic_axes={"input_image": {0: "batch_size"}, "output_logits": {0: "batch_size"}})
                self.assertEqual(report.verdict, "pass", errors(report))
                graph = self.graph(report)
                self.assertEqual([i.name for i in graph.input], ["input_image"])
                self.assertEqual([o.name for o in graph.output], ["output_logits"])
                self.assertFalse(graph.output[0].type.tensor_type.shape.dim[0].HasField("dim_value"))
                self.assertGreater(len({case["batch_size"] for case in self.cases(report)}), 2)

    def test_an_output_axis_the_model_keeps_fixed_is_said(self):
        report = self.prove("pooled", Pooled().eval(), (torch.randn(4, 3),), exporter="torchscript",
                            input_names=["x"], output_names=["y"], dynamic_axes={"x": {0: "batch"}, "y": {0: "batch"}})
        fixed = [f for f in report.findings if f.code == "AXIS_FIXED_BY_MODEL" and "'y' axis 0" in f.message]
        self.assertEqual(len(fixed), 1, [f.message for f in report.findings])
        self.assertEqual(fixed[0].severity, "warning")
        self.assertEqual(report.verdict, "pass")  # the export is as dynamic as the model

    def test_bad_names_are_one_usage_error(self):
        with self.assertRaisesRegex(onnxproof.UsageError, "neither an input .* nor an output"):
            self.prove("typo", Digits().eval(), (torch.randn(2, 3, 16, 16),), exporter="torchscript",
                       dynamic_axes={"x": {0: "batch"}, "logits": {0: "batch"}})
        with self.assertRaisesRegex(onnxproof.UsageError, "input_names names 2 inputs"):
            self.prove("two", Digits().eval(), (torch.randn(2, 3, 16, 16),), input_names=["a", "b"])
        with self.assertRaisesRegex(onnxproof.UsageError, "disagree"):
            self.prove("opsets", Digits().eval(), (torch.randn(2, 3, 16, 16),), opset=17, opset_version=18)
        # Known only once forward has run: still the call's mistake, not an EXPORT_FAILED model.
        with self.assertRaisesRegex(onnxproof.UsageError, "output_names names 2 outputs; forward\\(\\) returns 1"):
            self.prove("outputs", Digits().eval(), (torch.randn(2, 3, 16, 16),), output_names=["a", "b"])
        with self.assertRaisesRegex(onnxproof.UsageError, "dynamic_shapes has 2 entries"):
            self.prove("tuple", Digits().eval(), (torch.randn(2, 3, 16, 16),), dynamic_shapes=({0: Dim("b")}, None))
        d = Dim("d")
        with self.assertRaisesRegex(onnxproof.UsageError, "derived from 'd', which no input axis has"):
            self.prove("root", Pair().eval(), (torch.randn(5, 6), torch.randn(7, 4)), dynamic_shapes={"y": {0: d + 1}})


POOLED = """
import torch
from torch import nn

class Pooled(nn.Module):
    def forward(self, x):
        return x.mean(0, keepdim=True) * 2, x * 3

def build():
    return Pooled().eval()
"""


class CommandLineOutputAxes(Proofs):
    def pipeline(self, name, *dynamic):
        model = os.path.join(self.folder, "pooled.py")
        with open(model, "w", encoding="utf-8") as handle:
            handle.write(POOLED)
        arguments = [os.environ["ONNXPROOF_ENGINE"], "pipeline", "--model", f"{model}:build", "--input", "x=4x3:float32",
                     "--exporter", "torchscript", "--samples", "1", "--out", os.path.join(self.folder, name)]
        for axis in dynamic:
            arguments += ["--dynamic", axis]
        return subprocess.run(arguments, capture_output=True, text=True, timeout=600)

    def test_dynamic_on_an_output_is_checked_and_a_typo_is_a_usage_error(self):
        ran = self.pipeline("outputs", "x:0=batch", "output_1:0=batch", "output_0:0=batch")
        self.assertEqual(ran.returncode, 0, ran.stdout + ran.stderr)
        self.assertIn("AXIS_FIXED_BY_MODEL: output 'output_0' axis 0", ran.stdout)
        typo = self.pipeline("typo", "x:0=batch", "logits:0=batch")
        self.assertEqual(typo.returncode, 2)
        self.assertIn("names 'logits', which is neither an input (x) nor an output (output_0, output_1)", typo.stderr)


class Nested(nn.Module):
    """Takes a dict holding a tensor and a list of two."""

    def __init__(self):
        super().__init__()
        torch.manual_seed(4)
        self.a, self.b = nn.Linear(6, 4), nn.Linear(4, 4)

    def forward(self, batch):
        return self.a(batch["features"]) + self.b(batch["extras"][0]) * batch["extras"][1]


class Brain(nn.Module):
    """Takes and returns bfloat16, computing in float32 between (ONNX Runtime's CPU provider has
    no bfloat16 Gemm: a bfloat16 Linear is a model it cannot run)."""

    def __init__(self):
        super().__init__()
        torch.manual_seed(5)
        self.layer = nn.Linear(8, 8)

    def forward(self, x):
        return torch.relu(self.layer(x.float())).to(torch.bfloat16)


class Affine(nn.Module):
    def forward(self, x, scale=None, shift=None):
        return x * scale + shift


class Constant(nn.Module):
    """A forward with no inputs."""

    def __init__(self):
        super().__init__()
        self.table = nn.Parameter(torch.linspace(-1, 1, 12).reshape(3, 4))

    def forward(self):
        return torch.tanh(self.table) * 3


class InputsTorchExportTakes(Proofs):
    def test_a_dict_and_list_input_is_one_input_per_tensor(self):
        example = {"features": torch.randn(3, 6), "extras": [torch.randn(3, 4), torch.randn(3, 4)]}
        batch = Dim("batch", min=1, max=32)
        for exporter in ("torchscript", "dynamo"):
            with self.subTest(exporter=exporter):
                report = self.prove(f"nested-{exporter}", Nested().eval(), (example,), exporter=exporter,
                                    dynamic_shapes={"batch": {"features": {0: batch}, "extras": [{0: batch}, {0: batch}]}})
                self.assertEqual(report.verdict, "pass", errors(report))
                self.assertEqual([i.name for i in self.graph(report).input],
                                 ["batch_features", "batch_extras_0", "batch_extras_1"])
                self.assertGreater(len({case["batch"] for case in self.cases(report)}), 2)
        self.assertEqual(list(example), ["features", "extras"])  # the caller's dict is left as given

    def test_data_for_a_dict_input_is_flattened_as_the_example_is(self):
        def batch(rows):
            return ({"features": torch.randn(rows, 6), "extras": [torch.randn(rows, 4), torch.randn(rows, 4)]},)
        report = self.prove("nested-data", Nested().eval(), batch(3), exporter="dynamo",
                            dynamic_shapes={"batch": {"features": {0: Dim("batch")}, "extras": [{0: Dim("batch")}] * 2}},
                            data=[batch(5), batch(2)])
        self.assertEqual(report.verdict, "pass", errors(report))
        self.assertEqual(sorted(case["batch"] for case in self.cases(report)), [2, 5])

    def test_a_bfloat16_input_is_proved(self):
        report = self.prove("brain", Brain().eval(), (torch.randn(3, 8, dtype=torch.bfloat16),), exporter="dynamo",
                            dynamic_shapes={"x": {0: Dim("batch", min=1, max=16)}})
        self.assertEqual(report.verdict, "pass", errors(report))
        self.assertEqual(self.graph(report).input[0].type.tensor_type.elem_type, onnx.TensorProto.BFLOAT16)

    def test_a_tuple_dynamic_shapes_follows_forwards_order_not_the_kwargs_order(self):
        batch = Dim("batch", min=1, max=32)
        # forward(x, scale, shift): scale is second, whatever the kwargs dict's order; the
        # shift broadcasts over the batch and is static (None, or Dim.STATIC per axis).
        for static in (None, {0: Dim.STATIC, 1: Dim.STATIC}):
            with self.subTest(static=static):
                report = self.prove(f"keywords-{static is None}", Affine().eval(), (torch.randn(4, 3),),
                                    kwargs={"shift": torch.randn(1, 3), "scale": torch.randn(4, 3)},
                                    exporter="dynamo", dynamic_shapes=({0: batch}, {0: batch, 1: Dim.STATIC}, static))
                self.assertEqual(report.verdict, "pass", errors(report))
                self.assertNotIn("AXIS_FIXED_BY_MODEL", {f.code for f in report.findings})
                dims = {i.name: i.type.tensor_type.shape.dim[0] for i in self.graph(report).input}
                self.assertFalse(dims["scale"].HasField("dim_value"))
                self.assertEqual(dims["shift"].dim_value, 1)

    def test_a_forward_with_no_inputs(self):
        report = self.prove("constant", Constant().eval(), (), exporter="torchscript")
        self.assertEqual(report.verdict, "pass", errors(report))


class Spectrum(nn.Module):
    """A complex spectrum, a number computed from sizes, a flag and None."""

    def forward(self, x):
        return torch.fft.rfft(x, dim=-1), x.shape[0] * x.shape[1], None, x.shape[0] / 2


class OutputsTheExporterWrites(Proofs):
    def test_numbers_and_complex_outputs_are_compared_as_exported(self):
        report = self.prove("spectrum", Spectrum().eval(), (torch.randn(3, 16),), exporter="dynamo",
                            dynamic_shapes={"x": {0: Dim("batch", min=1, max=64)}})
        self.assertEqual(report.verdict, "pass", errors(report))
        outputs = self.graph(report).output
        self.assertEqual(len(outputs), 3)  # None is no output
        self.assertEqual([d.dim_value for d in outputs[0].type.tensor_type.shape.dim][1:], [9, 2])
        self.assertGreater(len({case["batch"] for case in self.cases(report)}), 2)


class Pair(nn.Module):
    def forward(self, x, y):
        return x @ y[1:]


class RelatedAxes(Proofs):
    def test_a_derived_dim_varies_with_its_root(self):
        d = Dim("d", min=2, max=64)
        report = self.prove("pair", Pair().eval(), (torch.randn(5, 6), torch.randn(7, 4)), exporter="dynamo",
                            dynamic_shapes={"x": {1: d}, "y": {0: d + 1}})
        self.assertEqual(report.verdict, "pass", errors(report))
        self.assertNotIn("AXIS_FIXED_BY_MODEL", {f.code for f in report.findings})
        cases = self.cases(report)
        self.assertGreater(len({case["d"] for case in cases}), 2)
        self.assertTrue(all(case["d+1"] == case["d"] + 1 for case in cases), cases)
        self.assertTrue(all(case["d"] >= 2 for case in cases), cases)  # no case below the declared minimum


if __name__ == "__main__":
    unittest.main()
