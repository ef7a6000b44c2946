#!/usr/bin/python3
"""The built-in example: a small CNN trained on scikit-learn's bundled digits data set.

`build()` returns the trained model in eval mode; training is deterministic (fixed seed, one
thread) and takes a few seconds, and the weights are cached in ONNXPROOF_CACHE (default
.cache/ in the repository) keyed by a hash of this file, so a change to the model retrains.

`held_out_batches()` yields the real inputs for `onnxproof export --data`: the 450 held-out
images as one batch first, then a single image and a batch of seven (other batch sizes).
    onnxproof export --model examples/digits/digits_cnn.py:build --input image=1x1x8x8:float32 \
        --dynamic image:0=batch --data examples/digits/digits_cnn.py:held_out_batches --out OUT
"""
import hashlib
import os

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
    try:
        from sklearn.datasets import load_digits as sklearn_digits
    except ImportError as error:  # the wheel's demo extra
        raise ImportError("the demo's digits data set needs scikit-learn: pip install 'onnxproof[demo]'") from error
    data = sklearn_digits()
    images = (data.images.astype(np.float32) / 16.0)[:, None, :, :]
    return images, data.target.astype(np.int64)


def _cache_path():
    # A checkout's .cache/; an installed copy (the wheel's) uses the user's cache folder instead
    # of writing beside itself.
    checkout = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
    default = (os.path.join(checkout, ".cache") if os.path.isdir(os.path.join(checkout, ".git")) else
               os.path.join(os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "onnxproof"))
    root = os.environ.get("ONNXPROOF_CACHE", default)
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


def held_out_batches():
    """Real inputs for --data: the 450 held-out digits as one batch, with their labels (for the
    accuracy), then one image and a batch of seven (other batch sizes, no labels: not counted twice)."""
    images, labels = load_digits()
    held_out = images[-HELD_OUT:]
    yield {"image": held_out, "labels": labels[-HELD_OUT:]}
    yield {"image": held_out[:1]}
    yield {"image": held_out[1:8]}


def held_out_labels():
    """The labels of the held-out images, in held_out_batches()'s first batch order."""
    _, labels = load_digits()
    return labels[-HELD_OUT:]


if __name__ == "__main__":
    print(__doc__)
