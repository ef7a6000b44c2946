"""Small models quantized with PT2E (torchao's XNNPACK-style quantizer: int8, symmetric per-channel
weights, per-tensor activations), for the quantized-model tests: `FILE.py:CALLABLE` specs that
return the converted (fake-quant) graph, calibrated on seeded random batches."""
import torch

SHAPE = (2, 3, 16, 16)


class SmallConvNet(torch.nn.Module):
    """conv -> relu -> avg pool -> conv (8 -> 8 channels, so a per-channel axis can be swapped
    without the shapes noticing) -> relu: the features (512 values a sample), and their mean
    through a linear layer: the logits."""

    def __init__(self):
        super().__init__()
        self.stem = torch.nn.Conv2d(3, 8, 3, padding=1)
        self.pool = torch.nn.AvgPool2d(2)
        self.body = torch.nn.Conv2d(8, 8, 3, padding=1)
        self.head = torch.nn.Linear(8, 5)

    def forward(self, x):
        y = self.pool(torch.relu(self.stem(x)))
        features = torch.relu(self.body(y))
        return self.head(features.mean((2, 3))), features


def quantize_pt2e(model, example, batches):
    """torch.export, prepare_pt2e with the XNNPACK-style quantizer, calibration, convert_pt2e."""
    from torchao.quantization.pt2e.quantize_pt2e import convert_pt2e, prepare_pt2e
    from torchao.testing.pt2e._xnnpack_quantizer import XNNPACKQuantizer, get_symmetric_quantization_config
    graph = torch.export.export(model, (example,)).module()
    prepared = prepare_pt2e(graph, XNNPACKQuantizer().set_global(get_symmetric_quantization_config(is_per_channel=True)))
    for batch in batches:
        prepared(batch)
    return convert_pt2e(prepared)


def small_cnn():
    torch.manual_seed(0)
    model = SmallConvNet().eval()
    return quantize_pt2e(model, torch.randn(*SHAPE), [torch.randn(*SHAPE) for _ in range(8)])


def small_cnn_float():
    """The same network in float32, seeded alike: the source of --quantize static."""
    torch.manual_seed(0)
    return SmallConvNet().eval()
