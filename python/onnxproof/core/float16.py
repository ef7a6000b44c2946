"""The float16 variant of the proof: the exported model converted to float16.

`python -m onnxproof --float16-json '{"model": IN, "out": OUT}'` writes OUT, a copy of IN whose
float32 weights and computations are float16 while its inputs and outputs stay float32
(keep_io_types), so the engine feeds the same reference data and compares against the same float64
reference. The converter is ONNX Runtime's own (onnxruntime.transformers.float16, from the pinned
onnxruntime package), which inserts the casts and keeps the operators ONNX Runtime has no float16
kernel for (its default block list) in float32. Exit codes as the export: 0 written, 3 could not.
"""
import os

from .errors import FrontEndError


def convert(model_path, out_path, keep_float32=()):
    """Converts the model at `model_path` to float16 and saves it atomically at `out_path`; the
    nodes named in `keep_float32` stay float32 (the converter's node_block_list).

    Returns the operator types the converter kept in float32 (its block list, those present).
    Raises FrontEndError (exit 3) when onnx or ONNX Runtime's converter cannot be imported or the
    converter fails on the model."""
    try:
        import onnx
        from onnxruntime.transformers.float16 import DEFAULT_OP_BLOCK_LIST, convert_float_to_float16
    except ImportError as error:
        raise FrontEndError(f"the float16 variant needs onnx and onnxruntime's converter: {error}", 3) from error
    model = onnx.load(model_path)
    try:
        converted = convert_float_to_float16(model, keep_io_types=True, node_block_list=list(keep_float32) or None)
    except Exception as error:  # the converter raises plain exceptions of several kinds
        raise FrontEndError(f"onnxruntime.transformers.float16 cannot convert {model_path}: {error}", 3) from error
    staging = out_path + ".partial"
    onnx.save(converted, staging)
    os.replace(staging, out_path)
    return sorted({node.op_type for node in model.graph.node} & set(DEFAULT_OP_BLOCK_LIST))


def main(request):
    """Runs one conversion from the engine's request {model, out, keep_float32}; prints the kept
    operators."""
    kept = convert(request["model"], request["out"], request.get("keep_float32", ()))
    print(f"onnxproof float16: kept in float32: {', '.join(kept) if kept else 'none'}")
    return 0
