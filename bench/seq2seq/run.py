"""The encoder-decoder families with their cache, proved by generation (`--generate 16
--merged-decoder`) under both exporters: verdict, identical tokens per run, the worst logit error and its budget, the encoder's
worst error, and the wall time of the whole pipeline. Writes bench/seq2seq/results.json and prints
the Markdown table recorded in bench/RESULTS.md.

    .venv/bin/python bench/seq2seq/run.py [--engine build/bin/onnxproof] [--steps 16]
"""
import argparse
import json
import os
import shutil
import subprocess
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
FAMILIES = ["T5ForConditionalGeneration", "BartForConditionalGeneration", "MarianMTModel",
            "WhisperForConditionalGeneration"]
EXPORTERS = ["dynamo", "torchscript"]


def prove(engine, spec, exporter, steps, out):
    started = time.perf_counter()
    done = subprocess.run([engine, "pipeline", "--model", spec, "--generate", str(steps), "--exporter", exporter,
                           "--merged-decoder", "--out", out], capture_output=True, text=True, timeout=3600)
    seconds = time.perf_counter() - started
    with open(os.path.join(out, "report.json"), encoding="utf-8") as handle:
        report = json.load(handle)
    row = {"spec": spec, "exporter": exporter, "exit": done.returncode, "verdict": report["verdict"],
           "seconds": round(seconds, 1), "opset": report.get("opset"),
           "errors": [f"{f['code']}: {f['message'][:160]} ({f['where'][:120]})" for f in report["findings"]
                      if f["severity"] == "error"]}
    generate = next((step for step in report["steps"] if step["name"] == "generate"), None)
    if generate and "providers" in generate:
        runs = [p for p in generate["providers"] if p["optimization"] != "disabled"]
        row["runs"] = [f"{p['run']}: {p['identical_steps']}/{len(p['table'])}" for p in runs
                       if not p["run"].endswith("decoder_merged.onnx")]
        row["merged_runs"] = [f"{p['identical_steps']}/{len(p['table'])}" for p in runs
                              if p["run"].endswith("decoder_merged.onnx")]
        worst = max((r for p in runs for r in p["table"]), key=lambda r: r["error"])
        row["worst_logit_error"], row["its_budget"] = worst["error"], worst["budget"]
        row["worst_encoder_error"] = max((o["error"] for p in runs for o in p["encoder"]), default=None)
    return row


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--engine", default=os.path.join(ROOT, "build", "bin", "onnxproof"))
    parser.add_argument("--steps", type=int, default=16)
    args = parser.parse_args()
    folder = tempfile.mkdtemp(prefix="onnxproof-seq2seq-bench-")
    rows = []
    try:
        for family in FAMILIES:
            for exporter in EXPORTERS:
                spec = f"hf:{family}:use_cache=true"
                rows.append(prove(args.engine, spec, exporter, args.steps, os.path.join(folder, f"{family}-{exporter}")))
                print(json.dumps(rows[-1]), flush=True)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    with open(os.path.join(HERE, "results.json"), "w", encoding="utf-8") as handle:
        json.dump(rows, handle, indent=1)
    print("| model | exporter | verdict | identical tokens per run | merged decoder | worst logit error (its budget) | "
          "worst encoder error | seconds |\n| --- | --- | --- | --- | --- | --- | --- | ---: |")
    for row in rows:
        runs = "; ".join(row.get("runs", [])) or "; ".join(row["errors"])[:300]
        logit = f"{row['worst_logit_error']:.2g} ({row['its_budget']:.2g})" if "worst_logit_error" in row else "-"
        encoder = f"{row['worst_encoder_error']:.2g}" if row.get("worst_encoder_error") is not None else "-"
        merged = ", ".join(row.get("merged_runs", [])) or "-"
        print(f"| `{row['spec']}` | {row['exporter']} | {row['verdict']} | {runs} | {merged} | {logit} | {encoder} | "
              f"{row['seconds']} |")


if __name__ == "__main__":
    main()
