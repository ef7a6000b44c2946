"""`zoo merge DIR... --out DIR`: the outputs of several shards (or runs) as one zoo: their rows in
one dashboard, their run folders, logs and golden sets copied (hard-linked) under OUT.

The inputs are read as untrusted: a row is kept only with a name that is one plain folder name,
its verdict is the one its run folder's report.json gives (a row edited to say pass over a failed
run says what its report says, and why), its links are made here from its name, and a run folder
holding a link is refused (a copy would reach through it)."""
import os

from ..core.errors import UsageError, printable
from .dashboard import SCHEMA, write_dashboard
from .files import claim_zoo_folder, copy_file, publish_copy, read_json, read_report_json
from .manifest import is_model_name

_VERDICTS = ("pass", "fail", "error")
# A row's fields and the types a merged row takes from an input's index.json (others: defaults).
_FIELDS = {"spec": str, "family": str, "position": int, "errors": list, "seconds": (int, float), "exporter": str,
           "opset": int, "nodes_before": int, "nodes_after": int, "cached": bool, "note": str, "exit_code": int,
           "key": str}


def _read_index(folder):
    index = read_json(os.path.join(folder, "index.json"))
    if not isinstance(index, dict) or index.get("schema") != SCHEMA or not isinstance(index.get("rows"), list):
        raise UsageError(f"{printable(folder)} holds no zoo output (index.json of {SCHEMA}): pass the --out folders "
                         "of zoo run")
    for row in index["rows"]:
        if not isinstance(row, dict) or not is_model_name(row.get("name")):
            name = row.get("name") if isinstance(row, dict) else row
            raise UsageError(f"zoo merge: {printable(folder)}/index.json has a row named {printable(repr(name))}, "
                             "which is no model name a zoo writes")
    return index


def _trusted_row(folder, row):
    """The row as the merged dashboard shows it: typed fields only, links from its name, and the
    verdict of its run's report.json."""
    name = row["name"]
    trusted = {"name": name, "spec": "", "family": "", "position": 0, "errors": [], "seconds": None, "exporter": "",
               "opset": None, "nodes_before": None, "nodes_after": None, "cached": False, "note": "",
               "exit_code": None, "key": None}
    for key, kind in _FIELDS.items():
        value = row.get(key)
        if isinstance(value, kind) and not (isinstance(value, bool) and kind is not bool):
            trusted[key] = value
    trusted["errors"] = [str(code) for code in trusted["errors"] if isinstance(code, str)]
    said = row.get("verdict") if row.get("verdict") in _VERDICTS else "error"
    run = os.path.join(folder, "runs", name)
    _require_plain_folder(run, folder)
    report = read_report_json(os.path.join(run, "report.json")) if os.path.isdir(run) else None
    verdict = report.get("verdict") if isinstance(report, dict) else None
    if verdict in _VERDICTS:
        if verdict != said:
            trusted["note"] = f"index.json said {said}; the run's report.json says {verdict}"
        trusted["verdict"] = verdict
    else:
        trusted["verdict"] = "error"
        if said != "error":
            trusted["note"] = f"index.json said {said}, but the run folder holds no readable report.json"
    trusted["report"] = f"runs/{name}/report.html" if verdict in _VERDICTS else None
    trusted["log"] = f"logs/{name}.log"
    return trusted


def _require_plain_folder(path, folder):
    """A run folder or golden set to copy: absent, or a folder with no link anywhere inside."""
    if os.path.islink(path) or (os.path.lexists(path) and not os.path.isdir(path)):
        raise UsageError(f"zoo merge: {printable(path)} is not a folder a zoo writes (a link or a file)")
    for parent, folders, files in os.walk(path):
        for name in folders + files:
            if os.path.islink(os.path.join(parent, name)):
                raise UsageError(f"zoo merge: {printable(os.path.join(parent, name))} is a link, which no onnxproof "
                                 f"run writes; {printable(folder)} was not written by zoo run alone")


def merge_zoos(inputs, out):
    """Merges the zoo folders `inputs` into `out` (new, empty, or a zoo folder); returns the index.
    A model found in two inputs, `out` among the inputs, or an input that is no zoo's output is a
    UsageError."""
    if not inputs:
        raise UsageError("zoo merge needs at least one zoo folder")
    folders = [os.path.abspath(folder) for folder in inputs]
    target = os.path.realpath(out)
    for folder in folders:
        real = os.path.realpath(folder)
        # Inside an input, the merge would copy into itself; around one, replace what it reads.
        if os.path.commonpath([target, real]) in (target, real):
            raise UsageError(f"zoo merge: --out {printable(out)} is {'one of' if target == real else 'inside or around'}"
                             f" its inputs ({printable(folder)}); pick a folder apart from them")
    indexes = [(folder, _read_index(folder)) for folder in folders]
    owner, rows = {}, []
    for folder, index in indexes:
        for row in index["rows"]:
            if row["name"] in owner:
                raise UsageError(f"zoo merge: model '{row['name']}' is in both {printable(owner[row['name']])} and "
                                 f"{printable(folder)}")
            owner[row["name"]] = folder
            _require_plain_folder(os.path.join(folder, "golden", row["name"]), folder)
            rows.append((folder, _trusted_row(folder, row)))
    claim_zoo_folder(out)
    for folder, row in rows:
        _copy_model(folder, out, row["name"])
    manifests = sorted({index.get("manifest") for _, index in indexes if isinstance(index.get("manifest"), str)})
    return write_dashboard(out, [row for _, row in rows], manifest=", ".join(m for m in manifests if m))


def _copy_model(source, out, name):
    for folder in ("runs", "golden"):
        if os.path.isdir(os.path.join(source, folder, name)):
            publish_copy(os.path.join(source, folder, name), os.path.join(out, folder, name))
    log = os.path.join(source, "logs", name + ".log")
    if os.path.isfile(log) and not os.path.islink(log):
        copy_file(log, os.path.join(out, "logs", name + ".log"))
