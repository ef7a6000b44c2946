"""Proving a model from the training script that made it: the Python API, notebook style
(each `# %%` cell runs on its own in Jupyter or VS Code, or run the whole file).

    pip install onnxproof-*.whl torchvision      # or, in this checkout: make demo, then
    PYTHONPATH=python .venv/bin/python examples/prove_in_python.py [OUT]

It trains a small classifier on a synthetic task, proves its ONNX export on the held-out batches
(real inputs, with labels: the report gives both accuracies and the flipped predictions), then
shows the pytest helper. Exit status 0 when the proof passed.
"""
# %% A model and the data it is trained on
import os
import sys

import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

import onnxproof

torch.manual_seed(0)
points = torch.randn(1200, 16)
labels = (points[:, :4].sum(dim=1) > 0).long() + (points[:, 4] > 1).long()  # 3 classes
train_set = TensorDataset(points[:1000], labels[:1000])
# Batches of 64 and a last one of 8: the dynamic batch axis is proved at both sizes.
held_out = DataLoader(TensorDataset(points[1000:], labels[1000:]), batch_size=64)

model = nn.Sequential(nn.Linear(16, 64), nn.GELU(), nn.LayerNorm(64), nn.Linear(64, 3))

# %% Training (a few seconds on a CPU)
optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
for epoch in range(20):
    for x, y in DataLoader(train_set, batch_size=100, shuffle=True):
        optimizer.zero_grad()
        nn.functional.cross_entropy(model(x), y).backward()
        optimizer.step()
model.eval()

# %% The proof: export (dynamo, the newest opset ONNX Runtime runs), check, simplify, audit the
# operators, parity against PyTorch on the held-out batches. Without an argument the run folder is
# onnxproof-out/Sequential-<hash of the inputs and weights>: retraining and running again proves
# into a folder of its own. Golden outputs are frozen only when asked: golden="tests/onnx/classifier".
out = sys.argv[1] if len(sys.argv) > 1 else None
report = onnxproof.prove(model, (torch.randn(64, 16),), dynamic_axes={"input": {0: "batch"}}, data=held_out,
                         data_batches=4, out=out)
print(report)  # the verdict, the five headline answers, the findings, the report's path

for task in report.accuracy:
    print(f"accuracy on {task['samples']} held-out points: PyTorch {task['accuracy']['source']:.3f}, "
          f"ONNX Runtime {task['accuracy']['cpu']:.3f}, {task['flipped']} predictions flipped")

# %% In a test suite, the same call fails the test with the findings as the message:
#     from onnxproof.testing import assert_proved
#     def test_classifier_exports_faithfully():
#         assert_proved(build_model(), (torch.randn(8, 16),), dynamic_axes={"input": {0: "batch"}},
#                       golden="tests/onnx/classifier")
sys.exit(0 if report.passed else 1)
