"""No false alarms (issue 22): correct models get a pass, and prove() returns a Report for every
run that reached a verdict. Each test has its own small model showing the pattern of one of the
reproducers in ../shared/repro/ (r1..r8); real exports, real ONNX Runtime, the engine this
checkout built ($ONNXPROOF_ENGINE)."""
import json
import os
import shutil
import tempfile
import unittest

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from onnx import load_tensor, numpy_helper

import onnxproof
from onnxproof.core import cases, report as reports
from onnxproof.torch import families, traps


def read_json(path):
    with open(path, encoding="utf-8") as handle:
        return json.load(handle)


class ProvedRun(unittest.TestCase):
    """A temporary folder per test and prove() with the fast defaults of these tests."""

    def setUp(self):
        self.folder = tempfile.mkdtemp(prefix="onnxproof-alarms-")
        self.addCleanup(shutil.rmtree, self.folder, ignore_errors=True)

    def prove(self, name, model, args, kwargs=None, **options):
        options = dict(dict(exporter="torchscript", opset=17, samples=2, quiet=True), **options)
        result = onnxproof.prove(model, args, kwargs, out=os.path.join(self.folder, name), **options)
        self.assertIsInstance(result, onnxproof.Report)
        return result

    def cases_of(self, result):
        return read_json(result.path("reference/cases.json"))["cases"]


# --- models with the reproducers' patterns ------------------------------------------------------

class FloorOfNegatives(nn.Module):
    """Integer floor division (r1): ONNX's Div truncates, so the parity failure is real."""

    def forward(self, x):
        return (x - 7) // 4


class SplitInFours(nn.Module):
    """As many outputs as the size allows (r2): PyTorch returns fewer tensors at smaller sizes."""

    def forward(self, x):
        return torch.split(x, 4, dim=1)


class ScaleInPlace(nn.Module):
    """Mutates its input in place (r4)."""

    def forward(self, x, u):
        x[torch.tensor([1, 3])] += u
        return x.mul_(2)


class Probabilities(nn.Module):
    """PyTorch refuses probabilities outside [0, 1] (r5)."""

    def forward(self, p, target):
        return F.binary_cross_entropy(p, target, reduction="none")


class Flagged(nn.Module):
    """A 0-d bool input (r5)."""

    def forward(self, x, flag):
        return torch.where(flag, x * 2, x - 1)


class GruWithState(nn.Module):
    """A GRU given its h0 (r6): the input's batch and h0's batch must be one size."""

    def __init__(self):
        super().__init__()
        self.gru = nn.GRU(4, 3)

    def forward(self, x, h0):
        return self.gru(x, h0)[0]


class Shuffle(nn.Module):
    """pixel_shuffle: channels must be a multiple of 4, PyTorch rejects the other sizes."""

    def forward(self, x):
        return F.pixel_shuffle(x, 2)


class RowsAsList(nn.Module):
    """A List[Tensor] output whose length follows the input (r7)."""

    def forward(self, x, w):
        parts = []
        for i in range(x.size(0)):
            parts += [x[i] @ w]
        return parts


class ListsInATuple(nn.Module):
    """A tuple of lists, nested."""

    def forward(self, x):
        return [x + 1, x * 2], (x.sum(0), [x - 1])


class StarArgs(nn.Module):
    """forward(self, *args), as a wrapper around another model is often written (issue 22, 8)."""

    def __init__(self):
        super().__init__()
        self.linear = nn.Linear(4, 2)

    def forward(self, *args):
        return self.linear(args[0]) + args[1].sum(-1, keepdim=True)


class KeywordsOnly(nn.Module):
    """forward(self, **kwargs)."""

    def __init__(self):
        super().__init__()
        self.linear = nn.Linear(4, 2)

    def forward(self, **kwargs):
        return self.linear(kwargs["features"]) * kwargs["weights"]


class CancellingFloat32Only(nn.Module):
    """The difference of two wide projections that nearly cancel, and float32 only (a model with
    float32-only kernels): no float64 reference, so the fixed rule decides. Terms of about a
    hundred round away some 1e-4 of an output whose scale is about a hundred, so elements near 0
    differ between PyTorch and ONNX Runtime by more than atol + rtol * |value| (element-wise
    allclose fails), while every element stays within rtol of 1% of the output's scale."""

    def __init__(self):
        super().__init__()
        generator = torch.Generator().manual_seed(11)
        self.first = nn.Linear(512, 256, bias=False)
        self.second = nn.Linear(512, 256, bias=False)
        with torch.no_grad():
            self.first.weight.copy_(torch.randn(256, 512, generator=generator) * 8)
            self.second.weight.copy_(self.first.weight + torch.randn(256, 512, generator=generator))

    def forward(self, x):
        if x.dtype != torch.float32 or self.first.weight.dtype != torch.float32:
            raise TypeError("float32 only")
        return self.first(x) - self.second(x)


