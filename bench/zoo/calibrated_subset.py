#!/usr/bin/env python3
"""The calibrated proof (issues 21 and 22) on a subset of the zoo: the models the issues name,
through `onnxproof pipeline` exactly as the zoo (bench/zoo/zoo.toml) runs them (run_one below), plus `--exporter auto`
for the transformers causal LMs (issue 22 asks for auto; zoo.toml passes dynamo and torchscript).

    python3 bench/zoo/calibrated_subset.py [--onnxproof build/bin/onnxproof]
                                           [--work /tmp/onnxproof-zoo-calibrated] [--only SPEC,...]

Writes bench/zoo/calibrated_subset.json and calibrated_subset.md; the full-zoo tables
(results.json/results.md) are left alone. Per run, besides the zoo row of run_one: the warnings, the
parity rows' largest error_ratio, the count of rows per rule, EVIDENCE_WEAK / ARGMAX_TIE, and the
float64 pass's cost from export.json's timings_s (exact_reference, reference, exact_cases; the
ratio exact_reference / (reference - exact_reference), the float64 pass against the float32
capture it is included in). With --only, the other rows of the last calibrated_subset.json stay.
"""
import argparse
import collections
import json
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))

CAUSAL = ["hf:LlamaForCausalLM", "hf:Qwen2ForCausalLM", "hf:MistralForCausalLM", "hf:PhiForCausalLM",
          "hf:GemmaForCausalLM"]
# (family, spec, exporters), in the order they run (deeplabv3 last of the vision models: the first
# to drop when time is short)
SUBSET = [
    ("torchvision segmentation", "torchvision:lraspp_mobilenet_v3_large", ["dynamo", "torchscript"]),
    ("timm", "timm:mobilenetv4_conv_small", ["dynamo", "torchscript"]),
    ("torchvision classifier", "torchvision:mobilenet_v3_small", ["dynamo", "torchscript"]),
    ("torchvision classifier", "torchvision:resnet18", ["dynamo", "torchscript"]),
] + [("transformers", spec, ["auto", "dynamo", "torchscript"]) for spec in CAUSAL] + [
    ("transformers", "hf:BertModel", ["dynamo", "torchscript"]),
    ("torchvision segmentation", "torchvision:deeplabv3_mobilenet_v3_large", ["dynamo", "torchscript"]),
]


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


def enrich(row):
    """Adds the calibrated proof's figures of the run folder to run_one's row."""
    folder = row["folder"]
    try:
        with open(os.path.join(folder, "report.json")) as handle:
            report = json.load(handle)
    except (OSError, ValueError):
        report = None
    if report is not None:
        findings = report.get("findings", [])
        row["warnings"] = sorted({f["code"] for f in findings if f["severity"] == "warning"})
        row["infos"] = sorted({f["code"] for f in findings if f["severity"] == "info"})
        row["evidence_weak"] = any(f["code"] == "EVIDENCE_WEAK" for f in findings)
        row["argmax_tie"] = any(f["code"] == "ARGMAX_TIE" for f in findings)
        parity = report.get("parity", []) or []
        ratios = [r["error_ratio"] for r in parity if isinstance(r.get("error_ratio"), (int, float))]
        row["max_error_ratio"] = max(ratios, default=None)
        row["rules"] = dict(collections.Counter(str(r.get("rule")) for r in parity))
        row["parity_rows"] = len(parity)
        row["findings"] = [{k: f.get(k) for k in ("code", "severity", "message", "where")}
                           for f in findings if f["severity"] in ("error", "warning")
                           or f["code"] in ("ARGMAX_TIE", "EXPORTER_FALLBACK", "EXACT_REFERENCE_MISSING")]
    try:
        with open(os.path.join(folder, "export.json")) as handle:
            timings = json.load(handle).get("timings_s", {})
    except (OSError, ValueError):
        timings = {}
    row["timings_s"] = timings
    exact, reference = timings.get("exact_reference"), timings.get("reference")
    row["exact_cases"] = timings.get("exact_cases")
    row["exact_cost"] = (round(exact / (reference - exact), 2)
                         if isinstance(exact, (int, float)) and isinstance(reference, (int, float))
                         and reference - exact > 0 else None)
    return row


