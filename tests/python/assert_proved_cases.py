"""Run by test_api.py under pytest: one clean model that must pass assert_proved, a file the user
exported that must pass it as given with its golden set, and one trap (a Python branch on a tensor
value) that must fail it with the finding in the message."""
import os
import sys

import torch
from torch import nn

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "fixtures"))
import trap_models  # noqa: E402

from onnxproof.testing import assert_proved  # noqa: E402

OUT = os.environ["ONNXPROOF_TEST_OUT"]


def test_clean_model_is_proved():
    model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 4)).eval()
    assert_proved(model, (torch.randn(2, 8),), dynamic_axes={"input": {0: "batch"}}, out=os.path.join(OUT, "clean"))


def test_users_own_file_is_proved_with_its_golden_set():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 4)).eval()
    path = os.path.join(OUT, "classifier.onnx")
    torch.onnx.export(model, (torch.randn(1, 8),), path, input_names=["features"], output_names=["logits"],
                      dynamic_axes={"features": {0: "batch"}, "logits": {0: "batch"}}, dynamo=False)
    model.eval()
    for run in ("given-1", "given-2"):  # frozen, then verified
        assert_proved(model, (torch.randn(2, 8),), onnx=path, golden=os.path.join(OUT, "golden-given"),
                      out=os.path.join(OUT, run))


def test_trap_model_is_not_proved():
    assert_proved(trap_models.BranchOnValue().eval(), (torch.randn(2, 8),), dynamic_axes={"x": {0: "batch"}},
                  out=os.path.join(OUT, "trap"))
