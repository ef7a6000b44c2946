"""The generation proof's runs of an encoder-decoder (seq2seq.py's encoder and cache decoder):
encoder.onnx (and with --merged-decoder decoder_merged.onnx) exported beside model.onnx
(seq2seq_export.py), then each request's encoder inputs and outputs and PyTorch's greedy steps
from the start token, in float32 and again in float64 fed the same tokens. generation_reference.py
writes each run's folder and generation.json."""
import os

import numpy as np
import torch

from ..core.export_io import progress
from .exact import ExactReference, default_dtype
from .generation import generation_failed, greedy, run_files
from .seq2seq import ENCODER_FILE, HIDDEN, MERGED_FILE, encoder_arrays
from .seq2seq_export import export_encoder, export_merged_decoder

SOURCE_LONG = 64  # the long-source run: a source of 64 tokens (within a small config's 128 positions)


def generation_runs(interface, batch, sweep=None):
    """The requests the generation proof runs: every run decodes from the start token. The user's
    own request first when prove() was given one. Then, text: each batch size with a source of each
    length, a batch's last row padded (a dropped encoder mask changes that row), and a long source
    alone; audio: each batch size (the frames are fixed by the encoder). The sizes are --sweep's
    `batch` and `encoder_sequence` when given; else text runs the example's batch (at least 2) at a
    16-token source and one request at a 64-token source, audio the example's batch and 1."""
    encoder = interface["encoder"]
    sweep = sweep or {}
    given = encoder.get("given")
    runs = []
    if given:  # prove(model, args, generate=N): the request the user passed comes first
        first = given[encoder["inputs"][0]["name"]]
        mask = given.get("attention_mask")
        what = f"source {first.shape[1]} tokens" if first.ndim == 2 else f"{first.shape[-1]} audio frames"
        runs.append({"label": f"your request: batch {first.shape[0]}, {what}", "batch": int(first.shape[0]),
                     "length": 0, "padded": bool(mask is not None and (mask == 0).any()), "given": given})
    batches = sorted({int(size) for size in sweep.get("batch", [])})
    if not any(spec["name"] == "attention_mask" for spec in encoder["inputs"]):
        frames = encoder["inputs"][0]["dims"][2]
        return runs + [{"label": f"batch {size}, {frames} audio frames", "batch": size, "length": 0, "padded": False}
                       for size in batches or [batch, 1]]
    lengths = sorted({int(size) for size in sweep.get("encoder_sequence", [])})
    for size in batches or [max(batch, 2)]:  # a batch of at least 2: one row padded
        for length in lengths or [encoder["inputs"][0]["dims"][1]]:
            padded = size > 1 and length > 1
            runs.append({"label": f"batch {size}, source {length} tokens" + (", last row padded" if padded else ""),
                         "batch": size, "length": length, "padded": padded})
    if not lengths:
        longest = min(SOURCE_LONG, encoder["max_source"] or SOURCE_LONG)
        runs.append({"label": f"batch 1, source {longest} tokens", "batch": 1, "length": longest, "padded": False})
    return runs


def record_seq2seq_generation(state, decoder, steps, write_run):
    """Exports the encoder beside model.onnx (and with --merged-decoder the merged decoder), then
    records each of generation_runs(): the encoder's inputs and outputs and `steps` greedy decoder
    steps from the start token, the cross-attention cache fed as the encoder gave it; then the same
    in float64, fed the same tokens (after every float32 run: a large model is widened in place).
    `write_run(index, run, files, exact_reason)` writes a run's folder. Returns the runs recorded,
    or None after a finding."""
    interface = state.generation
    encoder = interface["encoder"]
    if not export_encoder(state, encoder["module"], os.path.join(state.out, ENCODER_FILE)):
        return None
    if state.config.get("merged_decoder") and not export_merged_decoder(state, decoder,
                                                                         os.path.join(state.out, MERGED_FILE)):
        return None
    runs = generation_runs(interface, int(state.example[interface["input_ids"]].shape[0]), state.config.get("sweep"))
    names = [spec["name"] for spec in encoder["inputs"]]
    recorded = []
    for index, run in enumerate(runs):
        progress(f"generating {steps} tokens in PyTorch: {run['label']}")
        arrays = run.pop("given", None) or encoder_arrays(encoder["inputs"], decoder.model.config,
                                                           np.random.default_rng(10 + index), run["padded"],
                                                           run["batch"], run["length"])
        values = [torch.from_numpy(arrays[name]) for name in names]
        prompt = torch.full((run["batch"], 1), encoder["start"], dtype=torch.int64)
        try:
            with torch.no_grad():
                encoded = encoder["module"](*values)
            empty = [torch.zeros(dims, dtype=encoded[HIDDEN].dtype) for dims in _empty_dims(interface, run["batch"])]
            tokens, logits = greedy(_decoder_call(decoder, encoder, arrays, encoded), prompt, empty, interface["present"],
                                    steps)
        except Exception as error:  # noqa: BLE001 -- the model's own failure, said as a finding
            state.findings.append(generation_failed(error, run["label"]))
            return None
        files = run_files(prompt, tokens, logits, empty, interface)
        files.update({f"encoder_input_{i}.pb": (value, name) for i, (value, name) in enumerate(zip(values, names))})
        files.update({f"encoder_output_{i}.pb": (encoded[name], name) for i, name in enumerate(encoder["outputs"])})
        recorded.append((run, arrays, values, empty, prompt, tokens, files))
    exact = ExactReference(decoder)
    with exact.float64_model():
        for index, (run, arrays, values, empty, prompt, tokens, files) in enumerate(recorded):
            reason = exact.reason
            if exact.model is not None:
                try:
                    with default_dtype(torch.float64), torch.no_grad():
                        wide = type(encoder["module"])(exact.model.model, names)(
                            *(value.double() if value.is_floating_point() else value for value in values))
                        _, exact_logits = greedy(_decoder_call(exact.model, encoder, arrays, wide), prompt,
                                                 [value.double() for value in empty], interface["present"], steps, tokens)
                    files["exact_logits.pb"] = (exact_logits, "exact_logits")
                    files.update({f"exact_encoder_output_{i}.pb": (wide[name], name)
                                  for i, name in enumerate(encoder["outputs"])})
                except Exception as error:  # noqa: BLE001 -- no float64 run: the fixed rule, said
                    reason = f"{type(error).__name__}: {error}"
            write_run(index, run, files, reason)
    return [run for run, *_ in recorded]


def _empty_dims(interface, batch):
    """Step 0's self-attention cache: each past's shape with the run's batch and no position."""
    return [[batch, *dims[1:2], 0, *dims[3:]] for dims in interface["encoder"]["self_dims"]]


def _decoder_call(decoder, encoder_interface, arrays, encoded):
    """decoder(ids, length, own past) -> outputs, the encoder's outputs and mask fed as the feeds say."""
    feeds = encoder_interface["feeds"]
    mask = torch.from_numpy(arrays["attention_mask"]) if "encoder_attention_mask" in feeds else None
    crosses = [encoded[source] for name, source in feeds.items() if name != "encoder_attention_mask"]

    def call(ids, _length, own):
        past = []
        for layer in range(len(own) // 2):
            past += [own[2 * layer], own[2 * layer + 1], crosses[2 * layer], crosses[2 * layer + 1]]
        return decoder(ids, *([mask] if mask is not None else []), *past)
    return call
