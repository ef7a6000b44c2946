"""The PyTorch side of the generation proof.

A decoder with a key/value cache is exported in the form runtimes call once per generated token
(ONNX Runtime GenAI, Optimum): inputs `input_ids`, `attention_mask` (past and new tokens) and
`past_key_values.L.key` / `.value` per layer, outputs `logits` and `present.L.key` / `.value`.
`FlatCacheDecoder` turns a model whose cache is a structure (a transformers Cache, a tuple of
(key, value) pairs) into that flat form.

`greedy` runs N greedy steps from a prompt in PyTorch, feeding the cache back;
generation_reference.py records them as the generation proof's reference. The engine replays the
loop in ONNX Runtime (parity/generation.cpp).
"""
from ..core.findings import finding

PAST = "past_key_values.{layer}.{kind}"
PRESENT = "present.{layer}.{kind}"
KINDS = ("key", "value")


def pairs_of(cache):
    """[(key, value)] per layer from a transformers Cache (its `layers`), a legacy tuple of pairs
    or None."""
    if cache is None:
        return []
    layers = getattr(cache, "layers", None)
    if layers is not None:
        return [(layer.keys, layer.values) for layer in layers]
    return [(pair[0], pair[1]) for pair in cache]


def _logits_and_cache(output):
    """(logits, cache) from what a decoder returns: an object or dict with logits and
    past_key_values, or a tuple (logits, cache)."""
    if isinstance(output, dict):
        return output["logits"], output.get("past_key_values")
    if hasattr(output, "logits"):
        return output.logits, getattr(output, "past_key_values", None)
    if isinstance(output, (tuple, list)) and len(output) == 2:
        return output[0], output[1]
    raise TypeError(f"a decoder for --generate returns logits and past_key_values; this one returns "
                    f"{type(output).__name__}")


class TransformersStep:
    """One decoder call of a transformers causal LM: the pairs go into a DynamicCache (the class
    torch.export cannot take as an input, so the adapter builds it inside the graph)."""

    def __init__(self, model):
        self.model = model

    def __call__(self, input_ids, attention_mask, pairs, **inputs):
        """`inputs`: the model's other inputs a decoder file takes (position_ids)."""
        from transformers import DynamicCache
        cache = DynamicCache(ddp_cache_data=pairs, config=self.model.config) if pairs else DynamicCache(
            config=self.model.config)
        output = self.model(input_ids=input_ids, attention_mask=attention_mask, past_key_values=cache,
                            use_cache=True, return_dict=True, **inputs)
        return output.logits, pairs_of(output.past_key_values)


class UserStep:
    """One call of a user's decoder: forward(input_ids, attention_mask, past_key_values=None)
    returning logits and the new cache (pairs, a Cache, an object or a dict)."""

    def __init__(self, model):
        self.model = model

    def __call__(self, input_ids, attention_mask, pairs):
        logits, cache = _logits_and_cache(self.model(input_ids, attention_mask, past_key_values=pairs or None))
        return logits, pairs_of(cache)


class FlatCacheDecoder:
    """Mixed into a torch.nn.Module subclass by `flat_cache_decoder`: forward(input_ids,
    attention_mask, *past) with past the flat key, value, key, value, ... tensors; returns
    {"logits", "present.L.key", "present.L.value", ...}. Step 0 (every past of length 0) calls
    the decoder with no cache at all, as users call it in PyTorch; ONNX Runtime gets the empty
    tensors."""

    def forward(self, input_ids, attention_mask, *past):
        import torch
        pairs = [(past[index], past[index + 1]) for index in range(0, len(past), 2)]
        exporting = torch.jit.is_tracing() or torch.compiler.is_exporting()
        if not exporting and pairs and all(key.numel() == 0 for key, _ in pairs):
            pairs = []
        logits, present = self.step(input_ids, attention_mask, pairs)
        outputs = {"logits": logits}
        for layer, (key, value) in enumerate(present):
            outputs[PRESENT.format(layer=layer, kind="key")] = key
            outputs[PRESENT.format(layer=layer, kind="value")] = value
        return outputs


def flat_cache_decoder(model, step_class):
    """An nn.Module holding `model` (as `.model`, where the exporters look for translation
    tables) whose forward is FlatCacheDecoder's, calling it through `step_class(model)`. The step
    is made from the module's own `.model` at each call, so a copy (the float64 one) calls its
    own copy of the model."""
    import torch

    class CacheDecoder(FlatCacheDecoder, torch.nn.Module):
        def __init__(self):
            torch.nn.Module.__init__(self)
            self.model = model

        def step(self, input_ids, attention_mask, pairs):
            return step_class(self.model)(input_ids, attention_mask, pairs)

    return CacheDecoder()


def takes_cache(model):
    """Whether `model`'s forward takes a `past_key_values` argument (a decoder with a cache)."""
    import inspect
    try:
        return "past_key_values" in inspect.signature(model.forward).parameters
    except (TypeError, ValueError, AttributeError):
        return False


