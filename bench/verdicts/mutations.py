"""Planted export bugs as ONNX graph mutations.

Each mutation is general: it looks for the operators it changes in any exported graph and returns
None when the graph has none (the bug does not apply to that model). A mutation takes the
ModelProto (a copy it may change) and a Context (the example inputs, for the one that freezes
shapes) and returns (model, what it changed), the model valid for onnx.checker.
"""
import os

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

FLOAT = TensorProto.FLOAT


class Context:
    """What a mutation may need besides the graph: the example case's inputs by name."""

    def __init__(self, example_inputs):
        self.example_inputs = example_inputs


# --- graph helpers -----------------------------------------------------------------------------

def _names(graph):
    names = {i.name for i in graph.input} | {i.name for i in graph.initializer} | {o.name for o in graph.output}
    for node in graph.node:
        names.update(node.input)
        names.update(node.output)
        names.add(node.name)
    return names


def fresh(graph, base):
    taken = _names(graph)
    index = 0
    while f"{base}_{index}" in taken:
        index += 1
    return f"{base}_{index}"


def initializer(graph, name):
    for tensor in graph.initializer:
        if tensor.name == name:
            return tensor
    return None


def constant_array(graph, name):
    """The value of an initializer or a Constant node's output; None otherwise."""
    tensor = initializer(graph, name)
    if tensor is not None:
        return numpy_helper.to_array(tensor)
    for node in graph.node:
        if node.op_type == "Constant" and node.output[0] == name:
            for attribute in node.attribute:
                if attribute.name == "value":
                    return numpy_helper.to_array(attribute.t)
    return None


def replace_initializer(graph, name, array):
    tensor = initializer(graph, name)
    tensor.CopyFrom(numpy_helper.from_array(array.astype(numpy_helper.to_array(tensor).dtype), name))


def add_scalar(graph, base, value, dtype=np.float32):
    name = fresh(graph, base)
    graph.initializer.append(numpy_helper.from_array(np.array(value, dtype=dtype), name))
    return name


def rewire(graph, old, new, skip=()):
    """Every use of value `old` (node inputs, graph outputs) reads `new` instead, except in `skip` nodes."""
    for node in graph.node:
        if any(node is s for s in skip):
            continue
        for index, name in enumerate(node.input):
            if name == old:
                node.input[index] = new
    for output in graph.output:
        if output.name == old:
            raise ValueError("rewiring a graph output is not supported")


def insert_after(graph, anchor, nodes):
    """Insert `nodes` right after node `anchor` (None: at the start), keeping the order topological."""
    position = 0 if anchor is None else next(i for i, n in enumerate(graph.node) if n is anchor) + 1
    for offset, node in enumerate(nodes):
        graph.node.insert(position + offset, node)


def replace_node(graph, old, nodes):
    position = next(i for i, n in enumerate(graph.node) if n is old)
    del graph.node[position]
    for offset, node in enumerate(nodes):
        graph.node.insert(position + offset, node)


def set_attribute(node, name, value):
    for attribute in list(node.attribute):
        if attribute.name == name:
            node.attribute.remove(attribute)
    node.attribute.append(helper.make_attribute(name, value))


def get_attribute(node, name, default=None):
    for attribute in node.attribute:
        if attribute.name == name:
            return helper.get_attribute_value(attribute)
    return default


def nodes_of(graph, *ops):
    return [node for node in graph.node if node.op_type in ops]


def float_values(model):
    """Names of float32 values (by shape inference), for the mutations that insert casts."""
    inferred = onnx.shape_inference.infer_shapes(model)
    kinds = {v.name: v.type.tensor_type.elem_type for v in list(inferred.graph.value_info) + list(inferred.graph.input)}
    return {name for name, kind in kinds.items() if kind == FLOAT}


def weighted_nodes(graph):
    """(node, weight initializer name, output-channel axis) of Conv/Gemm/MatMul with a constant weight."""
    found = []
    for node in graph.node:
        if node.op_type not in ("Conv", "Gemm", "MatMul") or len(node.input) < 2:
            continue
        weight = initializer(graph, node.input[1])
        if weight is None or len(weight.dims) < 2:
            continue
        if node.op_type == "Conv":
            axis = 0
        elif node.op_type == "Gemm":
            axis = 0 if get_attribute(node, "transB", 0) else 1
        else:
            axis = len(weight.dims) - 1
        found.append((node, node.input[1], axis))
    return found


# --- the mutations -----------------------------------------------------------------------------

def layernorm_eps(value):
    def mutate(model, context):
        norms = nodes_of(model.graph, "LayerNormalization")
        if not norms:
            return None
        before = get_attribute(norms[0], "epsilon", 1e-5)
        for node in norms:
            set_attribute(node, "epsilon", float(value))
        return model, f"LayerNormalization epsilon {before:g} -> {value:g} ({len(norms)} nodes)"
    return mutate


