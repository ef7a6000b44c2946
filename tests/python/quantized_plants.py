"""Export defects planted into a quantized (Q/DQ) ONNX graph, each as an exporter or a graph pass
would have written it: the quantized-model tests prove each one fails. Every plant takes and
returns an onnx.ModelProto and leaves the graph valid (ONNX Runtime runs it)."""
import numpy as np
import onnx
from onnx import helper, numpy_helper


def _initializer(model, name):
    return next(i for i in model.graph.initializer if i.name == name)


def _add_initializer(model, name, array):
    model.graph.initializer.append(numpy_helper.from_array(array, name))
    return name


def _activation_pairs(model):
    """(QuantizeLinear, DequantizeLinear) pairs on activations, in graph order: a Q whose output
    one DQ reads."""
    nodes = list(model.graph.node)
    pairs = []
    for q in nodes:
        if q.op_type != "QuantizeLinear":
            continue
        readers = [n for n in nodes if q.output[0] in n.input]
        if len(readers) == 1 and readers[0].op_type == "DequantizeLinear":
            pairs.append((q, readers[0]))
    return pairs


def zero_point_off_by_one(model):
    """The second activation pair's DequantizeLinear reads a zero point one above its
    QuantizeLinear's (an exporter that wrote the two from different observers)."""
    _, dq = _activation_pairs(model)[1]
    zero_point = numpy_helper.to_array(_initializer(model, dq.input[2]))
    dq.input[2] = _add_initializer(model, dq.input[2] + "_planted", (zero_point.astype(np.int32) + 1).astype(zero_point.dtype))
    return model


def scale_float16(model):
    """Every scale stored at float16 precision (an exporter that keeps the observer's scales in
    half precision), read back as float32."""
    for name in {n.input[1] for n in model.graph.node if n.op_type in ("QuantizeLinear", "DequantizeLinear")}:
        tensor = _initializer(model, name)
        rounded = numpy_helper.to_array(tensor).astype(np.float16).astype(np.float32)
        tensor.CopyFrom(numpy_helper.from_array(rounded, name))
    return model


def axis_swapped(model):
    """A square per-channel weight (out channels = in channels) dequantized along its input
    channels instead of its output channels: the shapes agree, the numbers do not."""
    initializers = {i.name: i for i in model.graph.initializer}
    for node in model.graph.node:
        weight = initializers.get(node.input[0]) if node.op_type == "DequantizeLinear" else None
        if weight is not None and len(weight.dims) == 4 and weight.dims[0] == weight.dims[1]:
            for attribute in node.attribute:
                if attribute.name == "axis":
                    attribute.i = 1
            return model
    raise ValueError("no square per-channel weight to swap")


def qdq_dropped(model):
    """The first activation pair after the input's removed (a pass that takes Q -> DQ for a no-op):
    its readers get the float value unquantized."""
    q, dq = _activation_pairs(model)[1]
    for node in model.graph.node:
        node.input[:] = [q.input[0] if name == dq.output[0] else name for name in node.input]
    model.graph.node.remove(q)
    model.graph.node.remove(dq)
    return model


def truncating_quantize(model):
    """The second activation QuantizeLinear lowered to Div, Cast to int32, Add, Clip, Cast: the
    Cast truncates toward zero instead of rounding half to even (the lowering bug class of ONNX
    Runtime's float16 QuantizeLinear, onnxruntime PR#32452)."""
    q, _ = _activation_pairs(model)[1]
    zero_point = numpy_helper.to_array(_initializer(model, q.input[2]))
    prefix = q.output[0] + "_lowered"
    low = _add_initializer(model, prefix + "_low", np.array(np.iinfo(zero_point.dtype).min, np.int32))
    high = _add_initializer(model, prefix + "_high", np.array(np.iinfo(zero_point.dtype).max, np.int32))
    shift = _add_initializer(model, prefix + "_zero_point", zero_point.astype(np.int32))
    lowered = [
        helper.make_node("Div", [q.input[0], q.input[1]], [prefix + "_scaled"]),
        helper.make_node("Cast", [prefix + "_scaled"], [prefix + "_truncated"], to=onnx.TensorProto.INT32),
        helper.make_node("Add", [prefix + "_truncated", shift], [prefix + "_shifted"]),
        helper.make_node("Clip", [prefix + "_shifted", low, high], [prefix + "_clipped"]),
        helper.make_node("Cast", [prefix + "_clipped"], [q.output[0]], to=helper.np_dtype_to_tensor_dtype(zero_point.dtype)),
    ]
    position = list(model.graph.node).index(q)
    model.graph.node.remove(q)
    for offset, node in enumerate(lowered):
        model.graph.node.insert(position + offset, node)
    return model


PLANTS = {
    "zero_point_off_by_one": zero_point_off_by_one,
    "scale_float16": scale_float16,
    "axis_swapped": axis_swapped,
    "qdq_dropped": qdq_dropped,
    "truncating_quantize": truncating_quantize,
}
