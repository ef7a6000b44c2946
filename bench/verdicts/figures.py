"""The figures of run_verdicts.py's results: per method the bugs caught and the correct exports
failed, the calibrated rule's verdict recomputed for other constants (the sensitivity table), the
recall plot (recall.svg) and the measured part of RESULTS.md."""
import os

import numpy as np

F32_EPS = float(np.finfo(np.float32).eps)
METHODS = ("calibrated", "fixed", "fallback", "allclose", "optimum")
MULTIPLES = (1, 2, 4, 8, 16, 32, 64, 128, 1024)  # the sensitivity table's noise multiples and floors
FLOORS = (0, 1, 4, 16, 64)
NOISE_MULTIPLE, FLOOR_EPSILONS = 8.0, 4.0  # the engine's constants (include/onnxproof/parity/calibrated.h)


def recomputed_caught(calibrated, multiple, floor):
    """The calibrated verdict for other constants, recomputed from the rows: a row fails when it
    could not be compared (error, shape, NaN) or when ONNX's error exceeds multiple x noise + floor
    x eps x scale, noise being what the engine's budget holds (budget = 8 x noise + 4 eps x scale)."""
    rows = calibrated.get("row_figures")
    if rows is None:
        return calibrated["caught"]
    for row in rows:
        if row["status"] not in ("pass", "fail") or row.get("shape_match") is False or row.get("nan_mismatch"):
            if row["status"] != "pass":
                return True
            continue
        if row.get("rule") != "calibrated" or row.get("budget") is None:
            if row["status"] == "fail":
                return True
            continue
        floor_now = FLOOR_EPSILONS * F32_EPS * row["scale"]
        noise = max(row["budget"] - floor_now, 0.0) / NOISE_MULTIPLE
        if row["onnx_error"] > multiple * noise + floor * F32_EPS * row["scale"] + 1.2e-38:
            return True
    return False


def percentile(values, q):
    return float(np.percentile(values, q)) if values else None


def source_error(row):
    """The source framework's own error of a recorded row (results.json recorded before the
    report's version 2 calls it pytorch_error)."""
    return row.get("source_error", row.get("pytorch_error"))


def summary(entries):
    bugs = [e for e in entries if e["kind"] == "bug"]
    correct = [e for e in entries if e["kind"] == "correct"]
    table = {}
    for method in METHODS:
        caught = sum(e["methods"][method]["caught"] for e in bugs)
        alarms = sum(e["methods"][method]["caught"] for e in correct)
        table[method] = {"bugs_caught": caught, "bugs": len(bugs), "recall": caught / len(bugs) if bugs else None,
                         "false_alarms": alarms, "correct": len(correct),
                         "false_alarm_rate": alarms / len(correct) if correct else None}
    correct_rows = [row.get("onnx_error") / source_error(row) for e in correct
                    for row in e["methods"]["calibrated"].get("row_figures", [])
                    if source_error(row) and row.get("onnx_error") is not None]
    correct_runs = [e["methods"]["calibrated"]["max_ratio"] for e in correct
                    if e["methods"]["calibrated"].get("max_ratio") is not None]
    correct_use = [e["methods"]["calibrated"]["max_budget_use"] for e in correct
                   if e["methods"]["calibrated"].get("max_budget_use") is not None]
    bug_runs = [e["methods"]["calibrated"]["max_ratio"] for e in bugs
                if e["methods"]["calibrated"].get("max_ratio") is not None]
    caught_runs = [e["methods"]["calibrated"]["max_ratio"] for e in bugs if e["methods"]["calibrated"]["caught"]
                   and e["methods"]["calibrated"].get("max_ratio") is not None]
    comparable = [e for e in bugs if e["methods"]["calibrated"].get("row_figures") and all(
        row["status"] in ("pass", "fail") and row.get("rule") == "calibrated" and row.get("shape_match") is not False
        for row in e["methods"]["calibrated"]["row_figures"])]
    comparable_caught = [e["methods"]["calibrated"]["max_ratio"] for e in comparable
                         if e["methods"]["calibrated"]["caught"] and e["methods"]["calibrated"].get("max_ratio")]
    top_correct = sorted(((row["onnx_error"] / source_error(row), e["model"], e["variant"], row["case"],
                           row["optimization"]) for e in correct for row in e["methods"]["calibrated"].get(
                              "row_figures", []) if source_error(row) and row.get("onnx_error") is not None),
                         reverse=True)[:5]
    low_bugs = sorted((e["methods"]["calibrated"]["max_ratio"], e["model"], e["variant"],
                       e["methods"]["calibrated"]["caught"]) for e in comparable
                      if e["methods"]["calibrated"].get("max_ratio") is not None)[:8]
    ratios = {
        "correct_rows": len(correct_rows), "correct_row_max": max(correct_rows, default=None),
        "correct_row_p99": percentile(correct_rows, 99), "correct_row_p50": percentile(correct_rows, 50),
        "correct_run_max": max(correct_runs, default=None), "correct_budget_use_max": max(correct_use, default=None),
        "bug_runs": len(bug_runs), "bug_run_min": min(bug_runs, default=None),
        "bug_run_median": percentile(bug_runs, 50), "caught_bug_run_min": min(caught_runs, default=None),
        "comparable_bugs": len(comparable), "comparable_caught_min": min(comparable_caught, default=None),
        "top_correct_rows": [list(t) for t in top_correct], "lowest_comparable_bugs": [list(t) for t in low_bugs],
    }
    sensitivity = []
    for multiple in MULTIPLES:
        for floor in FLOORS:
            sensitivity.append({
                "multiple": multiple, "floor_eps": floor,
                "bugs_caught": sum(recomputed_caught(e["methods"]["calibrated"], multiple, floor) for e in bugs),
                "false_alarms": sum(recomputed_caught(e["methods"]["calibrated"], multiple, floor) for e in correct)})
    return {"methods": table, "ratios": ratios, "sensitivity": sensitivity}


