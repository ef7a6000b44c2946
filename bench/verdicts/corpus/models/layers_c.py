"""The issue-22 modules, part 3: attention, list outputs, in-place ops, 0-d inputs, *args, misc layers."""
import torch
import torch.nn.functional as F
from torch import nn


# ---------------------------------------------------------------------------------------------
# forward(*args) and kwargs

class VarArgsSum(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, *args):
        return self.fc(sum(args))


class VarArgsConcat(nn.Module):
    def forward(self, *tensors):
        return torch.cat(tensors, dim=1).relu()


class KwargsMask(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(6, 6)

    def forward(self, x, mask=None, scale: float = 1.0):
        y = self.fc(x) * scale
        if mask is not None:
            y = y * mask.unsqueeze(-1).to(y.dtype)
        return y


class WrappedVarArgs(nn.Module):
    """A user wrapper that forwards *args to an inner module returning a dict."""

    def __init__(self):
        super().__init__()
        self.inner = _DictEncoder()

    def forward(self, *args):
        return self.inner(*args)["hidden"]


class _DictEncoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(30, 8)
        self.fc = nn.Linear(8, 8)

    def forward(self, input_ids, attention_mask):
        h = self.fc(self.emb(input_ids)) * attention_mask[..., None]
        return {"hidden": h, "pooled": h.mean(1)}


# ---------------------------------------------------------------------------------------------
# misc layers users hit

class ConvTranspose(nn.Module):
    def __init__(self):
        super().__init__()
        self.up = nn.ConvTranspose2d(4, 3, 3, stride=2, padding=1, output_padding=1)

    def forward(self, x):
        return self.up(x)


class DepthwiseDilated(nn.Module):
    def __init__(self):
        super().__init__()
        self.dw = nn.Conv2d(6, 6, 3, padding=2, dilation=2, groups=6)
        self.pw = nn.Conv2d(6, 4, 1)

    def forward(self, x):
        return self.pw(F.gelu(self.dw(x)))


class Conv1dCausal(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv1d(4, 4, 3)

    def forward(self, x):
        return self.conv(F.pad(x, (2, 0)))


class Activations(nn.Module):
    def forward(self, x):
        return (F.gelu(x, approximate="tanh"), F.silu(x), F.mish(x), F.hardswish(x), F.elu(x), F.softplus(x),
                F.leaky_relu(x, 0.1), F.celu(x), F.selu(x), F.logsigmoid(x))


class SoftmaxVariants(nn.Module):
    def forward(self, x):
        return x.log_softmax(-1), F.softmin(x, dim=1), F.glu(x, dim=-1)


class ExpandRepeat(nn.Module):
    def forward(self, x):
        return x[:, None].expand(-1, 3, -1).reshape(x.shape[0], -1), x.repeat(1, 2), x.tile((2, 1))


class UnfoldPatches(nn.Module):
    def forward(self, x):
        return F.unfold(x, kernel_size=2, stride=2)


class TensorUnfold(nn.Module):
    def forward(self, x):
        return x.unfold(1, 3, 2)


class CrossEntropyLoss(nn.Module):
    def forward(self, logits, target):
        return F.cross_entropy(logits, target, reduction="none"), F.cross_entropy(logits, target, label_smoothing=0.1)


class AffineGrid(nn.Module):
    def forward(self, x, theta):
        grid = F.affine_grid(theta, list(x.shape), align_corners=False)
        return F.grid_sample(x, grid, align_corners=False)


class MinMaxClamp(nn.Module):
    def forward(self, x, lo, hi):
        return torch.clamp(x, min=lo, max=hi), torch.minimum(x, hi).maximum(lo)


class ViewAsOther(nn.Module):
    def forward(self, x, y):
        return x.view(y.shape) + y


class Erfinv(nn.Module):
    def forward(self, p):
        return torch.erfinv(p * 1.8 - 0.9), torch.special.ndtri(p.clamp(0.05, 0.95))


class Atan2Hypot(nn.Module):
    def forward(self, y, x):
        return torch.atan2(y, x), torch.hypot(y, x)


class TriuIndices(nn.Module):
    def forward(self, x):
        r, c = torch.triu_indices(4, 4, offset=1)
        return x[:, r, c]


class Diff(nn.Module):
    def forward(self, x):
        return torch.diff(x, dim=1)


class Cdist(nn.Module):
    def forward(self, a, b):
        return torch.cdist(a, b)


class Baddbmm(nn.Module):
    def forward(self, c, a, b):
        return torch.baddbmm(c, a, b, beta=0.5, alpha=2.0)


class Sign(nn.Module):
    def forward(self, x):
        return torch.sign(x) * torch.floor(x.abs()) + torch.round(x * 2) / 2 + torch.frac(x)
