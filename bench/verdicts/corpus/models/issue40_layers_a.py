"""Issue 40's modules, part 1: declared axes the model fixes, and axes it couples to others."""
import torch
import torch.nn.functional as F
from torch import nn


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
