"""OpenVINO beside ONNX Runtime (issue 60): each model proved twice with the same command, once with
`--provider cpu` and once with `--provider cpu,openvino`, alternating, and per model: the verdict,
OpenVINO's float32 rows (passed of compared, the largest error as a share of the output's scale),
the precision OpenVINO's default configuration chose on this CPU with its rows' largest error and
the predictions it changed (RUNTIME_DEFAULT_PRECISION), and the wall seconds of both proofs
(medians of --repeat pairs). Writes bench/openvino/results.json and prints the Markdown table
recorded in bench/RESULTS.md.

    .venv/bin/python bench/openvino/run.py OUT [--engine build/bin/onnxproof] [--repeat 1] [--only NAME,...]
    .venv/bin/python bench/openvino/run.py OUT --table-only
"""
import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))

MODELS = {
    "resnet18": ["--model", "torchvision:resnet18"],
    "mobilenet_v3_large": ["--model", "torchvision:mobilenet_v3_large"],
    "bert-classifier": ["--model", "hf:BertForSequenceClassification"],
    "resnet18-qdq": ["--model", "torchvision:resnet18", "--quantize", "static"],
    "fasterrcnn": ["--model", "torchvision:fasterrcnn_mobilenet_v3_large_320_fpn"],
    "llama-generate8": ["--model", "hf:LlamaForCausalLM:use_cache=true", "--generate", "8"],
    "whisper-generate8": ["--model", "hf:WhisperForConditionalGeneration:use_cache=true", "--generate", "8"],
}


def prove(engine, arguments, providers, out):
    shutil.rmtree(out, ignore_errors=True)
    started = time.monotonic()
    result = subprocess.run([engine, "pipeline", *arguments, "--provider", providers, "--no-golden", "--out", out],
                            capture_output=True, text=True, stdin=subprocess.DEVNULL)
    seconds = time.monotonic() - started
    report = None
    if os.path.exists(os.path.join(out, "report.json")):
        with open(os.path.join(out, "report.json"), encoding="utf-8") as f:
            report = json.load(f)
    return result.returncode, seconds, report, result.stderr.strip().splitlines()[-1:] if result.returncode > 1 else []


def rows_figures(report, provider):
    rows = [r for r in report.get("parity", []) if r["provider"] == provider and r["status"] in ("pass", "fail")]
    worst = 0.0
    for r in rows:
        if r.get("scale"):
            worst = max(worst, r["onnx_error"] / r["scale"])
    precision = next((r.get("precision") for r in rows if r.get("precision")), None)
    return {"rows": len(rows), "passed": sum(r["status"] == "pass" for r in rows), "worst_share": worst,
            "precision": precision}


def summarize(name, cpu, both):
    code_cpu, seconds_cpu, report_cpu, _ = cpu
    code, seconds, report, tail = both
    entry = {"model": name, "exit_cpu": code_cpu, "exit": code, "seconds_cpu": seconds_cpu, "seconds": seconds,
             "error": tail}
    if report:
        entry["verdict"] = report.get("verdict")
        entry["verdict_cpu"] = report_cpu.get("verdict") if report_cpu else None
        entry["openvino"] = rows_figures(report, "openvino")
        entry["default"] = rows_figures(report, "openvino:default")
        entry["findings"] = sorted({f["code"] for f in report["findings"] if f["severity"] != "info"})
        entry["default_finding"] = [f["severity"] + ": " + f["message"] for f in report["findings"]
                                    if f["code"] == "RUNTIME_DEFAULT_PRECISION"]
        generate = next((s for s in report.get("steps", []) if s.get("name") == "generate"), None)
        if generate:
            entry["generate"] = {"status": generate.get("status"), "reason": generate.get("reason")}
    return entry


def changed_predictions(entry):
    """"1 of 30" from the RUNTIME_DEFAULT_PRECISION message, "-" where no output has classes."""
    for message in entry.get("default_finding", []):
        found = re.search(r"(\d+ of \d+) predictions changed", message)
        if found:
            return found.group(1)
    return "-"


def table(entries):
    lines = ["| model | verdict (cpu,openvino) | OpenVINO f32 rows passed | largest f32 error / scale | "
             "default precision | largest default error / scale | predictions changed by the default | "
             "default finding | wall cpu | wall cpu,openvino | ratio |",
             "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for e in entries:
        ov, default = e.get("openvino", {}), e.get("default", {})
        finding = e.get("default_finding") or ["-"]
        lines.append("| {} | {} | {}/{} | {:.2g} | {} | {:.2g} | {} | {} | {:.1f} s | {:.1f} s | {:.2f}x |".format(
            e["model"], e.get("verdict", "exit %d" % e["exit"]), ov.get("passed", 0), ov.get("rows", 0),
            ov.get("worst_share", 0.0), default.get("precision") or "-", default.get("worst_share", 0.0),
            changed_predictions(e), finding[0].split(":")[0], e["seconds_cpu"], e["seconds"],
            e["seconds"] / e["seconds_cpu"]))
    return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("out")
    parser.add_argument("--engine", default=os.path.join(ROOT, "build", "bin", "onnxproof"))
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--only", default="")
    parser.add_argument("--table-only", action="store_true", help="print the table of results.json, run nothing")
    args = parser.parse_args()
    if args.table_only:
        with open(os.path.join(HERE, "results.json"), encoding="utf-8") as f:
            print(table(json.load(f)))
        return
    names = [n for n in MODELS if not args.only or n in args.only.split(",")]
    entries = []
    for name in names:
        pairs = []
        for attempt in range(args.repeat):
            cpu = prove(args.engine, MODELS[name], "cpu", os.path.join(args.out, name + "-cpu"))
            both = prove(args.engine, MODELS[name], "cpu,openvino", os.path.join(args.out, name + "-openvino"))
            pairs.append((cpu, both))
            print(f"{name} {attempt + 1}/{args.repeat}: cpu {cpu[1]:.1f} s exit {cpu[0]}, "
                  f"cpu,openvino {both[1]:.1f} s exit {both[0]}", flush=True)
        entry = summarize(name, *pairs[-1])
        entry["seconds_cpu"] = statistics.median(p[0][1] for p in pairs)
        entry["seconds"] = statistics.median(p[1][1] for p in pairs)
        entries.append(entry)
    with open(os.path.join(HERE, "results.json"), "w", encoding="utf-8") as f:
        json.dump(entries, f, indent=1)
    print(table(entries))


if __name__ == "__main__":
    main()
