"""The issue-22 modules, part 1: indexing through integer ops (the operator families of models.py)."""
import math

import torch
import torch.nn.functional as F
from torch import nn


# ---------------------------------------------------------------------------------------------
# indexing

class IndexSelect(nn.Module):
    def forward(self, x, idx):
        return x.index_select(1, idx) * 2.0


class AdvancedIndex(nn.Module):
    def __init__(self):
        super().__init__()
        self.table = nn.Parameter(torch.randn(10, 6))

    def forward(self, idx):
        return self.table[idx].relu()


class BoolMaskIndex(nn.Module):
    def forward(self, x):
        return x[x > 0.5] * 3.0


class SliceSteps(nn.Module):
    def forward(self, x):
        return x[:, ::2, 1:-1] + x[:, 1::2, :-2]


class EllipsisNone(nn.Module):
    def forward(self, x):
        last = x[..., -1]
        return last[:, None, :] * x[..., :1].transpose(1, 2)


class IndexPutOutOfPlace(nn.Module):
    def forward(self, x, idx):
        y = x.clone()
        y[:, 0] = 0.0
        y[idx] = y[idx] * -1.0
        return y


class MaskedFillInput(nn.Module):
    def forward(self, x, mask):
        return x.masked_fill(mask, -1.0).sum(-1)


class NegativeIndexing(nn.Module):
    def forward(self, x):
        return torch.stack([x[:, -1], x[:, -2], x[:, 0]], dim=1)


# ---------------------------------------------------------------------------------------------
# scatter / gather

class GatherDim1(nn.Module):
    def forward(self, x, idx):
        return torch.gather(x, 1, idx)


class ScatterAdd(nn.Module):
    def forward(self, src, idx):
        out = torch.zeros(src.shape[0], 5, dtype=src.dtype)
        return out.scatter_add(1, idx, src)


class ScatterReduceAmax(nn.Module):
    def forward(self, src, idx):
        out = torch.full((src.shape[0], 4), -10.0)
        return out.scatter_reduce(1, idx, src, reduce="amax", include_self=True)


class IndexAdd(nn.Module):
    def forward(self, x, src, idx):
        return x.index_add(0, idx, src, alpha=0.5)


class GatherDynamicAxis(nn.Module):
    """Gather along the dynamic axis with indices computed in the model (argsort of a score)."""
    def forward(self, x):
        order = x.sum(-1).argsort(dim=0, descending=True)
        return torch.gather(x, 0, order[:, None].expand(-1, x.shape[1]))


class TakeAlongTopk(nn.Module):
    def forward(self, x):
        _, idx = x.topk(2, dim=1)
        return torch.take_along_dim(x, idx, dim=1)


class ScatterOneHot(nn.Module):
    def forward(self, labels):
        out = torch.zeros(labels.shape[0], 7)
        return out.scatter(1, labels[:, None], 1.0)


# ---------------------------------------------------------------------------------------------
# loops

class StaticLoop(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 8)

    def forward(self, x):
        for _ in range(3):
            x = torch.tanh(self.fc(x)) + x
        return x


class LoopOverSequence(nn.Module):
    """A running state over the time axis (fixed length 5)."""

    def __init__(self):
        super().__init__()
        self.cell = nn.Linear(4 + 6, 6)

    def forward(self, x):
        h = torch.zeros(x.shape[0], 6)
        outs = []
        for t in range(x.shape[1]):
            h = torch.tanh(self.cell(torch.cat([x[:, t], h], dim=1)))
            outs.append(h)
        return torch.stack(outs, dim=1)


class ScriptedWhileLoop(nn.Module):
    """A scripted helper with a data-independent while loop (ONNX Loop under TorchScript)."""

    def forward(self, x):
        return _scripted_repeat(x, 3)


@torch.jit.script_if_tracing
def _scripted_repeat(x: torch.Tensor, n: int) -> torch.Tensor:
    i = 0
    while i < n:
        x = x * 0.5 + 1.0
        i += 1
    return x


class LoopDynamicLength(nn.Module):
    """Python loop over a dynamic axis: the trace unrolls it at the example's length."""

    def forward(self, x):
        acc = torch.zeros_like(x[:, 0])
        for t in range(x.shape[1]):
            acc = acc * 0.9 + x[:, t]
        return acc


# ---------------------------------------------------------------------------------------------
# if

