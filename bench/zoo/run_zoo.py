#!/usr/bin/env python3
"""The model zoo: real architectures through `onnxproof pipeline`, once per exporter, at the
default opset; one row per (model, exporter) with the verdict, the error findings, the exported
model's node count, the largest error and the seconds per step.

    python3 bench/zoo/run_zoo.py [--onnxproof build/bin/onnxproof] [--work /tmp/onnxproof-zoo]
                                 [--only NAME,...] [--exporters dynamo,torchscript]

Writes bench/zoo/results.json and bench/zoo/results.md (the table RESULTS.md quotes). Random
weights, nothing downloaded; --samples 1 and a short batch sweep keep it to about an hour on two
cores. Every run keeps its folder under --work for a closer look.
"""
import argparse
import json
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))

# A detector's sweep: its image's height and width (it has no batch axis).
DETECTION_SWEEP = ["--sweep", "height=160,192,225", "--sweep", "width=256,199"]

# (family, spec, extra pipeline options; a --sweep among them replaces the default batch sweep)
ZOO = [
    ("torchvision classifier", "torchvision:resnet18", []),
    ("torchvision classifier", "torchvision:resnet50", []),
    ("torchvision classifier", "torchvision:mobilenet_v2", []),
    ("torchvision classifier", "torchvision:mobilenet_v3_small", []),
    ("torchvision classifier", "torchvision:efficientnet_b0", []),
    ("torchvision classifier", "torchvision:squeezenet1_0", []),
    ("torchvision classifier", "torchvision:shufflenet_v2_x0_5", []),
    ("torchvision classifier", "torchvision:densenet121", []),
    ("torchvision classifier", "torchvision:regnet_y_400mf", []),
    ("torchvision classifier", "torchvision:mnasnet0_5", []),
    ("torchvision classifier", "torchvision:googlenet", []),
    ("torchvision classifier", "torchvision:convnext_tiny", []),
    ("torchvision classifier", "torchvision:swin_t", []),
    ("torchvision classifier", "torchvision:vit_b_16", []),
    # Detectors take one image with height and width dynamic (docs/detection.md); their outputs are
    # proved as matched sets of detections.
    ("torchvision detection", "torchvision:fasterrcnn_mobilenet_v3_large_320_fpn", DETECTION_SWEEP),
    ("torchvision detection", "torchvision:ssdlite320_mobilenet_v3_large", DETECTION_SWEEP),
    ("torchvision detection", "torchvision:retinanet_resnet50_fpn", DETECTION_SWEEP),
    ("torchvision detection", "torchvision:fcos_resnet50_fpn", DETECTION_SWEEP),
    ("torchvision detection", "torchvision:maskrcnn_resnet50_fpn", DETECTION_SWEEP),
    ("user detector", os.path.join(ROOT, "examples", "detector", "tiny_detector.py") + ":tiny_detector",
     ["--input", "image=1x3x64x80:float32", "--dynamic", "image:2=height", "--dynamic", "image:3=width",
      "--sweep", "height=48,64,97", "--sweep", "width=80,65"]),
    ("torchvision segmentation", "torchvision:lraspp_mobilenet_v3_large", []),
    ("torchvision segmentation", "torchvision:deeplabv3_mobilenet_v3_large", []),
    ("timm", "timm:vit_tiny_patch16_224", []),
    ("timm", "timm:deit_tiny_patch16_224", []),
    ("timm", "timm:convnext_atto", []),
    ("timm", "timm:resnet10t", []),
    ("timm", "timm:efficientnet_b0", []),
    ("timm", "timm:mobilevitv2_050", []),
    ("timm", "timm:levit_128s", []),
    ("timm", "timm:regnetx_002", []),
    ("timm", "timm:edgenext_xx_small", []),
    ("timm", "timm:ghostnet_050", []),
    ("timm", "timm:mobilenetv4_conv_small", []),
    ("transformers", "hf:BertModel", []),
    ("transformers", "hf:DistilBertModel", []),
    ("transformers", "hf:RobertaModel", []),
    ("transformers", "hf:AlbertModel", []),
    ("transformers", "hf:GPT2LMHeadModel", []),
    ("transformers", "hf:LlamaForCausalLM", []),
    ("transformers", "hf:Qwen2ForCausalLM", []),
    ("transformers", "hf:MistralForCausalLM", []),
    ("transformers", "hf:T5ForConditionalGeneration", []),
    ("transformers", "hf:BartModel", []),
    ("transformers", "hf:WhisperForConditionalGeneration", []),
    ("transformers", "hf:ViTModel", []),
    ("transformers audio", "hf:Wav2Vec2Model", []),
    ("transformers audio", "hf:HubertModel", []),
    ("transformers vision", "hf:SegformerForSemanticSegmentation", []),
    # Decoders with their key/value cache and the generation proof (docs/generation.md).
    ("causal LM with cache", "hf:LlamaForCausalLM:use_cache=true", ["--generate", "16"]),
    ("causal LM with cache", "hf:GPT2LMHeadModel:use_cache=true", ["--generate", "16"]),
    ("causal LM with cache", "hf:Qwen2ForCausalLM:use_cache=true", ["--generate", "16"]),
    ("causal LM with cache", "hf:MistralForCausalLM:use_cache=true", ["--generate", "16"]),
    ("causal LM with cache", "hf:PhiForCausalLM:use_cache=true", ["--generate", "16"]),
    ("causal LM with cache", "hf:GemmaForCausalLM:use_cache=true", ["--generate", "16"]),
]

