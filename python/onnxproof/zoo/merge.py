"""`zoo merge DIR... --out DIR`: the outputs of several shards (or runs) as one zoo: their rows in
one dashboard, their run folders, logs and golden sets copied (hard-linked) under OUT."""
import os

from ..core.errors import UsageError
from .dashboard import SCHEMA, write_dashboard
from .files import claim_zoo_folder, copy_file, publish_copy, read_json


def _read_index(folder):
    index = read_json(os.path.join(folder, "index.json"))
    if not isinstance(index, dict) or index.get("schema") != SCHEMA:
        raise UsageError(f"{folder} holds no zoo output (index.json of {SCHEMA}): pass the --out folders of zoo run")
    return index


def merge_zoos(inputs, out):
    """Merges the zoo folders `inputs` into `out` (new, empty, or a zoo folder); returns the index.
    A model found in two inputs, or `out` among the inputs, is a UsageError."""
    if not inputs:
        raise UsageError("zoo merge needs at least one zoo folder")
    folders = [os.path.abspath(folder) for folder in inputs]
    if os.path.abspath(out) in folders:
        raise UsageError(f"zoo merge: --out {out} is one of its inputs; pick a new folder")
    indexes = [(folder, _read_index(folder)) for folder in folders]
    owner = {}
    for folder, index in indexes:
        for row in index["rows"]:
            if row["name"] in owner:
                raise UsageError(f"zoo merge: model '{row['name']}' is in both {owner[row['name']]} and {folder}")
            owner[row["name"]] = folder
    claim_zoo_folder(out)
    rows = []
    for folder, index in indexes:
        for row in index["rows"]:
            _copy_model(folder, out, row["name"])
            rows.append(row)
    manifests = sorted({index.get("manifest") or "" for _, index in indexes})
    return write_dashboard(out, rows, manifest=", ".join(m for m in manifests if m))


def _copy_model(source, out, name):
    for folder in ("runs", "golden"):
        if os.path.isdir(os.path.join(source, folder, name)):
            publish_copy(os.path.join(source, folder, name), os.path.join(out, folder, name))
    log = os.path.join(source, "logs", name + ".log")
    if os.path.isfile(log):
        copy_file(log, os.path.join(out, "logs", name + ".log"))
