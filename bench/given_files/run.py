"""Proves every file make_files.py and make_files_tf.py made against the model it was made from
(`onnxproof pipeline --model SPEC --onnx FILE --out OUT/runs/run-NAME --no-golden`) and collects per
file: the exporter, the file's size (with its external data), the exit code, the verdict, the ship
cause or the findings' codes, the parity rows, the dynamic labels proved and the wall seconds
(median of --repeat runs); for the TorchScript ResNet-18 and BERT also onnxproof's own export and
proof of the same model (`pipeline --model SPEC --exporter torchscript`, the same exporter as the
file) for comparison. The multi-file exports (GPT-2's prefill/decode pair, BART's Optimum layout)
are tried component by component and as a folder: the exit code and onnxproof's one line.
Writes bench/given_files/results.json and prints the Markdown table recorded in bench/RESULTS.md.

    .venv/bin/python bench/given_files/make_files.py OUT
    .venv-tf/bin/python bench/given_files/make_files_tf.py OUT
    .venv/bin/python bench/given_files/run.py OUT [--engine build/bin/onnxproof] [--repeat 3] [--only NAME,...]
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
MODELS_PY = os.path.join(HERE, "models.py")

# onnxproof's own export of the models two of the files were made from (the same exporter and the
# same inputs as the file: a FILE.py spec needs --input).
OWN_EXPORT = {
    "resnet18-torchscript": ["--input", "x=2x3x224x224:float32", "--dynamic", "x:0=batch"],
    "bert-torchscript": ["--input", "input_ids=2x16:int64:0..1000", "--input", "attention_mask=2x16:int64:1..2",
                         "--dynamic", "input_ids:0=batch", "--dynamic", "input_ids:1=sequence:2..128",
                         "--dynamic", "attention_mask:0=batch", "--dynamic", "attention_mask:1=sequence:2..128"],
}


def size_of(path):
    """The file's bytes with the external data files it names."""
    import onnx
    from onnx import external_data_helper
    total = os.path.getsize(path)
    model = onnx.load(path, load_external_data=False)
    locations = {entry.value for tensor in external_data_helper._get_all_tensors(model)  # noqa: SLF001
                 if tensor.data_location == tensor.EXTERNAL for entry in tensor.external_data if entry.key == "location"}
    return total + sum(os.path.getsize(os.path.join(os.path.dirname(path), name)) for name in locations)


