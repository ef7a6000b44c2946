"""An encoder-decoder's generation files the user made (Optimum's folder: encoder_model.onnx,
decoder_model.onnx for step 0 and decoder_with_past_model.onnx after it; or onnxproof's own
encoder.onnx beside model.onnx), proved against the transformers model: one decoder step under a
decoder file's names (the caches as an EncoderDecoderCache), and the generation proof's runs,
PyTorch's greedy loop on the model itself from the start token, the encoder's outputs recorded
for the file's own output names."""
import numpy as np
import torch

from ..core.errors import UsageError
from ..core.export_io import progress
from .exact import ExactReference, default_dtype
from .generation import generation_failed, pairs_of
from .generation_reference import empty_past
from .seq2seq import SpeechEncoder, TextEncoder, decoder_call, encoder_arrays, start_token

SOURCE = 16  # a request's source length where the encoder file leaves it symbolic


def hf_model(model):
    """The transformers model inside onnxproof's wrappers (the bound module, the file step)."""
    while not hasattr(model, "config") and hasattr(model, "model"):
        model = model.model
    return model


def model_encoder(model, step_interface):
    """An Interface standing for the encoder a folder of decoder files was exported without
    (transformers' seq2seq prefill and decode take its states as an input): the model's own text
    encoder, input_ids and attention_mask at the step file's batch, giving last_hidden_state."""
    from ..core.given_file import Interface
    if getattr(model, "main_input_name", "input_ids") != "input_ids":
        raise UsageError(f"--onnx {step_interface.path}: decoder files without their encoder are read for text "
                         "encoder-decoders only")
    batch = next((spec["dims"][0] for spec in step_interface.inputs if spec["dims"]), None)
    batch = batch if isinstance(batch, int) and batch > 0 else None
    inputs = [{"name": name, "dtype": "int64", "dims": [batch, None]} for name in ("input_ids", "attention_mask")]
    return Interface("", inputs, [{"name": "last_hidden_state", "dtype": "float32", "dims": [batch, None, None]}], [],
                     False)


def decoder_step(model, roles, values, own, cross):
    """(logits, {"self": pairs, "cross": pairs}) of one decoder step of an encoder-decoder under a
    decoder file's inputs `values` ({name: tensor}), its caches `own` and `cross` (pairs per layer,
    [] for none)."""
    if not roles.encoder_states and not cross:
        raise UsageError(f"--onnx {roles.path}: the decoder file takes neither the encoder's states nor its "
                         "cross-attention cache")
    output = decoder_call(model, values[roles.ids], values[roles.encoder_mask] if roles.encoder_mask else None, own,
                          cross, values[roles.encoder_states] if roles.encoder_states else None)
    return output.logits, {"self": pairs_of(output.past_key_values.self_attention_cache),
                           "cross": pairs_of(output.past_key_values.cross_attention_cache)}


def _request(specs, config, batch_default=2):
    """One request's encoder inputs ({name: array}): ids above the special tokens with a padding mask,
    the last row padded (a dropped encoder mask changes that row), or audio features."""
    sized = []
    for spec in specs:
        dims = [dim if isinstance(dim, int) and dim > 0 else (batch_default if axis == 0 else SOURCE)
                for axis, dim in enumerate(spec["dims"])]
        sized.append(dict(spec, dims=dims, range=[0, int(config.vocab_size)]))
    return encoder_arrays(sized, config, np.random.default_rng(10), padded=True)


def _greedy(model, encoder, values, start, steps, tokens=None):
    """(encoder outputs {name: tensor}, tokens [steps, batch], last-position logits) of `steps`
    greedy steps of the model itself from the start token (teacher-forced with `tokens`)."""
    from transformers import DynamicCache, EncoderDecoderCache
    encoded = encoder(*values)
    mask = dict(zip(encoder.names, values)).get("attention_mask")
    config = model.config
    cache = EncoderDecoderCache(DynamicCache(config=config), DynamicCache(config=config))
    ids = torch.full((values[0].shape[0], 1), start, dtype=torch.int64)
    chosen, logits = [], []
    for step in range(steps):
        output = model(encoder_outputs=(encoded["last_hidden_state"],), attention_mask=mask, decoder_input_ids=ids,
                       past_key_values=cache, use_cache=True, return_dict=True)
        cache, last = output.past_key_values, output.logits[:, -1, :]
        token = last.argmax(dim=-1) if tokens is None else tokens[step]
        chosen.append(token)
        logits.append(last)
        ids = token.reshape(-1, 1)
    return encoded, torch.stack(chosen), torch.stack(logits)


