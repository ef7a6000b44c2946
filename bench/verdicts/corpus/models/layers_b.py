"""The issue-22 modules, part 2: casts through normalization."""
import math
from typing import List

import torch
import torch.nn.functional as F
from torch import nn

try:
    import torchvision
    from torchvision import ops as tvops
except ImportError:  # the corpus still loads; the detection entries then fail to build
    torchvision = tvops = None


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