STEPS = ("export", "check", "simplify", "ops", "parity", "generate", "golden")


def run_one(onnxproof, spec, exporter, extra, work, timeout):
    folder = os.path.join(work, spec.replace(":", "_").replace("/", "_"), exporter)
    sweep = [] if "--sweep" in extra else ["--sweep", "batch=1,3"]
    command = [onnxproof, "pipeline", "--model", spec, "--exporter", exporter, "--samples", "1",
               *sweep, "--out", folder, "--export-timeout", str(timeout)] + extra
    start = time.perf_counter()
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout + 600, stdin=subprocess.DEVNULL)
        code, err = done.returncode, done.stderr
    except subprocess.TimeoutExpired:
        code, err = -1, "timed out"
    seconds = time.perf_counter() - start
    row = {"model": spec, "exporter": exporter, "exit": code, "seconds": round(seconds, 1), "folder": folder}
    report_path = os.path.join(folder, "report.json")
    if not os.path.exists(report_path):
        row.update(verdict="error", errors=[], note=(err.strip().splitlines() or ["no output"])[-1][:200])
        return row
    with open(report_path) as handle:
        report = json.load(handle)
    row["verdict"] = report["verdict"]
    row["errors"] = sorted({f["code"] for f in report["findings"] if f["severity"] == "error"})
    row["fallback"] = any(f["code"] == "EXPORTER_FALLBACK" for f in report["findings"])
    row["step_seconds"] = {step["name"]: round(step["seconds"], 1) for step in report["steps"]}
    row["step_status"] = {step["name"]: step["status"] for step in report["steps"]}
    errors = [f for f in report["findings"] if f["severity"] == "error"]
    row["note"] = (errors[0]["message"][:160] + (f" at {errors[0]['where'][:120]}" if errors[0]["where"] else "")
                   if errors else next((s.get("reason", "") for s in report["steps"] if s["status"] == "error"), ""))
    rows = [r for r in report.get("parity", []) if r.get("status") in ("pass", "fail")]
    row["max_abs"] = max((r["max_abs"] for r in rows), default=None)
    generation = next((s for s in report["steps"] if s["name"] == "generate"), None)
    if generation and generation.get("providers"):
        first = generation["providers"][0]
        row["generation"] = {key: first.get(key) for key in ("identical_steps", "first_failure", "rule")}
        row["generation"]["worst_error"] = max((step["error"] for step in first.get("table", [])), default=None)
        row["generation"]["steps"] = len(first.get("table", []))
        row["note"] = (row["note"] + "; " if row["note"] else "") + (
            f"generate: {first.get('identical_steps')}/{len(first.get('table', []))} identical tokens, "
            f"worst logit error {row['generation']['worst_error']:.2g} ({first.get('rule')})")
    row["nodes"], row["opset"] = model_facts(os.path.join(folder, "model.onnx"))
    return row


