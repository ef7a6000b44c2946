"""Was a given ONNX file made from these weights? Before any numbers: each weight tensor of the file
looked for among the model's parameters and buffers, allowing the layouts exporters write, so a
file exported from another checkpoint is named as such instead of only failing parity."""
import hashlib
import itertools

import numpy as np

from ..core.findings import finding

# A tensor says something about its origin only with enough distinct values: a bias of zeros or a
# LayerNorm's ones is the same in every checkpoint.
MIN_DISTINCT = 16
# Values of an unmatched tensor sampled to look for among the model's (a fused QKV weight, a slice).
SAMPLED = 64
# Below this share of the file's weight values (informative tensors, by elements) matched, the
# file is said to come from other weights. A Conv+BatchNorm fold leaves the folded biases
# unmatched, which are few elements beside the weights they sit by.
MATCHED_SHARE = 0.5


def _fingerprint(values):
    """The multiset of a tensor's values: the same under a transpose, a reshape or a permutation."""
    return hashlib.sha256(np.sort(values.ravel()).tobytes()).hexdigest()


def _scaled_per_channel(values, parameter):
    """values equals parameter, in some order of its axes (a Keras HWIO kernel is ONNX's OIHW),
    scaled by one factor per slice of its first axis (a BatchNorm folded into the convolution or
    linear layer before it), allowing float32 rounding."""
    if values.ndim < 1 or values.size != parameter.size or values.ndim != parameter.ndim:
        return False
    return any(_scaled_rows(values, np.transpose(parameter, order))
               for order in itertools.permutations(range(parameter.ndim))
               if tuple(parameter.shape[axis] for axis in order) == values.shape)


def _scaled_rows(values, parameter):
    rows_p = parameter.reshape(parameter.shape[0], -1).astype(np.float64)
    rows_v = values.reshape(values.shape[0], -1).astype(np.float64)
    for p, v in zip(rows_p, rows_v):
        big = np.abs(p) > 1e-6 * max(np.abs(p).max(), 1e-30)
        if not big.any():
            if np.abs(v).max() > 0:
                return False
            continue
        ratio = v[big] / p[big]
        if not np.allclose(ratio, ratio[0], rtol=1e-3, atol=0) or not np.allclose(v, p * ratio[0], rtol=1e-3,
                                                                                   atol=1e-6 * np.abs(v).max()):
            return False
    return True


def weight_findings(named, path, interface):
    """FILE_WEIGHTS_NOT_FROM_MODEL (error) when less than MATCHED_SHARE of the file's informative
    weight values match `named` ({name: array}, the model's parameters and buffers by their
    state_dict or variable names); [] when they do, and for a quantized file or one with no float
    weights (nothing to compare: the numbers decide). A file weight named as a parameter of its
    shape is compared with that parameter value by value; any other is looked for among all of
    them, in the layouts exporters write."""
    import onnx
    from onnx import numpy_helper
    if interface.quantized or not named:
        return []
    tensors = [tensor for tensor in onnx.load(path).graph.initializer
               if tensor.data_type in (onnx.TensorProto.FLOAT, onnx.TensorProto.FLOAT16, onnx.TensorProto.DOUBLE,
                                       onnx.TensorProto.BFLOAT16)]
    weights = []
    for tensor in tensors:
        values = numpy_helper.to_array(tensor)
        if values.size >= MIN_DISTINCT and np.unique(values).size >= MIN_DISTINCT:
            weights.append((tensor.name, values))
    if not weights:
        return []
    parameters = [p for p in named.values() if p.dtype.kind == "f" and p.size >= MIN_DISTINCT]
    by_dtype = {}
    unmatched = []
    for name, values in weights:
        same = named.get(name)
        if same is not None and same.shape == values.shape:  # the exporter kept the parameter's name
            if not (np.allclose(same.astype(np.float64), values.astype(np.float64), rtol=1e-6, atol=0) or
                    _scaled_per_channel(values.astype(np.float32), same.astype(np.float32))):  # a folded norm
                unmatched.append((name, values, True))
            continue
        if values.dtype.str not in by_dtype:  # each parameter fingerprinted once per dtype of the file
            by_dtype[values.dtype.str] = {_fingerprint(p.astype(values.dtype)) for p in parameters}
        prints = by_dtype[values.dtype.str]
        if _fingerprint(values) in prints:
            continue
        if any(_scaled_per_channel(values.astype(np.float32), p.astype(np.float32))
               for p in parameters if p.size == values.size):
            continue
        unmatched.append((name, values, False))
    unmatched = [item for item in unmatched if item[2] or not _contained(item[1], parameters)]
    total = sum(values.size for _, values in weights)
    missing = sum(item[1].size for item in unmatched)
    if not unmatched or missing < (1 - MATCHED_SHARE) * total:
        return []
    names = ", ".join(item[0] for item in unmatched[:4]) + (f" and {len(unmatched) - 4} more" if len(unmatched) > 4
                                                           else "")
    return [finding(
        "FILE_WEIGHTS_NOT_FROM_MODEL", "error",
        f"{len(unmatched)} of {len(weights)} weight tensors of the file ({missing} of {total} values) match no "
        f"parameter or buffer of the model, even transposed, reshaped, scaled per channel or concatenated "
        f"({names}): exported from another checkpoint?", interface.path,
        "export the file again from these weights, or prove it against the checkpoint it was exported from")]


def _contained(values, parameters):
    """Most of a sample of the tensor's values occur among the model's parameters, a large share of
    them in one parameter: a fused or sliced copy (a QKV projection concatenated from three, an
    embedding cut), not values that happen to recur across many."""
    rng = np.random.default_rng(0)
    flat = values.ravel().astype(np.float32)
    sample = np.unique(flat[rng.choice(flat.size, size=min(SAMPLED, flat.size), replace=False)])
    found = np.zeros(sample.size, dtype=bool)
    largest = 0.0
    for parameter in parameters:
        inside = np.isin(sample, parameter.astype(np.float32).ravel())
        largest = max(largest, inside.mean())
        found |= inside
    return found.mean() >= 0.9 and largest >= 0.25