def error_line(text):
    """onnxproof's one-line error (its last `onnxproof: error:` line), else the last line."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    errors = [line for line in lines if "error:" in line]
    return (errors or lines or [""])[-1][:500]


def prove(engine, arguments, out, env):
    """(exit code, wall seconds, report.json or None, stderr's one line)."""
    shutil.rmtree(out, ignore_errors=True)
    started = time.perf_counter()
    done = subprocess.run([engine, "pipeline", *arguments, "--out", out, "--no-golden"], capture_output=True,
                          text=True, timeout=1800, env=env)
    seconds = time.perf_counter() - started
    report = None
    if os.path.isfile(os.path.join(out, "report.json")):
        with open(os.path.join(out, "report.json"), encoding="utf-8") as handle:
            report = json.load(handle)
    return done.returncode, seconds, report, error_line(done.stderr + done.stdout)


def summary(report, out):
    """The row's fields from report.json (and the run's export.json)."""
    findings = report.get("findings", [])
    parity = report.get("parity") or []
    dynamic = next((h["evidence"].split("proved dynamic:", 1)[1].split(";")[0].strip() for h in report["headline"]
                    if "proved dynamic:" in h.get("evidence", "")), "")
    sizes = {}
    for row in parity:
        for label, size in (row.get("sizes") or {}).items():
            sizes.setdefault(label, set()).add(size)
    timings = {}
    if os.path.isfile(os.path.join(out, "export.json")):
        with open(os.path.join(out, "export.json"), encoding="utf-8") as handle:
            timings = json.load(handle).get("timings_s", {})
    return {
        "verdict": report["verdict"],
        "ship_cause": report.get("ship", {}).get("cause", ""),
        "ship": report.get("ship", {}).get("what_to_do", ""),
        "errors": sorted({f["code"] for f in findings if f["severity"] == "error"}),
        "warnings": sorted({f["code"] for f in findings if f["severity"] == "warning"}),
        "error_messages": [f"{f['code']}: {f['message'][:300]}" for f in findings if f["severity"] == "error"][:4],
        "warning_messages": [f"{f['code']}: {f['message'][:300]}" for f in findings if f["severity"] == "warning"][:4],
        "parity_rows": len(parity),
        "parity_failed": sum(1 for row in parity if row.get("status") != "pass"),
        "worst_error_ratio": max((row.get("error_ratio") or 0 for row in parity), default=None),
        "dynamic_proved": dynamic,
        "sizes_run": {label: sorted(values) for label, values in sizes.items()},
        "binding": report.get("given_file"),
        "weights_seconds": timings.get("weights"),
        "steps": {step["name"]: [step["status"], round(step.get("seconds") or 0, 1)] for step in report["steps"]},
    }


def run_file(engine, entry, out, repeat, env):
    row = {key: entry[key] for key in ("name", "framework", "exporter", "spec", "onnx")}
    row["control"] = bool(entry.get("control"))  # a file against other weights: expected to fail
    if entry.get("export_error"):
        row.update(exit=None, verdict="not made", note=f"the exporter failed: {entry['export_error']}")
        return row
    row["bytes"] = size_of(entry["onnx"])
    run_out = os.path.join(out, "runs", f"run-{entry['name']}")
    walls = []
    for _ in range(repeat):
        code, seconds, report, line = prove(engine, ["--model", entry["spec"], "--onnx", entry["onnx"]], run_out, env)
        walls.append(round(seconds, 1))
        if report is None:
            break  # an error before any report: once is enough
    row.update(exit=code, walls=walls, seconds=statistics.median(walls), runs=len(walls))
    if report is None:
        row.update(verdict="no report", note=line)
    else:
        row.update(summary(report, run_out))
        if code not in (0, 1):
            row["note"] = line
    if entry["name"] in OWN_EXPORT:
        own_out = os.path.join(out, "runs", f"own-{entry['name']}")
        own = []
        for _ in range(repeat):
            code, seconds, report, line = prove(
                engine, ["--model", entry["spec"], "--exporter", "torchscript", *OWN_EXPORT[entry["name"]]], own_out, env)
            own.append(round(seconds, 1))
        row["own_export"] = {"exit": code, "walls": own, "seconds": statistics.median(own),
                             "verdict": report["verdict"] if report else line,
                             "steps": {s["name"]: round(s.get("seconds") or 0, 1) for s in report["steps"]} if report
                             else {}}
    return row


def run_multi_file(engine, entry, out, env, repeat=1):
    """Each component file proved against the whole model by its own parity, then the folder itself
    (`--generate 8`, the median of `repeat` runs): a decoder's folder by generation; an
    encoder-decoder's is not proved yet."""
    rows = []
    if entry.get("export_error"):
        return [{key: entry[key] for key in ("name", "framework", "exporter", "spec")} |
                {"onnx": entry["onnx"], "exit": None, "verdict": "not made",
                 "note": f"the exporter failed: {entry['export_error']}"}]
    for target in [os.path.join(entry["onnx"], name) for name in entry.get("components", [])] + [entry["onnx"]]:
        name = f"{entry['name']}/{os.path.basename(target) if target != entry['onnx'] else '(folder)'}"
        run_out = os.path.join(out, "runs", "run-" + name.replace("/", "-").replace("(", "").replace(")", ""))
        folder = target == entry["onnx"]
        walls = []
        for _ in range(repeat if folder else 1):
            code, seconds, report, line = prove(engine, ["--model", entry["spec"], "--onnx", target,
                                                         *(["--generate", "8"] if folder else [])], run_out, env)
            walls.append(round(seconds, 1))
        row = {"name": name, "framework": entry["framework"], "exporter": entry["exporter"], "spec": entry["spec"],
               "onnx": target, "multi_file": True, "exit": code, "walls": walls, "seconds": statistics.median(walls),
               "runs": len(walls), "bytes": size_of(target) if os.path.isfile(target) else None,
               "control": bool(entry.get("control"))}
        if report is None:
            row.update(verdict="no report", note=line)
        else:
            row.update(summary(report, run_out))
            row["note"] = line if code not in (0, 1) else ""
        rows.append(row)
        print(json.dumps(row), flush=True)
    return rows


def cause(row):
    if row.get("verdict") in ("no report", "not made"):
        return row.get("note", "")
    generate = (row.get("steps") or {}).get("generate")
    if generate:  # a generation folder's loop: said beside the codes
        row = dict(row, warnings=[*(row.get("warnings") or []), f"generate {generate[0]}"])
    if row.get("verdict") == "pass":
        return "-" + (f" (warnings: {', '.join(row['warnings'])})" if row.get("warnings") else "")
    codes = ", ".join(row.get("errors") or []) or row.get("ship_cause", "")
    return codes + (f" (warnings: {', '.join(row['warnings'])})" if row.get("warnings") else "")


def table(rows):
    lines = ["| file | exporter | spec | size | exit | verdict | ship cause / error codes | parity rows | dynamic proved | "
             "wall s | of which weights check, s | onnxproof's own export + proof, s |",
             "| --- | --- | --- | ---: | ---: | --- | --- | ---: | --- | ---: | ---: | ---: |"]
    for row in rows:
        spec = row["spec"].replace(MODELS_PY, "models.py")
        spec = os.path.basename(spec) if spec.endswith(".keras") else (
            "saved_model:" + os.path.basename(spec.split(":", 1)[1]) if spec.startswith("saved_model:") else spec)
        own = row.get("own_export")
        own_text = f"{own['seconds']} ({own['verdict']})" if own else ""
        size = row.get("bytes")
        megabytes = "-" if not size else f"{size / 1e6:.1f} MB" if size >= 1e6 else f"{size / 1e3:.0f} KB"
        weights = f"{row['weights_seconds']:.1f}" if row.get("weights_seconds") is not None else "-"
        name = row["name"] + (" (control: other weights)" if row.get("control") else "")
        walls = f"{row['seconds']}" + (f" (median of {row['runs']})" if row.get("runs", 1) > 1 else "") \
            if row.get("seconds") is not None else "-"
        lines.append(f"| {name} | {row['exporter']} | `{spec}` | {megabytes} | {row.get('exit')} | "
                     f"{row.get('verdict')} | {cause(row).replace('|', '/')} | {row.get('parity_rows', '-')} | "
                     f"{row.get('dynamic_proved') or '-'} | {walls} | {weights} | {own_text} |")
    return "\n".join(lines)


def commit():
    """The checkout's commit (read only), '+' when its tracked files differ from it."""
    def git(*arguments):
        return subprocess.run(["git", "--no-optional-locks", "-C", ROOT, *arguments], capture_output=True, text=True).stdout.strip()
    return git("rev-parse", "--short", "HEAD") + ("+" if git("status", "--porcelain", "--untracked-files=no") else "")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("out", help="the folder make_files.py and make_files_tf.py wrote")
    parser.add_argument("--engine", default=os.path.join(ROOT, "build", "bin", "onnxproof"))
    parser.add_argument("--repeat", type=int, default=3, help="runs per single-file proof (the median is reported)")
    parser.add_argument("--only", default="", help="comma-separated names")
    parser.add_argument("--results", default=os.path.join(HERE, "results.json"))
    parser.add_argument("--pythonpath", default="", help="the front end the engine runs (ONNXPROOF_PYTHONPATH): a "
                        "copy of python/ taken with a copy of the engine, so a rebuild beside the run changes neither")
    args = parser.parse_args()
    out = os.path.abspath(args.out)
    env = dict(os.environ, ONNXPROOF_GIVEN_FILES=out)
    if args.pythonpath:
        env["ONNXPROOF_PYTHONPATH"] = os.path.abspath(args.pythonpath)
    entries = []
    for manifest in ("manifest-torch.json", "manifest-tf.json"):
        path = os.path.join(out, manifest)
        if os.path.isfile(path):
            with open(path, encoding="utf-8") as handle:
                entries += json.load(handle)
    checkout = commit()  # before the runs: the checkout may move while they run
    only = set(filter(None, args.only.split(",")))
    rows = []
    for entry in entries:
        if only and entry["name"] not in only:
            continue
        if entry.get("multi_file"):
            rows += run_multi_file(args.engine, entry, out, env, args.repeat)
        else:
            rows.append(run_file(args.engine, entry, out, args.repeat, env))
            print(json.dumps(rows[-1]), flush=True)
    with open(args.results, "w", encoding="utf-8") as handle:
        json.dump({"date": time.strftime("%Y-%m-%d"), "engine": args.engine, "pythonpath": args.pythonpath,
                   "commit": checkout, "repeat": args.repeat, "rows": rows},
                  handle, indent=1)
    print(table(rows))


if __name__ == "__main__":
    main()
