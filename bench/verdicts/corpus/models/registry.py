"""The corpus's registry (MODELS, FAMILY, family(), add(), build()) and the helpers every part
uses: dynamic-axis spellings, seeded inputs, masks, boxes, norm layers with trained-like values."""
import torch
from torch import nn


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