# --- the tests ----------------------------------------------------------------------------------

class ReportsNotExceptions(ProvedRun):
    def test_an_integer_output_failure_is_a_report_not_a_crash_in_localization(self):
        result = self.prove("floor", FloorOfNegatives().eval(), (torch.arange(-9, 9),))
        self.assertEqual(result.verdict, "fail", str(result))
        self.assertIn("PARITY_MISMATCH", result.codes("error"))

    def test_outputs_pytorch_does_not_return_at_some_sizes_give_a_readable_report(self):
        result = self.prove("split", SplitInFours().eval(), (torch.randn(2, 12),), dynamic_axes={"x": {1: "dims"}},
                            localize=False)
        self.assertIn(result.verdict, ("fail", "error"), str(result))
        self.assertTrue(result.parity)

    def test_a_scripted_model_that_fails_parity_returns_its_report(self):
        result = self.prove("scripted", torch.jit.script(FloorOfNegatives().eval()), (torch.arange(-9, 9),))
        self.assertEqual(result.verdict, "fail", str(result))


    def test_a_verdict_of_error_is_a_report(self):
        # A provider this machine cannot load (CUDA without its libraries) makes the run's
        # verdict "error": the engine exits 3, yet the run reached a verdict and wrote its report.
        result = self.prove("provider", nn.Linear(3, 2).eval(), (torch.randn(2, 3),), providers=("cuda",))
        if result.verdict != "pass":  # a machine with a working CUDA provider passes
            self.assertEqual(result.verdict, "error", str(result))
            self.assertEqual(result.steps.get("parity"), "error", result.steps)


class ReportReader(unittest.TestCase):
    def test_rows_without_figures_and_with_new_fields_are_read(self):
        # As the engine writes it (schemas/report.schema.json): the fields read back typed, the
        # rest of a row free for fields a newer engine adds.
        raw = {"schema": "onnxproof.report/1", "verdict": "fail", "model": "m", "onnx_model": "", "versions": {},
               "headline": [], "summary": {}, "exporter_report": "", "exporters": None, "localization": None,
               "steps": [{"name": "parity", "status": "fail", "seconds": 0.5}],
               "findings": [{"code": "PARITY_MISMATCH", "severity": "error", "step": "parity", "message": "",
                             "where": "", "hint": ""}],
               "parity": [{"case": "test_data_set_0", "provider": "cpu", "optimization": "all", "output": "y",
                           "status": "fail", "sizes": None, "max_abs": None, "argmax_flips": None,
                           "rule": "calibrated", "ratio": 1.4},
                          {"case": "test_data_set_1", "provider": "cpu", "optimization": "all", "output": "y",
                           "status": "error", "onnx_error": "missing output"}]}
        with tempfile.TemporaryDirectory() as folder:
            with open(os.path.join(folder, "report.json"), "w", encoding="utf-8") as handle:
                json.dump(raw, handle)
            result = reports.read_report(folder)
            # A row without a field the schema types is no report onnxproof wrote: said, not guessed.
            del raw["parity"][1]["provider"]
            with open(os.path.join(folder, "report.json"), "w", encoding="utf-8") as handle:
                json.dump(raw, handle)
            with self.assertRaisesRegex(ValueError, r"parity\[1\]\.provider"):
                reports.read_report(folder)
        self.assertEqual(len(result.parity), 2)
        self.assertIsNone(result.parity[0].max_abs)
        self.assertEqual(result.parity[0].sizes, {})
        self.assertEqual(result.parity[0].extra, {"rule": "calibrated", "ratio": 1.4})
        self.assertEqual(result.parity[1].extra, {"onnx_error": "missing output"})
        self.assertEqual(result.codes("error"), ["PARITY_MISMATCH"])