def record_runs(state, model, steps, write_run):
    """The generation proof's one run for a given encoder-decoder folder, written by `write_run`;
    ([run], the encoder's part of generation.json) or (None, None) after a finding."""
    interface = state.generation
    model = hf_model(model)
    specs = interface["encoder_specs"]
    names = [spec["name"] for spec in specs]
    arrays = _request(specs, model.config)
    values = [torch.from_numpy(arrays[name]) for name in names]
    wrapper = (TextEncoder if "attention_mask" in names else SpeechEncoder)(model, names)
    start = start_token(model, model.config)
    progress(f"generating {steps} tokens in PyTorch from the encoder-decoder itself")
    try:
        with torch.no_grad():
            encoded, tokens, logits = _greedy(model, wrapper, values, start, steps)
    except Exception as error:  # noqa: BLE001 -- the model's own failure, said as a finding
        state.findings.append(generation_failed(error))
        return None, None
    missing = [name for name in interface["encoder"]["outputs"] if name not in encoded]
    if missing:
        raise UsageError(f"--onnx: the encoder file's outputs {', '.join(missing)} are none of what the model's "
                         f"encoder gives ({', '.join(encoded)})")
    prompt = torch.full((values[0].shape[0], 1), start, dtype=torch.int64)
    files = {"prompt.pb": (prompt, interface["input_ids"]), "tokens.pb": (tokens, "tokens"),
             "logits.pb": (logits, "logits")}
    files.update(_empty_past(state, prompt.shape[0]))
    files.update({f"encoder_input_{i}.pb": (value, name) for i, (value, name) in enumerate(zip(values, names))})
    files.update({f"encoder_output_{i}.pb": (encoded[name], name) for i, name in enumerate(interface["encoder"]["outputs"])})
    reason = _float64_run(model, names, values, start, steps, tokens, interface, files)
    padded = "attention_mask" in arrays and bool((arrays["attention_mask"] == 0).any())
    run = {"label": f"batch {prompt.shape[0]}, source {values[0].shape[1]} tokens" + (", last row padded" if padded else ""),
           "batch": int(prompt.shape[0]), "padded": padded}
    write_run(0, run, files, reason)
    return [run], {key: interface["encoder"][key] for key in ("model", "sha256", "inputs", "outputs", "feeds")}


def _empty_past(state, batch):
    """past_K.pb: step 0's self-attention cache where model.onnx runs step 0 (no first-step file)."""
    if "first" in state.generation:
        return {}
    return {f"past_{index}.pb": (value, name)
            for index, (value, name) in enumerate(zip(empty_past(state, batch), state.generation["past"]))}


def _float64_run(model, names, values, start, steps, tokens, interface, files):
    """The same steps in float64 fed the same tokens, into `files`; why there is none ('' when there is)."""
    exact = ExactReference(model)
    with exact.float64_model():
        if exact.model is None:
            return exact.reason
        try:
            with default_dtype(torch.float64), torch.no_grad():
                wide = [value.double() if value.is_floating_point() else value for value in values]
                wrapper = (TextEncoder if "attention_mask" in names else SpeechEncoder)(exact.model, names)
                encoded, _, logits = _greedy(exact.model, wrapper, wide, start, steps, tokens)
            files["exact_logits.pb"] = (logits, "exact_logits")
            files.update({f"exact_encoder_output_{i}.pb": (encoded[name], name)
                          for i, name in enumerate(interface["encoder"]["outputs"])})
        except Exception as error:  # noqa: BLE001 -- no float64 run: the fixed rule, said
            return f"{type(error).__name__}: {error}"
    return ""
