"""The files an encoder-decoder ships beside its decoder step (model.onnx): encoder.onnx, and with
--merged-decoder decoder_merged.onnx, the first step without a cache (FirstStepDecoder, exported
here) and model.onnx's step merged under an If on use_cache_branch (core/decoder_merge.py). Both
are exported with the exporter the decoder was exported with; a failure is a finding.
"""
import os

import numpy as np
import torch

from ..core.export_io import progress
from ..core.findings import finding
from .seq2seq import CROSS, DECODER_SEQUENCE, HIDDEN, MERGED_FILE, SELF, add_present, decoder_call, encoder_arrays
from . import exporter_child

EXTERNAL_BYTES = 1 << 30  # weights past this go to an external data file (protobuf stops at 2 GiB)


class FirstStepDecoder(torch.nn.Module):
    """The decoder's first step without any cache, for the merged decoder's no-cache branch: the
    cross-attention cache computed from the encoder's states, both caches handed back."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def first_step(self, input_ids, mask, states):
        output = decoder_call(self.model, input_ids, mask, [], [], states)
        outputs = add_present({"logits": output.logits}, output.past_key_values.self_attention_cache, SELF)
        return add_present(outputs, output.past_key_values.cross_attention_cache, CROSS)


class MaskedFirstStepDecoder(FirstStepDecoder):
    def forward(self, input_ids, encoder_attention_mask, encoder_hidden_states):
        return self.first_step(input_ids, encoder_attention_mask, encoder_hidden_states)


class UnmaskedFirstStepDecoder(FirstStepDecoder):
    def forward(self, input_ids, encoder_hidden_states):
        return self.first_step(input_ids, None, encoder_hidden_states)


def _export_module(state, module, specs, dynamic, outputs, args, path, what):
    """Exports `module` to `path` with the exporter the decoder was exported with, its axes dynamic
    as `dynamic` says; a finding naming `what` and False when it fails."""
    import torch.onnx
    from . import dynamo
    progress(f"exporting {what} with the {state.exporter} exporter")
    try:
        if state.exporter == "dynamo":
            program, _ = dynamo.capture(module, args, specs, dynamic, findings=state.findings)
            dynamo.translate(program, args, specs, dynamic, outputs, state.opset, path, state.out)
        else:
            axes = {}
            for entry in dynamic:
                axes.setdefault(entry["input"], {})[entry["axis"]] = entry["label"]
            def export():
                with torch.no_grad():
                    torch.onnx.export(module, args, path, input_names=[spec["name"] for spec in specs],
                                      output_names=outputs, dynamic_axes=axes, opset_version=state.opset,
                                      do_constant_folding=True, dynamo=False)
            exporter_child.run_recording_warnings(state, export, action="ignore")  # a crash ends the child
        module.eval()  # an exporter restores the mode it found; the reference runs in eval mode
        return True
    except dynamo.DynamoExportFailed as failed:
        failed.finding["message"] = f"{what}: " + failed.finding["message"]
        state.findings.append(failed.finding)
    except Exception as error:  # noqa: BLE001 -- the exporter's own failure, said as a finding
        state.findings.append(finding("EXPORT_FAILED", "error", f"exporting {what} failed: {type(error).__name__}: "
                                      f"{error}", os.path.basename(path), "the decoder exported; see the exporter's message"))
    return False


def export_encoder(state, encoder, path):
    """encoder.onnx: batch and source length dynamic."""
    interface = state.generation["encoder"]
    specs = interface["inputs"]
    arrays = encoder_arrays(specs, None, np.random.default_rng(1), padded=True)
    args = tuple(torch.from_numpy(arrays[spec["name"]]) for spec in specs)
    return _export_module(state, encoder, specs, interface["dynamic"], interface["outputs"], args, path, "the encoder")


def export_merged_decoder(state, decoder, path):
    """decoder_merged.onnx: the first step without a cache (exported here) and model.onnx's step
    with one, merged into one file with a use_cache_branch input (core/decoder_merge.py)."""
    import onnx
    from ..core.decoder_merge import merge_decoders
    from ..core.export_io import temporary_path
    interface = state.generation
    encoder = interface["encoder"]
    masked = "encoder_attention_mask" in encoder["feeds"]
    first = (MaskedFirstStepDecoder if masked else UnmaskedFirstStepDecoder)(decoder.model).eval()
    arrays = encoder_arrays(encoder["inputs"], decoder.model.config, np.random.default_rng(2), padded=True)
    with torch.no_grad():
        states = encoder["module"](*(torch.from_numpy(arrays[spec["name"]]) for spec in encoder["inputs"]))[HIDDEN]
    batch, length = int(states.shape[0]), int(states.shape[1])
    ids = next(spec for spec in state.inputs if spec["name"] == interface["input_ids"])
    specs = [{**ids, "dims": [batch, DECODER_SEQUENCE]}]
    specs += [{"name": "encoder_attention_mask", "dims": [batch, length], "dtype": "int64"}] if masked else []
    specs.append({"name": "encoder_hidden_states", "dims": list(states.shape), "dtype": "float32"})
    source = [entry for entry in state.dynamic if entry["label"] == "encoder_sequence"][:1]
    bounds = {key: source[0][key] for key in ("min", "max") if source and key in source[0]}
    dynamic = [{"input": spec["name"], "axis": 0, "label": "batch"} for spec in specs]
    dynamic += [{"input": interface["input_ids"], "axis": 1, "label": "sequence"}]
    dynamic += [{"input": spec["name"], "axis": 1, "label": "encoder_sequence", **bounds} for spec in specs[1:]]
    cross = [name for name in encoder["outputs"] if name != HIDDEN]
    outputs = ["logits", *interface["present"], *cross]
    rng = np.random.default_rng(3)
    args = (torch.from_numpy(rng.integers(0, ids["range"][1], (batch, DECODER_SEQUENCE), dtype=np.int64)),
            *([torch.from_numpy(arrays["attention_mask"])] if masked else []), states)
    staged = temporary_path(path + ".first")
    try:
        if not _export_module(state, first, specs, dynamic, outputs, args, staged, "the decoder's first step"):
            return False
        passed_through = {present: past for past, present in encoder["feeds"].items() if present in cross}
        try:
            merged = merge_decoders(onnx.load(staged), onnx.load(state.model_path), outputs, passed_through)
            weights = sum(len(tensor.raw_data) for tensor in merged.graph.initializer)
            # Past protobuf's 2 GiB the weights go to decoder_merged.onnx.data beside it.
            onnx.save(merged, path, save_as_external_data=weights > EXTERNAL_BYTES,
                      location=os.path.basename(path) + ".data")
        except Exception as error:  # noqa: BLE001 -- the merge's failure, said as a finding
            state.findings.append(finding("EXPORT_FAILED", "error", f"merging the decoder's two steps failed: "
                                          f"{type(error).__name__}: {error}", MERGED_FILE,
                                          "the decoder and the encoder exported; prove them without --merged-decoder"))
            return False
        return True
    finally:
        for leftover in (staged, staged + ".data"):
            if os.path.exists(leftover):
                os.remove(leftover)


def merged_decoder_document(out, encoder):
    """generation.json's `merged`: decoder_merged.onnx, what it is fed from the encoder at every
    step, and the cross-attention cache its first step hands back for the steps after it."""
    from ..core.decoder_merge import USE_CACHE_BRANCH
    from ..core.export_finish import file_digest
    crossing = {past: present for past, present in encoder["feeds"].items() if past != "encoder_attention_mask"}
    feeds = {"encoder_hidden_states": HIDDEN}
    if "encoder_attention_mask" in encoder["feeds"]:
        feeds["encoder_attention_mask"] = encoder["feeds"]["encoder_attention_mask"]
    return {"model": MERGED_FILE, "sha256": file_digest(os.path.join(out, MERGED_FILE))[1],
            "use_cache_branch": USE_CACHE_BRANCH, "feeds": feeds, "past": list(crossing), "present": list(crossing.values())}
