"""Divergence localization's framework-neutral half of the front end: which ONNX values cross the
boundary of each module (a PyTorch module, a Keras layer), read from the nodes the framework's
exporter attributed to it, and which of them are floating point. The framework's localize.py pairs
them with its own tensors and writes RUN/localize/modules.json (schema onnxproof.localize/1)."""


def _ancestors(path, modules):
    """The modules a node attributed to `path` belongs to: the root and every qualified prefix."""
    parts = path.split(".") if path else []
    return [""] + [name for name in (".".join(parts[:k]) for k in range(1, len(parts) + 1)) if name in modules]


def module_boundaries(graph, modules, node_module):
    """{module: (nodes, input values, output values)}: the values that cross the boundary of the
    nodes attributed to the module and its children, in graph order; node_module(node, modules)
    is the framework's reading of which module a node belongs to (a dotted path, '' for the root,
    None for none). Each node is visited once per module around it (the depth of the module
    tree), not once per module of the model."""
    members = {}
    for index, node in enumerate(graph.node):
        path = node_module(node, modules)
        if path is not None:
            for module in _ancestors(path, modules):
                members.setdefault(module, []).append(index)
    consumers = {}
    for index, node in enumerate(graph.node):
        for value in node.input:
            consumers.setdefault(value, []).append(index)
    graph_outputs = {output.name for output in graph.output}
    constants = {init.name for init in graph.initializer} | {
        output for node in graph.node if node.op_type == "Constant" for output in node.output}
    result = {}
    for module, inside in members.items():
        member_set = set(inside)
        produced = {value for i in inside for value in graph.node[i].output}
        inputs, outputs, seen = [], [], set()
        for i in inside:
            for value in graph.node[i].input:
                if value and value not in produced and value not in constants and value not in seen:
                    seen.add(value)
                    inputs.append(value)
            for value in graph.node[i].output:
                if value and (value in graph_outputs or any(c not in member_set for c in consumers.get(value, []))):
                    outputs.append(value)
        result[module] = ([graph.node[i].name for i in inside], inputs, outputs)
    return result


_FLOAT_TYPES = {1, 10, 11, 16}  # TensorProto FLOAT, FLOAT16, DOUBLE, BFLOAT16
_INTEGER_TYPES = {2, 3, 4, 5, 6, 7, 12, 13}  # UINT8, INT8, UINT16, INT16, INT32, INT64, UINT32, UINT64


def _value_types(model):
    """{value name: TensorProto element type} as shape inference types the graph, None when it
    cannot; also the values no node typed (None where unknown)."""
    import onnx
    try:
        inferred = onnx.shape_inference.infer_shapes(model)
    except Exception:  # a model the checker accepts but inference cannot type: no filter
        return None
    graph = inferred.graph
    typed = {info.name: info.type.tensor_type.elem_type for info in
             list(graph.value_info) + list(graph.input) + list(graph.output)}
    return typed, {value for node in graph.node for value in node.output if value not in typed}


def float_values(model):
    """Names of the graph's values shape inference types as floating point, and of all whose type
    it could not tell (they are kept as candidates)."""
    types = _value_types(model)
    if types is None:
        return None
    typed, untyped = types
    return {name for name, elem in typed.items() if elem in _FLOAT_TYPES} | untyped


def integer_values(model):
    """Names of the graph's values shape inference types as integers (an empty set when it cannot
    type the graph: integers are then not compared)."""
    types = _value_types(model)
    return set() if types is None else {name for name, elem in types[0].items() if elem in _INTEGER_TYPES}
