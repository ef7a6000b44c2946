"""Issue 40's modules, part 2: outputs ending in inf / NaN, random operators."""
import torch
import torch.nn.functional as F
from torch import nn


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
