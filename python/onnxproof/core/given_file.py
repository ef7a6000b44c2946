"""An ONNX file the user made (`--onnx FILE`, prove(onnx=...)): proved as it is, never re-exported.
What every framework needs of it: its interface read without its weights, its external data
checked before anything is read outside its folder, the binding of its inputs and outputs to the
model's, its symbolic dimensions as the dynamic axes to prove, and its bytes copied into the run
(model.onnx, byte for byte, with its data files under the names it gives them)."""
import os
import re
import shutil

from .errors import FrontEndError, UsageError
from .export_finish import file_digest

# The exporter name export.json records for a file the user made (the engine reads it: no
# re-export is ever tried for it, and its report names the user's file).
GIVEN = "file"

# Example sizes of an axis the file leaves symbolic when no --input declares the model's inputs:
# a batch (axis 0) of 2, anything else 8 (a sequence, a spatial size).
DEFAULT_BATCH, DEFAULT_OTHER = 2, 8


class Interface:
    """A file's graph inputs and outputs: [{"name", "dtype", "dims"}], dims holding an int for a
    fixed size and the dimension's name (or None) for a symbolic one."""

    def __init__(self, path, inputs, outputs, external, quantized, index_ranges=None):
        self.path, self.inputs, self.outputs = path, inputs, outputs
        self.index_ranges = index_ranges or {}  # {integer input: [0, N)}: it indexes a table of N rows
        self.external = external  # the data files it names, relative to its folder
        self.quantized = quantized  # it holds Q/DQ or QLinear operators


def read_interface(path):
    """The Interface of the ONNX file at `path`; FrontEndError (exit 3) for a file that is no ONNX
    model, or whose external data lies outside its folder."""
    import onnx
    from onnx import helper
    path = os.path.abspath(path)
    if os.path.isdir(path):
        raise UsageError(f"--onnx {path} is a folder: generation folders are proved against PyTorch decoders; "
                         "give one .onnx file")
    if not os.path.isfile(path):
        raise UsageError(f"--onnx {path}: no such file")
    try:
        model = onnx.load(path, load_external_data=False)
    except Exception as error:  # noqa: BLE001 -- protobuf's DecodeError and friends: a file that is no model
        raise FrontEndError(f"--onnx {path}: not an ONNX model: {type(error).__name__}: {error}") from None
    if not model.graph.output:
        raise FrontEndError(f"--onnx {path}: not an ONNX model: its graph has no outputs")
    weights = {tensor.name for tensor in model.graph.initializer}

    def described(value):
        tensor = value.type.tensor_type
        if not value.type.HasField("tensor_type"):
            raise FrontEndError(f"--onnx {path}: {value.name} is no tensor (a sequence or map): not provable yet")
        # A size some exporters write as text ("32") is a size, not a name.
        dims = [dim.dim_value if dim.HasField("dim_value") else int(dim.dim_param) if dim.dim_param.isdigit() else
                (dim.dim_param or None) for dim in tensor.shape.dim]
        return {"name": value.name, "dtype": helper.tensor_dtype_to_np_dtype(tensor.elem_type).name, "dims": dims}
    inputs = [described(value) for value in model.graph.input if value.name not in weights]
    outputs = [described(value) for value in model.graph.output]
    external = external_files(path, model)
    quantized = any(node.op_type in ("DequantizeLinear", "QLinearConv", "QLinearMatMul", "MatMulInteger",
                                     "ConvInteger", "DynamicQuantizeLinear") for node in model.graph.node)
    return Interface(path, inputs, outputs, external, quantized, index_ranges(model, inputs))


def index_ranges(model, inputs):
    """{integer input: [0, N)} for an input that indexes the rows of a weight table (a Gather on an
    initializer of N rows, maybe through a Cast): an embedding's token ids, a token type. Its
    values outside the table are no input of the model."""
    rows = {tensor.name: tensor.dims[0] for tensor in model.graph.initializer if tensor.dims}
    names = {spec["name"] for spec in inputs if spec["dtype"].startswith(("int", "uint"))}
    cast = {node.output[0]: node.input[0] for node in model.graph.node if node.op_type == "Cast" and node.input[0] in names}
    ranges = {}
    for node in model.graph.node:
        axis = next((attribute.i for attribute in node.attribute if attribute.name == "axis"), 0)
        if node.op_type == "Gather" and len(node.input) == 2 and node.input[0] in rows and axis == 0:
            source = cast.get(node.input[1], node.input[1])
            if source in names:
                size = int(rows[node.input[0]])
                ranges[source] = [0, min(size, ranges.get(source, [0, size])[1])]
    return ranges


