"""The float64 pass (python/onnxproof/torch/exact.py): a copy for small models, the model itself widened
in place and narrowed back for large ones; either way the same float64 outputs, and the model the
caller keeps comes back bit for bit."""
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


def float64_pass(model, arrays, in_place):
    """The float64 outputs of `model` on `arrays`, with the in-place rule forced on or off."""
    threshold = 0 if in_place else 2**62
    with mock.patch.object(exact_module, "IN_PLACE_ABOVE_BYTES", threshold):
        exact = ExactReference(model)
        assert exact.in_place == in_place
        with exact.float64_model():
            forward = lambda m, a: m(*(torch.from_numpy(v) for v in a.values()))
            values = exact.outputs(forward, arrays, ["y"], [torch.empty(2, 4, device="meta")])
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


if __name__ == "__main__":
    unittest.main()
