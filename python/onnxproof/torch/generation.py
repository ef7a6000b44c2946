"""The PyTorch side of the generation proof.

A decoder with a key/value cache is exported in the form runtimes call once per generated token
(ONNX Runtime GenAI, Optimum): inputs `input_ids`, `attention_mask` (past and new tokens) and
`past_key_values.L.key` / `.value` per layer, outputs `logits` and `present.L.key` / `.value`.
`FlatCacheDecoder` turns a model whose cache is a structure (a transformers Cache, a tuple of
(key, value) pairs) into that flat form.

`record_generation` runs N greedy steps from a prompt in PyTorch, feeding the cache back, and
writes the prompt, the empty cache of step 0, each step's token and last-position logits (float32,
and float64 from a float64 copy fed the same tokens, for the calibrated budget) into
reference/generation/run_K/ with generation.json (onnxproof.generation/2); an encoder-decoder's
runs come from seq2seq.py. The engine replays the loop in ONNX Runtime (parity/generation.cpp).
"""
import os

from ..core import contract
from ..core.export_finish import file_digest
from ..core.export_io import write_atomically
from ..core.findings import finding

FOLDER = "generation"
PAST = "past_key_values.{layer}.{kind}"
PRESENT = "present.{layer}.{kind}"
KINDS = ("key", "value")


def _pairs_of(cache):
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

    def __call__(self, input_ids, attention_mask, pairs):
        from transformers import DynamicCache
        cache = DynamicCache(ddp_cache_data=pairs, config=self.model.config) if pairs else DynamicCache(
            config=self.model.config)
        output = self.model(input_ids=input_ids, attention_mask=attention_mask, past_key_values=cache,
                            use_cache=True, return_dict=True)
        return output.logits, _pairs_of(output.past_key_values)


class UserStep:
    """One call of a user's decoder: forward(input_ids, attention_mask, past_key_values=None)
    returning logits and the new cache (pairs, a Cache, an object or a dict)."""

    def __init__(self, model):
        self.model = model

    def __call__(self, input_ids, attention_mask, pairs):
        logits, cache = _logits_and_cache(self.model(input_ids, attention_mask, past_key_values=pairs or None))
        return logits, _pairs_of(cache)


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


def greedy(call, prompt, empty_past, present, steps, tokens=None):
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
            last = outputs["logits"][:, -1, :]
            token = last.argmax(dim=-1) if tokens is None else tokens[step]
            chosen.append(token)
            logits_by_step.append(last)
            past = [outputs[name] for name in present]
            ids = token.reshape(-1, 1)
    return torch.stack(chosen), torch.stack(logits_by_step)


def _with_mask(decoder):
    """A decoder-only step call: the attention mask covers past and new tokens."""
    import torch

    def call(ids, length, past):
        return decoder(ids, torch.ones((ids.shape[0], length), dtype=torch.int64), *past)
    return call