def fmt(value, spec):
    return "-" if value is None else format(value, spec)


def markdown(rows):
    lines = ["| model | exporter | verdict | errors | warnings | max error_ratio | rules (rows) | "
             "weak / tie | export s | total s | f32 capture s | f64 s | f64 cases | f64 / f32 |",
             "| --- | --- | --- | --- | --- | ---: | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for r in rows:
        t = r.get("timings_s", {})
        exact, reference = t.get("exact_reference"), t.get("reference")
        capture = reference - exact if isinstance(exact, (int, float)) and isinstance(reference, (int, float)) else None
        flags = "/".join(x for x, on in (("weak", r.get("evidence_weak")), ("tie", r.get("argmax_tie"))) if on) or "-"
        rules = ", ".join(f"{k} {v}" for k, v in sorted(r.get("rules", {}).items())) or "-"
        exporter = r["exporter"] + (" (fell back)" if r.get("fallback") else "")
        cells = [r["model"], exporter, r["verdict"], ", ".join(r.get("errors", [])) or "-",
                 ", ".join(r.get("warnings", [])) or "-", fmt(r.get("max_error_ratio"), ".3g"), rules, flags,
                 fmt(r.get("step_seconds", {}).get("export"), ".1f"), fmt(r.get("seconds"), ".1f"),
                 fmt(capture, ".2f"), fmt(exact, ".2f"), fmt(r.get("exact_cases"), "d"), fmt(r.get("exact_cost"), ".2f")]
        lines.append("| " + " | ".join(str(c) for c in cells) + " |")
    notes = [r for r in rows if r.get("note")]
    if notes:
        lines += ["", "Notes (first error finding or failed step):", ""]
        lines += [f"- {r['model']} ({r['exporter']}): {r['note']}".replace("\n", " ") for r in notes]
    return "\n".join(lines) + "\n"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--onnxproof", default=os.path.join(ROOT, "build", "bin", "onnxproof"))
    parser.add_argument("--work", default="/tmp/onnxproof-zoo-calibrated")
    parser.add_argument("--only", default="", help="comma-separated specs")
    parser.add_argument("--timeout", type=int, default=900, help="seconds per export")
    args = parser.parse_args()
    only = set(filter(None, args.only.split(",")))
    runs = [(family, spec, exporter) for family, spec, exporters in SUBSET for exporter in exporters
            if not only or spec in only]
    results = os.path.join(HERE, "calibrated_subset.json")
    kept = []
    if only and os.path.exists(results):
        with open(results) as handle:
            kept = [row for row in json.load(handle) if row["model"] not in only]
    order = {(spec, exporter): i for i, (_, spec, exporters) in enumerate(SUBSET) for exporter in exporters}
    order = {key: (i, key[1]) for key, i in order.items()}
    rows = []
    for index, (family, spec, exporter) in enumerate(runs, 1):
        print(f"[{index}/{len(runs)}] {spec} ({exporter})", file=sys.stderr, flush=True)
        row = enrich(run_one(args.onnxproof, spec, exporter, [], args.work, args.timeout))
        row["family"] = family
        rows.append(row)
        print(f"    {row['verdict']} in {row['seconds']} s {', '.join(row.get('errors', []))} "
              f"ratio {row.get('max_error_ratio')} f64/f32 {row.get('exact_cost')}", file=sys.stderr, flush=True)
        everything = sorted(kept + rows, key=lambda r: order.get((r["model"], r["exporter"]), (99, "")))
        with open(results + ".tmp", "w") as handle:
            json.dump(everything, handle, indent=1)
        os.replace(results + ".tmp", results)
        with open(os.path.join(HERE, "calibrated_subset.md"), "w") as handle:
            handle.write(markdown(everything))
    return 0


if __name__ == "__main__":
    sys.exit(main())