class IfOnStaticFlag(nn.Module):
    def __init__(self, residual=True):
        super().__init__()
        self.residual = residual
        self.fc = nn.Linear(6, 6)

    def forward(self, x):
        y = self.fc(x)
        if self.residual:
            y = y + x
        return y


class IfOnShape(nn.Module):
    """A branch on a static axis size (channels): shape-only control flow."""

    def forward(self, x):
        if x.shape[1] == 3:
            return x.mean(1, keepdim=True)
        return x


class TorchCond(nn.Module):
    def forward(self, x):
        return torch.cond(x.sum() > 0, lambda t: t.sin(), lambda t: t.cos(), (x,))


class IfOnValue(nn.Module):
    """Python if on a tensor value: the trace freezes the example's branch."""

    def forward(self, x):
        if x.mean() > 0:
            return x * 2
        return -x


class WhereBranches(nn.Module):
    def forward(self, x):
        return torch.where(x.sum(-1, keepdim=True) > 0, x.exp(), x.sigmoid())


# ---------------------------------------------------------------------------------------------
# RNNs

class LSTMWithState(nn.Module):
    def __init__(self):
        super().__init__()
        self.lstm = nn.LSTM(5, 7, num_layers=2, batch_first=True)

    def forward(self, x, h0, c0):
        out, (h, c) = self.lstm(x, (h0, c0))
        return out, h, c


class GRUBidirectional(nn.Module):
    def __init__(self):
        super().__init__()
        self.gru = nn.GRU(4, 6, num_layers=1, bidirectional=True)

    def forward(self, x, h0):
        out, h = self.gru(x, h0)
        return out, h


class LSTMNoState(nn.Module):
    def __init__(self):
        super().__init__()
        self.lstm = nn.LSTM(6, 8, batch_first=True)
        self.head = nn.Linear(8, 3)

    def forward(self, x):
        out, _ = self.lstm(x)
        return self.head(out[:, -1])


class LSTMCellLoop(nn.Module):
    def __init__(self):
        super().__init__()
        self.cell = nn.LSTMCell(3, 5)

    def forward(self, x):
        h = torch.zeros(x.shape[1], 5)
        c = torch.zeros(x.shape[1], 5)
        for t in range(4):
            h, c = self.cell(x[t], (h, c))
        return h


class GRUCellStep(nn.Module):
    def __init__(self):
        super().__init__()
        self.cell = nn.GRUCell(4, 6)

    def forward(self, x, h):
        return self.cell(x, h)


# ---------------------------------------------------------------------------------------------
# interpolate

class Interp(nn.Module):
    def __init__(self, **kw):
        super().__init__()
        self.kw = kw

    def forward(self, x):
        return F.interpolate(x, **self.kw)


class InterpToOther(nn.Module):
    def forward(self, x, ref):
        return F.interpolate(x, size=ref.shape[-2:], mode="bilinear", align_corners=False) + ref


class UpsampleModule(nn.Module):
    def __init__(self):
        super().__init__()
        self.up = nn.Upsample(scale_factor=2, mode="nearest")
        self.conv = nn.Conv2d(3, 4, 3, padding=1)

    def forward(self, x):
        return self.conv(self.up(x))


# ---------------------------------------------------------------------------------------------
# pooling

class MaxPoolCeil(nn.Module):
    def forward(self, x):
        return F.max_pool2d(x, 3, stride=2, ceil_mode=True)


class AvgPoolNoPad(nn.Module):
    def forward(self, x):
        return F.avg_pool2d(x, 3, stride=2, padding=1, count_include_pad=False)


class AdaptiveAvgGlobal(nn.Module):
    def forward(self, x):
        return F.adaptive_avg_pool2d(x, 1).flatten(1)


class AdaptiveMaxFixed(nn.Module):
    def forward(self, x):
        return F.adaptive_max_pool2d(x, (2, 2))


class MaxPoolUnpool(nn.Module):
    def forward(self, x):
        y, idx = F.max_pool2d(x, 2, return_indices=True)
        return F.max_unpool2d(y, idx, 2, output_size=x.shape[-2:])


class AvgPool1d(nn.Module):
    def forward(self, x):
        return F.avg_pool1d(x, 4, stride=2)


class LpPool(nn.Module):
    def forward(self, x):
        return F.lp_pool2d(x, 2.0, 2)


class MaxPool3d(nn.Module):
    def forward(self, x):
        return F.max_pool3d(x, 2, stride=2, padding=1)


