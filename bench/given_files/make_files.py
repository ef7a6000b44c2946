"""The PyTorch side's ONNX files, made as a user's own script makes them (never by onnxproof), into
OUT (outside the repository), with the checkpoints models.py loads them against, and
OUT/manifest-torch.json: one entry per file with its exporter and the spec that gives its weights.

    .venv/bin/python bench/given_files/make_files.py OUT

Files: torch.onnx.export(..., dynamo=False) (TorchScript) with input_names, output_names and
dynamic_axes of ResNet-18, MobileNetV3-small and a small BERT sequence classifier; the same
ResNet-18, MobileNetV3-small and BERT with dynamo=True (dynamic_shapes); the BERT through
transformers' own exporter (OnnxExporter, model.onnx + model.onnx.data); ONNX Runtime's offline
optimized copies (ORT_ENABLE_BASIC, and ORT_ENABLE_EXTENDED) of the TorchScript ResNet-18; as
controls, the TorchScript ResNet-18 and BERT against the same architectures from another
checkpoint (models.py:other_resnet18, other_bert: seed 1; expected to fail); and the generation
folders: a GPT-2, a Llama and a BART with their cache through transformers' export_for_generation
(prefill.onnx, decode.onnx; the GPT-2 also against another checkpoint), and a BART in Optimum's
folder layout (encoder_model.onnx, decoder_model.onnx, decoder_with_past_model.onnx) exported by
hand with TorchScript.

    .venv/bin/python bench/given_files/make_files.py OUT [GROUP ...]   # image bert ort generation bart"""
import json
import os
import sys
import time
import traceback
import warnings

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import models  # noqa: E402

MODELS_PY = os.path.join(HERE, "models.py")
BATCH, SEQUENCE = 2, 16


def spec(name):
    return f"{MODELS_PY}:{name}"


def torchscript(model, args, path, **options):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(model, args, path, dynamo=False, **options)


def dynamo(model, args, path, **options):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        program = torch.onnx.export(model, args, dynamo=True, **options)
        program.save(path)


def image_files(out, name, entries):
    """The torchvision model's checkpoint, then its TorchScript and dynamo files."""
    trained = getattr(models, f"trained_{name}")()
    torch.save(trained.state_dict(), os.path.join(out, f"{name}.pt"))
    model = getattr(models, name)()  # as the spec loads it: from the checkpoint
    image = torch.randn(BATCH, 3, 224, 224, generator=torch.Generator().manual_seed(1))
    path = os.path.join(out, "files", f"{name}-torchscript.onnx")
    entries.append(make(f"{name}-torchscript", "torch.onnx.export(dynamo=False)", spec(name), path, lambda: torchscript(
        model, (image,), path, input_names=["image"], output_names=["logits"],
        dynamic_axes={"image": {0: "batch"}, "logits": {0: "batch"}})))
    path = os.path.join(out, "files", f"{name}-dynamo", "model.onnx")
    batch = torch.export.Dim("batch", min=1, max=1024)
    entries.append(make(f"{name}-dynamo", "torch.onnx.export(dynamo=True)", spec(name), path, lambda: dynamo(
        model, (image,), path, input_names=["image"], output_names=["logits"], dynamic_shapes={"x": {0: batch}})))


def text_inputs():
    generator = torch.Generator().manual_seed(1)
    ids = torch.randint(0, models.BERT_CONFIG["vocab_size"], (BATCH, SEQUENCE), generator=generator)
    mask = torch.ones(BATCH, SEQUENCE, dtype=torch.int64)
    mask[1, 12:] = 0  # a padded row
    return ids, mask


