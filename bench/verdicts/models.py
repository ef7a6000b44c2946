"""The base models of the verdicts benchmark: small, seeded, with realistic non-zero parameters
(drawn biases, LayerNorm/BatchNorm affine parameters away from 1/0, BatchNorm running statistics
away from 0/1). Each callable returns an nn.Module in eval mode; run_verdicts.py names their
inputs (MODELS there)."""
import math

import torch
from torch import nn
import torch.nn.functional as F


def _realistic(model, seed):
    """Seeded parameters a trained model could have: every bias drawn, norm scales around 1 and
    shifts around 0 (not exactly 1/0), BatchNorm statistics away from 0/1."""
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for module in model.modules():
            if isinstance(module, (nn.Linear, nn.Conv2d)) and module.bias is not None:
                module.bias.copy_(0.1 * torch.randn(module.bias.shape, generator=generator))
            if isinstance(module, (nn.LayerNorm, nn.BatchNorm2d, nn.BatchNorm1d)) and module.weight is not None:
                module.weight.copy_(1.0 + 0.2 * torch.randn(module.weight.shape, generator=generator))
                module.bias.copy_(0.1 * torch.randn(module.bias.shape, generator=generator))
            if isinstance(module, (nn.BatchNorm2d, nn.BatchNorm1d)):
                module.running_mean.copy_(0.3 * torch.randn(module.running_mean.shape, generator=generator))
                module.running_var.copy_(0.5 + torch.rand(module.running_var.shape, generator=generator))
            if isinstance(module, nn.Embedding):
                module.weight.copy_(torch.randn(module.weight.shape, generator=generator))
    return model.eval()


class TinyRegressor(nn.Module):
    """An MLP with SiLU (x * sigmoid(x)) whose single output lives around 1e-6 (a quantity in
    physical units: the issue's blind spot of atol)."""

    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(16, 64)
        self.fc2 = nn.Linear(64, 64)
        self.out = nn.Linear(64, 1)

    def forward(self, x):
        h = F.silu(self.fc1(x))
        h = torch.tanh(self.fc2(h))
        return self.out(h) * 1e-5


def tiny_regressor():
    torch.manual_seed(1)
    return _realistic(TinyRegressor(), 1)


class Classifier(nn.Module):
    """An MLP classifier: Linear, LayerNorm, ReLU, Linear, Tanh, 10 logits."""

    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(32, 64)
        self.norm = nn.LayerNorm(64)
        self.fc2 = nn.Linear(64, 64)
        self.head = nn.Linear(64, 10)

    def forward(self, x):
        h = F.relu(self.norm(self.fc1(x)))
        h = torch.tanh(self.fc2(h))
        return self.head(h)


def classifier():
    torch.manual_seed(2)
    return _realistic(Classifier(), 2)