# ---------------------------------------------------------------------------------------------
# reductions

class SumMeanProd(nn.Module):
    def forward(self, x):
        return x.sum(dim=(1, 2)), x.mean(-1, keepdim=True), (x.abs() + 0.5).prod(dim=1)


class AmaxStdLogsumexp(nn.Module):
    def forward(self, x):
        return x.amax(1), x.amin(-1), x.std(dim=1), x.var(dim=-1, unbiased=False), torch.logsumexp(x, dim=-1)


class Norms(nn.Module):
    def forward(self, x):
        return torch.linalg.vector_norm(x, ord=1, dim=-1), x.norm(p=2, dim=1), torch.linalg.matrix_norm(x)


class AllAny(nn.Module):
    def forward(self, x):
        positive = x > 0
        return positive.all(dim=1), positive.any(dim=-1)


class ArgmaxArgmin(nn.Module):
    def forward(self, x):
        return x.argmax(dim=1), x.argmin(dim=-1, keepdim=True)


class Median(nn.Module):
    def forward(self, x):
        values, indices = x.median(dim=1)
        return values, indices


class IntMean(nn.Module):
    def forward(self, counts):
        return counts.float().mean(dim=1), counts.sum(dim=1)


# ---------------------------------------------------------------------------------------------
# einsum

class EinsumBmm(nn.Module):
    def forward(self, a, b):
        return torch.einsum("bij,bjk->bik", a, b)


class EinsumAttention(nn.Module):
    def forward(self, q, k):
        return torch.einsum("bhqd,bhkd->bhqk", q, k) / math.sqrt(q.shape[-1])


class EinsumDiagonal(nn.Module):
    def forward(self, x):
        return torch.einsum("bii->bi", x)


class EinsumOuterSum(nn.Module):
    def forward(self, u, v):
        return torch.einsum("bi,bj->bij", u, v), torch.einsum("bij->b", torch.einsum("bi,bj->bij", u, v))


# ---------------------------------------------------------------------------------------------
# topk / sort

class Topk(nn.Module):
    def forward(self, x):
        values, indices = x.topk(3, dim=-1)
        return values, indices


class SortDescending(nn.Module):
    def forward(self, x):
        values, indices = torch.sort(x, dim=1, descending=True)
        return values, indices


class Argsort(nn.Module):
    def forward(self, x):
        return x.argsort(dim=-1)


class TopkDynamicK(nn.Module):
    def forward(self, x):
        return x.topk(x.shape[1] // 2, dim=1).values


class Kthvalue(nn.Module):
    def forward(self, x):
        return torch.kthvalue(x, 2, dim=1).values


# ---------------------------------------------------------------------------------------------
# nonzero and friends

class Nonzero(nn.Module):
    def forward(self, x):
        return torch.nonzero(x > 0.3)


class WhereOneArg(nn.Module):
    def forward(self, x):
        rows, cols = torch.where(x > 0)
        return rows, cols


class MaskedSelect(nn.Module):
    def forward(self, x):
        return torch.masked_select(x, x.abs() > 0.5)


class UniqueCounts(nn.Module):
    def forward(self, ids):
        values, counts = torch.unique(ids, sorted=True, return_counts=True)
        return values, counts


# ---------------------------------------------------------------------------------------------
# arange with dynamic sizes

class PositionalArange(nn.Module):
    def __init__(self):
        super().__init__()
        self.pos = nn.Embedding(32, 8)

    def forward(self, x):
        positions = torch.arange(x.shape[1])
        return x + self.pos(positions)[None]


class FloatArange(nn.Module):
    def forward(self, x):
        t = torch.arange(0, x.shape[-1], 0.5, dtype=torch.float32)
        return x.repeat_interleave(2, dim=-1) * t


class CausalMaskArange(nn.Module):
    def forward(self, scores):
        n = scores.shape[-1]
        i = torch.arange(n)
        mask = i[None, :] > i[:, None]
        return scores.masked_fill(mask, float("-inf")).softmax(-1)


class Linspace(nn.Module):
    def forward(self, x):
        return x * torch.linspace(0.0, 1.0, x.shape[1])


class SinusoidalTimestep(nn.Module):
    def forward(self, t):
        half = 8
        freqs = torch.exp(-math.log(10000.0) * torch.arange(half, dtype=torch.float32) / half)
        args = t[:, None].float() * freqs[None]
        return torch.cat([args.sin(), args.cos()], dim=-1)
