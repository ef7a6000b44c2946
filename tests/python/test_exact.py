"""The float64 pass (python/onnxproof/torch/exact.py): a copy for small models, the model itself widened
in place and narrowed back for large ones, one module at a time for the largest; every way the same
float64 outputs, and the model the caller keeps comes back bit for bit."""
import unittest
from unittest import mock

import numpy as np
import torch
from torch import nn

from onnxproof.torch import exact as exact_module
from onnxproof.torch.exact import ExactReference


class CachingNet(nn.Module):
    """A linear layer, a BatchNorm buffer, and a tensor attribute the forward caches (as rotary
    embeddings and masks often are): the in-place pass must not leave a float64 one behind."""

    def __init__(self):
        super().__init__()
        self.linear = nn.Linear(8, 4)
        self.norm = nn.BatchNorm1d(4).eval()
        self.norm.running_var.fill_(0.7)
        self.steps = torch.arange(4)  # an integer attribute present before the pass
        self.cache = None

    def forward(self, x):
        self.cache = torch.ones(4, dtype=x.dtype)
        return self.norm(self.linear(x)) + self.cache + self.steps.to(x.dtype)


class TiedNet(nn.Module):
    """Blocks with buffers, and a head whose weight is the embedding's own Parameter (tied, as
    language models' are): held by two modules, widened while either runs."""

    def __init__(self):
        super().__init__()
        self.embed = nn.Linear(4, 8, bias=False)
        self.blocks = nn.Sequential(nn.Linear(8, 8), nn.BatchNorm1d(8).eval(), nn.Tanh(), nn.Linear(8, 8))
        self.head = nn.Linear(8, 4, bias=False)
        self.head.weight = nn.Parameter(self.embed.weight.data.t().contiguous())
        self.back = nn.Linear(4, 8, bias=False)
        self.back.weight = self.embed.weight  # the same Parameter in two modules

    def forward(self, x):
        return self.head(self.blocks(self.embed(x))) + self.back(x).sum(-1, keepdim=True)


def float64_pass(model, arrays, in_place, layer_by_layer=False, width=4):
    """The float64 outputs of `model` on `arrays`, with the in-place rule forced on or off, and
    the layer-by-layer rule forced on when asked."""
    threshold = 0 if in_place else 2**62
    with mock.patch.object(exact_module, "IN_PLACE_ABOVE_BYTES", threshold), \
            mock.patch.object(exact_module, "LAYER_BY_LAYER_ABOVE_BYTES", 0 if layer_by_layer else 2**62):
        exact = ExactReference(model)
        assert exact.in_place == in_place
        with exact.float64_model():
            forward = lambda m, a: m(*(torch.from_numpy(v) for v in a.values()))
            values = exact.outputs(forward, arrays, ["y"], [torch.empty(2, width, device="meta")])
    return exact, values


class FloatSixtyFourPass(unittest.TestCase):
    def setUp(self):
        torch.manual_seed(0)
        self.model = CachingNet().eval()
        self.arrays = {"x": np.random.default_rng(0).standard_normal((2, 8)).astype(np.float32)}

    def test_in_place_gives_the_copys_outputs_and_restores_the_model_bit_for_bit(self):
        before = {name: tensor.clone() for name, tensor in self.model.state_dict().items()}
        _, copied = float64_pass(self.model, self.arrays, in_place=False)
        exact, widened = float64_pass(self.model, self.arrays, in_place=True)
        self.assertEqual(exact.cases_run, 1)
        self.assertEqual(widened[0].dtype, np.float64)
        np.testing.assert_array_equal(copied[0], widened[0])
        for name, tensor in self.model.state_dict().items():
            self.assertEqual(tensor.dtype, before[name].dtype, name)
            self.assertTrue(torch.equal(tensor, before[name]), name)
        self.assertIsNone(self.model.cache)  # the attribute as it was before the pass
        self.assertEqual(self.model.steps.dtype, torch.int64)
        with torch.no_grad():
            self.assertEqual(self.model(torch.from_numpy(self.arrays["x"])).dtype, torch.float32)

    def test_a_failing_float64_forward_still_narrows_the_model_back(self):
        class Refuses(CachingNet):
            def forward(self, x):
                if x.dtype == torch.float64:
                    raise RuntimeError("no double kernel")
                return super().forward(x)

        model = Refuses().eval()
        exact, values = float64_pass(model, self.arrays, in_place=True)
        self.assertEqual(values, [None])
        self.assertIn("no double kernel", exact.missing_reason())
        self.assertTrue(all(p.dtype == torch.float32 for p in model.parameters()))


class LayerByLayerPass(unittest.TestCase):
    def test_layer_by_layer_gives_the_copys_outputs_and_widens_one_module_at_a_time(self):
        torch.manual_seed(0)
        model = TiedNet().eval()
        arrays = {"x": np.random.default_rng(1).standard_normal((2, 4)).astype(np.float32)}
        before = {name: tensor.clone() for name, tensor in model.state_dict().items()}
        _, copied = float64_pass(model, arrays, in_place=False, width=4)
        widest = []  # per module forward: the float64 elements the whole model holds then

        def count(_module, _inputs, _outputs):
            widest.append(sum(t.numel() for t in exact_module.model_tensors(model) if t.dtype == torch.float64))
        hooks = [module.register_forward_hook(count) for module in model.modules()]
        exact, streamed = float64_pass(model, arrays, in_place=True, layer_by_layer=True, width=4)
        for hook in hooks:
            hook.remove()
        self.assertEqual(exact.mode, "layer_by_layer")
        self.assertEqual(streamed[0].dtype, np.float64)
        np.testing.assert_array_equal(copied[0], streamed[0])
        # Inside a block only that block's own tensors are wide (the tied Parameter only while a
        # module holding it runs); the root's hook sees nothing but its own (none) at its end.
        whole = sum(t.numel() for t in exact_module.model_tensors(model))
        self.assertLess(max(widest[:-1]), whole / 2, widest)
        for name, tensor in model.state_dict().items():
            self.assertEqual(tensor.dtype, before[name].dtype, name)
            self.assertTrue(torch.equal(tensor, before[name]), name)
        self.assertIs(model.back.weight, model.embed.weight)  # still tied
        self.assertEqual(model._forward_hooks, {})  # the pass's hooks are gone

    def test_a_weight_read_outside_its_module_fails_the_pass_and_says_why(self):
        class ReadsChildWeight(nn.Module):
            def __init__(self):
                super().__init__()
                self.inner = nn.Linear(4, 4)

            def forward(self, x):
                return x @ self.inner.weight  # the parent uses the child's weight: float32 here

        model = ReadsChildWeight().eval()
        arrays = {"x": np.ones((2, 4), np.float32)}
        exact, values = float64_pass(model, arrays, in_place=True, layer_by_layer=True)
        self.assertEqual(values, [None])
        self.assertIn("float64 forward fails", exact.missing_reason())
        self.assertTrue(all(p.dtype == torch.float32 for p in model.parameters()))


if __name__ == "__main__":
    unittest.main()
