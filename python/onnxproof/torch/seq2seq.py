"""Encoder-decoder models with their cache (T5, BART, Marian, Whisper), in the two files runtimes
call when they generate:

- `encoder.onnx` (the encoder's inputs: `input_ids` and `attention_mask`, or `input_features`)
  runs once per request. Its outputs are `last_hidden_state` and the cross-attention cache,
  `present.L.encoder.key` / `.value` per decoder layer: each layer's keys and values of the
  encoder's states, which do not change while generating. They are computed here, by the
  encoder's graph, so the decoder never recomputes them.
- `model.onnx`, the decoder, runs once per generated token: `input_ids` (the new tokens),
  `encoder_attention_mask` (the source's padding; Whisper has none), then per layer
  `past_key_values.L.decoder.key` / `.value` (the self-attention cache, empty at step 0) and
  `past_key_values.L.encoder.key` / `.value` (the encoder's cross-attention cache, fed as it
  came); outputs `logits` and `present.L.decoder.key` / `.value`. The names are Optimum's.

The cross-attention cache is read from the model itself: the encoder's graph runs one decoder step
on its states and keeps what the model put in its cross-attention cache (the rest is dead code the
exporters drop), so any transformers encoder-decoder whose attention layers fill an
EncoderDecoderCache works without per-family code.

seq2seq_export.py exports the encoder (and the merged decoder); seq2seq_generation.py records the
generation proof's runs (generation_reference.py writes the folder).
"""
import numpy as np
import torch

from ..core.errors import FrontEndError, UsageError

PAST = "past_key_values.{layer}.{part}.{kind}"
PRESENT = "present.{layer}.{part}.{kind}"
KINDS = ("key", "value")
SELF, CROSS = "decoder", "encoder"  # Optimum's names of the self- and cross-attention caches
ENCODER_FILE = "encoder.onnx"
MERGED_FILE = "decoder_merged.onnx"
HIDDEN = "last_hidden_state"
DECODER_SEQUENCE, DECODER_PAST = 4, 8  # the decoder's example: 4 new tokens after 8 cached ones


def is_seq2seq(name, config):
    """Whether `name` is a transformers encoder-decoder with a language-model head (T5, BART,
    Marian, Whisper, ...): the classes use_cache=true exports as an encoder and a decoder."""
    return bool(getattr(config, "is_encoder_decoder", False)) and (
        name.endswith("ForConditionalGeneration") or name.endswith("MTModel"))


def _caches(past, layers):
    """(self pairs, cross pairs) from the decoder's flat past: per layer self key, self value,
    cross key, cross value."""
    return ([(past[4 * layer], past[4 * layer + 1]) for layer in range(layers)],
            [(past[4 * layer + 2], past[4 * layer + 3]) for layer in range(layers)])


def decoder_call(model, input_ids, mask, own, cross, states=None):
    """One decoder step of the encoder-decoder `model` on its caches (pairs per layer; [] for none)
    and the encoder's states: the model's output. Without the states, zeros of the cross-attention
    cache's length stand in: the cross-attention layers' keys and values come from the cache."""
    from transformers import DynamicCache, EncoderDecoderCache
    config = model.config
    cache = EncoderDecoderCache(DynamicCache(ddp_cache_data=own, config=config) if own else DynamicCache(config=config),
                                DynamicCache(ddp_cache_data=cross, config=config) if cross else DynamicCache(config=config))
    if states is None:
        key = cross[0][0]
        states = key.new_zeros((key.shape[0], key.shape[2], int(config.d_model)))
    return model(encoder_outputs=(states,), attention_mask=mask, decoder_input_ids=input_ids, past_key_values=cache,
                 use_cache=True, return_dict=True)


def add_present(outputs, cache, part):
    """`outputs` with each layer's keys and values of `cache` (one of an EncoderDecoderCache's two
    DynamicCaches) as present.L.PART.key / .value."""
    for layer, cached in enumerate(cache.layers):
        outputs[PRESENT.format(layer=layer, part=part, kind="key")] = cached.keys
        outputs[PRESENT.format(layer=layer, part=part, kind="value")] = cached.values
    return outputs


class CrossCacheEncoder(torch.nn.Module):
    """The encoder and every decoder layer's cross-attention keys and values of its states."""

    def __init__(self, model, names):
        super().__init__()
        self.model = model
        self.names = names

    def encode(self, values):
        inputs = dict(zip(self.names, values))
        states = self.model.get_encoder()(**inputs, return_dict=True).last_hidden_state
        start = torch.zeros((states.shape[0], 1), dtype=torch.int64)
        output = decoder_call(self.model, start, inputs.get("attention_mask"), [], [], states)
        return add_present({HIDDEN: states}, output.past_key_values.cross_attention_cache, CROSS)


