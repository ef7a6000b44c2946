"""The generation proof's reference: reference/generation/ with generation.json (onnxproof.generation/2)
and one folder per run, holding the prompt, step 0's empty cache, each greedy step's token and
last-position logits (float32, and float64 from a float64 copy fed the same tokens, for the
calibrated budget). A decoder's one run is recorded here (generation.py's greedy loop); an
encoder-decoder's runs by seq2seq_generation.py, its encoder exported beside model.onnx."""
import os

import numpy as np
import torch

from ..core import contract
from ..core.export_finish import file_digest
from ..core.export_io import write_atomically
from ..core.findings import finding
from .exact import ExactReference, default_dtype
from .generation import generation_failed, greedy, run_files
from .seq2seq import ENCODER_FILE
from .seq2seq_export import export_encoder, merged_decoder_document
from .seq2seq_generation import record_seq2seq_generation

FOLDER = "generation"


def write_generation(state, model, reference):
    """The generation proof's files after the reference cases: with --generate N PyTorch's
    generation (record_generation); an encoder-decoder without it still ships with its encoder,
    and a warning says nothing proves that."""
    steps = int(state.config.get("generate") or 0)
    if steps and state.generation:
        state.timed("generation_reference", record_generation, state, model, reference, steps)
    elif (state.generation or {}).get("encoder"):
        if state.timed("encoder_export", export_encoder, state, state.generation["encoder"]["module"],
                       os.path.join(state.out, ENCODER_FILE)):
            state.findings.append(finding(
                "ENCODER_NOT_PROVED", "warning", "encoder.onnx was exported beside the decoder (model.onnx); without "
                "--generate N nothing proves it, and the verdict covers the decoder step only", ENCODER_FILE,
                "add --generate N: the encoder runs on each request and its outputs feed the decoder steps"))


def record_generation(state, model, reference, steps):
    """Writes reference/generation/: generation.json and one folder per run of PyTorch's greedy
    generation of `steps` tokens (a decoder: from the example's input_ids; an encoder-decoder:
    seq2seq_generation.py's runs, its encoder exported beside model.onnx), with float64 logits when the
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

    if interface.get("record"):  # a given encoder-decoder folder (torch/given_seq2seq.py)
        runs, encoder_document = interface["record"](state, model, steps, write_run)
    elif interface.get("encoder"):
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
                **{key: interface[key] for key in ("input_ids", "attention_mask", "logits", "past", "present",
                                                   "position_ids", "first") if key in interface},
                "runs": [{key: run[key] for key in ("folder", "label", "batch", "prompt_length", "padded", "exact",
                                                    "exact_missing_reason")} for run in runs]}
    if encoder_document:
        document["encoder"] = encoder_document
    if merged_document:
        document["merged"] = merged_document
    write_atomically(os.path.join(folder, "generation.json"), contract.dumps(document, "generation", indent=2) + "\n")
    return True


def _record_decoder_run(state, model, steps, write_run):
    """A decoder's one run, from the example's input_ids (a given file's: a prompt of the size its
    files take); [run] or None after a finding."""
    interface = state.generation
    call_of = interface.get("call_of", _with_mask)
    prompt = _prompt(state, interface)
    empty = empty_past(state, int(prompt.shape[0]))
    try:
        tokens, logits = greedy(call_of(model), prompt, empty, interface["present"], steps,
                                logits_name=interface["logits"])
    except Exception as error:  # noqa: BLE001 -- the model's own failure, said as a finding
        state.findings.append(generation_failed(error))
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
                    _, exact = greedy(call_of(float64_pass.model), prompt, [value.double() for value in empty],
                                      interface["present"], steps, tokens, logits_name=interface["logits"])
                files["exact_logits.pb"] = (exact, "exact_logits")
            except Exception as error:  # noqa: BLE001 -- no float64 run: the fixed rule, said
                reason = f"{type(error).__name__}: {error}"
    run = {"label": f"batch {int(prompt.shape[0])}, prompt {int(prompt.shape[1])} tokens", "batch": int(prompt.shape[0]),
           "padded": False}
    write_run(0, run, files, reason)
    return [run]


def empty_past(state, batch):
    """Step 0's cache for a batch of `batch`: each past input's shape with no position in it (its
    sequence axis: the generation interface's past_axes, else the one labelled past_sequence)."""
    by_name = {spec["name"]: spec for spec in state.inputs}
    axis_of = state.generation.get("past_axes") or {entry["input"]: entry["axis"] for entry in state.dynamic
                                                    if entry["label"] == "past_sequence"}
    empty = []
    for name in state.generation["past"]:
        dims = list(by_name[name]["dims"])
        dims[0], dims[axis_of[name]] = batch, 0
        empty.append(torch.zeros(dims, dtype=getattr(torch, by_name[name]["dtype"])))
    return empty


def _prompt(state, interface):
    """The prompt: the example's input_ids, or for a given file's decoder (whose step takes one
    token) ids of the size its files take, seeded."""
    spec = interface.get("prompt")
    if not spec:
        return torch.from_numpy(np.array(state.example[interface["input_ids"]], copy=True))
    rng = np.random.default_rng(int(state.config.get("seed", 0)) + 5)
    return torch.from_numpy(rng.integers(spec["range"][0], spec["range"][1], spec["dims"], dtype=np.int64))


def _with_mask(decoder):
    """A decoder-only step call: the attention mask covers past and new tokens."""

    def call(ids, length, past):
        return decoder(ids, torch.ones((ids.shape[0], length), dtype=torch.int64), *past)
    return call
