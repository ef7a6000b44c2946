"""A PyTorch decoder proved against the generation files the user made (`--onnx FOLDER`, or one
file with a key/value cache): the model called as one decoder step under the step file's names
(core/given_cache.py reads the roles), so the given-file binding, the shape cases and the
reference work on it as on any file, and the generation proof's interface (generation.json) for
PyTorch's greedy loop against ONNX Runtime's through the files, step 0 through the first-step
file (a prefill) where the folder has one."""
import os

from ..core import given_cache, given_file, given_folder
from ..core.errors import UsageError
from ..core.export_io import progress

DEFAULT_STEPS = 8  # greedy steps of a generation folder proved without --generate
PAST_EXAMPLE, PROMPT_EXAMPLE = 8, 8


def step_decoder(state, model):
    """`model` as the step file's decoder step when the given file is a generation folder or takes
    or returns a cache (a prefill file alone: step 0), with state.inputs, state.dynamic and
    state.generation set from the files; else `model` as it is."""
    path = state.config["onnx"]
    layout = given_folder.read_layout(path) if os.path.isdir(path) else given_folder.Layout("one file", path)
    interface = given_file.read_interface(layout.step)
    seq2seq = bool(getattr(getattr(model, "config", None), "is_encoder_decoder", False))
    if not any(given_cache.cache_key(spec["name"]) for spec in interface.inputs + interface.outputs):
        if layout.components():
            raise UsageError(f"--onnx {path}: its step file {os.path.basename(layout.step)} takes and returns no "
                             "key/value cache; give one .onnx file")
        state.config["onnx"] = layout.step  # a folder of one file (transformers' export()): that file
        if seq2seq and [spec["name"] for spec in interface.outputs] == ["last_hidden_state"]:
            return model.get_encoder()  # an encoder file alone (encoder_model.onnx): the model's encoder
        return model
    if layout.encoder and not seq2seq:
        raise UsageError(f"--onnx {path}: an encoder-decoder's files ({layout.origin} layout); the model is no "
                         "transformers encoder-decoder")
    if not hasattr(model, "config") and not _takes(model, "past_key_values"):
        raise UsageError(f"--onnx {path}: the file takes a key/value cache; the model's forward() takes no "
                         "past_key_values")
    roles = given_cache.step_roles(interface, layout.step, seq2seq)
    first = None
    if layout.first:
        first = given_cache.Roles(given_file.read_interface(layout.first), layout.first, seq2seq)
    state.config["onnx"] = layout.step
    state.given_layout = layout
    layout.token_inputs = (roles.ids, roles.positions)
    state.inputs, state.dynamic, past_axes = _inputs(interface, roles)
    order = [spec["name"] for spec in interface.inputs]
    steps = int(state.config.get("generate") or 0)
    if not steps and (layout.first or layout.encoder):
        steps = state.config["generate"] = DEFAULT_STEPS
        progress(f"a generation folder: proved by generation, {steps} greedy steps (--generate N to choose)")
    if steps and roles.past:  # a prefill file alone takes no cache: its parity proves it
        encoder = given_file.read_interface(layout.encoder) if layout.encoder else None
        if seq2seq and encoder is None:  # decoder files exported without their encoder: PyTorch's feeds them
            from .given_seq2seq import model_encoder
            encoder = model_encoder(model, interface)
        state.generation = dict(given_cache.interface_document(roles, first, encoder), past_axes=past_axes)
        if not layout.encoder and encoder is not None:
            state.generation["encoder"].update(model="", sha256="")
        if encoder is not None:
            from . import given_seq2seq
            state.generation.update(encoder_specs=encoder.inputs, record=given_seq2seq.record_runs)
        else:
            state.generation.update(prompt=_prompt_spec(interface, roles, layout.first),
                                    call_of=lambda m: step_call(m, roles, order))
    progress(f"the {layout.origin} layout: {os.path.basename(layout.step)} runs each step"
             + (f", {os.path.basename(layout.first)} step 0" if layout.first else ""))
    return StepDecoder(model, roles, order)


def _takes(model, name):
    import inspect
    try:
        return name in inspect.signature(model.forward).parameters
    except (TypeError, ValueError, AttributeError):
        return False


