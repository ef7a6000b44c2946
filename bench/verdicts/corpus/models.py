"""The false-alarm corpus of issue 22: small, correct modules in the shapes users write, one per
operator family they hit (indexing, scatter/gather, loops, if, RNNs, interpolate, pooling,
reductions, einsum, topk/sort, nonzero, dynamic arange, casts, integer ops, detection ops, flips,
pads, pixel_shuffle, embedding bags, bucketize, masks, cumsum, normalization, attention, list
outputs, in-place ops on inputs, 0-d and bool inputs, forward(*args)).

MODELS is a list of (name, factory); a factory returns (model, args, options) where options are
extra keyword arguments of onnxproof.prove(): dynamic_axes or dynamic_shapes (and kwargs).
Every module is written here for this corpus (patterns like those of public exporter test
suites, no code copied); every one runs in PyTorch at its example and is a correct model: a
non-pass verdict is either a real exporter/runtime defect or a false alarm of onnxproof.
"""
import math
from typing import List, Tuple

import torch
from torch import nn
import torch.nn.functional as F

try:
    import torchvision
    from torchvision import ops as tvops
except ImportError:  # the corpus still loads; the detection entries then fail to build
    torchvision = tvops = None


def axes(**spec):
    """dynamic_axes (torch.onnx's spelling): axes(x={0: "batch"}) -> {"dynamic_axes": {...}}."""
    return {"dynamic_axes": spec}


def shapes(**spec):
    """dynamic_shapes (torch.export's spelling) with named Dims: shapes(x={0: "batch"})."""
    dims = {}
    out = {}
    for name, items in spec.items():
        out[name] = {axis: dims.setdefault(label, torch.export.Dim(label)) for axis, label in items.items()}
    return {"dynamic_shapes": out}


BATCH = {0: "batch"}


def _seed(n):
    torch.manual_seed(n)


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


# ---------------------------------------------------------------------------------------------
# casts

class FloatToIntTrunc(nn.Module):
    def forward(self, x):
        return (x * 10).to(torch.int32), (x * 10).long().float() / 10


class HalfRoundTrip(nn.Module):
    def forward(self, x):
        return x.half().float() * 3.0


class BoolIntCasts(nn.Module):
    def forward(self, x, ids):
        return (x > 0).float().sum(-1) + ids.float(), ids.to(torch.bool).int()


class ClampUint8(nn.Module):
    def forward(self, img):
        return (img * 255).clamp(0, 255).to(torch.uint8)


class TypeAsDouble(nn.Module):
    def forward(self, x, y):
        return (x.double() * y.double()).sum(-1).type_as(x)


# ---------------------------------------------------------------------------------------------
# integer ops

class FloorDivideInt(nn.Module):
    def forward(self, a, b):
        return torch.div(a, b, rounding_mode="floor"), a // 3


class RemainderInt(nn.Module):
    def forward(self, a):
        return torch.remainder(a, 4), torch.fmod(a, 4)


class Bitwise(nn.Module):
    def forward(self, a, b):
        return a & b, a | b, a ^ b, a << 2, b >> 1


class IntMatmul(nn.Module):
    def forward(self, a, b):
        return a @ b


class IntClampAbs(nn.Module):
    def forward(self, a, b):
        return a.abs().clamp(max=5), torch.maximum(a, b), -a


class TrueDivideInt(nn.Module):
    def forward(self, a, b):
        return a / b


class TruncDivInt(nn.Module):
    def forward(self, a, b):
        return torch.div(a, b, rounding_mode="trunc")


# ---------------------------------------------------------------------------------------------
# detection ops

class NMS(nn.Module):
    def forward(self, boxes, scores):
        return tvops.nms(boxes, scores, 0.5)


class BatchedNMS(nn.Module):
    def forward(self, boxes, scores, classes):
        return tvops.batched_nms(boxes, scores, classes, 0.5)


class RoIAlignRois(nn.Module):
    def forward(self, features, rois):
        return tvops.roi_align(features, rois, output_size=(3, 3), spatial_scale=0.5, sampling_ratio=2, aligned=True)


class RoIAlignBoxes(nn.Module):
    def forward(self, features, boxes):
        rois = torch.cat([torch.zeros(boxes.shape[0], 1), boxes], dim=1)
        return tvops.roi_align(features, rois, output_size=2, spatial_scale=1.0, sampling_ratio=-1)


class RoIPool(nn.Module):
    def forward(self, features, rois):
        return tvops.roi_pool(features, rois, output_size=(2, 2), spatial_scale=0.5)


class BoxIoU(nn.Module):
    def forward(self, a, b):
        return tvops.box_iou(a, b)


class BoxConvertClip(nn.Module):
    def forward(self, boxes):
        xyxy = tvops.box_convert(boxes, "cxcywh", "xyxy")
        return tvops.clip_boxes_to_image(xyxy, (20, 30))


class GeneralizedIoU(nn.Module):
    def forward(self, a, b):
        return tvops.generalized_box_iou(a, b)


class BoxAreaFilter(nn.Module):
    def forward(self, boxes):
        keep = tvops.remove_small_boxes(boxes, 2.0)
        return boxes[keep], tvops.box_area(boxes)


# ---------------------------------------------------------------------------------------------
# flips, rolls

class Flip(nn.Module):
    def forward(self, x):
        return torch.flip(x, dims=(2, 3)) - x


class FlipLrRot90(nn.Module):
    def forward(self, x):
        return torch.fliplr(x), torch.rot90(x, 1, dims=(1, 2))


class Roll(nn.Module):
    def forward(self, x):
        return torch.roll(x, shifts=(1, -2), dims=(1, 2))


# ---------------------------------------------------------------------------------------------
# pads

class Pad(nn.Module):
    def __init__(self, pad, mode="constant", value=0.0):
        super().__init__()
        self.pad, self.mode, self.value = pad, mode, value

    def forward(self, x):
        if self.mode == "constant":
            return F.pad(x, self.pad, mode="constant", value=self.value)
        return F.pad(x, self.pad, mode=self.mode)


class ReflectPadConv(nn.Module):
    def __init__(self):
        super().__init__()
        self.pad = nn.ReflectionPad2d(2)
        self.conv = nn.Conv2d(3, 4, 5)

    def forward(self, x):
        return self.conv(self.pad(x))


# ---------------------------------------------------------------------------------------------
# pixel shuffle

class PixelShuffle(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 12, 3, padding=1)
        self.shuffle = nn.PixelShuffle(2)

    def forward(self, x):
        return self.shuffle(self.conv(x))


class PixelUnshuffle(nn.Module):
    def forward(self, x):
        return F.pixel_unshuffle(x, 2)


