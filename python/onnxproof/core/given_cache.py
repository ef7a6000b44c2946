"""What each input and output of a decoder file the user made does in generation, read from its
names: the token ids, the mask, the positions, the logits, the encoder's states and mask, and the
key/value cache, each cache tensor by layer, part (self- or cross-attention) and kind. The names
exporters write are matched, whatever their decoration:

    past_key_values.0.key, present.0.value               (onnxproof, Optimum, ONNX Runtime GenAI)
    past_key_values.0.decoder.key, present.0.encoder.value          (Optimum's encoder-decoders)
    input.past_key_values.layers.0.keys, output.past_key_values.layers.0.values   (transformers 5)

An input nothing matches is a UsageError naming it."""
import re

from .errors import UsageError

_CACHE = re.compile(
    r"(?:^|[._/])(?:past_key_values|past|present|key_values|cache)[._]?"
    r"(?:(self_attention|cross_attention)_cache[._])?(?:layers?[._])?(\d+)[._]"
    r"(?:(decoder|encoder|self|cross)[._])?(key|value)s?$")
_CROSS = ("cross_attention", "encoder", "cross")
IDS, MASK, POSITIONS = ("input_ids", "decoder_input_ids"), ("attention_mask", "decoder_attention_mask"), ("position_ids",)
ENCODER_STATES = ("encoder_hidden_states", "encoder_outputs.last_hidden_state")  # Optimum's, transformers'
ENCODER_MASK = ("encoder_attention_mask",)
ENCODER_STATES_OUT = ("encoder_last_hidden_state",)  # transformers' decoder files hand their states on


def cache_key(name):
    """(layer, "self" or "cross", "key" or "value") of a cache tensor's name, or None."""
    match = _CACHE.search(name)
    if not match:
        return None
    cache_part, layer, part, kind = match.groups()
    return int(layer), "cross" if (cache_part or part or "") in _CROSS else "self", kind


class Roles:
    """A decoder file's inputs and outputs by role: names ("" none) and the cache, `past` its cache
    inputs in the file's order with `keys` their (layer, part, kind), `outputs` {key: output name}."""

    def __init__(self, interface, path, seq2seq=False):
        self.path = path
        inputs = [spec["name"] for spec in interface.inputs]

        def named(candidates):
            return next((name for name in inputs if name in candidates), "")
        self.ids, self.mask, self.positions = named(IDS), named(MASK), named(POSITIONS)
        self.encoder_states, self.encoder_mask = named(ENCODER_STATES), named(ENCODER_MASK)
        if seq2seq and self.mask and not self.encoder_mask:  # an encoder-decoder's decoder: the source's mask
            self.encoder_mask, self.mask = self.mask, ""
        # Outputs that hand an input on unchanged (transformers' encoder_last_hidden_state).
        self.passthrough = {spec["name"]: self.encoder_states for spec in interface.outputs
                            if spec["name"] in ENCODER_STATES_OUT and self.encoder_states}
        self.past = [name for name in inputs if cache_key(name)]
        self.keys = [cache_key(name) for name in self.past]
        self.outputs = {cache_key(spec["name"]): spec["name"] for spec in interface.outputs if cache_key(spec["name"])}
        logits = [spec["name"] for spec in interface.outputs if spec["name"] == "logits"] or \
                 [spec["name"] for spec in interface.outputs if not cache_key(spec["name"])
                  and spec["name"] not in self.passthrough]
        self.logits = logits[0] if logits else ""
        known = {self.ids, self.mask, self.positions, self.encoder_states, self.encoder_mask, *self.past}
        unknown = [name for name in inputs if name not in known]
        if not self.ids or not self.logits or unknown:
            what = (f"its inputs {', '.join(unknown)} are none of the ids, masks, positions, encoder states and cache "
                    "a generation step takes") if unknown else "it has no input_ids input or no logits output"
            raise UsageError(f"--onnx {path}: not a decoder step onnxproof can generate with: {what}")

    def layers(self):
        return 1 + max((key[0] for key in [*self.keys, *self.outputs]), default=-1)


def step_roles(interface, path, seq2seq=False):
    """The Roles of the decoder file run at every step; UsageError where a cache input has no output
    to feed it from at the next step, unless it is a cross-attention cache (it keeps its value)."""
    roles = Roles(interface, path, seq2seq)
    for name, key in zip(roles.past, roles.keys):
        if key not in roles.outputs and key[1] == "self":
            raise UsageError(f"--onnx {path}: its cache input {name} has no output to feed it from at the next step "
                             f"(its outputs: {', '.join(roles.outputs.values())})")
    return roles


def handoff(first, step, carried):
    """The first-step file's outputs in the order of the step file's `carried` cache inputs
    ([(name, key)]: what step 0 hands to step 1); UsageError naming the one it does not give."""
    names = []
    for name, key in carried:
        if key not in first.outputs:
            raise UsageError(f"--onnx {first.path}: the first-step file gives no output for {step.path}'s cache input "
                             f"{name} (layer {key[0]}, {key[1]}-attention {key[2]})")
        names.append(first.outputs[key])
    return names


def encoder_feeds(roles, encoder):
    """{decoder input: the encoder input or output fed to it} for a decoder file beside `encoder`
    (an Interface): its encoder mask from the encoder's attention_mask, its encoder states from
    the encoder's last_hidden_state (else its first output), and, in onnxproof's own layout, each
    cross-attention cache input from the encoder output of the same layer and kind."""
    inputs = [spec["name"] for spec in encoder.inputs]
    outputs = [spec["name"] for spec in encoder.outputs]
    feeds = {}
    if roles.encoder_mask:
        if "attention_mask" not in inputs:
            raise UsageError(f"--onnx {roles.path} takes {roles.encoder_mask}; the encoder takes no attention_mask")
        feeds[roles.encoder_mask] = "attention_mask"
    if roles.encoder_states:
        feeds[roles.encoder_states] = "last_hidden_state" if "last_hidden_state" in outputs else outputs[0]
    crosses = {cache_key(name): name for name in outputs if cache_key(name)}
    for name, key in zip(roles.past, roles.keys):
        if key[1] == "cross" and key in crosses:
            feeds[name] = crosses[key]
    return feeds


def interface_document(step, first, encoder=None):
    """The generation interface of generation.json (onnxproof.generation/2) for the file `step`
    (and `first`, and `encoder` an Interface, whose `model` and `sha256` the adoption fills):
    names by role. Without a first-step file, a cross-attention cache the encoder gives is fed
    from it, not carried."""
    feeds = encoder_feeds(step, encoder) if encoder is not None else {}
    carried = [(name, key) for name, key in zip(step.past, step.keys) if name not in feeds]
    document = {"input_ids": step.ids, "attention_mask": step.mask, "position_ids": step.positions,
                "logits": step.logits, "past": [name for name, _ in carried],
                "present": [step.outputs.get(key, "") for _, key in carried]}
    if first is not None:
        document["first"] = {"input_ids": first.ids, "attention_mask": first.mask, "position_ids": first.positions,
                             "logits": first.logits, "handoff": handoff(first, step, carried),
                             "feeds": encoder_feeds(first, encoder) if encoder is not None else {}}
    if encoder is not None:
        document["encoder"] = {"inputs": [spec["name"] for spec in encoder.inputs],
                               "outputs": [spec["name"] for spec in encoder.outputs], "feeds": feeds}
    return document