def model_facts(path):
    """(nodes in the main graph, default-domain opset) of an exported model, read with the
    project's pinned Python (it has onnx); (None, None) when there is none."""
    code = ("import onnx, sys; m = onnx.load(sys.argv[1], load_external_data=False); "
            "print(len(m.graph.node), next(i.version for i in m.opset_import if i.domain in ('', 'ai.onnx')))")
    if not os.path.exists(path):
        return None, None
    done = subprocess.run([os.path.join(ROOT, ".venv", "bin", "python"), "-c", code, path], capture_output=True,
                          text=True)
    fields = done.stdout.split()
    return (int(fields[0]), int(fields[1])) if done.returncode == 0 and len(fields) == 2 else (None, None)


def markdown(rows):
    lines = ["| model | exporter | verdict | error findings | nodes | opset | max abs error | "
             + " | ".join(f"{s} s" for s in STEPS) + " | note |",
             "| --- | --- | --- | --- | ---: | ---: | ---: | " + " | ".join("---:" for _ in STEPS) + " | --- |"]
    for r in rows:
        steps = r.get("step_seconds", {})
        cells = [r["model"], r["exporter"] + (" (fell back)" if r.get("fallback") else ""), r["verdict"],
                 ", ".join(r.get("errors", [])) or "-", str(r.get("nodes") or "-"), str(r.get("opset") or "-"),
                 f"{r['max_abs']:.2g}" if r.get("max_abs") is not None else "-"]
        cells += [f"{steps[s]:.1f}" if s in steps and r.get("step_status", {}).get(s) != "skip" else "-" for s in STEPS]
        cells.append(r.get("note", "").replace("|", "\\|").replace("\n", " "))
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def merged(kept, rows):
    """The rows in the zoo's order: this run's, and the last run's for the models not rerun."""
    order = {spec: index for index, (_, spec, _) in enumerate(ZOO)}
    return sorted(kept + rows, key=lambda row: (order.get(row["model"], len(order)), row["exporter"] != "dynamo"))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--onnxproof", default=os.path.join(ROOT, "build", "bin", "onnxproof"))
    parser.add_argument("--work", default="/tmp/onnxproof-zoo")
    parser.add_argument("--only", default="", help="comma-separated specs")
    parser.add_argument("--exporters", default="dynamo,torchscript")
    parser.add_argument("--timeout", type=int, default=900, help="seconds per export")
    args = parser.parse_args()
    only = set(filter(None, args.only.split(",")))
    zoo = [entry for entry in ZOO if not only or entry[1] in only]
    rows = []
    results = os.path.join(HERE, "results.json")
    kept = []  # with --only, the other models' rows of the last run stay
    if only and os.path.exists(results):
        with open(results) as handle:
            kept = [row for row in json.load(handle) if row["model"] not in only]
    total = len(zoo) * len(args.exporters.split(","))
    for family, spec, extra in zoo:
        for exporter in args.exporters.split(","):
            print(f"[{len(rows) + 1}/{total}] {spec} ({exporter})", file=sys.stderr, flush=True)
            row = run_one(args.onnxproof, spec, exporter, extra, args.work, args.timeout)
            row["family"] = family
            rows.append(row)
            print(f"    {row['verdict']} in {row['seconds']} s {', '.join(row.get('errors', []))}", file=sys.stderr,
                  flush=True)
            with open(results + ".tmp", "w") as handle:  # kept current: a long run can be read midway
                json.dump(merged(kept, rows), handle, indent=1)
            os.replace(results + ".tmp", results)
    with open(os.path.join(HERE, "results.md"), "w") as handle:
        handle.write(markdown(merged(kept, rows)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
