"""The planted float16 overflow for bench/gpu/prove_on_gpu.sh and docs/providers.md.

(x * 1000)^2 passes float16's largest value (65504) for |x| > 0.256, so the float16 variant gives
Inf and the layer norm after it NaN, while float32 (and PyTorch) stay finite. The layer norm keeps
the float16 value in float16 on ONNX Runtime's CPU provider too (it has a float16 kernel there),
so the same model fails the float16 proof on the CPU and on CUDA.
Spec: bench/gpu/overflow_model.py:build --input x=2x16:float32
"""
import torch


class Overflow(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.norm = torch.nn.LayerNorm(16, elementwise_affine=False)

    def forward(self, x):
        return self.norm((x * 1000.0) ** 2)


def build():
    return Overflow().eval()