def fmt(value, digits=3):
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.{digits}g}"
    return str(value)


def write_svg(path, result):
    """Recall and false alarms per method as grouped bars, drawn by hand (no matplotlib in the venv)."""
    methods = result["summary"]["methods"]
    width, height, left, bottom, top = 100 + 112 * len(METHODS), 300, 60, 250, 40
    bar, gap = 36, 40
    colours = {"recall": "#2b7bba", "false alarms": "#d6604d"}
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" font-family="sans-serif" '
             'font-size="12">', f'<text x="{width / 2}" y="20" text-anchor="middle" font-size="14">'
             'Planted bugs caught (recall) and correct exports failed (false alarms)</text>']
    scale = bottom - top
    for tick in (0, 0.25, 0.5, 0.75, 1.0):
        y = bottom - tick * scale
        parts.append(f'<line x1="{left}" x2="{width - 20}" y1="{y}" y2="{y}" stroke="#ddd"/>')
        parts.append(f'<text x="{left - 6}" y="{y + 4}" text-anchor="end">{int(tick * 100)}%</text>')
    for index, method in enumerate(METHODS):
        x0 = left + 20 + index * (2 * bar + gap)
        figures = methods[method]
        for offset, (label, value, count) in enumerate(
                (("recall", figures["recall"] or 0.0, f"{figures['bugs_caught']}/{figures['bugs']}"),
                 ("false alarms", figures["false_alarm_rate"] or 0.0, f"{figures['false_alarms']}/{figures['correct']}"))):
            x = x0 + offset * bar
            h = value * scale
            parts.append(f'<rect x="{x}" y="{bottom - h}" width="{bar - 4}" height="{h}" fill="{colours[label]}"/>')
            parts.append(f'<text x="{x + (bar - 4) / 2}" y="{bottom - h - 4}" text-anchor="middle" font-size="10">'
                         f'{count}</text>')
        parts.append(f'<text x="{x0 + bar}" y="{bottom + 16}" text-anchor="middle">{method}</text>')
    for index, (label, colour) in enumerate(colours.items()):
        x = left + 20 + index * 130
        parts.append(f'<rect x="{x}" y="{height - 22}" width="12" height="12" fill="{colour}"/>')
        parts.append(f'<text x="{x + 18}" y="{height - 12}">{label}</text>')
    parts.append("</svg>")
    with open(path, "w") as handle:
        handle.write("\n".join(parts) + "\n")