def bert_files(out, entries):
    models.trained_bert().save_pretrained(os.path.join(out, "bert"))
    model = models.bert()
    ids, mask = text_inputs()
    axes = {"input_ids": {0: "batch", 1: "sequence"}, "attention_mask": {0: "batch", 1: "sequence"},
            "logits": {0: "batch"}}
    path = os.path.join(out, "files", "bert-torchscript.onnx")
    entries.append(make("bert-torchscript", "torch.onnx.export(dynamo=False)", spec("bert"), path, lambda: torchscript(
        model, (ids, mask), path, input_names=["input_ids", "attention_mask"], output_names=["logits"],
        dynamic_axes=axes)))
    path = os.path.join(out, "files", "bert-dynamo", "model.onnx")
    batch, sequence = torch.export.Dim("batch", min=1, max=64), torch.export.Dim("sequence", min=2, max=128)
    shapes = {"input_ids": {0: batch, 1: sequence}, "attention_mask": {0: batch, 1: sequence}}
    entries.append(make("bert-dynamo", "torch.onnx.export(dynamo=True)", spec("bert"), path, lambda: dynamo(
        model, (ids, mask), path, input_names=["input_ids", "attention_mask"], output_names=["logits"],
        dynamic_shapes=shapes)))
    folder = os.path.join(out, "files", "bert-transformers")
    path = os.path.join(folder, "model.onnx")

    def transformers_exporter():
        from transformers.exporters import OnnxConfig, OnnxExporter
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            OnnxExporter().export(model, {"input_ids": ids, "attention_mask": mask},
                                  OnnxConfig(dynamic=True)).save_pretrained(folder)
    entries.append(make("bert-transformers", "transformers OnnxExporter (5.23)", spec("bert"), path,
                        transformers_exporter))


def ort_optimized(out, entries, level_name):
    import onnxruntime
    source = os.path.join(out, "files", "resnet18-torchscript.onnx")
    name = f"resnet18-ort-{level_name.lower()}"
    path = os.path.join(out, "files", f"{name}.onnx")

    def optimize():
        options = onnxruntime.SessionOptions()
        options.graph_optimization_level = getattr(onnxruntime.GraphOptimizationLevel, f"ORT_ENABLE_{level_name}")
        options.optimized_model_filepath = path
        onnxruntime.InferenceSession(source, options, providers=["CPUExecutionProvider"])
    entries.append(make(name, f"ONNX Runtime offline optimization (ORT_ENABLE_{level_name}) of resnet18-torchscript",
                        spec("resnet18"), path, optimize))


def generation_files(out, entries, name):
    """A model of models.py (gpt2, llama, bart) through transformers' export_for_generation: a
    folder with prefill.onnx, decode.onnx and export.json."""
    getattr(models, f"trained_{name}")().save_pretrained(os.path.join(out, name))
    model = getattr(models, name)()
    folder = os.path.join(out, "files", f"{name}-generation")
    ids = torch.randint(0, 1000, (1, 8), generator=torch.Generator().manual_seed(1))

    def export():
        from transformers.exporters import OnnxConfig, OnnxExporter
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            OnnxExporter().export_for_generation(model, {"input_ids": ids, "attention_mask": torch.ones_like(ids)},
                                                 OnnxConfig(dynamic=True)).save_pretrained(folder)
    entry = make(f"{name}-generation", "transformers OnnxExporter.export_for_generation (5.23)", spec(name), folder,
                 export, multi_file=True)
    entry["components"] = sorted(f for f in os.listdir(folder) if f.endswith(".onnx")) if os.path.isdir(folder) else []
    entries.append(entry)