class InputsStayAsFed(ProvedRun):
    def test_a_forward_that_mutates_its_input_passes(self):
        x, u = torch.randn(4, 5), torch.randn(2, 5)
        given = x.clone()
        result = self.prove("inplace", ScaleInPlace().eval(), (x, u))
        self.assertEqual(result.verdict, "pass", str(result))
        # The example is case 0: what ONNX was fed is the example as given, and PyTorch's output is
        # the forward of that (a verdict alone could hide a corrupted reference: the float64
        # reference is recomputed from the stored input).
        from onnx import numpy_helper, TensorProto

        def stored(name):
            tensor = TensorProto()
            with open(result.path(f"reference/test_data_set_0/{name}.pb"), "rb") as handle:
                tensor.ParseFromString(handle.read())
            return numpy_helper.to_array(tensor)
        np.testing.assert_array_equal(stored("input_0"), given.numpy())
        np.testing.assert_array_equal(stored("output_0"), ScaleInPlace()(given.clone(), u).numpy())


class ValueDomains(ProvedRun):
    def test_probabilities_stay_in_zero_one(self):
        result = self.prove("bce", Probabilities().eval(), (torch.rand(3, 4), torch.rand(3, 4)),
                            dynamic_axes={"p": {0: "batch"}, "target": {0: "batch"}}, exporter="dynamo", opset=18)
        self.assertEqual(result.verdict, "pass", str(result))
        self.assertNotIn("CASE_REJECTED_BY_PYTORCH", result.codes())
        self.assertGreater(len(self.cases_of(result)), 4)

    def test_a_0d_bool_input_is_generated(self):
        result = self.prove("flag", Flagged().eval(), (torch.randn(2, 3), torch.tensor(True)))
        self.assertEqual(result.verdict, "pass", str(result))
        self.assertEqual(self.cases_of(result)[0]["source"], "example")


class FixedRuleAtScale(ProvedRun):
    def test_rounding_near_zero_without_a_float64_run_is_no_mismatch(self):
        import onnxruntime
        model = CancellingFloat32Only().eval()
        x = torch.randn(4, 512, generator=torch.Generator().manual_seed(5))
        result = self.prove("cancel", model, (x,), dynamic_axes={"x": {0: "batch"}})
        self.assertTrue(result.parity)
        self.assertEqual({row.extra.get("rule") for row in result.parity}, {"fixed"})
        # The comparison this test is about: element by element, some case fails.
        session = onnxruntime.InferenceSession(result.path("model.onnx"), providers=["CPUExecutionProvider"])
        elementwise_failures = 0
        for case in self.cases_of(result):
            folder = result.path(os.path.join("reference", case["data_set"]))
            inputs, expected = (numpy_helper.to_array(load_tensor(os.path.join(folder, name)))
                                for name in ("input_0.pb", "output_0.pb"))
            actual = session.run(None, {session.get_inputs()[0].name: inputs})[0]
            elementwise_failures += not np.allclose(actual, expected, rtol=1e-3, atol=1e-5)
        self.assertGreater(elementwise_failures, 0, "the model no longer shows the near-zero rounding")
        self.assertEqual(result.verdict, "pass", str(result))


class CoupledAndRejectedSizes(ProvedRun):
    def test_axes_with_one_size_vary_together(self):
        result = self.prove("gru", GruWithState().eval(), (torch.randn(6, 5, 4), torch.randn(1, 5, 3)),
                            dynamic_axes={"x": [0, 1], "h0": [1]})
        self.assertEqual(result.verdict, "pass", str(result))
        self.assertNotIn("FROZEN_DIMENSION", result.codes())
        sizes = [case["sizes"] for case in self.cases_of(result)]
        self.assertTrue(all(s["x_dim1"] == s["h0_dim1"] for s in sizes), sizes)
        self.assertGreater(len({s["x_dim1"] for s in sizes}), 2)

    def test_sizes_pytorch_rejects_are_left_out_with_one_info(self):
        result = self.prove("shuffle", Shuffle().eval(), (torch.randn(1, 8, 3, 3),),
                            dynamic_axes={"x": {1: "channels"}})
        self.assertEqual(result.verdict, "pass", str(result))
        rejected = [f for f in result.findings if f.code == "CASE_REJECTED_BY_PYTORCH"]
        self.assertEqual(len(rejected), 1, result.codes())
        self.assertEqual(rejected[0].severity, "info")
        self.assertIn("channels", rejected[0].message)
        self.assertEqual({case["sizes"]["channels"] for case in self.cases_of(result)}, {8, 4})


