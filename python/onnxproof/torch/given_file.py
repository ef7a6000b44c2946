"""A PyTorch model proved against an ONNX file the user made (`--onnx FILE`, prove(onnx=...)): the
file's inputs bound to forward()'s (core/given_binding.py), the model called through a module that
takes the file's inputs and returns the file's outputs (so the forward check, the output axes,
the reference and its float64 twin all speak the file's names), and the file adopted as
model.onnx, its weights compared with the model's parameters and buffers."""
import inspect

from ..core import given_binding, given_file


def forward_names(model):
    """forward()'s positional parameter names, or [] where it has no Python signature."""
    try:
        parameters = inspect.signature(model.forward).parameters.values()
    except (TypeError, ValueError):
        return []
    return [p.name for p in parameters if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]


def bind_inputs(state, model):
    """The file's inputs bound to the model's (core/given_binding.py); (the binding, the model's
    input names in the order forward() takes them) for bound_model."""
    order = [spec["name"] for spec in state.inputs] or forward_names(model)
    binding = given_binding.bind_state_inputs(state, forward_names(model) or order)
    order = order or [bound.model for bound in binding]
    state.given_file["model_inputs"] = list(order)
    return binding, order


def adopt(state, model):
    """The export stage of a given file (core/given_binding.adopt) with the model's parameters and
    buffers, and its outputs."""
    import torch
    parameters = {name: value.detach().cpu().to(torch.float64 if value.dtype == torch.float64 else torch.float32).numpy()
                  for name, value in model.model.state_dict().items()
                  if hasattr(value, "is_floating_point") and value.is_floating_point()}

    def output_shapes(arrays):
        return [tuple(t.shape) for t in state.forward(model, arrays).values()]
    with torch.no_grad():
        produced = model.model_outputs(*state.args_for(state.example))[1]
    return given_binding.adopt(state, parameters, output_shapes, [name for name, _ in produced])


def bound_model(model, binding, model_order, file_outputs, record):
    """The model as a module taking the file's inputs in the file's order, each cast to the dtype
    the model takes (integers to its integer type, narrow floats widened to float32; a float64
    input, the float64 twin's, is left as it is), and returning {file output: tensor}, the
    outputs bound on the first call (core/given_file.bind_outputs, recorded in `record`).
    `model_order`: the model's input names in the order forward() takes them."""
    import torch
    from numpy import argsort
    from . import traps

    class Bound(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.model = model
            self.outputs = None

        @property
        def wrapped_model(self):  # what traps.forward_location names: the user's forward, not this one
            return self.model

        def model_outputs(self, *args):
            """(the model's flat output tensors, [(name, shape)]), or its result as it is when
            that holds something else than tensors."""
            values = {}
            for bound, arg in zip(binding, args):
                if bound.file_dtype != bound.model_dtype and arg.dtype not in (torch.float32, torch.float64):
                    arg = arg.to(torch.float32 if arg.is_floating_point() else getattr(torch, bound.model_dtype))
                values[bound.model] = arg if bound.perm is None else arg.permute(*[int(a) for a in argsort(bound.perm)])
            given = [name for name in model_order if name in values]
            if given == model_order[:len(given)]:
                result = self.model(*[values[name] for name in given])
            else:
                result = self.model(**values)  # a model input the file does not take: its default
            flat, problems = traps.flatten_outputs(result)
            if problems:
                return result
            return [value for _, value in flat], [(name, tuple(value.shape)) for name, value in flat]

        def forward(self, *args):
            produced = self.model_outputs(*args)
            if not isinstance(produced, tuple):
                return produced  # no tensors: check_forward says NON_TENSOR_OUTPUT
            values, shapes = produced
            if self.outputs is None:
                self.outputs = given_file.bind_outputs(file_outputs, shapes)
                record[:] = [{"file": name, "model": shapes[index][0], "by": how} for name, index, how in self.outputs]
            return {name: values[index] for name, index, _ in self.outputs}

    return Bound()