def mark(caught):
    return "**FAIL**" if caught else "pass"


def tables(result):
    """The measured part of RESULTS.md, regenerated on every run."""
    summary_ = result["summary"]
    entries, exports = result["entries"], result["exports"]
    lines = [f"Measured by `run_verdicts.py` in {result['seconds']:.0f} s (whole script); engine constants: noise "
             f"multiple {result['constants']['noise_multiple']:g}, floor {result['constants']['floor_epsilons']:g} "
             "float32 epsilons.", "", "### Recall and false alarms", "",
             "| method | bugs caught (recall) | correct exports failed (false alarms) |", "| --- | ---: | ---: |"]
    for method in METHODS:
        m = summary_["methods"][method]
        lines.append(f"| {method} | {m['bugs_caught']} / {m['bugs']} ({100 * (m['recall'] or 0):.0f}%) | "
                     f"{m['false_alarms']} / {m['correct']} ({100 * (m['false_alarm_rate'] or 0):.0f}%) |")
    by_framework = result.get("summary_by_framework") or {}
    if len(by_framework) > 1:
        lines += ["", "By source framework (the calibrated rule, the default):", "",
                  "| framework | bugs caught (recall) | correct exports failed (false alarms) |", "| --- | ---: | ---: |"]
        for framework, part in by_framework.items():
            m = part["methods"]["calibrated"]
            lines.append(f"| {framework} | {m['bugs_caught']} / {m['bugs']} ({100 * (m['recall'] or 0):.0f}%) | "
                         f"{m['false_alarms']} / {m['correct']} ({100 * (m['false_alarm_rate'] or 0):.0f}%) |")
    r = summary_["ratios"]
    lines += ["", "### Error ratios (|ONNX - float64| / |PyTorch float32 - float64|, calibrated rows)", "",
              "| set | figure | value |", "| --- | --- | ---: |",
              f"| correct exports | rows | {r['correct_rows']} |",
              f"| correct exports | median over rows | {fmt(r['correct_row_p50'])} |",
              f"| correct exports | p99 over rows | {fmt(r['correct_row_p99'])} |",
              f"| correct exports | max over rows | {fmt(r['correct_row_max'])} |",
              f"| correct exports | max budget use (ONNX error / budget) | {fmt(r['correct_budget_use_max'])} |",
              f"| planted bugs | runs with a ratio | {r['bug_runs']} |",
              f"| planted bugs | median of the per-run max | {fmt(r['bug_run_median'])} |",
              f"| planted bugs | min of the per-run max | {fmt(r['bug_run_min'])} |",
              f"| planted bugs caught by calibrated | min of the per-run max | {fmt(r['caught_bug_run_min'])} |",
              f"| planted bugs whose every row compared (no runtime error, same shapes) | count | {r['comparable_bugs']} |",
              f"| those caught by calibrated | min of the per-run max | {fmt(r['comparable_caught_min'])} |",
              "", "Largest ratios on correct exports (ratio, model, variant, case, graph optimization): "
              + "; ".join(f"{fmt(t[0])} {t[1]} {t[3]} {t[4]}" for t in r["top_correct_rows"]) + ".", "",
              "Smallest per-run ratios among comparable planted bugs (ratio, model, bug, caught by calibrated): "
              + "; ".join(f"{fmt(t[0])} {t[1]}/{t[2]} {'caught' if t[3] else 'missed'}" for t in r["lowest_comparable_bugs"])
              + ".",
              "", "### Other constants, recomputed from the same rows", "",
              "A row fails when ONNX's error exceeds M x noise + F x eps32 x scale (noise as the engine pooled it). "
              "Rows that could not be compared (errors, shapes) fail whatever the constants.", "",
              "Each cell: bugs caught / false alarms (of "
              f"{summary_['methods']['calibrated']['bugs']} bugs and {summary_['methods']['calibrated']['correct']} "
              "correct exports); the engine's constants in bold.", "",
              "| noise multiple M | " + " | ".join(f"floor {f} eps" for f in FLOORS) + " |",
              "| ---: | " + " | ".join("---:" for _ in FLOORS) + " |"]
    cells = {(x["multiple"], x["floor_eps"]): f"{x['bugs_caught']} / {x['false_alarms']}" for x in summary_["sensitivity"]}
    for multiple in MULTIPLES:
        row = []
        for floor in FLOORS:
            cell = cells[(multiple, floor)]
            row.append(f"**{cell}**" if multiple == NOISE_MULTIPLE and floor == FLOOR_EPSILONS else cell)
        lines.append(f"| {multiple} | " + " | ".join(row) + " |")
    lines += ["", "### Every variant", "",
              "calibrated ratio: the largest error_ratio over the calibrated run's rows; budget use: the largest "
              "onnx_error / budget (above 1 fails); max abs: the fixed run's largest |ONNX - PyTorch|.", "",
              "| model | variant | calibrated | fixed | fallback | allclose | optimum | calibrated ratio | budget use | max abs | "
              "calibrated findings | the change |", "| --- | --- | --- | --- | --- | --- | --- | ---: | ---: | ---: | --- | --- |"]
    for e in entries:
        m = e["methods"]
        findings = ", ".join(f.split(" ")[0] for f in m["calibrated"].get("findings", [])) or "-"
        lines.append(f"| {e['model']} | {e['variant']} | " + " | ".join(mark(m[k]["caught"]) for k in METHODS)
                     + f" | {fmt(m['calibrated'].get('max_ratio'))} | {fmt(m['calibrated'].get('max_budget_use'))} | "
                     f"{fmt(m['fixed'].get('max_abs'))} | {findings} | {e['what']} |")
    missed = [e for e in entries if e["kind"] == "bug" and not any(e["methods"][k]["caught"] for k in METHODS)]
    lines += ["", "### Bugs no method catches", ""]
    lines += [f"- {e['model']} / {e['variant']}: {e['what']} (calibrated ratio {fmt(e['methods']['calibrated'].get('max_ratio'))}, "
              f"largest |ONNX - PyTorch| {fmt(e['methods']['fixed'].get('max_abs'))})" for e in missed] or ["- none"]
    lines += ["", "### Exports and the cost of the float64 pass", "",
              "reference: export.json's timings_s.reference (PyTorch's capture of every case, the float64 pass "
              "included); exact: timings_s.exact_reference (the float64 copy and its forward passes alone).", "",
              "| model | exporter | pipeline verdict | warnings and errors | pipeline s | reference s | exact s | "
              "exact / (reference - exact) |", "| --- | --- | --- | --- | ---: | ---: | ---: | ---: |"]
    for x in exports:
        t = x.get("timings_s", {})
        lines.append(f"| {x['name']} | {x['exporter']} | {x.get('pipeline_verdict', 'error')} | "
                     f"{', '.join(x.get('pipeline_findings', [])) or x.get('note', '-')} | {x['seconds']:.1f} | "
                     f"{fmt(t.get('reference'))} | {fmt(t.get('exact_reference'))} | {fmt(x.get('exact_cost'), 2)} |")
    cost = {k: [e["methods"][k]["seconds"] for e in entries if "seconds" in e["methods"][k]] for k in METHODS}
    lines += ["", "### Seconds per check (one variant, median and max)", "", "| method | median s | max s |",
              "| --- | ---: | ---: |"]
    for k in METHODS:
        lines.append(f"| {k} | {fmt(percentile(cost[k], 50))} | {fmt(max(cost[k], default=None))} |")
    return "\n".join(lines) + "\n"


BEGIN, END = "<!-- tables:begin (run_verdicts.py writes this part) -->", "<!-- tables:end -->"


def write_results_md(path, result):
    """Replaces the measured part of RESULTS.md; the analysis around it is written by hand."""
    text = open(path).read() if os.path.exists(path) else f"# The proof's precision and recall\n\n{BEGIN}\n{END}\n"
    head, _, rest = text.partition(BEGIN)
    _, _, tail = rest.partition(END)
    with open(path + ".tmp", "w") as handle:
        handle.write(head + BEGIN + "\n" + tables(result) + END + tail)
    os.replace(path + ".tmp", path)


# --- the run -----------------------------------------------------------------------------------

