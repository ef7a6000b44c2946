"""The advice for a forward pass that fails on the example: a tensor moved to a device inside
forward() is not a wrong --input, and the hint says so (issue 26: it used to say to check the
--input shapes)."""
import unittest

import torch
from torch import nn

from onnxproof.torch.export_forward import forward_failure_hint, refuses_the_input


class MovesToCuda(nn.Module):
    """Creates a tensor on CUDA inside forward(): on a machine without a GPU torch refuses it; on
    one with a GPU the addition to the CPU input does."""

    def forward(self, x):
        return x + torch.ones(x.shape, device="cuda")


class TakesTwoAxes(nn.Module):
    def forward(self, x):
        return x.view(2, 3) * 2


def failure(model, example):
    try:
        model(example)
    except Exception as error:  # the real exception torch raises
        return error
    raise AssertionError("the forward pass was expected to fail")


class ForwardFailureHint(unittest.TestCase):
    def test_a_device_move_inside_forward_gets_the_device_advice(self):
        hint = forward_failure_hint(failure(MovesToCuda(), torch.zeros(2, 3)))
        self.assertIn("device", hint)
        self.assertNotIn("--input", hint)

    def test_a_shape_error_still_points_at_the_input_spec(self):
        hint = forward_failure_hint(failure(TakesTwoAxes(), torch.zeros(4, 5)))
        self.assertIn("--input", hint)


class RefusedInput(unittest.TestCase):
    """What makes a forward's failure the call's mistake (exit 2) rather than the model's."""

    def test_a_rank_size_or_dtype_the_model_refuses_is_the_input(self):
        self.assertTrue(refuses_the_input(failure(TakesTwoAxes(), torch.zeros(4, 5))))
        self.assertTrue(refuses_the_input(failure(nn.Conv2d(3, 8, 3), torch.zeros(1, 1, 8, 8))))
        self.assertTrue(refuses_the_input(failure(nn.Linear(3, 2), torch.zeros(2, 5))))
        self.assertTrue(refuses_the_input(failure(nn.Linear(3, 2), torch.zeros(2, 3, dtype=torch.float64))))

    def test_what_the_model_itself_raises_is_not(self):
        self.assertFalse(refuses_the_input(failure(MovesToCuda(), torch.zeros(2, 3))))
        self.assertFalse(refuses_the_input(NotImplementedError("forward is not written yet")))
        self.assertFalse(refuses_the_input(failure(lambda x: x.sum(dim=0).item(), torch.zeros(2, 3))))


if __name__ == "__main__":
    unittest.main()