def batchnorm_eps(model, context):
    norms = nodes_of(model.graph, "BatchNormalization")
    if not norms:
        return None
    before = get_attribute(norms[0], "epsilon", 1e-5)
    for node in norms:
        set_attribute(node, "epsilon", 1e-3)
    return model, f"BatchNormalization epsilon {before:g} -> 1e-3 (Keras' default; {len(norms)} nodes)"


def hardsigmoid_alpha(model, context):
    nodes = nodes_of(model.graph, "HardSigmoid")
    if not nodes:
        return None
    before = get_attribute(nodes[0], "alpha", 0.2)
    for node in nodes:
        set_attribute(node, "alpha", 0.2)
    return model, f"HardSigmoid alpha {before:.4g} -> 0.2 (Keras' hard_sigmoid)"


def hardswish_no_clip(model, context):
    graph = model.graph
    nodes = nodes_of(graph, "HardSwish")
    if not nodes:
        return None
    for node in nodes:
        x, y = node.input[0], node.output[0]
        sixth, half = add_scalar(graph, "sixth", 1 / 6), add_scalar(graph, "half", 0.5)
        scaled, gate = fresh(graph, "hs_scaled"), fresh(graph, "hs_gate")
        replace_node(graph, node, [helper.make_node("Mul", [x, sixth], [scaled]),
                                   helper.make_node("Add", [scaled, half], [gate]),
                                   helper.make_node("Mul", [x, gate], [y])])
    return model, f"HardSwish without its clip: x * (x / 6 + 0.5) ({len(nodes)} nodes)"


def erf_tanh(model, context):
    """GELU's erf replaced by the tanh approximation: erf(u) ~ tanh(2/sqrt(pi) (u + 0.044715 * 2 u^3))."""
    graph = model.graph
    nodes = nodes_of(graph, "Erf")
    if not nodes:
        return None
    for node in nodes:
        u, y = node.input[0], node.output[0]
        c3, c1 = add_scalar(graph, "cubic", 0.044715 * 2.0), add_scalar(graph, "slope", 2.0 / np.sqrt(np.pi))
        sq, cube, term, inner, arg = (fresh(graph, f"gelu_{k}") for k in ("sq", "cube", "term", "inner", "arg"))
        replace_node(graph, node, [helper.make_node("Mul", [u, u], [sq]), helper.make_node("Mul", [sq, u], [cube]),
                                   helper.make_node("Mul", [cube, c3], [term]),
                                   helper.make_node("Add", [u, term], [inner]),
                                   helper.make_node("Mul", [inner, c1], [arg]), helper.make_node("Tanh", [arg], [y])])
    return model, "GELU's Erf replaced by the tanh approximation"


def erf_sigmoid(model, context):
    """GELU's erf replaced by the sigmoid approximation x * sigmoid(1.702 x): erf(u) ~ 2 sigmoid(1.702 sqrt(2) u) - 1."""
    graph = model.graph
    nodes = nodes_of(graph, "Erf")
    if not nodes:
        return None
    for node in nodes:
        u, y = node.input[0], node.output[0]
        k, two, one = add_scalar(graph, "k", 1.702 * np.sqrt(2.0)), add_scalar(graph, "two", 2.0), add_scalar(graph, "one", 1.0)
        scaled, sig, doubled = fresh(graph, "gs_scaled"), fresh(graph, "gs_sig"), fresh(graph, "gs_doubled")
        replace_node(graph, node, [helper.make_node("Mul", [u, k], [scaled]), helper.make_node("Sigmoid", [scaled], [sig]),
                                   helper.make_node("Mul", [sig, two], [doubled]),
                                   helper.make_node("Sub", [doubled, one], [y])])
    return model, "GELU's Erf replaced by the sigmoid approximation (x * sigmoid(1.702 x))"


def sigmoid_hard(model, context):
    nodes = nodes_of(model.graph, "Sigmoid")
    if not nodes:
        return None
    for node in nodes:
        node.op_type = "HardSigmoid"
        set_attribute(node, "alpha", 0.2)
        set_attribute(node, "beta", 0.5)
    return model, f"Sigmoid translated as HardSigmoid(0.2, 0.5) ({len(nodes)} nodes)"


def softmax_axis(model, context):
    nodes = nodes_of(model.graph, "Softmax")
    if not nodes:
        return None
    for node in nodes:
        set_attribute(node, "axis", -2)
    return model, "Softmax over axis -2 instead of -1"