def user_decoder(model, ids_spec=None):
    """A user's decoder, forward(input_ids, attention_mask, past_key_values=None), as a flat cache
    decoder with its default inputs; `ids_spec` (an input spec of input_ids) sets the prompt's
    batch, length and id range, else 2 x 4 ids below the logits' width."""
    decoder = flat_cache_decoder(model, UserStep)
    batch, sequence = (ids_spec["dims"] if ids_spec else (2, 4))[:2]
    vocabulary = (ids_spec or {}).get("range", [0, None])[1]
    return decoder, decoder_inputs(decoder.eval(), int(batch), int(sequence), 8, vocabulary)


def decoder_inputs(decoder, batch, sequence, past, vocabulary=None, max_positions=None):
    """The default inputs of a flat cache decoder ({"inputs", "dynamic", "derived", "generation"}):
    its cache's layer count, heads and head size (and, when `vocabulary` is None, the width of its
    logits) read from one call with no cache."""
    import torch
    with torch.no_grad():  # two lengths: the cache's sequence axis is the one that follows them
        outputs, longer = (decoder(torch.zeros((1, length), dtype=torch.int64), torch.ones((1, length), dtype=torch.int64))
                           for length in (2, 3))
    present = [name for name in outputs if name != "logits"]
    if not present:
        raise TypeError("the decoder returned no cache (present) tensors")
    vocabulary = int(vocabulary or outputs["logits"].shape[-1])
    axes = {name: [axis for axis, (a, b) in enumerate(zip(outputs[name].shape, longer[name].shape)) if a != b]
            for name in present}
    if any(len(found) != 1 or found[0] == 0 for found in axes.values()):
        raise TypeError(f"cannot tell each cache tensor's sequence axis from its shapes ({axes})")
    inputs = [{"name": "input_ids", "dims": [batch, sequence], "dtype": "int64", "range": [0, vocabulary]},
              {"name": "attention_mask", "dims": [batch, past + sequence], "dtype": "int64", "range": [1, 2]}]
    dynamic = [{"input": "input_ids", "axis": 0, "label": "batch"},
               {"input": "input_ids", "axis": 1, "label": "sequence"},
               {"input": "attention_mask", "axis": 0, "label": "batch"},
               {"input": "attention_mask", "axis": 1, "label": "total_sequence"}]
    past_names = []
    for name in present:
        layer, kind = name.split(".")[1:]
        past_name = PAST.format(layer=layer, kind=kind)
        dims, axis = list(outputs[name].shape), axes[name][0]
        dims[0], dims[axis] = batch, past
        inputs.append({"name": past_name, "dims": dims, "dtype": str(outputs[name].dtype).removeprefix("torch.")})
        dynamic += [{"input": past_name, "axis": 0, "label": "batch"},
                    {"input": past_name, "axis": axis, "label": "past_sequence"}]
        past_names.append(past_name)
    if max_positions:
        for entry in dynamic:
            if entry["label"] in ("sequence", "past_sequence", "total_sequence"):
                entry.update(min=1, max=max_positions)
    return {"inputs": inputs, "dynamic": dynamic,
            "derived": {"total_sequence": ["past_sequence", "sequence"]},
            "generation": {"input_ids": "input_ids", "attention_mask": "attention_mask", "logits": "logits",
                           "past": past_names, "present": present}}


def greedy(call, prompt, empty_past, present, steps, tokens=None, logits_name="logits"):
    """(tokens [steps, batch], last-position logits [steps, batch, vocabulary]) of `steps` greedy
    steps, `call(ids, length, past)` returning a step's outputs (length: past and new tokens) and
    the outputs named `present` fed back as the next past; with `tokens` given, those are fed
    (teacher forcing) instead of the decoder's own."""
    import torch
    chosen, logits_by_step = [], []
    ids, past, length = prompt, list(empty_past), 0
    with torch.no_grad():
        for step in range(steps):
            length += ids.shape[1]
            outputs = call(ids, length, past)
            last = outputs[logits_name][:, -1, :]
            token = last.argmax(dim=-1) if tokens is None else tokens[step]
            chosen.append(token)
            logits_by_step.append(last)
            # A past the decoder returns none for ('' in present) keeps its value.
            past = [outputs[name] if name else value for name, value in zip(present, past)]
            ids = token.reshape(-1, 1)
    return torch.stack(chosen), torch.stack(logits_by_step)


def run_files(prompt, tokens, logits, empty, interface):
    """A run's files every decoder has ({file name: (tensor, its name)}): prompt, tokens, logits and
    step 0's empty cache."""
    files = {"prompt.pb": (prompt, interface["input_ids"]), "tokens.pb": (tokens, "tokens"),
             "logits.pb": (logits, "logits")}
    files.update({f"past_{index}.pb": (value, name) for index, (value, name) in enumerate(zip(empty, interface["past"]))})
    return files


def generation_failed(error, run=None):
    """REFERENCE_FAILED: PyTorch's greedy generation raised `error` (in the run labelled `run`,
    one of an encoder-decoder's requests)."""
    during = f" ({run})" if run else ""
    return finding("REFERENCE_FAILED", "error", f"PyTorch's greedy generation{during} failed: "
                   f"{type(error).__name__}: {error}", "generation", "")
