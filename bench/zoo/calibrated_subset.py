#!/usr/bin/env python3
"""The calibrated proof (issues 21 and 22) on a subset of the zoo: the models the issues name,
through `onnxproof pipeline` exactly as run_zoo.py runs them (its run_one), plus `--exporter auto`
for the transformers causal LMs (issue 22 asks for auto; run_zoo.py passes dynamo and torchscript).

    python3 bench/zoo/calibrated_subset.py [--onnxproof build/bin/onnxproof]
                                           [--work /tmp/onnxproof-zoo-calibrated] [--only SPEC,...]

Writes bench/zoo/calibrated_subset.json and calibrated_subset.md; the full-zoo tables
(results.json/results.md) are left alone. Per run, besides run_zoo.py's row: the warnings, the
parity rows' largest error_ratio, the count of rows per rule, EVIDENCE_WEAK / ARGMAX_TIE, and the
float64 pass's cost from export.json's timings_s (exact_reference, reference, exact_cases; the
ratio exact_reference / (reference - exact_reference), the float64 pass against the float32
capture it is included in). With --only, the other rows of the last calibrated_subset.json stay.
"""
import argparse
import collections
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)

import run_zoo  # noqa: E402

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


def enrich(row):
    """Adds the calibrated proof's figures of the run folder to run_zoo.py's row."""
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
        row = enrich(run_zoo.run_one(args.onnxproof, spec, exporter, [], args.work, args.timeout))
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