class BartEncoder(torch.nn.Module):
    def __init__(self, model):
        super().__init__()
        self.encoder = model.get_encoder()

    def forward(self, input_ids, attention_mask):
        return self.encoder(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state


class BartDecoder(torch.nn.Module):
    """Optimum's decoder_model.onnx / decoder_with_past_model.onnx: logits and the cache flat
    (present.L.decoder.key, ..., present.L.encoder.value)."""

    def __init__(self, model, with_past):
        super().__init__()
        self.model, self.with_past = model, with_past

    def forward(self, encoder_attention_mask, input_ids, encoder_hidden_states, *past):
        from transformers.cache_utils import DynamicCache, EncoderDecoderCache
        cache = EncoderDecoderCache(DynamicCache(), DynamicCache())
        if self.with_past:
            for layer in range(len(past) // 4):
                key, value, cross_key, cross_value = past[4 * layer: 4 * layer + 4]
                cache.self_attention_cache.update(key, value, layer)
                cache.cross_attention_cache.update(cross_key, cross_value, layer)
                cache.is_updated[layer] = True
        output = self.model(encoder_outputs=(encoder_hidden_states,), attention_mask=encoder_attention_mask,
                            decoder_input_ids=input_ids, past_key_values=cache, use_cache=True, return_dict=True)
        flat = [output.logits]
        present = output.past_key_values
        for layer in range(len(present.self_attention_cache.layers)):
            flat += [present.self_attention_cache.layers[layer].keys, present.self_attention_cache.layers[layer].values]
            if not self.with_past:
                flat += [present.cross_attention_cache.layers[layer].keys,
                         present.cross_attention_cache.layers[layer].values]
        return tuple(flat)


def bart_files(out, entries):
    """A BART in Optimum's layout, exported by hand (optimum-onnx cannot be installed beside
    transformers 5): encoder_model.onnx, decoder_model.onnx (no cache in, the whole cache out) and
    decoder_with_past_model.onnx (one new token, the self-attention cache out)."""
    models.trained_bart().save_pretrained(os.path.join(out, "bart"))
    model = models.bart()
    folder = os.path.join(out, "files", "bart-optimum-layout")
    layers = model.config.decoder_layers

    def export():
        os.makedirs(folder, exist_ok=True)
        ids, mask = text_inputs()
        with torch.no_grad():
            hidden = BartEncoder(model)(ids, mask)
        torchscript(BartEncoder(model), (ids, mask), os.path.join(folder, "encoder_model.onnx"),
                    input_names=["input_ids", "attention_mask"], output_names=["last_hidden_state"],
                    dynamic_axes={"input_ids": {0: "batch_size", 1: "encoder_sequence_length"},
                                  "attention_mask": {0: "batch_size", 1: "encoder_sequence_length"},
                                  "last_hidden_state": {0: "batch_size", 1: "encoder_sequence_length"}})
        start = torch.full((BATCH, 1), model.config.decoder_start_token_id)
        cache_axes = {0: "batch_size", 2: "past_decoder_sequence_length + 1"}
        names = [f"present.{l}.{part}.{kv}" for l in range(layers) for part in ("decoder", "encoder")
                 for kv in ("key", "value")]
        axes = {"encoder_attention_mask": {0: "batch_size", 1: "encoder_sequence_length"},
                "input_ids": {0: "batch_size", 1: "decoder_sequence_length"},
                "encoder_hidden_states": {0: "batch_size", 1: "encoder_sequence_length"},
                "logits": {0: "batch_size", 1: "decoder_sequence_length"}}
        axes.update({name: {0: "batch_size", 2: "decoder_sequence_length" if ".decoder." in name
                            else "encoder_sequence_length"} for name in names})
        torchscript(BartDecoder(model, False), (mask, start, hidden), os.path.join(folder, "decoder_model.onnx"),
                    input_names=["encoder_attention_mask", "input_ids", "encoder_hidden_states"],
                    output_names=["logits"] + names, dynamic_axes=axes)
        with torch.no_grad():
            past = BartDecoder(model, False)(mask, start, hidden)[1:]
        past_names = [f"past_key_values.{l}.{part}.{kv}" for l in range(layers) for part in ("decoder", "encoder")
                      for kv in ("key", "value")]
        present = [f"present.{l}.decoder.{kv}" for l in range(layers) for kv in ("key", "value")]
        axes = {"encoder_attention_mask": {0: "batch_size", 1: "encoder_sequence_length"},
                "input_ids": {0: "batch_size"}, "encoder_hidden_states": {0: "batch_size", 1: "encoder_sequence_length"},
                "logits": {0: "batch_size"}}
        axes.update({name: {0: "batch_size", 2: "past_decoder_sequence_length" if ".decoder." in name
                            else "encoder_sequence_length_out"} for name in past_names})
        axes.update({name: cache_axes for name in present})
        torchscript(BartDecoder(model, True), (mask, start, hidden, *past),
                    os.path.join(folder, "decoder_with_past_model.onnx"),
                    input_names=["encoder_attention_mask", "input_ids", "encoder_hidden_states"] + past_names,
                    output_names=["logits"] + present, dynamic_axes=axes)
        model.config.save_pretrained(folder)
    entry = make("bart-optimum-layout", "torch.onnx.export(dynamo=False), Optimum's seq2seq layout by hand", spec("bart"),
                 folder, export, multi_file=True)
    entry["components"] = sorted(f for f in os.listdir(folder) if f.endswith(".onnx")) if os.path.isdir(folder) else []
    entries.append(entry)


def make(name, exporter, model_spec, path, action, multi_file=False):
    """Runs `action` (which writes `path`) and returns the manifest entry; an exporter that fails
    is recorded with its error, not retried another way."""
    os.makedirs(os.path.dirname(path) if not multi_file else os.path.dirname(path.rstrip("/")), exist_ok=True)
    started = time.perf_counter()
    entry = {"name": name, "framework": "torch", "exporter": exporter, "spec": model_spec, "onnx": path,
             "multi_file": multi_file}
    try:
        action()
    except Exception as error:  # noqa: BLE001 -- recorded: the exporter's failure is a row of its own
        entry["export_error"] = f"{type(error).__name__}: {str(error).splitlines()[0] if str(error) else ''}"[:400]
        traceback.print_exc()
    entry["export_seconds"] = round(time.perf_counter() - started, 1)
    print(json.dumps(entry), flush=True)
    return entry


def main():
    """OUT [GROUP ...]: every file, or only the groups named (image, bert, ort, generation, bart),
    their entries replacing the ones of the same name in OUT's manifest."""
    out = os.path.abspath(sys.argv[1])
    groups = set(sys.argv[2:]) or {"image", "bert", "ort", "generation", "bart"}
    repository = os.path.dirname(os.path.dirname(HERE))
    if os.path.commonpath([out, repository]) == repository:
        sys.exit(f"{out} is inside the repository: give a folder outside it")
    os.makedirs(os.path.join(out, "files"), exist_ok=True)
    os.environ["ONNXPROOF_GIVEN_FILES"] = out
    torch.set_num_threads(2)
    entries = []
    if "image" in groups:
        image_files(out, "resnet18", entries)
        image_files(out, "mobilenet_v3_small", entries)
    if "bert" in groups:
        bert_files(out, entries)
    # Controls: the same files against the same architectures from another checkpoint (seed 1):
    # expected to fail, naming the weights.
    for name, other in (("resnet18-torchscript", "other_resnet18"), ("bert-torchscript", "other_bert")):
        entry = next((e for e in entries if e["name"] == name), None)
        if entry:
            entries.append(dict(entry, name=f"{name}-vs-other-weights", spec=spec(other), control=True,
                                same_file_as=name))
    if "ort" in groups:
        ort_optimized(out, entries, "BASIC")
        ort_optimized(out, entries, "EXTENDED")
    if "generation" in groups:
        generation_files(out, entries, "gpt2")
        generation_files(out, entries, "llama")
        generation_files(out, entries, "bart")  # an encoder-decoder: no encoder file, the states an input
        entry = next(e for e in entries if e["name"] == "gpt2-generation")  # its control: another checkpoint's
        entries.append(dict(entry, name="gpt2-generation-vs-other-weights", spec=spec("other_gpt2"), control=True,
                            same_file_as="gpt2-generation"))
    if "bart" in groups:
        bart_files(out, entries)
    manifest = os.path.join(out, "manifest-torch.json")
    if os.path.isfile(manifest) and len(groups) < 5:  # the other groups' entries as they were
        with open(manifest, encoding="utf-8") as handle:
            made = {entry["name"] for entry in entries}
            entries = [entry for entry in json.load(handle) if entry["name"] not in made] + entries
    with open(manifest, "w", encoding="utf-8") as handle:
        json.dump(entries, handle, indent=1)


if __name__ == "__main__":
    main()