def transpose_hw(model, context):
    """A square image input read with H and W swapped (an NHWC/NCHW-style mix-up the example's
    square shape hides)."""
    graph = model.graph
    for value in graph.input:
        dims = value.type.tensor_type.shape.dim
        if value.type.tensor_type.elem_type == FLOAT and len(dims) == 4 and dims[2].dim_value == dims[3].dim_value > 0:
            swapped = fresh(graph, value.name + "_hw")
            node = helper.make_node("Transpose", [value.name], [swapped], perm=[0, 1, 3, 2])
            rewire(graph, value.name, swapped)
            insert_after(graph, None, [node])
            return model, f"input '{value.name}' read with H and W swapped"
    return None


def frozen_reshape(model, context):
    """Every Reshape whose target shape is computed from the input's shape gets the example's
    shape as a constant (what a trace with a Python int size does)."""
    import onnxruntime as ort
    graph = model.graph
    dynamic = [node for node in nodes_of(graph, "Reshape") if constant_array(graph, node.input[1]) is None]
    if not dynamic:
        return None
    probe = onnx.ModelProto()
    probe.CopyFrom(model)
    for node in dynamic:
        probe.graph.output.append(helper.make_tensor_value_info(node.input[1], TensorProto.INT64, None))
    session = ort.InferenceSession(probe.SerializeToString(), providers=["CPUExecutionProvider"])
    names = [o.name for o in session.get_outputs()]
    values = dict(zip(names, session.run(None, context.example_inputs)))
    for node in dynamic:
        shape = values[node.input[1]].astype(np.int64)
        name = fresh(graph, "frozen_shape")
        graph.initializer.append(numpy_helper.from_array(shape, name))
        node.input[1] = name
    return model, f"{len(dynamic)} Reshape(s) frozen at the example's shape"


def weight_channel(model, context):
    found = weighted_nodes(model.graph)
    if not found:
        return None
    node, name, axis = found[0]
    array = numpy_helper.to_array(initializer(model.graph, name)).copy()
    index = [slice(None)] * array.ndim
    index[axis] = 0
    array[tuple(index)] *= 1.01
    replace_initializer(model.graph, name, array)
    return model, f"output channel 0 of {node.op_type} weight '{name}' scaled by 1.01"


def weight_noise(relative):
    def mutate(model, context):
        found = weighted_nodes(model.graph)
        if not found:
            return None
        node, name, _ = found[min(1, len(found) - 1)]
        array = numpy_helper.to_array(initializer(model.graph, name))
        noise = np.random.default_rng(0).standard_normal(array.shape)
        replace_initializer(model.graph, name, array * (1.0 + relative * noise))
        return model, f"{node.op_type} weight '{name}' perturbed by {relative:g} relative (normal, seeded)"
    return mutate