def external_files(path, model):
    """The external data files the model names, relative to its folder; FrontEndError for a
    location that is absolute, climbs out of the folder, or is not a regular file there, and for
    an offset or length that is no number or reaches past the file's end."""
    from onnx import external_data_helper
    folder = os.path.realpath(os.path.dirname(path))
    files = []
    for tensor in external_data_helper._get_all_tensors(model):  # noqa: SLF001 -- onnx's own walk over subgraphs
        if tensor.data_location != tensor.EXTERNAL:
            continue
        location = next((entry.value for entry in tensor.external_data if entry.key == "location"), "")
        resolved = os.path.realpath(os.path.join(folder, location))
        if (not location or os.path.isabs(location) or os.path.commonpath([folder, resolved]) != folder
                or os.path.islink(os.path.join(folder, location)) or not os.path.isfile(resolved)):
            raise FrontEndError(f"--onnx {path}: tensor {tensor.name}'s external data '{location}' is not a file "
                                "inside the model's folder: refused")
        _check_bounds(path, tensor, resolved)
        if location not in files:
            files.append(location)
    return files


def _check_bounds(path, tensor, resolved):
    """FrontEndError unless the tensor's offset and length lie inside its data file."""
    entries = {entry.key: entry.value for entry in tensor.external_data}
    size = os.path.getsize(resolved)
    try:
        offset = int(entries.get("offset", "0"))
        length = int(entries["length"]) if "length" in entries else None
    except ValueError:
        raise FrontEndError(f"--onnx {path}: tensor {tensor.name}'s external data offset or length is no number: "
                            "refused") from None
    if offset < 0 or offset > size or (length is not None and (length < 0 or offset + length > size)):
        said = f"offset {offset}" + (f", length {length}" if length is not None else "")
        raise FrontEndError(f"--onnx {path}: tensor {tensor.name}'s external data ({said}) lies outside its "
                            f"{size}-byte file: refused")


def copy_into(interface, model_path):
    """The file copied to `model_path` (model.onnx) byte for byte and its data files beside it under
    the names it gives them; {"path", "bytes", "sha256"} of the user's file."""
    from .export_io import temporary_path
    out = os.path.dirname(model_path)
    for location in interface.external:
        target = os.path.join(out, location)
        if os.path.abspath(target) == os.path.abspath(model_path):
            raise FrontEndError(f"--onnx {interface.path}: its external data is named model.onnx: refused")
        os.makedirs(os.path.dirname(target), exist_ok=True)
        shutil.copyfile(os.path.join(os.path.dirname(interface.path), location), temporary_path(target))
        os.replace(temporary_path(target), target)
    shutil.copyfile(interface.path, temporary_path(model_path))
    os.replace(temporary_path(model_path), model_path)
    size, sha256 = file_digest(interface.path)
    return {"path": interface.path, "bytes": size, "sha256": sha256}


# --- the binding of the file's inputs to the model's ------------------------------------------

# Input names an exporter makes up when the call named none (TorchScript's "input.1", "onnx::Gemm_0",
# tf2onnx's "args_0", Keras's "input_layer"): matched by position, where a name chosen by a person
# never is (two inputs named otherwise than the model's could be swapped).
_MADE_UP_NAME = re.compile(r"^(input|args|x|inputs?_layer)?[._:]*\d*$|::|\.\d+$|^serving_default_|:0$")


