"""The hostile-model corpus (issue 61): one small ONNX file per class of model a user may be handed
that breaks a reader, a folder or a fold, written by onnx's own helpers. `write_corpus(folder)`
writes NAME.onnx for every class and returns {name: what it breaks}; model_corpus_test.py gives
each to every command that reads a model. Every model takes x: float[1, 4] where it takes an input.

Protobufs near and over 2 GiB are written as sparse files (a few KiB on disk: the big tensor's
bytes are a hole of zeros). Not here: external-data locations (external_data_test.py and the
fuzz_model_folder target have those)."""
import os
import resource

import numpy as np
from onnx import AttributeProto, TensorProto, helper, numpy_helper

X = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])
Y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])


def _model(nodes, inputs=(X,), outputs=(Y,), initializers=(), opset=17, ir_version=8, functions=()):
    graph = helper.make_graph(list(nodes), "hostile", list(inputs), list(outputs), list(initializers))
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], functions=list(functions))
    model.ir_version = ir_version
    return model.SerializeToString()


def _const(name, values, dtype=np.int64):
    return helper.make_node("Constant", [], [name], value=numpy_helper.from_array(np.array(values, dtype=dtype), name))


def _bomb(op, shape_inputs, attrs=None):
    """y = x + ReduceSum(op(...)): a fold of op's output would be gigabytes."""
    return _model(shape_inputs + [helper.make_node(op, [n.output[0] for n in shape_inputs], ["big"], **(attrs or {})),
                                  helper.make_node("ReduceSum", ["big"], ["total"], keepdims=0),
                                  helper.make_node("Add", ["x", "total"], ["y"])])


def _varint(value):
    out = bytearray()
    while True:
        out.append((value & 0x7F) | (0x80 if value > 0x7F else 0))
        value >>= 7
        if not value:
            return bytes(out)


def _field(number, payload):
    """A length-delimited protobuf field, encoded by hand: protobuf's own encoder refuses nesting
    past 100 levels, which is what this corpus is made of."""
    return _varint(number << 3 | 2) + _varint(len(payload)) + payload


def _nested_if(depth):
    """`depth` If nodes, each in its parent's then-branch (the else-branches leaves)."""
    def leaf(name):
        return helper.make_graph([helper.make_node("Identity", ["x"], [name])], "leaf", [],
                                 [helper.make_tensor_value_info(name, TensorProto.FLOAT, [1, 4])])

    def if_node(name, then_graph):
        node = helper.make_node("If", ["cond"], [name], else_branch=leaf(name)).SerializeToString()
        then = AttributeProto(name="then_branch", type=AttributeProto.GRAPH).SerializeToString()
        return node + _field(5, then + _field(6, then_graph))  # NodeProto.attribute, AttributeProto.g

    inner = leaf("out0").SerializeToString()
    for level in range(1, depth):
        name = f"out{level}"
        shell = helper.make_graph([], f"level{level}", [], [helper.make_tensor_value_info(name, TensorProto.FLOAT,
                                                                                          [1, 4])])
        inner = shell.SerializeToString() + _field(1, if_node(name, inner))  # GraphProto.node
    top = helper.make_graph([_const("cond", True, np.bool_)], "hostile", [X], [Y]).SerializeToString()
    top += _field(1, if_node("y", inner))
    model = helper.make_model(helper.make_graph([], "empty", [], []), opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    model.ClearField("graph")
    return model.SerializeToString() + _field(7, top)  # ModelProto.graph


def _recursive_function():
    loop = helper.make_function("local", "Loop", ["a"], ["b"], [helper.make_node("Loop", ["a"], ["b"], domain="local")],
                                [helper.make_opsetid("", 17), helper.make_opsetid("local", 1)])
    graph = helper.make_graph([helper.make_node("Loop", ["x"], ["y"], domain="local")], "hostile", [X], [Y])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("local", 1)],
                              functions=[loop])
    model.ir_version = 8
    return model.SerializeToString()


def _external_keys(keys):
    weight = numpy_helper.from_array(np.ones((1, 4), np.float32), "w")
    weight.ClearField("raw_data")
    weight.data_location = TensorProto.EXTERNAL
    weight.external_data.add(key="location", value="w.bin")
    for index in range(keys):
        weight.external_data.add(key=f"injected_{index}", value="v" * 1024)
    return _model([helper.make_node("Add", ["x", "w"], ["y"])], initializers=[weight])


def _declared_larger_than_data():
    weight = TensorProto(name="w", data_type=TensorProto.FLOAT, dims=[1 << 40], raw_data=b"\0" * 16)
    return _model([helper.make_node("Add", ["x", "w"], ["y"])], initializers=[weight])


class Sparse:
    """A model file of `size` bytes whose first bytes are `head` and the rest zeros (a hole)."""

    def __init__(self, head, size):
        self.head, self.size = head, size