# One class per signature: torch.export keys dynamic shapes by forward()'s parameter names.
class TextEncoder(CrossCacheEncoder):
    def forward(self, input_ids, attention_mask):
        return self.encode((input_ids, attention_mask))


class SpeechEncoder(CrossCacheEncoder):
    def forward(self, input_features):
        return self.encode((input_features,))


class CacheDecoder(torch.nn.Module):
    """One decoder step with both caches as flat tensors. In PyTorch (not while exporting), step 0's
    empty self-attention cache is no cache at all, as users call the model."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def step(self, input_ids, mask, past):
        own, cross = _caches(past, len(past) // 4)
        exporting = torch.jit.is_tracing() or torch.compiler.is_exporting()
        first = not exporting and own[0][0].numel() == 0
        output = decoder_call(self.model, input_ids, mask, [] if first else own, cross)
        return add_present({"logits": output.logits}, output.past_key_values.self_attention_cache, SELF)


class MaskedCacheDecoder(CacheDecoder):
    def forward(self, input_ids, encoder_attention_mask, *past):
        return self.step(input_ids, encoder_attention_mask, past)


class UnmaskedCacheDecoder(CacheDecoder):  # Whisper: the audio is padded with silence, no mask
    def forward(self, input_ids, *past):
        return self.step(input_ids, None, past)


def start_token(model, config):
    """The token generation starts from (the generation config's decoder_start_token_id)."""
    for source in (getattr(model, "generation_config", None), config):
        value = getattr(source, "decoder_start_token_id", None)
        if isinstance(value, int):
            return value
    return int(getattr(config, "pad_token_id", 0) or 0)


def _positions(config, *keys):
    for key in keys:
        value = getattr(config, key, None)
        if isinstance(value, int) and value > 0:
            return value
    return None


def _encoder_specs(model, config, batch):
    """(encoder module, its input specs, its dynamic axes): token ids and a padding mask with batch
    and source length dynamic (up to the model's positions), or audio features (frames fixed by the
    encoder)."""
    vocabulary = int(config.vocab_size)
    if getattr(model, "main_input_name", "input_ids") == "input_features":
        frames = 2 * int(config.max_source_positions)
        specs = [{"name": "input_features", "dims": [batch, int(config.num_mel_bins), frames], "dtype": "float32"}]
        return SpeechEncoder(model, ["input_features"]), specs, [{"input": "input_features", "axis": 0, "label": "batch"}]
    source = 16
    specs = [{"name": "input_ids", "dims": [batch, source], "dtype": "int64", "range": [0, vocabulary]},
             {"name": "attention_mask", "dims": [batch, source], "dtype": "int64", "range": [1, 2]}]
    bound = _positions(config, "max_position_embeddings", "n_positions")
    bounds = {"min": 1, "max": bound} if bound else {}
    dynamic = []
    for spec in specs:
        dynamic += [{"input": spec["name"], "axis": 0, "label": "batch"},
                    {"input": spec["name"], "axis": 1, "label": "encoder_sequence", **bounds}]
    return TextEncoder(model, ["input_ids", "attention_mask"]), specs, dynamic


def cache_decoder_of(name, model, config, batch):
    """The decoder of an encoder-decoder with its caches (model.onnx) and its default inputs; the
    generation interface carries the encoder (exported and run by record_seq2seq_generation)."""
    # Both in eval mode: an exporter restores a wrapper's mode when it is done, and a wrapper made
    # in training mode would put the model's dropout back on for the reference.
    encoder, encoder_inputs, encoder_dynamic = _encoder_specs(model, config, batch)
    encoder.eval()
    masked = any(spec["name"] == "attention_mask" for spec in encoder_inputs)
    decoder = (MaskedCacheDecoder if masked else UnmaskedCacheDecoder)(model).eval()
    try:
        with torch.no_grad():
            arrays = encoder_arrays(encoder_inputs, config, np.random.default_rng(0), padded=False)
            encoded = encoder(*(torch.from_numpy(arrays[spec["name"]]) for spec in encoder_inputs))
            cross = [name for name in encoded if name != HIDDEN]
            layers = len(cross) // 2
            empty = [encoded[name][:, :, :0] for name in cross]
            past = [tensor for layer in range(layers) for tensor in
                    (empty[2 * layer], empty[2 * layer + 1], encoded[cross[2 * layer]], encoded[cross[2 * layer + 1]])]
            mask = [torch.from_numpy(arrays["attention_mask"])] if masked else []
            own = decoder(torch.zeros((batch, 1), dtype=torch.int64), *mask, *past)
    except Exception as error:  # the library's cache classes changed shape: one clear line
        raise FrontEndError(f"{name} with use_cache=true: cannot read its encoder's cross-attention cache: "
                            f"{type(error).__name__}: {error}") from error
    if not layers:
        raise UsageError(f"{name} with use_cache=true: its decoder filled no cross-attention cache")
    source_label = next((entry for entry in encoder_dynamic if entry["axis"] == 1), None)
    source_bound = {key: source_label[key] for key in ("min", "max") if key in source_label} if source_label else {}
    target = _positions(config, "max_target_positions", "max_position_embeddings", "n_positions")
    inputs = [{"name": "input_ids", "dims": [batch, DECODER_SEQUENCE], "dtype": "int64", "range": [0, int(config.vocab_size)]}]
    dynamic = [{"input": "input_ids", "axis": 0, "label": "batch"},
               {"input": "input_ids", "axis": 1, "label": "sequence", **({"min": 1, "max": target} if target else {})}]
    length = int(encoded[cross[0]].shape[2])
    if masked:
        inputs.append({"name": "encoder_attention_mask", "dims": [batch, length], "dtype": "int64", "range": [1, 2]})
        dynamic += [{"input": "encoder_attention_mask", "axis": 0, "label": "batch"},
                    {"input": "encoder_attention_mask", "axis": 1, "label": "encoder_sequence", **source_bound}]
    past_names, present_names, self_dims = [], [], []
    feeds = {"encoder_attention_mask": "attention_mask"} if masked else {}
    for layer in range(layers):
        for part in (SELF, CROSS):
            for kind in KINDS:
                past_name = PAST.format(layer=layer, part=part, kind=kind)
                source = own[PRESENT.format(layer=layer, part=SELF, kind=kind)] if part == SELF else \
                    encoded[PRESENT.format(layer=layer, part=CROSS, kind=kind)]
                dims = list(source.shape)
                dims[0], dims[2] = batch, DECODER_PAST if part == SELF else length
                inputs.append({"name": past_name, "dims": dims, "dtype": str(source.dtype).removeprefix("torch.")})
                label = "past_sequence" if part == SELF else "encoder_sequence"
                bound = ({"min": 1, "max": target} if target else {}) if part == SELF else source_bound
                dynamic += [{"input": past_name, "axis": 0, "label": "batch"},
                            {"input": past_name, "axis": 2, "label": label, **bound}]
                if part == SELF:
                    self_dims.append(dims)
                    past_names.append(past_name)
                    present_names.append(PRESENT.format(layer=layer, part=SELF, kind=kind))
                else:
                    feeds[past_name] = PRESENT.format(layer=layer, part=CROSS, kind=kind)
    interface = {"input_ids": "input_ids", "attention_mask": "", "logits": "logits", "past": past_names,
                 "present": present_names,
                 "encoder": {"module": encoder, "inputs": encoder_inputs, "dynamic": encoder_dynamic,
                             "outputs": [HIDDEN, *cross], "feeds": feeds, "self_dims": self_dims,
                             "start": start_token(model, config), "max_source": source_bound.get("max")}}
    return decoder, {"inputs": inputs, "dynamic": dynamic, "generation": interface}


def encoder_arrays(specs, config, rng, padded, batch=None, length=None):
    """One request's encoder inputs: token ids above the special ones with a padding mask (the
    last row padded to two thirds of its length when `padded`), or audio features."""
    arrays = {}
    for spec in specs:
        dims = list(spec["dims"])
        if batch:
            dims[0] = batch
        if length and spec["name"] in ("input_ids", "attention_mask"):
            dims[1] = length
        if spec["dtype"] == "float32":
            arrays[spec["name"]] = rng.standard_normal(dims).astype(np.float32)
        elif spec["name"] == "input_ids":
            arrays[spec["name"]] = rng.integers(min(4, spec["range"][1] - 1), spec["range"][1], dims, dtype=np.int64)
        else:
            arrays[spec["name"]] = np.ones(dims, dtype=np.int64)
    if padded and "attention_mask" in arrays and arrays["attention_mask"].shape[0] > 1:
        kept = max(1, 2 * arrays["attention_mask"].shape[1] // 3)
        arrays["attention_mask"][-1, kept:] = 0
        arrays["input_ids"][-1, kept:] = int(getattr(config, "pad_token_id", 0) or 0)
    return arrays