def _inputs(interface, roles):
    """(state.inputs, state.dynamic, {past input: its sequence axis}) of the step file: example
    sizes that fit together (the mask covers the past and the new tokens), one label for every
    symbolic batch axis, one for the self-attention past's sequence axes and one for the source
    (the cross-attention past, the encoder's mask and states), the mask's length derived."""
    inputs, dynamic, past_axes, labels = [], [], {}, {}
    batch_label = next((dims[0] for dims in (spec["dims"] for spec in interface.inputs)
                        if dims and isinstance(dims[0], str)), None)
    new_tokens = 1
    for spec in interface.inputs:
        name, dims = spec["name"], given_file.example_dims(spec)
        axis, part = None, None
        if name in roles.past:
            axis = 2 if len(dims) == 4 else next((a for a, d in enumerate(spec["dims"]) if a and not isinstance(d, int)), 1)
            part = roles.keys[roles.past.index(name)][1]
            past_axes[name], dims[axis] = axis, PAST_EXAMPLE
        elif name in (roles.encoder_mask, roles.encoder_states):
            axis, part = 1, "cross"
        if axis is not None and not isinstance(spec["dims"][axis], int):
            label = labels.setdefault(part, given_file.dimension_label(name, axis, spec["dims"][axis]))
            dynamic.append({"input": name, "axis": axis, "label": label})
        if name == roles.ids:
            new_tokens = dims[1]
        if batch_label and isinstance(spec["dims"][0], str):
            dynamic.append({"input": name, "axis": 0, "label": batch_label})
        inputs.append({"name": name, "dims": dims, "dtype": spec["dtype"]})
    past_label = labels.get("self")
    for spec in inputs:
        if spec["name"] == roles.mask and past_label:
            spec["dims"][1] = PAST_EXAMPLE + new_tokens
            own = next(s for s in interface.inputs if s["name"] == roles.mask)["dims"][1]
            if not isinstance(own, int):
                ids_dim = next(s for s in interface.inputs if s["name"] == roles.ids)["dims"][1]
                derived = [past_label, ids_dim] if isinstance(ids_dim, str) else \
                    {"label": past_label, "scale": 1, "offset": ids_dim}
                dynamic.append({"input": roles.mask, "axis": 1, "label": given_file.dimension_label(roles.mask, 1, own),
                                "derived": derived})
    return inputs, dynamic, past_axes


def _prompt_spec(interface, roles, first_path):
    """The prompt's dims and id range: the first-step file's (or the step file's) fixed sizes, else a
    batch of 2 and 8 tokens; ids below the rows of the table they index, else the logits' width."""
    source = given_file.read_interface(first_path) if first_path else interface
    ids = next(spec for spec in source.inputs if spec["name"] in given_cache.IDS)
    batch, length = (dim if isinstance(dim, int) and dim > 0 else default
                     for dim, default in zip(ids["dims"], (2, PROMPT_EXAMPLE)))
    logits = next(spec for spec in interface.outputs if spec["name"] == roles.logits)["dims"]
    high = (source.index_ranges.get(ids["name"]) or interface.index_ranges.get(roles.ids) or [0, logits[-1]])[1]
    if not isinstance(high, int):
        raise UsageError(f"--onnx {interface.path}: its logits' width is symbolic and its ids index no table: "
                         "declare the ids' range (--input input_ids=1x8:int64[0,V])")
    return {"dims": [batch, length], "range": [0, high]}


def step_call(decoder, roles, order):
    """call(ids, length, past) -> the step file's outputs from `decoder` (the bound model, which
    takes the step file's inputs in `order`): the mask over past and new tokens, positions after
    the past."""
    import torch

    def call(ids, length, past):
        batch, new = ids.shape
        values = {roles.ids: ids, **dict(zip(roles.past, past))}
        if roles.mask:
            values[roles.mask] = torch.ones((batch, length), dtype=torch.int64)
        if roles.positions:
            values[roles.positions] = torch.arange(length - new, length, dtype=torch.int64).expand(batch, new)
        return decoder(*[values[name] for name in order])
    return call


def _pairs(tensors, roles, part):
    """[(key, value)] per layer of one part of the cache from the step file's cache inputs."""
    by_layer = {}
    for name, (layer, kind_part, kind) in zip(roles.past, roles.keys):
        if kind_part == part:
            by_layer.setdefault(layer, {})[kind] = tensors[name]
    return [(by_layer[layer]["key"], by_layer[layer]["value"]) for layer in sorted(by_layer)]


def StepDecoder(model, roles, order):  # noqa: N802 -- a class factory, named as the class it makes
    """The model as one decoder step taking the step file's inputs (in `order`) and returning
    {file output: tensor}: the cache inputs as a transformers DynamicCache (or pairs for a model
    of the user's), step 0's empty cache as none at all in PyTorch, as users call it."""
    import torch
    from .generation import TransformersStep, UserStep

    class FileStep(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.model, self.input_names = model, list(order)

        @property
        def wrapped_model(self):  # what traps.forward_location names: the user's forward
            return self.model

        def forward(self, *args):
            values = dict(zip(self.input_names, args))
            pairs = _pairs(values, roles, "self")
            if pairs and all(key.numel() == 0 for key, _ in pairs):
                pairs = []
            mask = values[roles.mask] if roles.mask else None
            if getattr(getattr(self.model, "config", None), "is_encoder_decoder", False):
                from .given_seq2seq import decoder_step
                logits, present = decoder_step(self.model, roles, values, pairs, _pairs(values, roles, "cross"))
            elif hasattr(self.model, "config"):
                positions = {"position_ids": values[roles.positions]} if roles.positions else {}
                logits, own = TransformersStep(self.model)(values[roles.ids], mask, pairs, **positions)
                present = {"self": own}
            else:
                logits, own = UserStep(self.model)(values[roles.ids], mask, pairs)
                present = {"self": own}
            outputs = {roles.logits: logits, **{name: values[source] for name, source in roles.passthrough.items()}}
            for (layer, part, kind), name in roles.outputs.items():
                if layer < len(present.get(part, [])):
                    outputs[name] = present[part][layer][0 if kind == "key" else 1]
            return outputs

    return FileStep()