class ChannelShuffle(nn.Module):
    def forward(self, x):
        b, c, h, w = x.shape
        return x.view(b, 2, c // 2, h, w).transpose(1, 2).reshape(b, c, h, w)


# ---------------------------------------------------------------------------------------------
# embedding bags and embeddings

class EmbeddingBagOffsets(nn.Module):
    def __init__(self):
        super().__init__()
        self.bag = nn.EmbeddingBag(20, 6, mode="sum")

    def forward(self, ids, offsets):
        return self.bag(ids, offsets)


class EmbeddingBag2D(nn.Module):
    def __init__(self):
        super().__init__()
        self.bag = nn.EmbeddingBag(20, 6, mode="mean")

    def forward(self, ids):
        return self.bag(ids)


class EmbeddingBagWeights(nn.Module):
    def __init__(self):
        super().__init__()
        self.bag = nn.EmbeddingBag(15, 4, mode="sum")

    def forward(self, ids, offsets, weights):
        return self.bag(ids, offsets, per_sample_weights=weights)


class EmbeddingPadding(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(12, 5, padding_idx=0)

    def forward(self, ids):
        return self.emb(ids).sum(1)


# ---------------------------------------------------------------------------------------------
# bucketize

class BucketizeBuffer(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("edges", torch.tensor([-1.0, -0.25, 0.0, 0.5, 1.5]))

    def forward(self, x):
        return torch.bucketize(x, self.edges)


class BucketizeInput(nn.Module):
    def forward(self, x, boundaries):
        return torch.bucketize(x, boundaries, right=True)


class SearchSorted(nn.Module):
    def forward(self, sorted_seq, values):
        return torch.searchsorted(sorted_seq, values)


# ---------------------------------------------------------------------------------------------
# masks

class KeyPaddingMask(nn.Module):
    def forward(self, scores, attention_mask):
        bias = (1.0 - attention_mask[:, None, :].float()) * -1e4
        return (scores + bias).softmax(-1)


class BoolMaskWhere(nn.Module):
    def forward(self, x, keep):
        return torch.where(keep, x, torch.zeros_like(x)).sum(-1)


class MaskedMeanPool(nn.Module):
    def forward(self, hidden, attention_mask):
        m = attention_mask.unsqueeze(-1).to(hidden.dtype)
        return (hidden * m).sum(1) / m.sum(1).clamp(min=1e-9)


class TrilMask(nn.Module):
    def forward(self, x):
        return torch.tril(x) + torch.triu(x, diagonal=1) * 0.5


# ---------------------------------------------------------------------------------------------
# cumsum and friends

class Cumsum(nn.Module):
    def forward(self, x):
        return x.cumsum(dim=1), x.flip(1).cumsum(1).flip(1)


class Cumprod(nn.Module):
    def forward(self, x):
        return torch.cumprod(x, dim=1)


class Cummax(nn.Module):
    def forward(self, x):
        values, indices = torch.cummax(x, dim=1)
        return values, indices


class Logcumsumexp(nn.Module):
    def forward(self, x):
        return torch.logcumsumexp(x, dim=1)


class CumsumInt(nn.Module):
    def forward(self, attention_mask):
        return attention_mask.cumsum(-1) * attention_mask - 1


# ---------------------------------------------------------------------------------------------
# normalization

class NormBlock(nn.Module):
    def __init__(self, norm, conv=True):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, padding=1) if conv else nn.Identity()
        self.norm = norm

    def forward(self, x):
        return self.norm(self.conv(x))


class L2Normalize(nn.Module):
    def forward(self, x):
        return F.normalize(x, p=2, dim=-1)


class RMSNormBlock(nn.Module):
    def __init__(self):
        super().__init__()
        self.norm = nn.RMSNorm(16, eps=1e-6)
        self.fc = nn.Linear(16, 16)

    def forward(self, x):
        return self.fc(self.norm(x))


class HandRMSNorm(nn.Module):
    def __init__(self):
        super().__init__()
        self.weight = nn.Parameter(1.0 + 0.1 * torch.randn(16))

    def forward(self, x):
        var = x.pow(2).mean(-1, keepdim=True)
        return self.weight * (x * torch.rsqrt(var + 1e-6))


class BatchNorm1dSeq(nn.Module):
    def __init__(self):
        super().__init__()
        self.bn = nn.BatchNorm1d(6)

    def forward(self, x):
        return self.bn(x)


# ---------------------------------------------------------------------------------------------
# attention

class MHAKeyPadding(nn.Module):
    def __init__(self):
        super().__init__()
        self.mha = nn.MultiheadAttention(16, 4, batch_first=True)

    def forward(self, x, key_padding_mask):
        out, _ = self.mha(x, x, x, key_padding_mask=key_padding_mask, need_weights=False)
        return out


class SDPAMask(nn.Module):
    def forward(self, q, k, v, attn_mask):
        return F.scaled_dot_product_attention(q, k, v, attn_mask=attn_mask)


class SDPACausal(nn.Module):
    def forward(self, q, k, v):
        return F.scaled_dot_product_attention(q, k, v, is_causal=True)


class EncoderLayerPadding(nn.Module):
    def __init__(self):
        super().__init__()
        self.layer = nn.TransformerEncoderLayer(16, 2, dim_feedforward=32, dropout=0.0, batch_first=True)

    def forward(self, x, src_key_padding_mask):
        return self.layer(x, src_key_padding_mask=src_key_padding_mask)


class HandAttention(nn.Module):
    def __init__(self):
        super().__init__()
        self.qkv = nn.Linear(16, 48)
        self.out = nn.Linear(16, 16)

    def forward(self, x, attention_mask):
        b, t, _ = x.shape
        q, k, v = self.qkv(x).view(b, t, 3, 2, 8).permute(2, 0, 3, 1, 4)
        scores = q @ k.transpose(-1, -2) / math.sqrt(8)
        scores = scores + (1.0 - attention_mask[:, None, None, :].float()) * torch.finfo(torch.float32).min
        attn = scores.softmax(-1)
        return self.out((attn @ v).transpose(1, 2).reshape(b, t, 16))


class MHACausal(nn.Module):
    def __init__(self):
        super().__init__()
        self.mha = nn.MultiheadAttention(8, 2, batch_first=True)

    def forward(self, x):
        t = x.shape[1]
        mask = torch.triu(torch.ones(t, t, dtype=torch.bool), diagonal=1)
        out, weights = self.mha(x, x, x, attn_mask=mask)
        return out, weights


# ---------------------------------------------------------------------------------------------
# List[Tensor] and tuple outputs

class SplitList(nn.Module):
    def forward(self, x) -> List[torch.Tensor]:
        return list(torch.split(x, [2, 3, 1], dim=1))


class ChunkUnbind(nn.Module):
    def forward(self, x):
        return torch.unbind(x.chunk(2, dim=-1)[0], dim=1)


class ListOfHeads(nn.Module):
    def __init__(self):
        super().__init__()
        self.heads = nn.ModuleList([nn.Linear(8, n) for n in (2, 3, 4)])

    def forward(self, x) -> List[torch.Tensor]:
        return [head(x) for head in self.heads]


class TupleOfLists(nn.Module):
    def forward(self, x):
        parts = list(x.split(2, dim=1))
        return parts, x.sum(1)


class DictOutput(nn.Module):
    def forward(self, x):
        return {"logits": x * 2, "probs": x.softmax(-1)}


# ---------------------------------------------------------------------------------------------
# in-place ops on inputs

class InplaceAddInput(nn.Module):
    def forward(self, x):
        x.add_(1.0)
        return x * 2


class InplaceSliceAssignInput(nn.Module):
    def forward(self, x):
        x[:, 0] = 0.0
        return x.relu_()


class InplaceClampInput(nn.Module):
    def forward(self, x, y):
        y.clamp_(min=0.0)
        x.mul_(y)
        return x.sum(-1)


# ---------------------------------------------------------------------------------------------
# 0-d and bool inputs

class ScalarScale(nn.Module):
    def forward(self, x, scale):
        return x * scale + scale


class ScalarBoolFlag(nn.Module):
    def forward(self, x, flag):
        return torch.where(flag, x.relu(), x)


class ScalarIntOffset(nn.Module):
    def forward(self, ids, offset):
        return ids + offset


class BoolTensorLogic(nn.Module):
    def forward(self, a, b):
        return a & ~b, (a | b).sum(-1), torch.logical_xor(a, b)


class ScalarTemperature(nn.Module):
    def forward(self, logits, temperature):
        return (logits / temperature).softmax(-1)


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


# ---------------------------------------------------------------------------------------------
# factories

def r(*shape):
    return torch.randn(*shape)


def ri(low, high, *shape):
    return torch.randint(low, high, shape)


def _boxes(n, w=30.0, h=20.0):
    xy = torch.rand(n, 2) * torch.tensor([w * 0.6, h * 0.6])
    wh = torch.rand(n, 2) * torch.tensor([w * 0.4, h * 0.4]) + 1.0
    return torch.cat([xy, xy + wh], dim=1)


def _rois(k, batch, w=16.0, h=16.0):
    boxes = _boxes(k, w, h)
    index = torch.randint(0, batch, (k, 1)).float()
    return torch.cat([index, boxes], dim=1)


def _mask(b, t):
    m = torch.ones(b, t, dtype=torch.int64)
    m[0, t - 2:] = 0
    return m


def _bool_padding(b, t):
    m = torch.zeros(b, t, dtype=torch.bool)
    m[0, t - 2:] = True
    return m


def _offsets(n_ids, bags):
    cuts = torch.sort(torch.randperm(n_ids - 1)[: bags - 1] + 1).values
    return torch.cat([torch.zeros(1, dtype=torch.int64), cuts])


SEQ = {0: "batch", 1: "seq"}


def _m(cls, *a, **k):
    def build():
        return cls(*a, **k).eval()
    return build


MODELS = []


FAMILY = {}  # name -> operator family
_current = ["misc"]


def family(label):
    _current[0] = label


def add(name, factory):
    MODELS.append((name, factory))
    FAMILY[name] = _current[0]


family("indexing")
add("index_select", lambda: (IndexSelect(), (r(2, 6, 3), torch.tensor([4, 0, 2])), axes(x=BATCH)))
add("advanced_index", lambda: (AdvancedIndex().eval(), (ri(0, 10, 5),), axes(idx={0: "n"})))
add("bool_mask_index", lambda: (BoolMaskIndex(), (r(3, 4),), axes(x=BATCH)))
add("slice_steps", lambda: (SliceSteps(), (r(2, 6, 5),), shapes(x=BATCH)))
add("ellipsis_none", lambda: (EllipsisNone(), (r(2, 3, 4),), axes(x=BATCH)))
add("index_put_clone", lambda: (IndexPutOutOfPlace(), (r(4, 3), torch.tensor([1, 3])), axes(x={1: "cols"})))
add("masked_fill_input", lambda: (MaskedFillInput(), (r(2, 5), torch.rand(2, 5) > 0.5), axes(x=BATCH, mask=BATCH)))
add("negative_indexing", lambda: (NegativeIndexing(), (r(2, 5, 3),), shapes(x={0: "batch", 1: "len"})))

family("scatter / gather")
add("gather_dim1", lambda: (GatherDim1(), (r(3, 5), ri(0, 5, 3, 2)), axes(x=BATCH, idx=BATCH)))
add("scatter_add", lambda: (ScatterAdd(), (r(3, 4), ri(0, 5, 3, 4)), axes(src=BATCH, idx=BATCH)))
add("scatter_reduce_amax", lambda: (ScatterReduceAmax(), (r(2, 6), ri(0, 4, 2, 6)), axes(src=BATCH, idx=BATCH)))
add("index_add", lambda: (IndexAdd(), (r(5, 3), r(4, 3), torch.tensor([0, 2, 2, 4])), {}))
add("gather_dynamic_axis", lambda: (GatherDynamicAxis(), (r(5, 3),), axes(x={0: "n"})))
add("take_along_topk", lambda: (TakeAlongTopk(), (r(3, 6),), axes(x=BATCH)))
add("scatter_one_hot", lambda: (ScatterOneHot(), (ri(0, 7, 4),), axes(labels=BATCH)))

family("loops")
add("static_loop", lambda: (_seed(1) or StaticLoop().eval(), (r(2, 8),), axes(x=BATCH)))
add("loop_over_sequence", lambda: (_seed(2) or LoopOverSequence().eval(), (r(2, 5, 4),), axes(x=BATCH)))
add("scripted_while_loop", lambda: (ScriptedWhileLoop(), (r(2, 3),), axes(x=BATCH)))
add("loop_dynamic_length", lambda: (LoopDynamicLength(), (r(2, 5, 3),), axes(x=SEQ)))

family("if")
add("if_static_flag", lambda: (_seed(3) or IfOnStaticFlag().eval(), (r(2, 6),), axes(x=BATCH)))
add("if_on_shape", lambda: (IfOnShape(), (r(2, 3, 4, 4),), axes(x=BATCH)))
add("torch_cond", lambda: (TorchCond(), (r(2, 3),), {}))
add("if_on_value", lambda: (IfOnValue(), (r(2, 3) + 1.0,), axes(x=BATCH)))
add("where_branches", lambda: (WhereBranches(), (r(3, 4),), axes(x=BATCH)))

family("RNNs")
add("lstm_h0_c0", lambda: (_seed(4) or LSTMWithState().eval(), (r(2, 5, 5), r(2, 2, 7), r(2, 2, 7)),
                           axes(x={0: "batch", 1: "seq"}, h0={1: "batch"}, c0={1: "batch"})))
add("gru_bidirectional_h0", lambda: (_seed(5) or GRUBidirectional().eval(), (r(6, 3, 4), r(2, 3, 6)),
                                     axes(x={0: "seq", 1: "batch"}, h0={1: "batch"})))
add("lstm_no_state", lambda: (_seed(6) or LSTMNoState().eval(), (r(3, 7, 6),), shapes(x=SEQ)))
add("rnn_list_axes", lambda: (_seed(7) or nn.RNN(5, 3, 1).eval(), (r(6, 4, 5), r(1, 4, 3)),
                              {"dynamic_axes": {"input": [0, 1], "hx": [1]}}))
add("lstm_cell_loop", lambda: (_seed(8) or LSTMCellLoop().eval(), (r(4, 2, 3),), axes(x={1: "batch"})))
add("gru_cell_step", lambda: (_seed(9) or GRUCellStep().eval(), (r(3, 4), r(3, 6)), axes(x=BATCH, h=BATCH)))

family("interpolate")
add("interp_nearest_x2", lambda: (Interp(scale_factor=2, mode="nearest"), (r(1, 2, 5, 5),), axes(x=BATCH)))
add("interp_bilinear_size", lambda: (Interp(size=(7, 9), mode="bilinear", align_corners=False), (r(2, 3, 4, 5),),
                                     axes(x={0: "batch", 2: "h", 3: "w"})))
add("interp_bilinear_align", lambda: (Interp(scale_factor=1.5, mode="bilinear", align_corners=True), (r(1, 2, 6, 6),),
                                      axes(x=BATCH)))
add("interp_bicubic", lambda: (Interp(scale_factor=2, mode="bicubic", align_corners=False), (r(1, 2, 4, 4),),
                               axes(x=BATCH)))
add("interp_to_other", lambda: (InterpToOther(), (r(2, 3, 4, 4), r(2, 3, 8, 6)),
                                axes(x={0: "batch"}, ref={0: "batch", 2: "h", 3: "w"})))
add("interp_trilinear", lambda: (Interp(scale_factor=2, mode="trilinear"), (r(1, 2, 3, 3, 3),), axes(x=BATCH)))
add("interp_nearest_exact", lambda: (Interp(size=(5, 7), mode="nearest-exact"), (r(1, 2, 3, 4),), axes(x=BATCH)))
add("interp_antialias_down", lambda: (Interp(size=(4, 4), mode="bilinear", antialias=True), (r(1, 2, 12, 12),),
                                      axes(x=BATCH)))
add("upsample_conv", lambda: (_seed(10) or UpsampleModule().eval(), (r(2, 3, 5, 5),),
                              axes(x={0: "batch", 2: "h", 3: "w"})))

family("pooling")
add("maxpool_ceil", lambda: (MaxPoolCeil(), (r(2, 3, 8, 8),), axes(x={0: "batch", 2: "h", 3: "w"})))
add("avgpool_no_pad_count", lambda: (AvgPoolNoPad(), (r(2, 3, 7, 7),), axes(x=BATCH)))
add("adaptive_avg_global", lambda: (AdaptiveAvgGlobal(), (r(2, 4, 6, 6),), axes(x={0: "batch", 2: "h", 3: "w"})))
add("adaptive_max_fixed", lambda: (AdaptiveMaxFixed(), (r(2, 3, 6, 6),), axes(x=BATCH)))
add("maxpool_unpool", lambda: (MaxPoolUnpool(), (r(1, 2, 6, 6),), axes(x=BATCH)))
add("avgpool1d", lambda: (AvgPool1d(), (r(2, 3, 12),), axes(x=BATCH)))
add("lp_pool2d", lambda: (LpPool(), (r(2, 3, 6, 6),), axes(x=BATCH)))
add("maxpool3d", lambda: (MaxPool3d(), (r(1, 2, 4, 4, 4),), axes(x=BATCH)))

family("reductions")
add("sum_mean_prod", lambda: (SumMeanProd(), (r(2, 3, 4),), axes(x=BATCH)))
add("amax_std_logsumexp", lambda: (AmaxStdLogsumexp(), (r(3, 5),), axes(x=BATCH)))
add("norms", lambda: (Norms(), (r(2, 3, 4),), axes(x=BATCH)))
add("all_any", lambda: (AllAny(), (r(3, 4),), axes(x=BATCH)))
add("argmax_argmin", lambda: (ArgmaxArgmin(), (r(3, 6),), axes(x=BATCH)))
add("median_dim", lambda: (Median(), (r(3, 5),), axes(x=BATCH)))
add("int_mean_sum", lambda: (IntMean(), (ri(0, 9, 3, 4),), axes(counts=BATCH)))

family("einsum")
add("einsum_bmm", lambda: (EinsumBmm(), (r(2, 3, 4), r(2, 4, 5)), axes(a=BATCH, b=BATCH)))
add("einsum_attention", lambda: (EinsumAttention(), (r(2, 2, 5, 4), r(2, 2, 6, 4)),
                                 axes(q={0: "batch", 2: "tq"}, k={0: "batch", 2: "tk"})))
add("einsum_diagonal", lambda: (EinsumDiagonal(), (r(2, 4, 4),), axes(x=BATCH)))
add("einsum_outer_sum", lambda: (EinsumOuterSum(), (r(2, 3), r(2, 4)), axes(u=BATCH, v=BATCH)))

family("topk / sort")
add("topk", lambda: (Topk(), (r(3, 8),), axes(x=BATCH)))
add("sort_descending", lambda: (SortDescending(), (r(2, 6),), axes(x=BATCH)))
add("argsort", lambda: (Argsort(), (r(3, 5),), axes(x=BATCH)))
add("topk_dynamic_k", lambda: (TopkDynamicK(), (r(2, 8),), axes(x={0: "batch", 1: "n"})))
add("kthvalue", lambda: (Kthvalue(), (r(3, 5),), axes(x=BATCH)))

family("nonzero")
add("nonzero", lambda: (Nonzero(), (r(3, 4),), axes(x=BATCH)))
add("where_one_arg", lambda: (WhereOneArg(), (r(3, 4),), axes(x=BATCH)))
add("masked_select", lambda: (MaskedSelect(), (r(3, 4),), axes(x=BATCH)))
add("unique_counts", lambda: (UniqueCounts(), (ri(0, 6, 10),), axes(ids={0: "n"})))

family("arange with dynamic sizes")
add("positional_arange", lambda: (_seed(11) or PositionalArange().eval(), (r(2, 6, 8),), axes(x=SEQ)))
add("float_arange", lambda: (FloatArange(), (r(2, 4),), axes(x={0: "batch", 1: "n"})))
add("causal_mask_arange", lambda: (CausalMaskArange(), (r(2, 5, 5),), axes(scores={0: "batch", 1: "t", 2: "t"})))
add("linspace_dynamic", lambda: (Linspace(), (r(2, 5),), axes(x={0: "batch", 1: "n"})))
add("sinusoidal_timestep", lambda: (SinusoidalTimestep(), (torch.tensor([3, 17, 250]),), axes(t=BATCH)))

family("casts")
add("float_to_int_trunc", lambda: (FloatToIntTrunc(), (r(3, 4),), axes(x=BATCH)))
add("half_round_trip", lambda: (HalfRoundTrip(), (r(3, 4),), axes(x=BATCH)))
add("bool_int_casts", lambda: (BoolIntCasts(), (r(3, 4), ri(0, 3, 3)), axes(x=BATCH, ids=BATCH)))
add("clamp_uint8", lambda: (ClampUint8(), (torch.rand(1, 3, 4, 4),), axes(img=BATCH)))
add("type_as_double", lambda: (TypeAsDouble(), (r(2, 5), r(2, 5)), axes(x=BATCH, y=BATCH)))

family("integer ops")
add("floor_divide_int", lambda: (FloorDivideInt(), (ri(-20, 20, 3, 4), ri(1, 5, 3, 4)), axes(a=BATCH, b=BATCH)))
add("remainder_int", lambda: (RemainderInt(), (ri(-20, 20, 3, 4),), axes(a=BATCH)))
add("bitwise_int32", lambda: (Bitwise(), (ri(0, 64, 3, 4).int(), ri(0, 64, 3, 4).int()), axes(a=BATCH, b=BATCH)))
add("int_matmul", lambda: (IntMatmul(), (ri(-5, 5, 3, 4), ri(-5, 5, 4, 2)), axes(a=BATCH)))
add("int_clamp_abs", lambda: (IntClampAbs(), (ri(-9, 9, 3, 4), ri(-9, 9, 3, 4)), axes(a=BATCH, b=BATCH)))
add("true_divide_int", lambda: (TrueDivideInt(), (ri(-9, 9, 3, 4), ri(1, 6, 3, 4)), axes(a=BATCH, b=BATCH)))
add("trunc_divide_int", lambda: (TruncDivInt(), (ri(-20, 20, 3, 4), ri(1, 5, 3, 4)), axes(a=BATCH, b=BATCH)))

family("detection ops")
add("nms", lambda: (NMS(), (_boxes(8), torch.rand(8)), axes(boxes={0: "n"}, scores={0: "n"})))
add("batched_nms", lambda: (BatchedNMS(), (_boxes(8), torch.rand(8), ri(0, 3, 8)),
                            axes(boxes={0: "n"}, scores={0: "n"}, classes={0: "n"})))
add("roi_align_rois", lambda: (RoIAlignRois(), (r(2, 3, 8, 8), _rois(4, 2)), axes(rois={0: "k"})))
add("roi_align_boxes", lambda: (RoIAlignBoxes(), (r(1, 3, 10, 10), _boxes(3, 10.0, 10.0)), axes(boxes={0: "k"})))
add("roi_pool", lambda: (RoIPool(), (r(1, 2, 8, 8), _rois(3, 1)), axes(rois={0: "k"})))
add("box_iou", lambda: (BoxIoU(), (_boxes(4), _boxes(5)), axes(a={0: "n"}, b={0: "m"})))
add("box_convert_clip", lambda: (BoxConvertClip(), (torch.cat([torch.rand(5, 2) * 20, torch.rand(5, 2) * 8 + 1], 1),),
                                 axes(boxes={0: "n"})))
add("generalized_box_iou", lambda: (GeneralizedIoU(), (_boxes(3), _boxes(4)), axes(a={0: "n"}, b={0: "m"})))
add("box_area_filter", lambda: (BoxAreaFilter(), (_boxes(6),), axes(boxes={0: "n"})))

family("flips")
add("flip_hw", lambda: (Flip(), (r(2, 3, 4, 5),), axes(x=BATCH)))
add("fliplr_rot90", lambda: (FlipLrRot90(), (r(2, 3, 4),), axes(x=BATCH)))
add("roll", lambda: (Roll(), (r(2, 4, 5),), axes(x=BATCH)))

family("pads")
add("pad_constant_value", lambda: (Pad((1, 2, 0, 1), value=-0.5), (r(2, 3, 4),), axes(x=BATCH)))
add("pad_reflect_conv", lambda: (_seed(12) or ReflectPadConv().eval(), (r(1, 3, 8, 8),), axes(x={0: "batch", 2: "h", 3: "w"})))
add("pad_replicate", lambda: (Pad((1, 1, 2, 0), mode="replicate"), (r(2, 3, 4, 4),), axes(x=BATCH)))
add("pad_circular", lambda: (Pad((2, 1), mode="circular"), (r(2, 3, 6),), axes(x=BATCH)))
add("pad_negative_crop", lambda: (Pad((-1, -1, 0, 0)), (r(2, 3, 5, 6),), axes(x=BATCH)))

family("pixel shuffle")
add("pixel_shuffle", lambda: (_seed(13) or PixelShuffle().eval(), (r(2, 3, 4, 4),), axes(x={0: "batch", 2: "h", 3: "w"})))
add("pixel_unshuffle", lambda: (PixelUnshuffle(), (r(2, 3, 4, 6),), axes(x=BATCH)))
add("channel_shuffle", lambda: (ChannelShuffle(), (r(2, 6, 3, 3),), axes(x=BATCH)))

family("embedding bags")
add("embedding_bag_offsets", lambda: (_seed(14) or EmbeddingBagOffsets().eval(), (ri(0, 20, 9), _offsets(9, 3)),
                                      axes(ids={0: "n_ids"}, offsets={0: "bags"})))
add("embedding_bag_2d", lambda: (_seed(15) or EmbeddingBag2D().eval(), (ri(0, 20, 3, 4),), axes(ids=BATCH)))
add("embedding_bag_weights", lambda: (_seed(16) or EmbeddingBagWeights().eval(), (ri(0, 15, 7), _offsets(7, 2), torch.rand(7)),
                                      axes(ids={0: "n_ids"}, weights={0: "n_ids"})))
add("embedding_padding_idx", lambda: (_seed(17) or EmbeddingPadding().eval(), (ri(0, 12, 2, 5),), axes(ids=SEQ)))

family("bucketize")
add("bucketize_buffer", lambda: (BucketizeBuffer(), (r(3, 4),), axes(x=BATCH)))
add("bucketize_input", lambda: (BucketizeInput(), (r(3, 4), torch.tensor([-1.0, 0.0, 0.3, 1.0])), axes(x=BATCH)))
add("searchsorted", lambda: (SearchSorted(), (torch.sort(r(2, 6)).values, r(2, 3)),
                             axes(sorted_seq=BATCH, values=BATCH)))

family("masks")
add("key_padding_softmax", lambda: (KeyPaddingMask(), (r(2, 5, 5), _mask(2, 5)),
                                    axes(scores={0: "batch", 1: "t", 2: "t"}, attention_mask={0: "batch", 1: "t"})))
add("bool_mask_where", lambda: (BoolMaskWhere(), (r(2, 5), torch.rand(2, 5) > 0.3), axes(x=BATCH, keep=BATCH)))
add("masked_mean_pool", lambda: (MaskedMeanPool(), (r(2, 6, 4), _mask(2, 6)),
                                 axes(hidden=SEQ, attention_mask=SEQ)))
add("tril_triu", lambda: (TrilMask(), (r(2, 4, 4),), axes(x=BATCH)))

family("cumsum")
add("cumsum_reverse", lambda: (Cumsum(), (r(2, 5),), axes(x=SEQ)))
add("cumprod", lambda: (Cumprod(), (torch.rand(2, 5) + 0.5,), axes(x=BATCH)))
add("cummax", lambda: (Cummax(), (r(2, 5),), axes(x=BATCH)))
add("logcumsumexp", lambda: (Logcumsumexp(), (r(2, 5),), axes(x=BATCH)))
add("cumsum_int_positions", lambda: (CumsumInt(), (_mask(2, 6),), axes(attention_mask=SEQ)))

family("normalization")
add("batchnorm2d", lambda: (_seed(18) or _bn_eval(NormBlock(nn.BatchNorm2d(8))), (r(2, 3, 5, 5),), axes(x=BATCH)))
add("layernorm", lambda: (_seed(19) or _affine(nn.LayerNorm(6)), (r(2, 4, 6),), axes(input=SEQ)))
add("groupnorm", lambda: (_seed(20) or _affine(NormBlock(nn.GroupNorm(2, 8))), (r(2, 3, 5, 5),), axes(x=BATCH)))
add("instancenorm2d", lambda: (_seed(21) or _affine(NormBlock(nn.InstanceNorm2d(8, affine=True))), (r(2, 3, 5, 5),),
                               axes(x={0: "batch", 2: "h", 3: "w"})))
add("l2_normalize", lambda: (L2Normalize(), (r(3, 8),), axes(x=BATCH)))
add("rmsnorm", lambda: (_seed(22) or RMSNormBlock().eval(), (r(2, 3, 16),), axes(x=SEQ)))
add("hand_rmsnorm", lambda: (_seed(23) or HandRMSNorm().eval(), (r(2, 3, 16),), axes(x=SEQ)))
add("local_response_norm", lambda: (nn.LocalResponseNorm(3).eval(), (r(2, 6, 4, 4),), axes(input=BATCH)))
add("batchnorm1d_seq", lambda: (_seed(24) or _bn_eval(BatchNorm1dSeq()), (r(3, 6, 5),), axes(x={0: "batch", 2: "len"})))

family("attention")
add("mha_key_padding", lambda: (_seed(25) or MHAKeyPadding().eval(), (r(2, 5, 16), _bool_padding(2, 5)),
                                axes(x=SEQ, key_padding_mask=SEQ)))
add("sdpa_bool_mask", lambda: (SDPAMask(), (r(2, 2, 4, 8), r(2, 2, 6, 8), r(2, 2, 6, 8), torch.rand(2, 1, 4, 6) > 0.2),
                               axes(q=BATCH, k=BATCH, v=BATCH, attn_mask=BATCH)))
add("sdpa_causal", lambda: (SDPACausal(), (r(2, 2, 5, 8), r(2, 2, 5, 8), r(2, 2, 5, 8)),
                            axes(q={0: "batch", 2: "t"}, k={0: "batch", 2: "t"}, v={0: "batch", 2: "t"})))
add("encoder_layer_padding", lambda: (_seed(26) or EncoderLayerPadding().eval(), (r(2, 5, 16), _bool_padding(2, 5)),
                                      axes(x=SEQ, src_key_padding_mask=SEQ)))
add("hand_attention_mask", lambda: (_seed(27) or HandAttention().eval(), (r(2, 6, 16), _mask(2, 6)),
                                    axes(x=SEQ, attention_mask=SEQ)))
add("mha_causal_weights", lambda: (_seed(28) or MHACausal().eval(), (r(2, 5, 8),), axes(x=SEQ)))

family("List[Tensor] outputs")
add("split_list_output", lambda: (SplitList(), (r(2, 6, 3),), axes(x=BATCH)))
add("chunk_unbind_tuple", lambda: (ChunkUnbind(), (r(2, 3, 4),), axes(x=BATCH)))
add("list_of_heads", lambda: (_seed(29) or ListOfHeads().eval(), (r(3, 8),), axes(x=BATCH)))
add("tuple_of_lists", lambda: (TupleOfLists(), (r(2, 6),), axes(x=BATCH)))
add("dict_output", lambda: (DictOutput(), (r(2, 5),), axes(x=BATCH)))

family("in-place ops on inputs")
add("inplace_add_input", lambda: (InplaceAddInput(), (r(2, 3),), axes(x=BATCH)))
add("inplace_slice_assign_input", lambda: (InplaceSliceAssignInput(), (r(3, 4),), axes(x=BATCH)))
add("inplace_clamp_two_inputs", lambda: (InplaceClampInput(), (r(2, 4), r(2, 4)), axes(x=BATCH, y=BATCH)))

family("0-d and bool inputs")
add("scalar_scale", lambda: (ScalarScale(), (r(2, 3), torch.tensor(1.5)), axes(x=BATCH)))
add("scalar_bool_flag", lambda: (ScalarBoolFlag(), (r(2, 3), torch.tensor(True)), axes(x=BATCH)))
add("scalar_int_offset", lambda: (ScalarIntOffset(), (ri(0, 10, 2, 4), torch.tensor(3)), axes(ids=BATCH)))
add("bool_tensor_logic", lambda: (BoolTensorLogic(), (torch.rand(3, 4) > 0.5, torch.rand(3, 4) > 0.5), axes(a=BATCH, b=BATCH)))
add("scalar_temperature", lambda: (ScalarTemperature(), (r(2, 5), torch.tensor(0.7)), axes(logits=BATCH)))

family("forward(*args) and kwargs")
add("varargs_sum", lambda: (_seed(30) or VarArgsSum().eval(), (r(2, 4), r(2, 4), r(2, 4)), {}))
add("varargs_concat_dynamic", lambda: (VarArgsConcat(), (r(2, 3), r(2, 2)),
                                       axes(input_0=BATCH, input_1=BATCH)))
add("kwargs_mask", lambda: (_seed(31) or KwargsMask().eval(), (r(2, 4, 6),),
                            {"kwargs": {"mask": _mask(2, 4), "scale": 0.5}, **axes(x=SEQ, mask=SEQ)}))
add("wrapped_varargs_dict", lambda: (_seed(32) or WrappedVarArgs().eval(), (ri(0, 30, 2, 5), _mask(2, 5)),
                                     axes(input_0=SEQ, input_1=SEQ)))

family("misc layers users hit")
add("conv_transpose", lambda: (_seed(33) or ConvTranspose().eval(), (r(2, 4, 5, 5),), axes(x={0: "batch", 2: "h", 3: "w"})))
add("depthwise_dilated", lambda: (_seed(34) or DepthwiseDilated().eval(), (r(2, 6, 7, 7),), axes(x=BATCH)))
add("conv1d_causal", lambda: (_seed(35) or Conv1dCausal().eval(), (r(2, 4, 9),), axes(x={0: "batch", 2: "len"})))
add("activations", lambda: (Activations(), (r(3, 6),), axes(x=BATCH)))
add("softmax_variants", lambda: (SoftmaxVariants(), (r(3, 6),), axes(x=BATCH)))
add("expand_repeat_tile", lambda: (ExpandRepeat(), (r(2, 4),), axes(x=BATCH)))
add("unfold_patches", lambda: (UnfoldPatches(), (r(2, 3, 4, 4),), axes(x=BATCH)))
add("tensor_unfold", lambda: (TensorUnfold(), (r(2, 9),), axes(x=BATCH)))
add("cross_entropy", lambda: (CrossEntropyLoss(), (r(4, 5), ri(0, 5, 4)), axes(logits=BATCH, target=BATCH)))
add("affine_grid_sample", lambda: (AffineGrid(), (r(2, 3, 6, 6), torch.eye(2, 3)[None].repeat(2, 1, 1) + 0.1 * r(2, 2, 3)),
                                   {}))
add("tensor_clamp_bounds", lambda: (MinMaxClamp(), (r(2, 5), torch.full((2, 5), -0.5), torch.full((2, 5), 0.7)),
                                    axes(x=BATCH, lo=BATCH, hi=BATCH)))
add("view_as_other_shape", lambda: (ViewAsOther(), (r(2, 12), r(2, 3, 4)), axes(x=BATCH, y=BATCH)))
add("erfinv_ndtri", lambda: (Erfinv(), (torch.rand(3, 4),), axes(p=BATCH)))
add("atan2_hypot", lambda: (Atan2Hypot(), (r(3, 4), r(3, 4)), axes(y=BATCH, x=BATCH)))
add("triu_indices_gather", lambda: (TriuIndices(), (r(2, 4, 4),), axes(x=BATCH)))
add("diff", lambda: (Diff(), (r(2, 6),), axes(x=SEQ)))
add("cdist", lambda: (Cdist(), (r(2, 4, 3), r(2, 5, 3)), axes(a={0: "batch", 1: "n"}, b={0: "batch", 1: "m"})))
add("baddbmm", lambda: (Baddbmm(), (r(2, 3, 5), r(2, 3, 4), r(2, 4, 5)), axes(c=BATCH, a=BATCH, b=BATCH)))
add("sign_floor_round_frac", lambda: (Sign(), (r(3, 4) * 3,), axes(x=BATCH)))


# =============================================================================================
# issue 40: declared axes the model itself fixes or couples, outputs ending in inf / NaN, random
# operators. Own modules, seeded, CPU. ISSUE40_EXPECT says what a correct proof should say of each
# (the code it should show: AXIS_FIXED_BY_MODEL, RANDOM_OUTPUT, REFERENCE_NOT_FINITE, or "" for a
# plain pass, e.g. axes that are coupled rather than fixed); RESULTS.md's "Issue 40 cases" section
# compares it with what each run showed.
# =============================================================================================

# --- over-declared axes: PyTorch's own forward rejects other sizes of the declared axis --------

class I40GRUFeatures(nn.Module):
    """A GRU over 6 features: batch varies, the feature size cannot."""

    def __init__(self):
        super().__init__()
        self.gru = nn.GRU(6, 5, batch_first=True)
        self.head = nn.Linear(5, 3)

    def forward(self, x):
        out, _ = self.gru(x)
        return self.head(out[:, -1])


class I40LSTMStateHidden(nn.Module):
    """A two-layer LSTM with its state as inputs: the input's features and the state's hidden
    size are both declared dynamic; batch and time really vary."""

    def __init__(self):
        super().__init__()
        self.lstm = nn.LSTM(8, 4, num_layers=2, batch_first=True)

    def forward(self, x, h0, c0):
        out, (h, c) = self.lstm(x, (h0, c0))
        return out, h


class I40ConvChannels(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, padding=1)

    def forward(self, x):
        return torch.relu(self.conv(x)).mean((2, 3))


class I40Conv1dChannels(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv1d(4, 6, 3)

    def forward(self, x):
        return self.conv(x).tanh()


class I40RPNHead(nn.Module):
    """An RPN-like head on a 16-channel feature map: objectness (B, H*W*3) and box deltas
    (B, H*W*3, 4); batch, h and w vary, the channel count cannot."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(16, 16, 3, padding=1)
        self.cls = nn.Conv2d(16, 3, 1)
        self.bbox = nn.Conv2d(16, 12, 1)

    def forward(self, feature):
        t = torch.relu(self.conv(feature))
        logits = self.cls(t).permute(0, 2, 3, 1).flatten(1)
        deltas = self.bbox(t).permute(0, 2, 3, 1).reshape(feature.shape[0], -1, 4)
        return logits, deltas


class I40LinearIn(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(10, 4)

    def forward(self, x):
        return self.fc(x).relu()


class I40LayerNormMLP(nn.Module):
    """LayerNorm(12) then an MLP over tokens: batch and tokens vary, d_model cannot."""

    def __init__(self):
        super().__init__()
        self.norm = nn.LayerNorm(12)
        self.fc1 = nn.Linear(12, 24)
        self.fc2 = nn.Linear(24, 12)

    def forward(self, x):
        return x + self.fc2(F.gelu(self.fc1(self.norm(x))))


class I40EinsumWeight(nn.Module):
    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(torch.randn(8, 5) * 0.3)

    def forward(self, x):
        return torch.einsum("btd,dk->btk", x, self.w)


class I40BatchNorm2dChannels(nn.Module):
    def __init__(self):
        super().__init__()
        self.bn = nn.BatchNorm2d(6)

    def forward(self, x):
        return torch.relu(self.bn(x))


class I40BatchNorm1dChannels(nn.Module):
    def __init__(self):
        super().__init__()
        self.bn = nn.BatchNorm1d(5)

    def forward(self, x):
        return self.bn(x) * 2.0


class I40SplitSizes(nn.Module):
    """split with fixed sizes [2, 3]: the split axis must be 5."""

    def forward(self, x):
        a, b = x.split([2, 3], dim=1)
        return a.sum(1, keepdim=True) * b


class I40SplitSizesSeq(nn.Module):
    """split([3, 4]) on the last axis of a sequence: time varies, the split axis cannot."""

    def forward(self, x):
        q, v = torch.split(x, [3, 4], dim=-1)
        return torch.softmax(q, dim=1).sum(-1, keepdim=True) * v


class I40UnflattenHeads(nn.Module):
    """unflatten(-1, (4, 8)): the feature axis must be 32."""

    def forward(self, x):
        heads = x.unflatten(-1, (4, 8))
        return heads.softmax(-1).transpose(1, 2)


class I40RepeatsBuffer(nn.Module):
    """repeat_interleave with a fixed repeats tensor of length 3 on axis 1: that axis must be 3."""

    def __init__(self):
        super().__init__()
        self.register_buffer("repeats", torch.tensor([1, 2, 3]))

    def forward(self, x):
        return torch.repeat_interleave(x, self.repeats, dim=1) * 0.5


class I40LearnedPositions(nn.Module):
    """A learned positional embedding of fixed length 6 added whole: seq cannot vary, except that
    PyTorch broadcasts seq=1 onto the table (output of length 6) and runs it."""

    def __init__(self):
        super().__init__()
        self.pos = nn.Parameter(torch.randn(1, 6, 8) * 0.1)
        self.proj = nn.Linear(8, 8)

    def forward(self, x):
        return self.proj(x + self.pos)


class I40LearnedPositionsExpand(nn.Module):
    """The same table expanded onto the input (expand_as): every other seq, 1 included, raises."""

    def __init__(self):
        super().__init__()
        self.pos = nn.Parameter(torch.randn(1, 6, 8) * 0.1)
        self.proj = nn.Linear(8, 8)

    def forward(self, x):
        return self.proj(x + self.pos.expand_as(x))


class I40TiedOutputTable(nn.Module):
    """Logits against an embedding table passed in (tied weights) with a fixed bias of 20 entries:
    the table's vocabulary axis cannot vary; batch and time can."""

    def __init__(self):
        super().__init__()
        self.bias = nn.Parameter(torch.randn(20) * 0.1)

    def forward(self, hidden, table):
        return hidden @ table.t() + self.bias


class I40OneHotTable(nn.Module):
    """one_hot(ids, 10) @ table: the table passed in must have 10 rows."""

    def forward(self, ids, table):
        return F.one_hot(ids, 10).to(table.dtype) @ table


class I40ShapeAssert(nn.Module):
    """The model's own check on its input: the feature axis must be 6."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(6, 2)

    def forward(self, x):
        if x.shape[-1] != 6:
            raise ValueError(f"expected 6 features, got {x.shape[-1]}")
        return self.fc(x)


# --- over-declared axes that are coupled, not fixed: each can vary, together with another ------

class I40ReshapeOntoOther(nn.Module):
    """x (a, 4, 6) reshaped onto y (b, 24): element counts tie a to b."""

    def forward(self, x, y):
        return x.reshape(y.shape) * y


class I40ReshapeNumelDouble(nn.Module):
    """x (2, n) reshaped onto y (m,): m = 2n."""

    def forward(self, x, y):
        return x.reshape(y.shape) + y.flip(0)


class I40ViewAsHalf(nn.Module):
    """x (batch, k, 8) viewed as y (batch, j, 4): j = 2k, batch free."""

    def forward(self, x, y):
        return x.view_as(y) - y


class I40AddOwnLabels(nn.Module):
    """x + y with each input's feature axis under its own label: they must be equal."""

    def forward(self, x, y):
        return torch.tanh(x + y)


class I40SumThreeOwnLabels(nn.Module):
    """x + y + z, three labels that must all be equal, with a free batch."""

    def forward(self, x, y, z):
        return x * y + z


class I40MatmulInner(nn.Module):
    """a (batch, n, k) @ b (batch, k2, m): k == k2, n and m free."""

    def forward(self, a, b):
        return torch.matmul(a, b)


class I40CatOtherAxes(nn.Module):
    """cat along time: the batch axes (two labels) must be equal, the two times are free."""

    def forward(self, x, y):
        return torch.cat([x, y * 2.0], dim=1)


class I40RepeatInterleaveOther(nn.Module):
    """repeat_interleave(x, repeats, dim=0): repeats must have one entry per row of x."""

    def forward(self, x, repeats):
        return torch.repeat_interleave(x, repeats, dim=0) + 1.0


class I40PixelShuffleChannels(nn.Module):
    """pixel_shuffle(2) on the input: channels must be a multiple of 4."""

    def forward(self, x):
        return F.pixel_shuffle(x, 2)


class I40PixelShufflePlusSkip(nn.Module):
    """pixel_shuffle(x) + skip: x's channels are 4 times the skip's, its h and w half the skip's."""

    def forward(self, x, skip):
        return F.pixel_shuffle(x, 2) + skip


class I40ChunkGLU(nn.Module):
    """A hand GLU: chunk(2) then a * sigmoid(b): the axis must be even."""

    def forward(self, x):
        a, b = x.chunk(2, dim=-1)
        return a * torch.sigmoid(b)


class I40GroupNormNoAffine(nn.Module):
    """GroupNorm(2) without affine parameters: channels must be a multiple of 2."""

    def __init__(self):
        super().__init__()
        self.norm = nn.GroupNorm(2, 8, affine=False)

    def forward(self, x):
        return self.norm(x)


class I40SlicedPositions(nn.Module):
    """A learned positional table of 16 sliced to the sequence: seq varies up to 16."""

    def __init__(self):
        super().__init__()
        self.pos = nn.Parameter(torch.randn(16, 8) * 0.1)

    def forward(self, x):
        return x + self.pos[: x.shape[1]]


# --- outputs ending in inf / NaN (the pattern is the model's, not the random input's) --------

def _every_third(n):
    """A bool mask over n positions, True at 0, 3, 6, ... (built in the graph from the size)."""
    return torch.arange(n) % 3 == 0


class I40RsqrtZeros(nn.Module):
    """rsqrt of a sum of zeros: +inf everywhere."""

    def forward(self, x):
        return torch.rsqrt((x * 0.0).abs().sum(-1))


class I40LogZeros(nn.Module):
    """log of zeros: -inf everywhere."""

    def forward(self, x):
        return torch.log(torch.relu(x) * 0.0)


class I40ZeroOverZero(nn.Module):
    """0/0: NaN everywhere."""

    def forward(self, x):
        z = x.abs() * 0.0
        return z / z


class I40SqrtNegative(nn.Module):
    """sqrt of a negative number: NaN everywhere."""

    def forward(self, x):
        return torch.sqrt(-(x * x) - 1.0)


class I40ReciprocalPartial(nn.Module):
    """1 / x with every third column set to +0 by the model: +inf there, finite elsewhere."""

    def forward(self, x):
        return 1.0 / x.masked_fill(_every_third(x.shape[-1]), 0.0)


class I40ReciprocalSignedZero(nn.Module):
    """1 / (x * m) with m = 0 on every third column: x * 0 keeps x's sign, so -inf where x < 0 and
    +inf where x > 0 there, finite elsewhere (the class comparison must tell -inf from +inf)."""

    def forward(self, x):
        m = (~_every_third(x.shape[-1])).to(x.dtype)
        return 1.0 / (x * m)


class I40PartialZeroOverZero(nn.Module):
    """(x * keep) / keep: NaN on every third column (0/0), x elsewhere."""

    def forward(self, x):
        keep = (~_every_third(x.shape[-1])).to(x.dtype)
        return (x * keep) / keep


class I40MaskedMaxNegInf(nn.Module):
    """masked_fill(-inf) then max over time: row 0 of the 4 is masked entirely (-inf), the others in part."""

    def forward(self, scores):
        t = scores.shape[-1]
        mask = torch.arange(t)[None, :] >= torch.arange(4)[:, None]  # row g keeps positions < g
        return scores.masked_fill(mask, float("-inf")).amax(-1)


class I40SoftmaxMaskedRow(nn.Module):
    """Attention with the first query row masked entirely: softmax gives NaN on that row."""

    def forward(self, q, k):
        scores = q @ k.transpose(-1, -2)
        rows = torch.arange(scores.shape[-2])[:, None] == 0
        return torch.softmax(scores.masked_fill(rows, float("-inf")), dim=-1) @ k


class I40ExpOverflow(nn.Module):
    """exp(x + bias) with bias 200 on the last two columns: +inf there, finite elsewhere."""

    def __init__(self):
        super().__init__()
        self.register_buffer("bias", torch.tensor([0.0, 0.5, 1.0, 200.0, 200.0]))

    def forward(self, x):
        return torch.exp(x + self.bias)


class I40InfMinusInf(nn.Module):
    """exp overflow then y - y: NaN where y is inf, plus x elsewhere."""

    def __init__(self):
        super().__init__()
        self.register_buffer("bias", torch.tensor([0.0, 300.0, 0.0, 300.0]))

    def forward(self, x):
        y = torch.exp(x + self.bias)
        return (y - y) + x


class I40LayerNormNoEps(nn.Module):
    """A hand layer norm without eps: rows the model zeroes (every third) are 0/0 = NaN."""

    def forward(self, x):
        x = x.masked_fill(_every_third(x.shape[0])[:, None], 0.0)
        centered = x - x.mean(-1, keepdim=True)
        return centered / centered.pow(2).mean(-1, keepdim=True).sqrt()


class I40LogCausalBias(nn.Module):
    """log of a lower-triangular mask as an attention bias: -inf above the diagonal."""

    def forward(self, scores):
        t = scores.shape[-1]
        return scores + torch.log(torch.tril(torch.ones(t, t)))


class I40FiniteAndInfOutputs(nn.Module):
    """Two outputs: tanh(x) (finite) and rsqrt of zeros (all +inf)."""

    def forward(self, x):
        return torch.tanh(x), torch.rsqrt(x.abs() * 0.0)


# --- random operators ------------------------------------------------------------------------

class I40MultinomialOnly(nn.Module):
    def forward(self, x):
        return torch.multinomial(torch.softmax(x, -1), 4, replacement=True)


class I40Bernoulli(nn.Module):
    def forward(self, x):
        return torch.bernoulli(torch.sigmoid(x))


class I40RandnLikeNoise(nn.Module):
    def forward(self, x):
        return torch.tanh(x) + 0.1 * torch.randn_like(x)


class I40RandLikeAdd(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(6, 4)

    def forward(self, x):
        y = self.fc(x)
        return y + torch.rand_like(y)


class I40TorchNormal(nn.Module):
    def forward(self, x):
        return torch.normal(x, 0.5)


class I40RandintLike(nn.Module):
    def forward(self, x):
        return torch.randint_like(x, 0, 10) * 2.0


class I40ScoresAndSample(nn.Module):
    """Deterministic probabilities and argmax next to a Bernoulli sample: the first two are proved."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(6, 5)

    def forward(self, x):
        logits = self.fc(x)
        probs = torch.softmax(logits, -1)
        return probs, probs.argmax(-1), torch.bernoulli(probs)


class I40DropoutTrainingTrue(nn.Module):
    """F.dropout(training=True) written out explicitly: a random forward even in eval mode."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(6, 6)

    def forward(self, x):
        return F.dropout(self.fc(x), p=0.5, training=True)


class I40ManualDropoutMask(nn.Module):
    def forward(self, x):
        keep = (torch.rand_like(x) > 0.3).to(x.dtype)
        return x * keep / 0.7


class I40RandnBatchShape(nn.Module):
    """torch.randn of a shape taken from the dynamic batch."""

    def forward(self, x):
        return torch.randn(x.shape[0], 4) + x.mean(-1, keepdim=True)


class I40Reparameterize(nn.Module):
    """A VAE head: mu and logvar (deterministic, proved) and z = mu + std * eps (random)."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 6)

    def forward(self, x):
        mu, logvar = self.fc(x).chunk(2, dim=-1)
        z = mu + torch.exp(0.5 * logvar) * torch.randn_like(mu)
        return mu, logvar, z


class I40GumbelSoftmaxHard(nn.Module):
    def forward(self, x):
        return F.gumbel_softmax(x, tau=0.5, hard=True)


def _i40(seed, cls, *a, **k):
    """A seeded module in eval mode."""
    torch.manual_seed(seed)
    return _bn_eval(cls(*a, **k)) if cls in (I40BatchNorm2dChannels, I40BatchNorm1dChannels) else cls(*a, **k).eval()


ISSUE40_EXPECT = {}  # name -> the code a correct proof shows ("" for a plain pass)


def add40(name, expect, factory):
    add(name, factory)
    ISSUE40_EXPECT[name] = expect


_FIXED, _RANDOM, _NOTHING = "AXIS_FIXED_BY_MODEL", "RANDOM_OUTPUT", "REFERENCE_NOT_FINITE"

family("issue 40: axes the model fixes")
add40("i40_gru_features", _FIXED, lambda: (_i40(4001, I40GRUFeatures), (r(2, 4, 6),),
                                           axes(x={0: "batch", 2: "features"})))
add40("i40_lstm_state_hidden", _FIXED, lambda: (
    _i40(4002, I40LSTMStateHidden), (r(3, 5, 8), r(2, 3, 4), r(2, 3, 4)),
    axes(x={0: "batch", 1: "seq", 2: "features"}, h0={1: "batch", 2: "hidden"}, c0={1: "batch", 2: "hidden"})))
add40("i40_conv_channels", _FIXED, lambda: (_i40(4003, I40ConvChannels), (r(2, 3, 6, 6),),
                                            axes(x={0: "batch", 1: "channels", 2: "h", 3: "w"})))
add40("i40_conv1d_channels", _FIXED, lambda: (_i40(4004, I40Conv1dChannels), (r(2, 4, 9),),
                                              axes(x={1: "channels", 2: "len"})))
add40("i40_rpn_head_channels", _FIXED, lambda: (_i40(4005, I40RPNHead), (r(1, 16, 5, 6),),
                                                axes(feature={0: "batch", 1: "channels", 2: "h", 3: "w"})))
add40("i40_linear_in_features", _FIXED, lambda: (_i40(4006, I40LinearIn), (r(3, 10),),
                                                 axes(x={0: "batch", 1: "in_features"})))
add40("i40_layernorm_mlp_dmodel", _FIXED, lambda: (_i40(4007, I40LayerNormMLP), (r(2, 5, 12),),
                                                   axes(x={0: "batch", 1: "tokens", 2: "d_model"})))
add40("i40_einsum_weight_dim", _FIXED, lambda: (_i40(4008, I40EinsumWeight), (r(2, 3, 8),),
                                                shapes(x={0: "batch", 1: "t", 2: "d"})))
add40("i40_batchnorm2d_channels", _FIXED, lambda: (_i40(4009, I40BatchNorm2dChannels), (r(2, 6, 4, 4),),
                                                   axes(x={0: "batch", 1: "channels"})))
add40("i40_batchnorm1d_channels", _FIXED, lambda: (_i40(4010, I40BatchNorm1dChannels), (r(3, 5, 7),),
                                                   axes(x={0: "batch", 1: "channels", 2: "len"})))
add40("i40_split_fixed_sizes", _FIXED, lambda: (I40SplitSizes(), (r(2, 5),), axes(x={0: "batch", 1: "features"})))
add40("i40_split_fixed_sizes_seq", _FIXED, lambda: (I40SplitSizesSeq(), (r(2, 4, 7),),
                                                    axes(x={0: "batch", 1: "seq", 2: "features"})))
add40("i40_unflatten_heads", _FIXED, lambda: (I40UnflattenHeads(), (r(2, 3, 32),),
                                              axes(x={0: "batch", 1: "seq", 2: "hidden"})))
add40("i40_repeat_interleave_buffer", _FIXED, lambda: (I40RepeatsBuffer(), (r(2, 3, 4),),
                                                       axes(x={0: "batch", 1: "n", 2: "d"})))
add40("i40_learned_positions_fixed", _FIXED, lambda: (_i40(4011, I40LearnedPositions), (r(2, 6, 8),),
                                                      axes(x=SEQ)))
add40("i40_learned_positions_expand", _FIXED, lambda: (_i40(4020, I40LearnedPositionsExpand), (r(2, 6, 8),),
                                                       axes(x=SEQ)))
add40("i40_tied_output_table", _FIXED, lambda: (_i40(4012, I40TiedOutputTable), (r(2, 3, 8), r(20, 8)),
                                                axes(hidden=SEQ, table={0: "vocab"})))
add40("i40_one_hot_table", _FIXED, lambda: (I40OneHotTable(), (ri(0, 10, 2, 5), r(10, 4)),
                                            axes(ids=SEQ, table={0: "vocab"})))
add40("i40_shape_assert", _FIXED, lambda: (_i40(4013, I40ShapeAssert), (r(4, 6),),
                                           axes(x={0: "batch", 1: "features"})))

family("issue 40: axes coupled to others")
add40("i40_reshape_onto_other", "", lambda: (I40ReshapeOntoOther(), (r(3, 4, 6), r(3, 24)),
                                             axes(x={0: "a"}, y={0: "b"})))
add40("i40_reshape_numel_double", "", lambda: (I40ReshapeNumelDouble(), (r(2, 6), r(12)),
                                               axes(x={1: "n"}, y={0: "m"})))
add40("i40_view_as_half", "", lambda: (I40ViewAsHalf(), (r(2, 3, 8), r(2, 6, 4)),
                                       axes(x={0: "batch", 1: "k"}, y={0: "batch", 1: "j"})))
add40("i40_add_own_labels", "", lambda: (I40AddOwnLabels(), (r(2, 5), r(2, 5)),
                                         axes(x={0: "batch", 1: "a"}, y={0: "batch", 1: "b"})))
add40("i40_sum_three_own_labels", "", lambda: (I40SumThreeOwnLabels(), (r(2, 5), r(2, 5), r(2, 5)),
                                               axes(x={0: "batch", 1: "a"}, y={0: "batch", 1: "b"},
                                                    z={0: "batch", 1: "c"})))
add40("i40_matmul_inner_own_labels", "", lambda: (I40MatmulInner(), (r(2, 3, 4), r(2, 4, 5)),
                                                  axes(a={0: "batch", 1: "n", 2: "k"}, b={0: "batch", 1: "k2", 2: "m"})))
add40("i40_cat_batch_own_labels", "", lambda: (I40CatOtherAxes(), (r(2, 3, 4), r(2, 5, 4)),
                                               axes(x={0: "bx", 1: "tx"}, y={0: "by", 1: "ty"})))
add40("i40_repeat_interleave_other", "", lambda: (I40RepeatInterleaveOther(), (r(4, 3), ri(0, 4, 4)),
                                                  axes(x={0: "n"}, repeats={0: "r"})))
add40("i40_pixel_shuffle_channels", "", lambda: (I40PixelShuffleChannels(), (r(2, 8, 3, 3),),
                                                 axes(x={0: "batch", 1: "channels", 2: "h", 3: "w"})))
add40("i40_pixel_shuffle_plus_skip", "", lambda: (I40PixelShufflePlusSkip(), (r(2, 8, 3, 4), r(2, 2, 6, 8)),
                                                  axes(x={0: "batch", 1: "cx", 2: "h", 3: "w"},
                                                       skip={0: "batch", 1: "cs", 2: "hs", 3: "ws"})))
add40("i40_chunk_glu_even", "", lambda: (I40ChunkGLU(), (r(2, 3, 8),), axes(x={0: "batch", 1: "seq", 2: "hidden"})))
add40("i40_groupnorm_no_affine", "", lambda: (_i40(4014, I40GroupNormNoAffine), (r(2, 8, 4, 4),),
                                              axes(x={0: "batch", 1: "channels"})))
add40("i40_sliced_positions", "", lambda: (_i40(4015, I40SlicedPositions), (r(2, 5, 8),), axes(x=SEQ)))

family("issue 40: outputs ending in inf / NaN")
add40("i40_rsqrt_sum_zeros", _NOTHING, lambda: (I40RsqrtZeros(), (r(3, 4),), axes(x=BATCH)))
add40("i40_log_zeros", _NOTHING, lambda: (I40LogZeros(), (r(2, 5),), axes(x=BATCH)))
add40("i40_zero_over_zero", _NOTHING, lambda: (I40ZeroOverZero(), (r(2, 4),), axes(x=BATCH)))
add40("i40_sqrt_negative", _NOTHING, lambda: (I40SqrtNegative(), (r(3, 3),), axes(x=BATCH)))
add40("i40_reciprocal_partial_inf", "", lambda: (I40ReciprocalPartial(), (r(2, 6),), axes(x={0: "batch", 1: "n"})))
add40("i40_reciprocal_signed_zero", "", lambda: (I40ReciprocalSignedZero(), (r(3, 6),), axes(x=BATCH)))
add40("i40_partial_zero_over_zero", "", lambda: (I40PartialZeroOverZero(), (r(2, 6),), axes(x={0: "batch", 1: "n"})))
add40("i40_masked_max_neginf", "", lambda: (I40MaskedMaxNegInf(), (r(2, 4, 6),), axes(scores={0: "batch", 2: "t"})))
add40("i40_softmax_masked_row_nan", "", lambda: (I40SoftmaxMaskedRow(), (r(2, 4, 8), r(2, 5, 8)),
                                                 axes(q={0: "batch", 1: "tq"}, k={0: "batch", 1: "tk"})))
add40("i40_exp_overflow_partial", "", lambda: (I40ExpOverflow(), (r(3, 5),), axes(x=BATCH)))
add40("i40_inf_minus_inf", "", lambda: (I40InfMinusInf(), (r(2, 4),), axes(x=BATCH)))
add40("i40_layernorm_no_eps_rows", "", lambda: (I40LayerNormNoEps(), (r(6, 5),), axes(x={0: "rows"})))
add40("i40_log_causal_bias", "", lambda: (I40LogCausalBias(), (r(2, 5, 5),),
                                          axes(scores={0: "batch", 1: "t", 2: "t"})))
add40("i40_finite_and_all_inf", "", lambda: (I40FiniteAndInfOutputs(), (r(2, 5),), axes(x=BATCH)))

family("issue 40: random operators")
add40("i40_multinomial_only", _RANDOM, lambda: (I40MultinomialOnly(), (r(3, 6),), axes(x=BATCH)))
add40("i40_bernoulli", _RANDOM, lambda: (I40Bernoulli(), (r(3, 5),), axes(x=BATCH)))
add40("i40_randn_like_noise", _RANDOM, lambda: (I40RandnLikeNoise(), (r(2, 6),), axes(x=BATCH)))
add40("i40_rand_like_add", _RANDOM, lambda: (_i40(4016, I40RandLikeAdd), (r(3, 6),), axes(x=BATCH)))
add40("i40_torch_normal", _RANDOM, lambda: (I40TorchNormal(), (r(2, 5),), axes(x=BATCH)))
add40("i40_randint_like", _RANDOM, lambda: (I40RandintLike(), (r(2, 5),), axes(x=BATCH)))
add40("i40_scores_and_sample", _RANDOM, lambda: (_i40(4017, I40ScoresAndSample), (r(4, 6),), axes(x=BATCH)))
add40("i40_dropout_training_true", _RANDOM, lambda: (_i40(4018, I40DropoutTrainingTrue), (r(3, 6),), axes(x=BATCH)))
add40("i40_manual_dropout_mask", _RANDOM, lambda: (I40ManualDropoutMask(), (r(3, 5),), axes(x=BATCH)))
add40("i40_randn_batch_shape", _RANDOM, lambda: (I40RandnBatchShape(), (r(3, 5),), axes(x=BATCH)))
add40("i40_reparameterize", _RANDOM, lambda: (_i40(4019, I40Reparameterize), (r(3, 8),), axes(x=BATCH)))
add40("i40_gumbel_softmax_hard", _RANDOM, lambda: (I40GumbelSoftmaxHard(), (r(3, 5),), axes(x=BATCH)))


def _affine(model):
    """Norm layers with affine parameters away from 1/0 (a trained model's)."""
    with torch.no_grad():
        for module in model.modules():
            if isinstance(module, (nn.LayerNorm, nn.GroupNorm, nn.InstanceNorm2d, nn.BatchNorm2d, nn.BatchNorm1d)):
                if getattr(module, "weight", None) is not None:
                    module.weight.copy_(1.0 + 0.2 * torch.randn(module.weight.shape))
                    module.bias.copy_(0.1 * torch.randn(module.bias.shape))
    return model.eval()


def _bn_eval(model):
    with torch.no_grad():
        for module in model.modules():
            if isinstance(module, (nn.BatchNorm2d, nn.BatchNorm1d)):
                module.running_mean.copy_(0.3 * torch.randn(module.running_mean.shape))
                module.running_var.copy_(0.5 + torch.rand(module.running_var.shape))
    return _affine(model)


def build(name):
    """(model, args, options) of one entry, seeded by its name (the same inputs every run)."""
    factory = dict(MODELS)[name]
    torch.manual_seed(sum(map(ord, name)))
    return factory()
