"""Issue 57's modules: correct models called the way torch.onnx.export and torch.export.export take
them (named inputs and outputs, pytrees, every dtype, no inputs), returning what the exporters
write (numbers from sizes, complex values, None), with axes related by an expression, and the
RNN and repeat patterns of the first peer corpus. Written here for this corpus."""
import torch
from torch import nn
from torch.nn import functional as F


class I57SmallCNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, padding=1)
        self.fc = nn.Linear(8 * 8 * 8, 10)

    def forward(self, x):
        return self.fc(torch.flatten(F.max_pool2d(torch.relu(self.conv(x)), 2), 1))


class I57TwoHeads(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Linear(6, 12)
        self.cls, self.box = nn.Linear(12, 3), nn.Linear(12, 4)

    def forward(self, features, mask):
        hidden = torch.relu(self.body(features)) * mask.unsqueeze(-1)
        return self.cls(hidden), self.box(hidden).sigmoid()


class I57SeqTagger(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(50, 8)
        self.proj = nn.Linear(8, 5)

    def forward(self, tokens):
        return self.proj(torch.tanh(self.embed(tokens)))


class I57DictInput(nn.Module):
    def __init__(self):
        super().__init__()
        self.a, self.b = nn.Linear(6, 4), nn.Linear(3, 4)

    def forward(self, batch):
        return self.a(batch["image"]) + self.b(batch["meta"])


class I57ListInput(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(5, 5)

    def forward(self, parts):
        return self.proj(sum(parts))


class I57TupleInput(nn.Module):
    def forward(self, pair, scale):
        first, second = pair
        return (first - second) * scale


class I57NestedInput(nn.Module):
    def __init__(self):
        super().__init__()
        self.a, self.b = nn.Linear(6, 4), nn.Linear(4, 4)

    def forward(self, batch):
        return self.a(batch["features"]) + self.b(batch["extras"][0]) * batch["extras"][1]


class I57DictWithFlag(nn.Module):
    """A dict input holding a tensor and a plain Python flag (a fixed value, no input)."""

    def forward(self, batch):
        y = batch["x"] * 3
        return torch.relu(y) if batch["activate"] else y


class I57KeywordDict(nn.Module):
    def forward(self, x, extras=None):
        return x + extras["bias"] * extras["gain"]


class I57Bf16Linear(nn.Module):
    def __init__(self):
        super().__init__()
        self.layer = nn.Linear(8, 6).to(torch.bfloat16)

    def forward(self, x):
        return torch.relu(self.layer(x))


class I57HalfInput(nn.Module):
    def __init__(self):
        super().__init__()
        self.layer = nn.Linear(8, 4)

    def forward(self, x):
        return self.layer(x.float())


class I57Float8Input(nn.Module):
    def forward(self, x):
        return x.to(torch.float32) * 2 + 1


class I57ComplexInput(nn.Module):
    def forward(self, z):
        return (z * z.conj()).real + z.imag


class I57Int8Input(nn.Module):
    def __init__(self):
        super().__init__()
        self.layer = nn.Linear(6, 3)

    def forward(self, q):
        return self.layer(q.float() / 16)


class I57Uint8Image(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3)

    def forward(self, image):
        return self.conv(image.float() / 255 - 0.5)


class I57Float64Input(nn.Module):
    def forward(self, x):
        return torch.cumsum(x, dim=1) / (1 + x.abs())


class I57NoInputs(nn.Module):
    def __init__(self):
        super().__init__()
        self.table = nn.Parameter(torch.linspace(-2, 2, 24).reshape(4, 6))

    def forward(self):
        return torch.softmax(self.table, dim=-1)


class I57Rfft(nn.Module):
    def forward(self, x):
        return torch.fft.rfft(x, dim=-1)


class I57Stft(nn.Module):
    def forward(self, x):
        return torch.stft(x, n_fft=16, hop_length=4, window=torch.hann_window(16), return_complex=True)


class I57SpectrumAndSize(nn.Module):
    def forward(self, x):
        return torch.fft.rfft(x, dim=-1), x.shape[0] * x.shape[1]


class I57SymFloat(nn.Module):
    def forward(self, x):
        return x.mean(0), x.shape[0] / 2


class I57SymBool(nn.Module):
    def forward(self, x):
        return x * 2, x.shape[0] > 3


class I57NoneOutputs(nn.Module):
    def forward(self, x):
        return x.sum(-1), None, x.amax(-1)


class I57DictNoneOutputs(nn.Module):
    def forward(self, x):
        return {"logits": x * 2, "aux": None, "norm": x.norm(dim=-1)}


class I57ComplexMul(nn.Module):
    def forward(self, x):
        z = torch.view_as_complex(x)
        return z * z


class I57PairOffset(nn.Module):
    def forward(self, x, y):
        return x @ y[1:]


class I57PairDouble(nn.Module):
    def forward(self, x, y):
        return torch.cat([x, x], dim=1) + y


class I57PairMinusOne(nn.Module):
    def forward(self, x, y):
        return x[:, 1:] * y


class I57Keywords(nn.Module):
    def forward(self, x, scale=None, shift=None):
        return x * scale + shift


class I57Bounded(nn.Module):
    """Needs at least two rows (a difference along the batch)."""

    def forward(self, x):
        return x[1:] - x[:-1]


class I57GRUBidirectional(nn.Module):
    def __init__(self):
        super().__init__()
        self.rnn = nn.GRU(4, 6, batch_first=True, bidirectional=True)

    def forward(self, x):
        return self.rnn(x)[0]


class I57LSTMState(nn.Module):
    def __init__(self):
        super().__init__()
        self.rnn = nn.LSTM(4, 5, batch_first=True)

    def forward(self, x):
        output, (hidden, _) = self.rnn(x)
        return output, hidden


class I57Elman(nn.Module):
    def __init__(self):
        super().__init__()
        self.rnn = nn.RNN(4, 6, batch_first=True)

    def forward(self, x):
        return self.rnn(x)[0]


class I57RepeatInterleaveDim(nn.Module):
    def forward(self, x):
        return torch.repeat_interleave(x, 2, dim=1)


class I57RepeatInterleaveTensor(nn.Module):
    def forward(self, x, repeats):
        return torch.repeat_interleave(x, repeats, dim=0)


class I57ZeroSizeView(nn.Module):
    def forward(self, x):
        empty = x[:, :0]
        return torch.cat([x, empty.reshape(x.shape[0], 0)], dim=1) * 2