class SmallCNN(nn.Module):
    """Conv, BatchNorm, HardSwish; a strided conv, ReLU, then a BatchNorm (after the activation, so
    the exporter cannot fold it into the conv); a squeeze-excitation gate with HardSigmoid; a
    flatten by view(batch, -1) and a linear head."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 8, 3, padding=1)
        self.bn1 = nn.BatchNorm2d(8)
        self.conv2 = nn.Conv2d(8, 16, 3, stride=2, padding=1)
        self.bn2 = nn.BatchNorm2d(16)
        self.se_reduce = nn.Conv2d(16, 4, 1)
        self.se_expand = nn.Conv2d(4, 16, 1)
        self.head = nn.Linear(16 * 4 * 4, 10)

    def forward(self, image):
        h = F.hardswish(self.bn1(self.conv1(image)))
        h = self.bn2(F.relu(self.conv2(h)))
        gate = F.adaptive_avg_pool2d(h, 1)
        gate = F.hardsigmoid(self.se_expand(F.relu(self.se_reduce(gate))))
        h = F.max_pool2d(h * gate, 2)
        return self.head(h.view(h.size(0), -1))


def small_cnn():
    torch.manual_seed(3)
    model = _realistic(SmallCNN(), 3)
    with torch.no_grad():
        model.conv1.weight.mul_(3.0)  # first-layer filters of a trained CNN are larger than at initialization
    return model


class TransformerBlock(nn.Module):
    """A pre-norm encoder block: LayerNorm, 4-head softmax attention with an additive padding
    mask from `attention_mask` (1 = token, 0 = padding), GELU (erf) MLP, residuals."""

    def __init__(self, dim=32, heads=4):
        super().__init__()
        self.heads = heads
        self.head_dim = dim // heads
        self.norm1 = nn.LayerNorm(dim)
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)
        self.norm2 = nn.LayerNorm(dim)
        self.fc1 = nn.Linear(dim, 4 * dim)
        self.fc2 = nn.Linear(4 * dim, dim)

    def forward(self, x, attention_mask):
        b, s, d = x.shape
        q, k, v = self.qkv(self.norm1(x)).chunk(3, dim=-1)
        split = lambda t: t.reshape(b, s, self.heads, self.head_dim).transpose(1, 2)
        q, k, v = split(q), split(k), split(v)
        scores = q @ k.transpose(-1, -2) / math.sqrt(self.head_dim)
        keep = attention_mask[:, None, None, :].to(scores.dtype)
        scores = scores + (1.0 - keep) * -10000.0
        attended = (scores.softmax(dim=-1) @ v).transpose(1, 2).reshape(b, s, d)
        x = x + self.proj(attended)
        return x + self.fc2(F.gelu(self.fc1(self.norm2(x))))


def transformer_block():
    torch.manual_seed(4)
    return _realistic(TransformerBlock(), 4)


class TextPooler(nn.Module):
    """Token and position embeddings, LayerNorm, a tanh projection, a masked mean over the valid
    tokens and an L2-normalized 16-d sentence embedding."""

    def __init__(self, vocab=50, dim=32, max_len=32):
        super().__init__()
        self.tokens = nn.Embedding(vocab, dim)
        self.positions = nn.Embedding(max_len, dim)
        self.norm = nn.LayerNorm(dim)
        self.dense = nn.Linear(dim, dim)
        self.out = nn.Linear(dim, 16)

    def forward(self, input_ids, attention_mask):
        positions = torch.arange(input_ids.shape[1], device=input_ids.device)
        h = self.norm(self.tokens(input_ids) + self.positions(positions)[None])
        h = torch.tanh(self.dense(h))
        keep = attention_mask[..., None].to(h.dtype)
        pooled = (h * keep).sum(dim=1) / keep.sum(dim=1).clamp(min=1.0)
        return F.normalize(self.out(pooled), dim=-1)


def text_pooler():
    torch.manual_seed(5)
    return _realistic(TextPooler(), 5)


class LargeOutput(nn.Module):
    """A deeper MLP regressor whose 4 outputs are in the thousands and of both signs (a price or
    an energy): absolute differences are large where relative ones are tiny."""

    def __init__(self):
        super().__init__()
        self.layers = nn.ModuleList([nn.Linear(8, 128)] + [nn.Linear(128, 128) for _ in range(3)])
        self.out = nn.Linear(128, 4)

    def forward(self, features):
        h = features
        for layer in self.layers:
            h = F.relu(layer(h))
        return self.out(h) * 1500.0


def large_output():
    torch.manual_seed(6)
    model = _realistic(LargeOutput(), 6)
    with torch.no_grad():  # features in raw units: hidden activations in the tens
        model.layers[0].weight.mul_(20.0)
        model.layers[0].bias.mul_(20.0)
    return model


class SegmentationHead(nn.Module):
    """A segmentation head on a feature map: conv, BatchNorm, ReLU, 1x1 conv to 5 classes, bilinear
    upsampling x4 (align_corners=False): (N, 5, 4H, 4W) logits."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(16, 16, 3, padding=1, bias=False)
        self.bn = nn.BatchNorm2d(16)
        self.classifier = nn.Conv2d(16, 5, 1)

    def forward(self, features):
        h = F.relu(self.bn(self.conv(features)))
        logits = self.classifier(h)
        return F.interpolate(logits, scale_factor=4.0, mode="bilinear", align_corners=False)


def segmentation_head():
    torch.manual_seed(7)
    return _realistic(SegmentationHead(), 7)


# --- quantized models (issue 45): PT2E graphs of the networks above, calibrated on seeded batches --

def _pt2e(model, example, batches):
    """`model` quantized with PT2E (tests/python/quantized_models.py: torchao's XNNPACK-style
    quantizer), calibrated on the seeded batches given."""
    import os
    import sys
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests", "python"))
    from quantized_models import quantize_pt2e
    return quantize_pt2e(model, example, batches)


def quantized_small_cnn():
    torch.manual_seed(11)
    return _pt2e(small_cnn(), torch.randn(2, 3, 16, 16), [torch.randn(2, 3, 16, 16) for _ in range(8)])


def quantized_classifier():
    torch.manual_seed(12)
    return _pt2e(classifier(), torch.randn(2, 32), [torch.randn(2, 32) for _ in range(8)])