def _sized(size):
    """y = x - x (no proof of y = x + x may pass it) beside an unused uint8 initializer whose raw_data makes the file `size` bytes: the
    tensor, the graph and the model each end with the zeros, so every header is written before them."""
    graph = helper.make_graph([helper.make_node("Sub", ["x", "x"], ["y"])], "hostile", [X], [Y])
    model = helper.make_model(helper.make_graph([], "empty", [], []), opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    model.ClearField("graph")
    model_head, graph_head = model.SerializeToString(), graph.SerializeToString()
    raw = size - len(model_head) - len(graph_head) - 64  # the headers below take at most 64 bytes
    for _ in range(3):  # the varints' own lengths depend on the sizes they encode
        tensor = TensorProto(name="w", data_type=TensorProto.UINT8, dims=[raw]).SerializeToString()
        tensor += _varint(9 << 3 | 2) + _varint(raw)  # TensorProto.raw_data, its bytes follow
        graph_bytes = graph_head + _varint(5 << 3 | 2) + _varint(len(tensor) + raw) + tensor  # GraphProto.initializer
        head = model_head + _varint(7 << 3 | 2) + _varint(len(graph_bytes) + raw) + graph_bytes  # ModelProto.graph
        raw += size - (len(head) + raw)
    return Sparse(head, len(head) + raw)


def _cases():
    add = helper.make_node("Add", ["x", "x"], ["y"])
    huge = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1 << 62, 1 << 62])
    valid = _model([add])
    return {
        "dims_product_overflows": (_model([add], inputs=[huge]), "declared sizes whose product overflows int64"),
        "constant_of_shape_bomb": (_bomb("ConstantOfShape", [_const("s", [65536, 65536, 64])]),
                                   "ConstantOfShape of 2^38 floats: a fold would be 1 TiB"),
        "expand_bomb": (_bomb("Expand", [_const("one", [1.0], np.float32), _const("s", [1 << 20, 1 << 20])]),
                        "Expand to 2^40 floats"),
        "tile_bomb": (_bomb("Tile", [_const("one", [[1.0]], np.float32), _const("r", [1 << 20, 1 << 20])]),
                      "Tile to 2^40 floats"),
        "range_bomb": (_bomb("Range", [_const("a", 0.0, np.float32), _const("b", 1e12, np.float32),
                                       _const("d", 1.0, np.float32)]), "Range of 10^12 floats"),
        "nested_if_3000": (_nested_if(3000), "subgraphs nested 3000 deep"),
        "recursive_function": (_recursive_function(), "a model-local function that calls itself"),
        "duplicate_output_names": (_model([helper.make_node("Relu", ["x"], ["t"]), helper.make_node("Neg", ["x"], ["t"]),
                                           helper.make_node("Add", ["t", "t"], ["y"])]), "two nodes write one value"),
        "dangling_edge": (_model([helper.make_node("Add", ["x", "ghost"], ["y"])]), "an input nothing produces"),
        "cycle": (_model([helper.make_node("Relu", ["b"], ["a"]), helper.make_node("Neg", ["a"], ["b"]),
                          helper.make_node("Add", ["x", "a"], ["y"])]), "a cycle"),
        "truncated": (valid[: len(valid) // 2], "a protobuf cut in half"),
        "not_a_protobuf": (b"\xff" * 64 + b"GIF89a" * 10, "bytes that parse as no protobuf"),
        "empty_file": (b"", "an empty file"),
        "opset_999": (_model([add], opset=999), "an opset no ONNX has"),
        "ir_version_99": (_model([add], ir_version=99), "an IR version no ONNX has"),
        "injected_external_keys": (_external_keys(20000), "20,000 unknown external-data keys of 1 KiB each"),
        "declared_larger_than_data": (_declared_larger_than_data(), "an initializer of 2^40 floats holding 16 bytes"),
        "protobuf_near_2gib": (_sized((1 << 31) - (1 << 16)), "a valid protobuf 64 KiB under protobuf's 2 GiB limit"),
        "protobuf_over_2gib": (_sized((1 << 31) + (1 << 16)), "a protobuf 64 KiB over protobuf's 2 GiB limit"),
    }


def write_corpus(folder):
    """Writes NAME.onnx (and w.bin beside, for the external-data model) into `folder`; returns
    {name: what the model breaks}."""
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, "w.bin"), "wb") as handle:
        handle.write(np.ones((1, 4), np.float32).tobytes())
    described = {}
    for name, (data, what) in _cases().items():
        with open(os.path.join(folder, f"{name}.onnx"), "wb") as handle:
            if isinstance(data, Sparse):
                handle.write(data.head)
                handle.truncate(data.size)
            else:
                handle.write(data)
        described[name] = what
    return described


# Every command on a hostile model runs in a process whose address space is capped so (capped()).
ADDRESS_SPACE = 6 << 30


def capped():
    resource.setrlimit(resource.RLIMIT_AS, (ADDRESS_SPACE, ADDRESS_SPACE))


def write_reference(work):
    """WORK/x.pb (x = ones(1, 4)) and WORK/ref, a reference of one case (y = x + x: what the valid
    models of the corpus give)."""
    x = np.ones((1, 4), np.float32)
    case = os.path.join(work, "ref", "test_data_set_0")
    os.makedirs(case)
    for path, array, name in ((os.path.join(case, "input_0.pb"), x, "x"), (os.path.join(case, "output_0.pb"), x + x, "y"),
                              (os.path.join(work, "x.pb"), x, "x")):
        with open(path, "wb") as handle:
            handle.write(numpy_helper.from_array(array, name).SerializeToString())