def fp16_roundtrip(model, context):
    """A Cast to float16 and back on one float value in the middle of the graph."""
    graph = model.graph
    floats = float_values(model)
    outputs = {o.name for o in graph.output}
    compute = ("Gemm", "MatMul", "Conv", "Add", "Mul", "Relu", "Tanh", "Sigmoid", "LayerNormalization", "HardSwish",
               "BatchNormalization", "Softmax", "Div", "MaxPool")
    candidates = [node for node in graph.node if node.op_type in compute and node.output[0] in floats
                  and node.output[0] not in outputs]
    if not candidates:
        return None
    node = candidates[len(candidates) // 2]
    value = node.output[0]
    half, back = fresh(graph, value + "_fp16"), fresh(graph, value + "_fp32")
    casts = [helper.make_node("Cast", [value], [half], to=TensorProto.FLOAT16),
             helper.make_node("Cast", [half], [back], to=FLOAT)]
    rewire(graph, value, back)
    insert_after(graph, node, casts)
    return model, f"Cast to float16 and back after {node.op_type} '{node.name or value}'"


def weights_fp16(model, context):
    count = 0
    for tensor in model.graph.initializer:
        if tensor.data_type == FLOAT and np.prod(tensor.dims) > 1:
            array = numpy_helper.to_array(tensor)
            tensor.CopyFrom(numpy_helper.from_array(array.astype(np.float16).astype(np.float32), tensor.name))
            count += 1
    if not count:
        return None
    return model, f"{count} float weights rounded to float16 precision"


def mask_dropped(model, context):
    """Consumers of the attention mask read ones instead: padding is ignored."""
    graph = model.graph
    mask = next((i for i in graph.input if "mask" in i.name.lower()), None)
    if mask is None:
        return None
    kind = mask.type.tensor_type.elem_type
    shape, ones = fresh(graph, "mask_shape"), fresh(graph, "mask_ones")
    dtype = helper.tensor_dtype_to_np_dtype(kind)
    nodes = [helper.make_node("Shape", [mask.name], [shape]),
             helper.make_node("ConstantOfShape", [shape], [ones],
                              value=numpy_helper.from_array(np.array([1], dtype=dtype)))]
    rewire(graph, mask.name, ones)
    nodes[0].input[0] = mask.name
    insert_after(graph, None, nodes)
    return model, f"input '{mask.name}' disconnected (replaced by ones)"


def bias_dropped(model, context):
    graph = model.graph
    for node in graph.node:
        bias = None
        if node.op_type in ("Gemm", "Conv") and len(node.input) > 2 and initializer(graph, node.input[2]) is not None:
            bias = node.input[2]
        elif node.op_type == "Add":
            for name in node.input:
                tensor = initializer(graph, name)
                if tensor is not None and len(tensor.dims) == 1 and tensor.dims[0] > 1:
                    bias = name
        if bias is not None:
            replace_initializer(graph, bias, np.zeros_like(numpy_helper.to_array(initializer(graph, bias))))
            return model, f"bias '{bias}' of {node.op_type} '{node.name}' dropped (zeroed)"
    return None


def resize_mode(attribute, value):
    def mutate(model, context):
        nodes = nodes_of(model.graph, "Resize")
        if not nodes:
            return None
        before = get_attribute(nodes[0], attribute, b"")
        for node in nodes:
            set_attribute(node, attribute, value)
        before = before.decode() if isinstance(before, bytes) else before
        return model, f"Resize {attribute} {before or '(default)'} -> {value}"
    return mutate


def relu_as_relu6(model, context):
    graph = model.graph
    nodes = nodes_of(graph, "Relu")
    if not nodes:
        return None
    low, high = add_scalar(graph, "relu6_low", 0.0), add_scalar(graph, "relu6_high", 6.0)
    for node in nodes:
        node.op_type = "Clip"
        node.input.extend([low, high])
    return model, f"ReLU translated as ReLU6 ({len(nodes)} nodes)"


# name -> (mutation, one-line description of the bug class)
MUTATIONS = {
    "layernorm_eps_1e-3": (layernorm_eps(1e-3), "LayerNorm epsilon 1e-3 (TF's default)"),
    "layernorm_eps_1e-6": (layernorm_eps(1e-6), "LayerNorm epsilon 1e-6"),
    "batchnorm_eps_1e-3": (batchnorm_eps, "BatchNorm epsilon 1e-3"),
    "hardsigmoid_alpha": (hardsigmoid_alpha, "HardSigmoid alpha 0.2 instead of 1/6"),
    "hardswish_no_clip": (hardswish_no_clip, "HardSwish without its clip"),
    "gelu_tanh": (erf_tanh, "GELU (erf) as the tanh approximation"),
    "gelu_sigmoid": (erf_sigmoid, "GELU (erf) as x * sigmoid(1.702 x)"),
    "sigmoid_hard": (sigmoid_hard, "Sigmoid as HardSigmoid"),
    "softmax_axis": (softmax_axis, "Softmax on the wrong axis"),
    "transpose_hw": (transpose_hw, "H and W swapped on a square input"),
    "frozen_reshape": (frozen_reshape, "dynamic Reshape frozen at the example size"),
    "weight_channel_1.01": (weight_channel, "one weight channel scaled by 1.01"),
    "weight_noise_1e-3": (weight_noise(1e-3), "1e-3 relative noise on one layer's weights"),
    "fp16_roundtrip": (fp16_roundtrip, "Cast to float16 and back in the middle"),
    "weights_fp16": (weights_fp16, "weights rounded to float16"),
    "mask_dropped": (mask_dropped, "attention mask ignored"),
    "bias_dropped": (bias_dropped, "one bias dropped"),
    "resize_asymmetric": (resize_mode("coordinate_transformation_mode", "asymmetric"),
                          "Resize coordinates asymmetric (align_corners-style)"),
    "resize_nearest": (resize_mode("mode", "nearest"), "bilinear Resize as nearest"),
    "relu_as_relu6": (relu_as_relu6, "ReLU as ReLU6"),
}


def _quantized_plant(plant):
    """A plant of tests/python/quantized_plants.py as a mutation: (model, context) -> (model, what)."""
    def mutation(model, context):
        try:
            return plant(model), (plant.__doc__ or "").split(".")[0].strip()
        except (ValueError, IndexError, StopIteration):  # the graph has no place for it
            return None
    return mutation


def _quantized_mutations():
    import sys
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests", "python"))
    import quantized_plants
    return {f"q_{name}": (_quantized_plant(plant), (plant.__doc__ or "").split(".")[0].strip())
            for name, plant in quantized_plants.PLANTS.items()}


# The export defects of quantized (Q/DQ) graphs, planted in the quantized models only.
QUANTIZED_MUTATIONS = _quantized_mutations()


def mutate(model, name, context):
    """(mutated copy, what changed) or None when the bug does not apply; the copy passes onnx.checker."""
    copy = onnx.ModelProto()
    copy.CopyFrom(model)
    result = {**MUTATIONS, **QUANTIZED_MUTATIONS}[name][0](copy, context)
    if result is None:
        return None
    mutated, what = result
    onnx.checker.check_model(mutated, full_check=True)
    return mutated, what
