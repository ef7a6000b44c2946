"""The content-addressed cache: a model whose spec, source file, weights, options and tool
versions are unchanged is not proved again; its stored run is put back and its row marked cached.

The key is the sha256 of a JSON document holding the spec, the sha256 of a file.py spec's source
and of each weights file, the pipeline options, and the versions of the tools (onnxproof, the
engine binary's own sha256, torch, onnx, onnxruntime and the model families' packages). Entries
live in CACHE/<key[:2]>/<key>/ (row.json, run/, golden/, log), CACHE defaulting to OUT/.cache;
only a pass or a fail is stored: an error (a timeout, a crash) is tried again next time."""
import hashlib
import importlib.metadata
import json
import os
import platform
import shutil

from .files import copy_file, publish_copy, read_json, write_json

_PACKAGES = ("torch", "torchvision", "timm", "transformers", "onnx", "onnxruntime", "onnxscript", "numpy")


def file_sha256(path):
    digest = hashlib.sha256()
    with open(path, "rb") as stream:
        for block in iter(lambda: stream.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def tool_versions(engine):
    """The versions a proof depends on, read now: onnxproof's, the engine binary's sha256, the
    Python packages' (absent ones as null) and Python's."""
    from ..core import ONNXPROOF_VERSION
    versions = {"onnxproof": ONNXPROOF_VERSION, "engine_sha256": file_sha256(engine), "python": platform.python_version()}
    for package in _PACKAGES:
        try:
            versions[package] = importlib.metadata.version(package)
        except importlib.metadata.PackageNotFoundError:
            versions[package] = None
    return versions


def cache_key(model, versions):
    """The sha256 (hex) naming `model`'s proof under `versions`."""
    document = {
        "spec": model.spec, "options": model.options, "golden": model.golden,
        "source_sha256": file_sha256(model.source_file) if model.source_file else None,
        "weights_sha256": [file_sha256(path) for path in model.weights], "versions": versions,
    }
    return hashlib.sha256(json.dumps(document, sort_keys=True).encode()).hexdigest()


class Cache:
    """Stored runs under `root`; `enabled=False` (--no-cache) neither reads nor writes."""

    def __init__(self, root, enabled=True):
        self.root = root
        self.enabled = enabled

    def _entry(self, key):
        return os.path.join(self.root, key[:2], key)

    def restore(self, model, key, out):
        """When `key` is stored: puts its run back into OUT/runs/NAME (and its golden set, when
        OUT/golden/NAME is missing) and returns its row marked cached; else None."""
        if not self.enabled:
            return None
        entry = self._entry(key)
        row = read_json(os.path.join(entry, "row.json"))
        if not row or not os.path.isdir(os.path.join(entry, "run")):
            return None
        publish_copy(os.path.join(entry, "run"), os.path.join(out, "runs", model.name))
        golden = os.path.join(out, "golden", model.name)
        if os.path.isdir(os.path.join(entry, "golden")) and not os.path.exists(golden):
            publish_copy(os.path.join(entry, "golden"), golden)
        if os.path.isfile(os.path.join(entry, "log")):
            copy_file(os.path.join(entry, "log"), os.path.join(out, "logs", model.name + ".log"))
        row.update(name=model.name, position=model.position, family=model.family, cached=True, key=key,
                   report=f"runs/{model.name}/report.html", log=f"logs/{model.name}.log")
        return row

    def store(self, model, key, row, out):
        """Keeps a pass or a fail (its run folder, golden set, log and row) under `key`."""
        if not self.enabled or row["verdict"] not in ("pass", "fail"):
            return
        run = os.path.join(out, "runs", model.name)
        if not os.path.isdir(run):
            return
        entry = self._entry(key)
        os.makedirs(os.path.dirname(entry), exist_ok=True)
        staging = entry + ".staging"
        shutil.rmtree(staging, ignore_errors=True)
        publish_copy(run, os.path.join(staging, "run"))
        golden = os.path.join(out, "golden", model.name)
        if os.path.isdir(golden):
            publish_copy(golden, os.path.join(staging, "golden"))
        log = os.path.join(out, "logs", model.name + ".log")
        if os.path.isfile(log):
            copy_file(log, os.path.join(staging, "log"))
        write_json(os.path.join(staging, "row.json"), {**row, "cached": False, "key": key})
        shutil.rmtree(entry, ignore_errors=True)
        os.replace(staging, entry)
