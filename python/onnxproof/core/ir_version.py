"""An export's IR version lowered to what its content needs. torch's dynamo exporter declares IR
version 10 whatever the opset, and ONNX Runtime's loader refuses a model whose IR version is above
the one it reads before it looks at anything else: an opset-20 model declared IR 10 does not load
on ONNX Runtime 1.17 (IR 9), which runs every operator of it. The IR version a model needs is the
lowest that has its opsets (onnx.helper's version table) and its element types (float8: 9, 4-bit
integers: 10, anything newer: the declared one is kept); a model with local functions keeps its
declared version (IR 10 changed what a function may hold). Fields a newer IR added that change no
meaning (a node's metadata_props: the exporter's stack traces) stay: an older reader skips a field
it does not know, as protobuf does."""
import os

from .findings import finding

# Above this many bytes, model.onnx holds its weights inline and reading it whole to learn its
# types costs more memory than the few bytes this can save; such a file keeps its IR version.
MAX_READ_BYTES = 512 * 2**20

# The IR version that introduced each element type onnx numbers at 17 and above.
_FLOAT8 = range(17, 21)  # FLOAT8E4M3FN ... FLOAT8E5M2FNUZ: IR 9
_FOUR_BIT = (21, 22)  # UINT4, INT4: IR 10


def lower_ir_version(path):
    """Rewrites the declared IR version of the model at `path` down to what it needs; an info
    finding saying so, or None where nothing changed (already minimal, too large to read, or
    content a lower IR cannot hold). Only the version field changes: the file's first bytes
    where the exporter put it first (as protobuf writers do), else the file is saved again."""
    import onnx
    if os.path.getsize(path) > MAX_READ_BYTES:
        return None
    model = onnx.load(path, load_external_data=False)
    declared, needed = model.ir_version, needed_ir_version(model)
    if not needed or needed >= declared:
        return None
    if not _patch_first_field(path, declared, needed):
        model.ir_version = needed
        onnx.save(model, path)
    return finding(
        "IR_VERSION_LOWERED", "info",
        f"the exporter declared IR version {declared}; the model needs {needed} (its opsets and element types), so "
        f"model.onnx declares {needed}: ONNX Runtime releases that read IR {needed} load it", f"IR version {declared}",
        "nothing to do; the graph, weights and opsets are unchanged")


def needed_ir_version(model):
    """The lowest IR version that holds the model; 0 where it cannot be lowered with certainty."""
    from onnx import helper
    if model.functions:
        return 0
    # The default domain decides (a custom domain has no IR version of its own); an onnx package
    # older than the opset, or without the helper's table, lowers nothing.
    default = [entry for entry in model.opset_import if entry.domain in ("", "ai.onnx")]
    try:
        needed = helper.find_min_ir_version_for(default)
    except (AttributeError, KeyError, TypeError, ValueError):
        return 0
    for element in element_types(model.graph):
        if element in _FOUR_BIT:
            needed = max(needed, 10)
        elif element in _FLOAT8:
            needed = max(needed, 9)
        elif element > 16:
            return 0
    return needed


def element_types(graph):
    """Every element type the graph and its subgraphs name: values, initializers, Cast targets,
    constant tensors."""
    values = list(graph.input) + list(graph.output) + list(graph.value_info)
    for value in values:
        yield from _type_elements(value.type)
    for tensor in graph.initializer:
        yield tensor.data_type
    for sparse in graph.sparse_initializer:
        yield sparse.values.data_type
    for node in graph.node:
        for attribute in node.attribute:
            if attribute.name in ("to", "dtype") and attribute.type == attribute.INT:
                yield attribute.i
            for tensor in ([attribute.t] if attribute.HasField("t") else []) + list(attribute.tensors):
                yield tensor.data_type
            if attribute.HasField("tp"):
                yield from _type_elements(attribute.tp)
            for body in ([attribute.g] if attribute.HasField("g") else []) + list(attribute.graphs):
                yield from element_types(body)


def _type_elements(type_proto):
    kind = type_proto.WhichOneof("value")
    if kind in ("tensor_type", "sparse_tensor_type"):
        yield getattr(type_proto, kind).elem_type
    elif kind == "sequence_type":
        yield from _type_elements(type_proto.sequence_type.elem_type)
    elif kind == "optional_type":
        yield from _type_elements(type_proto.optional_type.elem_type)
    elif kind == "map_type":
        yield type_proto.map_type.key_type
        yield from _type_elements(type_proto.map_type.value_type)


def _patch_first_field(path, declared, needed):
    """Writes `needed` over the ir_version varint where the file starts with it (field 1, one
    byte: tag 0x08, then the value); False where it does not."""
    with open(path, "r+b") as handle:
        head = handle.read(2)
        if len(head) < 2 or head[0] != 0x08 or head[1] != declared or needed >= 0x80:
            return False
        handle.seek(1)
        handle.write(bytes([needed]))
    return True