class HalfTopK(nn.Module):
    """k from a size: torch.export guards `n // 2 != 1`, narrowing the declared range of n."""

    def forward(self, x):
        return x.topk(x.shape[1] // 2, dim=1).values


class NarrowedRanges(ProvedRun):
    def test_a_range_torch_export_narrows_is_left_to_the_sweep(self):
        result = self.prove("topk", HalfTopK(), (torch.randn(2, 8),), exporter="dynamo", opset=None,
                            dynamic_axes={"x": {0: "batch", 1: "n"}})
        self.assertEqual(result.verdict, "pass", str(result))
        self.assertNotIn("FROZEN_DIMENSION", result.codes("error"))
        self.assertNotIn("FROZEN_DIMENSION", result.codes("warning"), "the sweep proved n: an info line")
        # A module with no dropout or batch norm left in training mode: said, not warned.
        self.assertNotIn("TRAINING_MODE", result.codes("warning"))
        self.assertIn("TRAINING_MODE", result.codes("info"))

    def test_a_declared_range_torch_export_narrows_is_left_to_the_sweep(self):
        # torch quotes the declared range in its message: the narrowing is still recognized.
        result = self.prove("topk-range", HalfTopK(), (torch.randn(2, 8),), exporter="dynamo", opset=None,
                            dynamic_shapes={"x": {1: torch.export.Dim("n", min=2, max=16)}})
        self.assertEqual(result.verdict, "pass", str(result))
        self.assertNotIn("FROZEN_DIMENSION", result.codes("error"))


class ListOutputs(ProvedRun):
    def test_a_scripted_list_output_is_flattened(self):
        result = self.prove("scripted-list", torch.jit.script(RowsAsList().eval()),
                            (torch.randn(3, 2, 4), torch.randn(4, 5)))
        self.assertEqual(result.verdict, "pass", str(result))
        self.assertEqual({row.output for row in result.parity}, {"output_0", "output_1", "output_2"})

    def test_a_tuple_of_lists_under_both_exporters(self):
        for exporter, opset in (("torchscript", 17), ("dynamo", 18)):
            with self.subTest(exporter=exporter):
                result = self.prove(f"lists-{exporter}", ListsInATuple().eval(), (torch.randn(3, 4),),
                                    dynamic_axes={"x": {0: "batch"}}, exporter=exporter, opset=opset)
                self.assertEqual(result.verdict, "pass", str(result))
                self.assertEqual(len({row.output for row in result.parity}), 4)


class Signatures(ProvedRun):
    def test_star_args_with_dynamic_axes_under_both_exporters(self):
        for exporter, opset in (("torchscript", 17), ("dynamo", 18)):
            with self.subTest(exporter=exporter):
                result = self.prove(f"star-{exporter}", StarArgs().eval(), (torch.randn(3, 4), torch.randn(3, 6)),
                                    dynamic_axes={"input_0": {0: "batch"}, "input_1": {0: "batch"}},
                                    exporter=exporter, opset=opset)
                self.assertEqual(result.verdict, "pass", str(result))
                self.assertEqual({row.sizes["batch"] for row in result.parity}, {1, 3, 4, 5})

    def test_keyword_only_inputs_with_dynamic_axes_under_both_exporters(self):
        for exporter, opset in (("torchscript", 17), ("dynamo", 18)):
            with self.subTest(exporter=exporter):
                result = self.prove(f"kwargs-{exporter}", KeywordsOnly().eval(), (),
                                    {"features": torch.randn(3, 4), "weights": torch.rand(3, 2)},
                                    dynamic_axes={"features": {0: "batch"}, "weights": {0: "batch"}},
                                    exporter=exporter, opset=opset)
                self.assertEqual(result.verdict, "pass", str(result))


class Domains(unittest.TestCase):
    """The value domain read from an example, and values generated in it (no export)."""

    def setUp(self):
        self.rng = np.random.default_rng(0)

    def generated(self, name, example, dims):
        spec = {"name": name, "dtype": str(example.dtype)}
        return cases.generate_in_domain(spec, dims, self.rng, cases.domain_of(name, example))

    def test_sorted_boundaries_stay_sorted_and_offsets_start_at_zero_inside_the_indices(self):
        self.assertTrue((np.diff(self.generated("b", np.array([0.1, 0.5, 2.0], "float32"), [9])) >= 0).all())
        offsets = np.array([0, 2, 5])
        domains = {"offsets": cases.domain_of("offsets", offsets)}
        arrays = {"offsets": self.generated("offsets", offsets, [4]), "indices": np.arange(3)}
        capped = cases.cap_offsets(arrays, domains)["offsets"]
        self.assertEqual(capped[0], 0)
        self.assertTrue((np.diff(capped) >= 0).all() and (capped < 3).all(), capped)

    def test_boxes_keep_their_corners_in_order(self):
        boxes = self.generated("boxes", np.array([[1, 2, 5, 6], [0, 0, 3, 3]], "float32"), [50, 4])
        self.assertTrue((boxes[:, 0] <= boxes[:, 2]).all() and (boxes[:, 1] <= boxes[:, 3]).all())

    def test_ranges_constants_booleans_and_0d(self):
        values = self.generated("p", np.random.rand(4, 4).astype("float32"), [100])
        self.assertTrue(((values >= 0) & (values <= 1)).all())
        ids = self.generated("ids", np.array([[3, 9], [4, 5]]), [100])
        self.assertTrue(((ids >= 3) & (ids <= 9)).all())
        self.assertTrue((self.generated("h0", np.zeros((1, 2, 3), "float32"), [1, 5, 3]) == 0).all())
        flag = self.generated("flag", np.array(True), [])
        self.assertEqual((flag.shape, flag.dtype), ((), np.dtype(bool)))

    def test_masks_get_padded_rows_and_a_full_row(self):
        for example, spec in ((np.ones((2, 6), "int64"), None), (None, {"name": "attention_mask", "dtype": "int64",
                                                                          "range": [1, 2]})):
            for _ in range(20):
                mask = (self.generated("attention_mask", example, [3, 6]) if spec is None else
                        cases.generate_in_domain(spec, [3, 6], self.rng))
                lengths = mask.sum(axis=1)
                self.assertTrue((lengths >= 1).all() and (lengths < 6).any() and (lengths == 6).any(), mask)
                self.assertTrue((np.diff(mask, axis=1) <= 0).all(), mask)  # padding on the right

    def test_the_padding_side_and_value_follow_the_example(self):
        padding = np.array([[True, True, False, False], [False, False, False, False]])  # True = padded
        mask = self.generated("key_padding_mask", padding[:, ::-1].copy(), [4, 4])
        self.assertTrue((~mask).any(axis=1).all())


class FamilyParameters(unittest.TestCase):
    @staticmethod
    def built():
        torch.manual_seed(0)
        model = nn.Sequential(nn.Conv2d(3, 4, 3), nn.BatchNorm2d(4), nn.ReLU(), nn.Flatten(), nn.LayerNorm(64))
        nn.init.zeros_(model[0].bias)
        return model.eval()

    def test_biases_norms_and_batch_norm_statistics_look_trained(self):
        defaults = {"inputs": [{"name": "image", "dims": [2, 3, 6, 6], "dtype": "float32"}], "dynamic": []}
        model = self.built()
        said = families.realistic_parameters(model, defaults)
        self.assertIn("BatchNorm statistics", said)
        self.assertFalse(model.training or model[1].training)
        self.assertTrue(model[0].bias.abs().min() > 0)
        self.assertFalse(torch.allclose(model[1].running_var, torch.ones(4)))
        self.assertFalse(torch.allclose(model[1].running_mean, torch.zeros(4)))
        self.assertFalse(torch.allclose(model[4].weight, torch.ones(64)))
        self.assertEqual(model[1].momentum, 0.1)
        again = self.built()  # seeded: loading the model again gives the same one
        families.realistic_parameters(again, defaults)
        for name, value in model.state_dict().items():
            self.assertTrue(torch.equal(value, again.state_dict()[name]), name)


class StarArgsShapes(unittest.TestCase):
    def test_the_inputs_after_named_ones_are_keyed_as_the_star_args_tuple(self):
        from onnxproof.torch import dynamo

        class Rest(nn.Module):
            def forward(self, x, *rest):
                return x + rest[0]
        inputs = [{"name": name, "dims": [2, 3], "dtype": "float32"} for name in ("x", "y", "z")]
        dynamic = [{"input": name, "axis": 0, "label": "batch"} for name in ("x", "y", "z")]
        shapes = dynamo.dynamic_shapes(Rest(), inputs, dynamic)
        self.assertEqual(list(shapes), ["x", "rest"])
        self.assertEqual(len(shapes["rest"]), 2)
        self.assertIs(shapes["rest"][1][0], shapes["x"][0])


class Flattening(unittest.TestCase):
    def test_list_outputs_are_laid_out_as_the_exporter_does(self):
        x = torch.zeros(2)
        self.assertEqual(traps.output_groups([x, x, x]), [3])
        self.assertEqual(traps.output_groups((x, [x, x])), [1, 2])
        self.assertTrue(traps.has_lists((x, {"a": [x]})))
        self.assertFalse(traps.has_lists((x, {"a": x})))


if __name__ == "__main__":
    unittest.main()