def record_generation(state, model, reference, steps):
    """Writes reference/generation/: generation.json and one folder per run of PyTorch's greedy
    generation of `steps` tokens (a decoder: from the example's input_ids; an encoder-decoder:
    seq2seq.py's runs, its encoder exported beside model.onnx), with float64 logits when the
    model runs in float64. Findings for what it could not do go to state.findings; returns whether
    the generation was recorded."""
    folder = os.path.join(reference, FOLDER)
    os.makedirs(folder, exist_ok=True)
    interface = state.generation
    merged_document = None

    def write_run(index, run, files, reason):
        from onnx import numpy_helper
        run.update(folder=f"run_{index}", exact="exact_logits.pb" in files, exact_missing_reason=reason)
        os.makedirs(os.path.join(folder, run["folder"]), exist_ok=True)
        for file_name, (value, name) in files.items():
            write_atomically(os.path.join(folder, run["folder"], file_name),
                             numpy_helper.from_array(value.detach().cpu().numpy(), name).SerializeToString())
        run["prompt_length"] = int(files["prompt.pb"][0].shape[1])

    if interface.get("encoder"):
        from .seq2seq import ENCODER_FILE, record_seq2seq_generation
        from .seq2seq_export import merged_decoder_document
        runs = record_seq2seq_generation(state, model, steps, write_run)
        encoder = interface["encoder"]
        encoder_document = {"model": ENCODER_FILE, "sha256": file_digest(os.path.join(state.out, ENCODER_FILE))[1] if runs else "",
                            "inputs": [spec["name"] for spec in encoder["inputs"]],
                            "outputs": encoder["outputs"], "feeds": encoder["feeds"]}
        if runs and state.config.get("merged_decoder"):
            merged_document = merged_decoder_document(state.out, encoder)
    else:
        runs, encoder_document = _record_decoder_run(state, model, steps, write_run), None
    if not runs:
        return False
    document = {"schema": contract.GENERATION, "steps": steps,
                **{key: interface[key] for key in ("input_ids", "attention_mask", "logits", "past", "present")},
                "runs": [{key: run[key] for key in ("folder", "label", "batch", "prompt_length", "padded", "exact",
                                                    "exact_missing_reason")} for run in runs]}
    if encoder_document:
        document["encoder"] = encoder_document
    if merged_document:
        document["merged"] = merged_document
    write_atomically(os.path.join(folder, "generation.json"), contract.dumps(document, "generation", indent=2) + "\n")
    return True


def run_files(prompt, tokens, logits, empty, interface):
    """A run's files every decoder has ({file name: (tensor, its name)}): prompt, tokens, logits and
    step 0's empty cache."""
    files = {"prompt.pb": (prompt, interface["input_ids"]), "tokens.pb": (tokens, "tokens"),
             "logits.pb": (logits, "logits")}
    files.update({f"past_{index}.pb": (value, name) for index, (value, name) in enumerate(zip(empty, interface["past"]))})
    return files


def _record_decoder_run(state, model, steps, write_run):
    """A decoder's one run, from the example's input_ids; [run] or None after a finding."""
    import numpy as np
    import torch
    from .exact import ExactReference, default_dtype
    interface = state.generation
    prompt = torch.from_numpy(np.array(state.example[interface["input_ids"]], copy=True))
    by_name = {spec["name"]: spec for spec in state.inputs}
    axis_of = {entry["input"]: entry["axis"] for entry in state.dynamic if entry["label"] == "past_sequence"}
    empty = []
    for name in interface["past"]:  # step 0's cache: the past's shape with no position in it
        dims = list(by_name[name]["dims"])
        dims[0], dims[axis_of[name]] = int(prompt.shape[0]), 0
        empty.append(torch.zeros(dims, dtype=getattr(torch, by_name[name]["dtype"])))
    try:
        tokens, logits = greedy(_with_mask(model), prompt, empty, interface["present"], steps)
    except Exception as error:  # noqa: BLE001 -- the model's own failure, said as a finding
        state.findings.append(finding("REFERENCE_FAILED", "error", f"PyTorch's greedy generation failed: "
                                      f"{type(error).__name__}: {error}", "generation", ""))
        return None
    files = run_files(prompt, tokens, logits, empty, interface)
    reason = ""
    float64_pass = ExactReference(model)
    with float64_pass.float64_model():
        if float64_pass.model is None:
            reason = float64_pass.reason
        else:
            try:
                with default_dtype(torch.float64):
                    _, exact = greedy(_with_mask(float64_pass.model), prompt, [value.double() for value in empty],
                                      interface["present"], steps, tokens)
                files["exact_logits.pb"] = (exact, "exact_logits")
            except Exception as error:  # noqa: BLE001 -- no float64 run: the fixed rule, said
                reason = f"{type(error).__name__}: {error}"
    run = {"label": f"batch {int(prompt.shape[0])}, prompt {int(prompt.shape[1])} tokens", "batch": int(prompt.shape[0]),
           "padded": False}
    write_run(0, run, files, reason)
    return [run]
