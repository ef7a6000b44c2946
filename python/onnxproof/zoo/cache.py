"""The content-addressed cache: a model whose spec, source file, weights, options and tool
versions are unchanged, and whose recorded reads are unchanged, is not proved again; its stored
run is put back and its row marked cached.

The key is the sha256 of a JSON document holding the spec, the sha256 of a file.py spec's source,
of each weights file and of a data spec's file, the pipeline options, and the versions of the
tools (onnxproof, the engine binary's own sha256, torch, onnx, onnxruntime and the model
families' packages). The key cannot know what the model's code reaches for, so each run also
records its reads (core/reads.py: the modules it imports, the files it opens, the folders it
lists, the environment variables it reads, the interpreter and its frameworks' versions); a
stored run is put back only when every one of them is as it was (reads.json of the entry).
Entries live in CACHE/<key[:2]>/<key>/ (row.json, reads.json, run/, golden/, log), CACHE
defaulting to OUT/.cache; only a pass or a fail with its reads recorded is stored: an error (a
timeout, a crash) is tried again next time."""
import hashlib
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile

from ..core.reads import PACKAGES, package_versions
from .files import copy_file, publish_copy, read_json, write_json

# Bump when what an entry holds changes meaning: older entries then miss, never restore wrongly.
_FORMAT = 2
# Environment variables onnxproof and the zoo set themselves (run paths, switches): not the model's.
_OURS = ("PYTHONPATH", "PYTHONDONTWRITEBYTECODE", "LD_LIBRARY_PATH", "ORT_DISABLE_TELEMETRY",
         "TORCHINDUCTOR_CACHE_DIR", "TRITON_CACHE_DIR", "KERAS_HOME", "TF_ENABLE_ONEDNN_OPTS", "TF_CPP_MIN_LOG_LEVEL")

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
    versions.update(package_versions(_PACKAGES))
    return versions


def cache_key(model, versions):
    """The sha256 (hex) naming `model`'s proof under `versions`."""
    document = {
        "format": _FORMAT, "spec": model.spec, "options": model.options, "golden": model.golden,
        "source_sha256": file_sha256(model.source_file) if model.source_file else None,
        "weights_sha256": [file_sha256(path) for path in model.weights],
        "data_sha256": file_sha256(model.data_file) if model.data_file else None, "versions": versions,
        "releases": _releases_fetched() if any("@" in target for target in model.options.get("targets", [])) else None,
    }
    return hashlib.sha256(json.dumps(document, sort_keys=True).encode()).hexdigest()


class Cache:
    """Stored runs under `root`; `enabled=False` (--no-cache) neither reads nor writes."""

    def __init__(self, root, enabled=True, interpreters=()):
        """`interpreters`: the Python interpreters this zoo's pipelines may run (trusted_interpreters):
        an entry's recorded packages are checked by running one of them, never another program."""
        self.root = root
        self.enabled = enabled
        self.interpreters = {os.path.abspath(path) for path in interpreters if path}
        self.stale = {}  # model name -> why its stored run was not put back (what changed)
        self._interpreters = {}

    def _entry(self, key):
        return os.path.join(self.root, key[:2], key)

    def restore(self, model, key, out):
        """When `key` is stored: puts its run back into OUT/runs/NAME (and its golden set, when
        OUT/golden/NAME is missing) and returns its row marked cached; else None."""
        if not self.enabled:
            return None
        entry = self._entry(key)
        row = read_json(os.path.join(entry, "row.json"))
        if not isinstance(row, dict) or not os.path.isdir(os.path.join(entry, "run")):
            return None
        changed = _not_as_stored(entry, row) or self._changed(read_json(os.path.join(entry, "reads.json")))
        if changed:
            self.stale[model.name] = changed
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
        """Keeps a pass or a fail (its run folder, golden set, log, row and recorded reads) under
        `key`; a run whose reads were not recorded is not kept (nothing could tell it stale)."""
        if not self.enabled or row["verdict"] not in ("pass", "fail"):
            return
        run = os.path.join(out, "runs", model.name)
        reads = recorded_reads(reads_record_path(out, model.name))
        if not os.path.isdir(run) or reads is None:
            return
        entry = self._entry(key)
        os.makedirs(os.path.dirname(entry), exist_ok=True)
        # A name of its own: another zoo sharing this cache may be storing the same key now.
        staging = tempfile.mkdtemp(prefix=os.path.basename(entry) + ".staging-", dir=os.path.dirname(entry))
        publish_copy(run, os.path.join(staging, "run"))
        golden = os.path.join(out, "golden", model.name)
        if os.path.isdir(golden):
            publish_copy(golden, os.path.join(staging, "golden"))
        log = os.path.join(out, "logs", model.name + ".log")
        if os.path.isfile(log):
            copy_file(log, os.path.join(staging, "log"))
        write_json(os.path.join(staging, "row.json"), {**row, "cached": False, "key": key, "note": _lasting_note(row)})
        write_json(os.path.join(staging, "reads.json"), reads)
        shutil.rmtree(entry, ignore_errors=True)
        try:
            os.replace(staging, entry)
        except OSError:  # another zoo stored this key in the meantime: its entry is as good
            shutil.rmtree(staging, ignore_errors=True)

    def _changed(self, reads):
        """None when everything `reads` recorded is as it was, else what changed (a short text)."""
        if not isinstance(reads, dict) or not reads.get("pythons"):  # every pipeline records its interpreter
            return "no reads recorded"
        for path, digest in reads.get("files", {}).items():
            if _file_digest(path) != digest:
                return f"{os.path.basename(path)} changed"
        for path, digest in reads.get("folders", {}).items():
            if _listing_digest(path) != digest:
                return f"the listing of {os.path.basename(path) or path} changed"
        for name, digest in reads.get("env", {}).items():
            if _value_digest(os.environ.get(name)) != digest:
                return f"${name} changed"
        for python, packages in reads.get("pythons", {}).items():
            if os.path.abspath(python) not in self.interpreters:  # never run a program an entry names
                return f"the recorded interpreter {python} is not one this zoo runs"
            if python not in self._interpreters:
                self._interpreters[python] = interpreter_packages(python)
            if self._interpreters[python] != packages:
                return f"the packages of {python} changed"
        return None


