"""Models quantized with PT2E (torchao's prepare_pt2e / convert_pt2e): an exported graph whose
quantize and dequantize ops (torch.ops.quantized_decomposed.*) are the fake-quant reference the
ONNX export is proved against (docs/quantization.md).

Three things differ from a float model:
- the graph refuses train() and eval() (torchao replaces both on the instance): the export's mode
  switches are let through while onnxproof holds the model, and the methods put back after;
- the float64 twin: quantized_decomposed's kernels take float32 only, so the twin's quantize and
  dequantize nodes are swapped for float64 ones computing the same rule (round half to even of
  x / scale, plus the zero point, clamped): PyTorch's own float32 rounding then shows which
  elements sit on a rounding tie, and how far a tie's step travels through the layers after it;
- the census: how many quantize and dequantize nodes the source has, which the ONNX file must keep.
"""
import contextlib

NAMESPACE = "quantized_decomposed"


def _op_name(target):
    """'quantize_per_tensor' for torch.ops.quantized_decomposed.quantize_per_tensor.<overload>,
    None for anything outside the namespace."""
    name = getattr(target, "name", None)
    text = name() if callable(name) else str(target)
    if not text.startswith(NAMESPACE + "::"):
        return None
    return text.split("::", 1)[1].split(".", 1)[0]


def _graph_modules(model):
    import torch.fx
    return [m for m in model.modules() if isinstance(m, torch.fx.GraphModule)]


def census(model):
    """{'quantize': N, 'dequantize': M} over the model's FX graphs: its quantize ops, and the
    tensors its dequantize ops read (PT2E gives each reader of a quantized tensor a dequantize of
    its own, which exporters merge; the tensors are what must survive). None when the model holds
    no quantized_decomposed op (not a PT2E model)."""
    quantize, dequantized = 0, set()
    for index, graph_module in enumerate(_graph_modules(model)):
        for node in graph_module.graph.nodes:
            op = _op_name(node.target) if node.op == "call_function" else None
            if op and op.startswith("quantize_per_"):
                quantize += 1
            elif op and op.startswith("dequantize_per_") and node.args:
                dequantized.add((index, str(node.args[0])))
    return {"quantize": quantize, "dequantize": len(dequantized)} if quantize or dequantized else None


def allow_mode_calls(model):
    """Takes away the instance's own train()/eval() where torchao made them raise (an exported
    graph computes what it was traced to whatever its flag says, so the calls only set the flag);
    what was taken, for mode_calls_allowed to put back."""
    saved = []
    for module in model.modules():
        own = {name: module.__dict__[name] for name in ("train", "eval") if name in module.__dict__}
        if own:
            saved.append((module, own))
            for name in own:
                del module.__dict__[name]
    return saved


@contextlib.contextmanager
def mode_calls_allowed(model):
    """allow_mode_calls for the duration: the caller's object gets its own methods back."""
    saved = allow_mode_calls(model)
    try:
        yield
    finally:
        for module, own in saved:
            module.__dict__.update(own)


def _channel_shape(values, axis, rank):
    shape = [1] * rank
    shape[axis % rank] = -1
    return values.reshape(shape)


def _quantize_tensor64(x, scale, zero_point, quant_min, quant_max, dtype):
    import torch
    return torch.clamp(torch.round(x / scale) + zero_point, quant_min, quant_max)


def _dequantize_tensor64(q, scale, zero_point, quant_min, quant_max, dtype, out_dtype=None):
    import torch
    return (q.to(torch.float64) - zero_point) * scale


def _quantize_channel64(x, scales, zero_points, axis, quant_min, quant_max, dtype):
    import torch
    scales = _channel_shape(scales.to(torch.float64), axis, x.dim())
    zero_points = _channel_shape(zero_points.to(torch.float64), axis, x.dim())
    return torch.clamp(torch.round(x / scales) + zero_points, quant_min, quant_max)


def _dequantize_channel64(q, scales, zero_points, axis, quant_min, quant_max, dtype, out_dtype=None):
    import torch
    scales = _channel_shape(scales.to(torch.float64), axis, q.dim())
    shift = 0.0 if zero_points is None else _channel_shape(zero_points.to(torch.float64), axis, q.dim())
    return (q.to(torch.float64) - shift) * scales


_FLOAT64_KERNELS = {
    "quantize_per_tensor": _quantize_tensor64,
    "dequantize_per_tensor": _dequantize_tensor64,
    "quantize_per_channel": _quantize_channel64,
    "dequantize_per_channel": _dequantize_channel64,
}


def widen(model):
    """Swaps, in a float64 copy of a PT2E model, every quantize and dequantize node for its
    float64 kernel (same arguments). Raises TypeError for a quantized_decomposed op it has no
    kernel for (choose_qparams, a 4-bit group op): the twin would not be exact."""
    for graph_module in _graph_modules(model):
        for node in graph_module.graph.nodes:
            op = _op_name(node.target) if node.op == "call_function" else None
            if op is None:
                continue
            if op not in _FLOAT64_KERNELS:
                raise TypeError(f"quantized_decomposed.{op} has no float64 kernel here")
            node.target = _FLOAT64_KERNELS[op]
        graph_module.recompile()
    return model


def lost_finding(model, onnx_path):
    """QDQ_LOST when the ONNX file at `onnx_path` holds fewer QuantizeLinear or DequantizeLinear
    nodes than the PT2E graph has quantize and dequantize ops (an exporter or a rewrite dropped
    some, leaving those tensors in float); None when every one is there, or for a float model."""
    from ..core.findings import finding
    source = census(model)
    if source is None:
        return None
    import onnx
    graph = onnx.load(onnx_path, load_external_data=False).graph
    exported = {"quantize": sum(node.op_type in ("QuantizeLinear", "DynamicQuantizeLinear") for node in graph.node),
                "dequantize": len({node.input[0] for node in graph.node if node.op_type == "DequantizeLinear"})}
    lost = [f"{source[kind] - exported[kind]} of {source[kind]} {what}" for kind, what in
            (("quantize", "quantize ops"), ("dequantize", "dequantized tensors")) if exported[kind] < source[kind]]
    if not lost:
        return None
    return finding("QDQ_LOST", "error", f"the ONNX model lost {' and '.join(lost)} of the quantized PyTorch graph "
                   f"(it holds {exported['quantize']} QuantizeLinear, and DequantizeLinear on {exported['dequantize']} "
                   "tensors)",
                   "", "export with the other exporter or another opset; the tensors without them run in float "
                   "where PyTorch rounds them to the grid")
