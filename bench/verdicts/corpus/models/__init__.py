"""The false-alarm corpus of issue 22 (and issue 40's cases): small, correct modules in the shapes
users write, one per operator family they hit (indexing, scatter/gather, loops, if, RNNs,
interpolate, pooling, reductions, einsum, topk/sort, nonzero, dynamic arange, casts, integer ops,
detection ops, flips, pads, pixel_shuffle, embedding bags, bucketize, masks, cumsum,
normalization, attention, list outputs, in-place ops on inputs, 0-d and bool inputs,
forward(*args)), and issue 40's declared axes the model fixes or couples, outputs ending in inf
or NaN and random operators; issue 57's export calls (torch.onnx.export's names and axes, pytrees,
dtypes, derived Dims), number and complex outputs, RNNs and repeats.

MODELS is a list of (name, factory); a factory returns (model, args, options) where options are
extra keyword arguments of onnxproof.prove(): dynamic_axes or dynamic_shapes (and kwargs).
Every module is written here for this corpus (patterns like those of public exporter test
suites, no code copied); every one runs in PyTorch at its example and is a correct model: a
non-pass verdict is either a real exporter/runtime defect or a false alarm of onnxproof.

The parts: registry.py (MODELS, FAMILY, build() and the helpers), layers_a/b/c.py (issue 22's
modules), suites.py (their entries), issue40_layers_a/b.py and issue40.py (issue 40's).
"""
from . import suites  # noqa: F401  (registers issue 22's entries first, in their order)
from . import issue40  # noqa: F401  (then issue 40's)
from . import issue57  # noqa: F401  (then issue 57's: the export API users call)
from .issue40 import ISSUE40_EXPECT
from .registry import FAMILY, MODELS, build

__all__ = ["MODELS", "FAMILY", "ISSUE40_EXPECT", "build"]