def _not_as_stored(entry, row):
    """Why an entry cannot be put back as it is (None when it can): a part of it that is a link (a
    copy would take in what it points at), or a row whose verdict is not its run's report.json's
    (the row is what the dashboard shows; the report is what was proved)."""
    from ..core.report import report_document
    for part in ("run", "golden", "log"):
        if os.path.islink(os.path.join(entry, part)):
            return f"the stored {part} is a link"
    path = os.path.join(entry, "run", "report.json")
    try:
        with open(path, encoding="utf-8") as handle:
            verdict = report_document(json.load(handle), path).get("verdict")
    except (OSError, ValueError, RecursionError):
        return "the stored run has no readable report.json"
    if verdict != row.get("verdict"):
        return f"the stored run's report says {verdict}, its row {row.get('verdict')}"
    return None


def trusted_interpreters(engine):
    """The interpreters this zoo's pipelines may run: this one, $ONNXPROOF_PYTHON and
    $ONNXPROOF_TF_PYTHON, and the environments beside the engine's checkout (.venv, .venv-tf)."""
    import glob
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(engine))))
    return [sys.executable, os.environ.get("ONNXPROOF_PYTHON"), os.environ.get("ONNXPROOF_TF_PYTHON"),
            *glob.glob(os.path.join(root, ".venv*", "bin", "python*"))]


def _releases_fetched():
    """The ONNX Runtime releases in the engine's release cache (--target ort-cpu@X.Y takes the
    newest patch there: a patch fetched since is another proof)."""
    cache = os.environ.get("ONNXPROOF_ORT_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "onnxproof", "onnxruntime")
    try:
        return sorted(name for name in os.listdir(cache)
                      if os.path.isfile(os.path.join(cache, name, "libonnxruntime.so.1")))
    except OSError:
        return []


def _lasting_note(row):
    """The row's note less what only that run went through (a retry after a lost node, execution.py)."""
    note = row.get("note") or ""
    if note.startswith("retried: "):
        note = note.partition("; ")[2]
    return note


def reads_record_path(out, name):
    """Where a model's front ends append their reads (core/reads.py) during its pipeline."""
    return os.path.join(out, "logs", name + ".reads")


def recorded_reads(path):
    """The reads recorded at `path` (JSON lines, one per front-end process) as the entry keeps
    them: each file's and listing's sha256, each variable's value's sha256 (not the value: it may
    be a secret), each interpreter's packages; None when nothing was recorded."""
    try:
        with open(path, encoding="utf-8") as stream:
            records = [json.loads(line) for line in stream if line.strip()]
    except (OSError, ValueError):
        return None
    if not records or not all(isinstance(r, dict) for r in records):
        return None
    files = sorted({p for r in records for p in r.get("files", [])})
    folders = sorted({p for r in records for p in r.get("folders", [])})
    names = sorted({n for r in records for n in r.get("env", []) if not n.startswith("ONNXPROOF_") and n not in _OURS})
    return {"files": {p: _file_digest(p) for p in files}, "folders": {p: _listing_digest(p) for p in folders},
            "env": {n: _value_digest(os.environ.get(n)) for n in names},
            "pythons": {r["python"]: r.get("packages", {}) for r in records if r.get("python")}}


def interpreter_packages(python):
    """PACKAGES' versions in the interpreter `python` (as core/reads.py records them), None when
    it cannot say (gone, broken)."""
    script = ("import importlib.metadata as m, json\n"
              "def v(p):\n try: return m.version(p)\n except m.PackageNotFoundError: return None\n"
              f"print(json.dumps({{p: v(p) for p in {list(PACKAGES)!r}}}))")
    try:
        done = subprocess.run([python, "-c", script], capture_output=True, text=True, timeout=60,
                              stdin=subprocess.DEVNULL)
        return json.loads(done.stdout) if done.returncode == 0 else None
    except (OSError, ValueError, subprocess.TimeoutExpired):
        return None


def _file_digest(path):
    try:
        return file_sha256(path)
    except OSError:
        return None


def _listing_digest(path):
    try:
        return hashlib.sha256("\0".join(sorted(os.listdir(path))).encode("utf-8", "surrogateescape")).hexdigest()
    except OSError:
        return None


def _value_digest(value):
    return None if value is None else hashlib.sha256(value.encode("utf-8", "surrogateescape")).hexdigest()
