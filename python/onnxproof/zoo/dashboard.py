"""The zoo's dashboard: one row per model (read from its run's report.json), DIR/index.json
(schema onnxproof.zoo/1) and DIR/index.html (self-contained, sortable), the zoo's verdict and
exit code: 0 every model passed, 1 one failed, 3 one could not be proved (an error row)."""
import datetime
import html
import json
import os

from .files import write_json, write_text

SCHEMA = "onnxproof.zoo/1"
EXIT_CODES = {"pass": 0, "fail": 1, "error": 3}


def empty_row(model):
    """A row with what the manifest says and nothing measured."""
    return {"name": model.name, "spec": model.spec, "family": model.family, "position": model.position,
            "verdict": "error", "errors": [], "seconds": None, "exporter": model.options.get("exporter", "auto"),
            "opset": model.options.get("opset"), "nodes_before": None, "nodes_after": None, "cached": False,
            "report": f"runs/{model.name}/report.html", "log": f"logs/{model.name}.log", "note": "",
            "exit_code": None, "key": None}


def _step(report, name):
    return next((step for step in report.get("steps", []) if step.get("name") == name), {})


def _opset(signature):
    opsets = signature.get("opsets")
    if isinstance(opsets, dict):
        return opsets.get("") or opsets.get("ai.onnx")
    if isinstance(opsets, list):
        for entry in opsets:
            if isinstance(entry, dict) and entry.get("domain", "") in ("", "ai.onnx"):
                return entry.get("version")
    return None


def row_from_report(model, report, seconds):
    """The row of a finished run: its verdict, error finding codes, exporter, opset and node
    counts before/after simplify, from its report.json."""
    row = empty_row(model)
    signature = report.get("signature") or {}
    simplify = _step(report, "simplify")
    check = _step(report, "check")
    errors = sorted({f.get("code", "") for f in report.get("findings", []) if f.get("severity") == "error"})
    nodes_before = simplify.get("nodes_before", check.get("nodes"))
    row.update(verdict=report.get("verdict", "error"), errors=errors, seconds=round(seconds, 1),
               exporter=signature.get("exporter") or row["exporter"], opset=_opset(signature) or row["opset"],
               nodes_before=nodes_before, nodes_after=simplify.get("nodes_after", nodes_before))
    if row["verdict"] != "pass":
        first = next((f for f in report.get("findings", []) if f.get("severity") == "error"), None)
        failed = next((s for s in report.get("steps", []) if s.get("status") == "error"), {})
        row["note"] = (first.get("message", "") if first else failed.get("reason", ""))[:300]
    return row


def zoo_verdict(rows):
    """error when a row is an error, else fail when one failed, else pass (also for no rows)."""
    verdicts = {row["verdict"] for row in rows}
    return "error" if "error" in verdicts else "fail" if "fail" in verdicts else "pass"


def sorted_rows(rows):
    return sorted(rows, key=lambda row: (row["position"], row["name"]))


def write_dashboard(out, rows, manifest="", shard=None, wall_seconds=None, executor=None):
    """Writes OUT/index.json and OUT/index.html; returns the index (a dict). `executor` says how
    the models ran (e.g. "ray, 2 workers"), None for a merge."""
    rows = sorted_rows(rows)
    verdict = zoo_verdict(rows)
    index = {"schema": SCHEMA, "verdict": verdict, "exit_code": EXIT_CODES[verdict], "manifest": manifest,
             "shard": shard, "executor": executor, "created": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
             "wall_seconds": None if wall_seconds is None else round(wall_seconds, 1),
             "counts": {v: sum(row["verdict"] == v for row in rows) for v in ("pass", "fail", "error")},
             "cached": sum(bool(row["cached"]) for row in rows), "rows": rows}
    write_json(os.path.join(out, "index.json"), index)
    write_text(os.path.join(out, "index.html"), render_html(index))
    return index


_COLUMNS = [("name", "model"), ("verdict", "verdict"), ("errors", "error findings"), ("seconds", "seconds"),
            ("exporter", "exporter"), ("opset", "opset"), ("nodes_before", "nodes before"),
            ("nodes_after", "nodes after"), ("cached", "cached"), ("note", "note")]

_STYLE = """body{font:14px system-ui,sans-serif;margin:2em}table{border-collapse:collapse}
th,td{border:1px solid #ccc;padding:3px 8px;text-align:left}th{cursor:pointer;background:#eee}
td.n{text-align:right}.pass{color:#070}.fail{color:#b00}.error{color:#b60}small{color:#555}"""

# Click a heading to sort by it (numbers as numbers), again to reverse.
_SCRIPT = """document.querySelectorAll('th').forEach((th,i)=>th.onclick=()=>{const b=th.closest('table').tBodies[0];
const up=th.dataset.up!=='1';th.dataset.up=up?'1':'0';const v=r=>{const t=r.cells[i].dataset.v??r.cells[i].textContent;
const x=parseFloat(t);return isNaN(x)?t:x};[...b.rows].sort((p,q)=>{const a=v(p),c=v(q);
return (a<c?-1:a>c?1:0)*(up?1:-1)}).forEach(r=>b.appendChild(r))});"""


def _cell(row, key):
    value = row.get(key)
    if key == "name":
        name = html.escape(row["name"])
        if row["report"]:  # None for an error row without a report of its own
            name = f'<a href="{html.escape(row["report"], quote=True)}">{name}</a>'
        log = html.escape(row["log"], quote=True)
        return f'<td>{name} <small><a href="{log}">log</a> {html.escape(row["spec"])}</small></td>'

    if key == "errors":
        return f"<td>{html.escape(', '.join(value) or '-')}</td>"
    if key == "verdict":
        return f'<td class="{html.escape(value)}">{html.escape(value)}</td>'
    if key == "cached":
        return f"<td>{'yes' if value else ''}</td>"
    if value is None or value == "":
        return '<td class="n" data-v="-1">-</td>' if key != "note" else "<td></td>"
    numeric = isinstance(value, (int, float))
    return f'<td{" class=n" if numeric else ""}>{html.escape(str(value))}</td>'


def render_html(index):
    """The dashboard page: a summary line and the sortable table, with no outside resources."""
    counts = index["counts"]
    head = "".join(f"<th>{html.escape(title)}</th>" for _, title in _COLUMNS)
    body = "\n".join("<tr>" + "".join(_cell(row, key) for key, _ in _COLUMNS) + "</tr>" for row in index["rows"])
    summary = (f'zoo verdict <b class="{index["verdict"]}">{index["verdict"]}</b>: {len(index["rows"])} models, '
               f'{counts["pass"]} pass, {counts["fail"]} fail, {counts["error"]} error, {index["cached"]} cached'
               + (f', shard {html.escape(str(index["shard"]))}' if index.get("shard") else "")
               + (f', {index["wall_seconds"]} s' if index.get("wall_seconds") is not None else ""))
    data = html.escape(json.dumps({"schema": index["schema"], "verdict": index["verdict"]}))
    return (f'<!DOCTYPE html>\n<html><head><meta charset="utf-8"><title>onnxproof zoo</title>'
            f"<style>{_STYLE}</style></head>\n<body data-zoo=\"{data}\"><h1>onnxproof zoo</h1><p>{summary}</p>"
            f"<p><small>{html.escape(index.get('manifest') or '')} &middot; {index['created']}</small></p>\n"
            f"<table><thead><tr>{head}</tr></thead><tbody>\n{body}\n</tbody></table>"
            f"<script>{_SCRIPT}</script></body></html>\n")
