"""Tensors as numpy arrays and back, for every dtype ONNX has: numpy has no bfloat16 or float8, so
those travel as ml_dtypes' types (which onnx's numpy_helper writes as BFLOAT16 and FLOAT8* tensors)."""
from ..core.errors import UsageError

# Their bits travel as unsigned integers of their width.
_BITS = {1: ("uint8", "uint8"), 2: ("int16", "uint16")}


def to_numpy(tensor, name="output"):
    """A tensor's values as a numpy array of the same dtype (ml_dtypes' for bfloat16 and float8);
    UsageError naming the value for a dtype ONNX has no tensor type for."""
    import torch
    from ..core.cases import NARROW_FLOATS, numpy_dtype  # numpy: imported when a tensor is converted
    tensor = tensor.detach().cpu()
    dtype = str(tensor.dtype).replace("torch.", "")
    if dtype in NARROW_FLOATS:
        torch_bits, _ = _BITS[tensor.element_size()]
        return tensor.contiguous().view(getattr(torch, torch_bits)).numpy().view(numpy_dtype(dtype))
    try:
        return tensor.numpy()
    except TypeError as error:
        raise UsageError(f"{name!r}: a {tensor.dtype} tensor has no ONNX tensor type onnxproof can feed "
                         f"({error})") from error


def to_torch(array):
    """to_numpy's inverse: a fresh tensor of the array's values (ml_dtypes' types by their bits)."""
    import numpy as np
    import torch
    from ..core.cases import is_narrow_float
    array = np.array(array, copy=True)
    if is_narrow_float(array.dtype):
        torch_bits, numpy_bits = _BITS[array.dtype.itemsize]
        return torch.from_numpy(array.view(getattr(np, numpy_bits))).view(getattr(torch, torch_bits)).view(
            getattr(torch, array.dtype.name))
    return torch.from_numpy(array)
