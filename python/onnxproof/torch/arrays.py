"""Tensors as numpy arrays and back, for every dtype ONNX has: numpy has no bfloat16 or float8, so
those travel as ml_dtypes' types (which onnx's numpy_helper writes as BFLOAT16 and FLOAT8* tensors)."""
from ..core.errors import UsageError

# torch dtypes numpy has no type for: their bits, read back by ml_dtypes' types (which onnx's
# numpy_helper writes as BFLOAT16 and FLOAT8* TensorProtos).
_ML_DTYPES = {"bfloat16": ("int16", "bfloat16"), "float8_e4m3fn": ("uint8", "float8_e4m3fn"),
              "float8_e4m3fnuz": ("uint8", "float8_e4m3fnuz"), "float8_e5m2": ("uint8", "float8_e5m2"),
              "float8_e5m2fnuz": ("uint8", "float8_e5m2fnuz")}


def to_numpy(tensor, name="output"):
    """A tensor's values as a numpy array of the same dtype (ml_dtypes' for bfloat16 and float8);
    UsageError naming the value for a dtype ONNX has no tensor type for."""
    import torch
    tensor = tensor.detach().cpu()
    dtype = str(tensor.dtype).replace("torch.", "")
    if dtype in _ML_DTYPES:
        import ml_dtypes
        bits, kind = _ML_DTYPES[dtype]
        return tensor.contiguous().view(getattr(torch, bits)).numpy().view(getattr(ml_dtypes, kind))
    try:
        return tensor.numpy()
    except TypeError as error:
        raise UsageError(f"{name!r}: a {tensor.dtype} tensor has no ONNX tensor type onnxproof can feed "
                         f"({error})") from error


def to_torch(array):
    """to_numpy's inverse: a fresh tensor of the array's values (ml_dtypes' types by their bits)."""
    import numpy as np
    import torch
    array = np.array(array, copy=True)
    kind = array.dtype.name
    if kind in _ML_DTYPES:
        bits, _ = _ML_DTYPES[kind]
        return torch.from_numpy(array.view(getattr(np, bits))).view(getattr(torch, kind))
    return torch.from_numpy(array)
