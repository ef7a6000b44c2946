"""A TensorFlow model proved against an ONNX file the user made (`--onnx FILE`: a tf2onnx CLI
output, Keras's model.export(format="onnx"), a file converted with --inputs-as-nchw): the file's
inputs bound to the model's signature (core/given_binding.py), the model called through a Source
that takes the file's inputs and returns the file's outputs, its float64 twin likewise, and the
file adopted as model.onnx, its weights compared with the model's variables."""
import numpy as np

from ..core import given_binding, given_file
from ..core.cases import is_narrow_float, numpy_dtype


class BoundSource:
    """A Source (source.py) as the file sees it: call() takes {file input: array} and returns the
    file's outputs in the file's order, bound on the first call (core/given_file.bind_outputs)."""

    def __init__(self, source, binding, file_outputs, record):
        self.source, self.binding, self.file_outputs, self.record = source, binding, file_outputs, record
        self.description = source.description
        self.keras_model = source.keras_model
        self.output_names = [spec["name"] for spec in file_outputs]
        self.vocabularies = {}
        self.outputs = None  # [(file output, index among the model's, how)] once bound
        self.file_names = True  # the outputs keep the file's names as they are (export.check_forward)

    def model_arrays(self, arrays):
        """{model input: array}: each file input in the model's layout and integer type (a float
        keeps its precision, the float64 twin's included; a narrow float is widened to float32)."""
        out = {}
        for bound in self.binding:
            array = bound.to_model(np.asarray(arrays[bound.file]))
            model = numpy_dtype(bound.model_dtype)
            if array.dtype.kind in "iub" and array.dtype != model:
                array = array.astype(model)
            elif is_narrow_float(array.dtype) or array.dtype == np.float16:
                array = array.astype(np.float32)
            out[bound.model] = array
        return out

    def model_outputs(self, call, arrays):
        """The model's flat outputs on the file's `arrays` through `call` ({model input: array} ->
        list), with the names the model gives them."""
        values = call(self.model_arrays(arrays))
        names = self.source.output_names if self.source.output_names and len(self.source.output_names) == len(
            values) else [f"output_{index}" for index in range(len(values))]
        return values, [str(name).split(":")[0] for name in names]

    def mapped(self, call):
        """`call` (the model's or its twin's) taking the file's inputs and giving the file's outputs."""
        def bound_call(arrays):
            values, names = self.model_outputs(call, arrays)
            if self.outputs is None:
                self.outputs = given_file.bind_outputs(self.file_outputs,
                                                       [(name, np.shape(v)) for name, v in zip(names, values)])
                self.record[:] = [{"file": file, "model": names[index], "by": how} for file, index, how in self.outputs]
            return [values[index] for _, index, _ in self.outputs]
        return bound_call

    def call(self, arrays):
        return self.mapped(self.source.call)(arrays)


def bind_source(state, source):
    """The file's inputs bound to the model's signature; the Source the rest of the export calls."""
    binding = given_binding.bind_state_inputs(state, [name for name, _, _ in source.signature])
    return BoundSource(source, binding, state.interface.outputs, state.given_file["outputs"])


def model_variables(source):
    """The model's variables as numpy arrays by name: a Keras model's weights, a SavedModel's or a
    tf.Module's variables; {} where none can be read (the weights are then not compared)."""
    for owner in (source.keras_model, source.saved_model, source.owner):
        variables = getattr(owner, "weights", None) or getattr(owner, "variables", None)
        if variables:
            return {f"{getattr(v, 'path', None) or v.name}#{i}": np.asarray(v.numpy()) for i, v in enumerate(variables)}
    return {}


def adopt(state, bound):
    """The export stage of a given file (core/given_binding.adopt) with the model's variables."""
    def output_shapes(arrays):
        return [np.shape(value) for value in bound.call(arrays)]
    _, names = bound.model_outputs(bound.source.call, state.example)
    return given_binding.adopt(state, model_variables(bound.source), output_shapes, names)


def bound_twin(twin, bound):
    """The float64 twin (exact.Twin) of the model, taking the file's inputs like `bound`."""
    if twin.call is not None:
        twin.call = bound.mapped(twin.call)
    return twin