def bind_inputs(file_inputs, model_names, bind=None, parameters=()):
    """[(file input, model input name, how)] in the file's order: by --bind, then by name, then the
    inputs left by position where that is unambiguous (one left on each side, or the file's names
    made up by its exporter). UsageError naming both sides for whatever is left, and for a file
    input named after one of forward()'s `parameters` the call does not give (it must be given,
    not taken from another input)."""
    bind = dict(bind or {})
    file_names = [spec["name"] for spec in file_inputs]
    for file_name, model_name in bind.items():
        if file_name not in file_names:
            raise UsageError(f"--bind {file_name}={model_name}: the file has no input '{file_name}' "
                             f"(its inputs: {', '.join(file_names)})")
        if model_name not in model_names:
            raise UsageError(f"--bind {file_name}={model_name}: the model has no input '{model_name}' "
                             f"(its inputs: {', '.join(model_names)})")
    bound = {}
    for spec in file_inputs:
        name = spec["name"]
        if name in bind:
            bound[name] = (bind[name], "--bind")
        elif name in model_names and name not in bind.values():
            bound[name] = (name, "name")
    left_file = [spec for spec in file_inputs if spec["name"] not in bound]
    taken = {model for model, _ in bound.values()}
    left_model = [name for name in model_names if name not in taken]
    ungiven = [spec["name"] for spec in left_file if spec["name"] in parameters]
    if ungiven:
        raise UsageError(f"the file takes {', '.join(ungiven)}, {'a parameter' if len(ungiven) == 1 else 'parameters'}"
                         f" of the model's forward() the call does not give: give {'it' if len(ungiven) == 1 else 'them'}"
                         f" (--input {ungiven[0]}=DIMS:DTYPE; prove(..., kwargs={{'{ungiven[0]}': ...}}))")
    if left_file and len(left_file) <= len(left_model) and (
            len(left_file) == 1 == len(left_model) or all(_MADE_UP_NAME.search(s["name"]) for s in left_file)):
        for spec, name in zip(left_file, left_model):
            bound[spec["name"]] = (name, "position")
        left_file = []
    if left_file:
        missing = ", ".join(spec["name"] for spec in left_file)
        raise UsageError(
            f"the file's input{'s' if len(left_file) > 1 else ''} {missing} match{'' if len(left_file) > 1 else 'es'} "
            f"no input of the model (the file takes {', '.join(file_names)}; the model takes "
            f"{', '.join(model_names) or 'nothing'}); say which is which with --bind FILE_INPUT=MODEL_INPUT "
            f"(prove(bind={{'FILE_INPUT': 'MODEL_INPUT'}}))")
    return [(spec, bound[spec["name"]][0], bound[spec["name"]][1]) for spec in file_inputs]


def castable(file_dtype, model_dtype):
    """The file's dtype can carry the model's values: the same, two integer types (the values are
    checked as they are generated), two float types (the model is fed the file's values), or bool
    and an integer type."""
    from .cases import is_narrow_float, numpy_dtype
    kinds = {"f" if is_narrow_float(numpy_dtype(name)) else numpy_dtype(name).kind for name in (file_dtype, model_dtype)}
    return file_dtype == model_dtype or kinds <= {"i", "u"} or kinds == {"f"} or kinds <= {"b", "i", "u"}


def bind_outputs(file_outputs, model_outputs):
    """[(file output name, index among the model's flat outputs, how)]: by name, then the outputs
    left in order where their ranks and fixed sizes agree, then by shape. `model_outputs`:
    [(name, shape)]. UsageError naming both sides for a file output left unbound."""
    names = [name for name, _ in model_outputs]
    bound, taken = {}, set()
    for spec in file_outputs:
        if spec["name"] in names:
            bound[spec["name"]] = (names.index(spec["name"]), "name")
            taken.add(names.index(spec["name"]))

    def fits(spec, index):
        shape = model_outputs[index][1]
        return len(shape) == len(spec["dims"]) and all(
            not isinstance(dim, int) or dim in (0, size) for dim, size in zip(spec["dims"], shape))
    left = [spec for spec in file_outputs if spec["name"] not in bound]
    free = [index for index in range(len(model_outputs)) if index not in taken]
    if left and len(left) <= len(free) and all(fits(spec, index) for spec, index in zip(left, free)):
        for spec, index in zip(left, free):
            bound[spec["name"]], _ = (index, "order"), taken.add(index)
        left = []
    for spec in left:
        match = next((index for index in range(len(model_outputs)) if index not in taken and fits(spec, index)), None)
        if match is None:
            shapes = ", ".join(f"{name} {list(shape)}" for name, shape in model_outputs)
            raise UsageError(f"the file's output {spec['name']} {spec['dims']} matches no output of the model "
                             f"(the model returns {shapes}): the file was made from another model, or from other "
                             "outputs of it")
        bound[spec["name"]] = (match, "shape")
        taken.add(match)
    return [(spec["name"], bound[spec["name"]][0], bound[spec["name"]][1]) for spec in file_outputs]


def dimension_label(input_name, axis, dim):
    """The label a symbolic dimension is proved under: its name in the file, else INPUT_dimAXIS."""
    return dim if isinstance(dim, str) and dim else f"{input_name}_dim{axis}"


def example_dims(spec):
    """A file input's example dims when no --input declared the model's: its fixed sizes, and the
    default example sizes on its symbolic ones."""
    return [dim if isinstance(dim, int) and dim > 0 else (DEFAULT_BATCH if axis == 0 else DEFAULT_OTHER)
            for axis, dim in enumerate(spec["dims"])]
