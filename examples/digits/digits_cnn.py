#!/usr/bin/python3
"""The built-in example: a small CNN trained on scikit-learn's bundled digits data set.

`build()` returns the trained model in eval mode; training is deterministic (fixed seed, one
thread) and takes a few seconds, and the weights are cached in ONNXPROOF_CACHE (default
.cache/ in the repository) keyed by a hash of this file, so a change to the model retrains.

Run as a script to export the model and PyTorch's reference outputs for the held-out images:
    /usr/bin/python3 examples/digits/digits_cnn.py OUT_DIR
writes OUT_DIR/model.onnx (opset 17, dynamic batch), OUT_DIR/reference/test_data_set_0/
{input_0,output_0}.pb (the 450 held-out images and PyTorch's logits) and OUT_DIR/labels.npy.
"""
import argparse
import hashlib
import os
import sys

import numpy as np
import torch
from torch import nn

HELD_OUT = 450  # the last 450 of the 1,797 images are never trained on


class DigitsCNN(nn.Module):
    """8x8 grey images (values 0..1) -> 10 class logits."""

    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(),
            nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(),
            nn.MaxPool2d(2))
        self.classifier = nn.Sequential(nn.Flatten(), nn.Linear(32 * 4 * 4, 64), nn.ReLU(), nn.Linear(64, 10))

    def forward(self, image):
        return self.classifier(self.features(image))


def load_digits():
    """(images float32 Nx1x8x8 scaled to 0..1, labels int64 N) in scikit-learn's order."""
    from sklearn.datasets import load_digits as sklearn_digits
    data = sklearn_digits()
    images = (data.images.astype(np.float32) / 16.0)[:, None, :, :]
    return images, data.target.astype(np.int64)


def _cache_path():
    root = os.environ.get("ONNXPROOF_CACHE",
                          os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", ".cache"))
    with open(os.path.abspath(__file__), "rb") as source:
        digest = hashlib.sha256(source.read()).hexdigest()[:16]
    return os.path.join(root, f"digits_cnn-{digest}.pt")


def train(images, labels, epochs=60):
    torch.manual_seed(0)
    torch.set_num_threads(1)  # one thread: the same weights on every machine run
    model = DigitsCNN()
    optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)
    x = torch.from_numpy(images)
    y = torch.from_numpy(labels)
    generator = torch.Generator().manual_seed(0)
    for _ in range(epochs):
        order = torch.randperm(len(x), generator=generator)
        for start in range(0, len(x), 64):
            batch = order[start:start + 64]
            optimizer.zero_grad()
            loss = nn.functional.cross_entropy(model(x[batch]), y[batch])
            loss.backward()
            optimizer.step()
    return model


def build():
    """The trained DigitsCNN in eval mode (trained on first use, then loaded from the cache)."""
    path = _cache_path()
    model = DigitsCNN()
    if os.path.exists(path):
        model.load_state_dict(torch.load(path))
    else:
        images, labels = load_digits()
        model = train(images[:-HELD_OUT], labels[:-HELD_OUT])
        os.makedirs(os.path.dirname(path), exist_ok=True)
        torch.save(model.state_dict(), path + ".tmp")
        os.replace(path + ".tmp", path)
    return model.eval()


def _save_tensor_pb(path, array, name):
    from onnx import numpy_helper
    proto = numpy_helper.from_array(np.ascontiguousarray(array), name)
    with open(path + ".tmp", "wb") as out:
        out.write(proto.SerializeToString())
    os.replace(path + ".tmp", path)


def main():
    parser = argparse.ArgumentParser(description="Export the digits example and its reference data.")
    parser.add_argument("out_dir")
    args = parser.parse_args()
    model = build()
    images, labels = load_digits()
    held_out, held_out_labels = images[-HELD_OUT:], labels[-HELD_OUT:]
    data_dir = os.path.join(args.out_dir, "reference", "test_data_set_0")
    os.makedirs(data_dir, exist_ok=True)
    onnx_path = os.path.join(args.out_dir, "model.onnx")
    with torch.no_grad():
        torch.onnx.export(model, torch.from_numpy(held_out[:1]), onnx_path + ".tmp", opset_version=17,
                          input_names=["image"], output_names=["logits"],
                          dynamic_axes={"image": {0: "batch"}, "logits": {0: "batch"}})
        os.replace(onnx_path + ".tmp", onnx_path)
        logits = model(torch.from_numpy(held_out)).numpy()
    _save_tensor_pb(os.path.join(data_dir, "input_0.pb"), held_out, "image")
    _save_tensor_pb(os.path.join(data_dir, "output_0.pb"), logits, "logits")
    np.save(os.path.join(args.out_dir, "labels.npy"), held_out_labels)
    accuracy = float((logits.argmax(axis=1) == held_out_labels).mean())
    print(f"exported {onnx_path}; PyTorch accuracy on {HELD_OUT} held-out digits: {accuracy:.1%}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
