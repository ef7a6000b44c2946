"""The zoo folder and its writes: a folder onnxproof made (it carries MARKER) or a new or empty
one; every file written to a temporary name beside it, then renamed into place."""
import fcntl
import json
import os
import shutil
import tempfile

from ..core.errors import FrontEndError, UsageError, printable
from ..core.report import report_document

MARKER = ".onnxproof-zoo"
LOCK = ".onnxproof-zoo.lock"
# mkstemp makes files 0600; the zoo's files get the permissions a plain open() would give.
_UMASK = os.umask(0)
os.umask(_UMASK)


# What a zoo writes at the top of its folder; ".tmp-*" are its atomic writes in progress.
_ZOO_FILES = (MARKER, LOCK, "index.json", "index.html")
_ZOO_FOLDERS = ("runs", "logs", "golden", ".cache")
_held_locks = []  # open for the process's life: the kernel drops the lock when it dies


def claim_zoo_folder(path):
    """Creates `path` (with MARKER) or accepts it when it is empty or a zoo's: MARKER a plain
    file, and every entry one a zoo writes, links none (a planted `runs -> ~/project` would send
    the zoo's writes out of the folder). Holds the folder's lock until this process ends, so two
    zoos never write one folder at once. A user's folder is refused (UsageError), a locked one
    is a FrontEndError."""
    if os.path.islink(path) or (os.path.exists(path) and not os.path.isdir(path)):
        raise UsageError(f"refusing to write the zoo into {path}: not a folder")
    if os.path.isdir(path) and os.listdir(path):
        _require_zoo_folder(path)
    os.makedirs(path, exist_ok=True)
    _lock(path)
    for folder in ("runs", "logs", "golden"):
        os.makedirs(os.path.join(path, folder), exist_ok=True)
    write_text(os.path.join(path, MARKER), "a folder written by onnxproof zoo\n")


def _require_zoo_folder(path):
    def refuse(why):
        return UsageError(f"refusing to write the zoo into {path}: {why} (pick a new or empty folder)")
    marker = os.path.join(path, MARKER)
    if not os.path.isfile(marker) or os.path.islink(marker):
        raise refuse("it is not empty and onnxproof zoo did not make it")
    for entry in sorted(os.scandir(path), key=lambda e: e.name):
        if entry.is_symlink():
            raise refuse(f"'{printable(entry.name)}' is a link, which no zoo writes")
        known = entry.name in _ZOO_FOLDERS if entry.is_dir() else \
            entry.name in _ZOO_FILES or entry.name.startswith(".tmp-")
        if not known:
            raise refuse(f"it holds '{printable(entry.name)}', which onnxproof zoo does not write")


def _lock(path):
    descriptor = os.open(os.path.join(path, LOCK), os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(descriptor)
        raise FrontEndError(f"another onnxproof zoo is writing {path}: wait for it to end, or pick another "
                            "--out") from None
    _held_locks.append(descriptor)


def write_text(path, text):
    """Writes `text` to `path` atomically: a temporary file in the same folder, then a rename."""
    folder = os.path.dirname(os.path.abspath(path))
    handle, temporary = tempfile.mkstemp(prefix=".tmp-", dir=folder)
    try:
        os.fchmod(handle, 0o666 & ~_UMASK)
        with os.fdopen(handle, "w", encoding="utf-8") as stream:
            stream.write(text)
        os.replace(temporary, path)
    except BaseException:
        if os.path.exists(temporary):
            os.unlink(temporary)
        raise


def write_json(path, value):
    write_text(path, json.dumps(value, indent=1, sort_keys=True) + "\n")


def read_json(path):
    """The JSON value in `path`, or None when it is missing or unreadable (nested deeper than
    Python's parser recurses counts as unreadable: a planted 100,000-deep document)."""
    try:
        with open(path, encoding="utf-8") as stream:
            return json.load(stream)
    except (OSError, ValueError, RecursionError):
        return None


def read_report_json(path):
    """A run's report.json as its schema describes it (core/report.py), or None when it is
    missing, unreadable or no onnxproof report."""
    try:
        return report_document(read_json(path), path)
    except (ValueError, RecursionError):
        return None


def _link_or_copy(source, destination):
    # Run folders are written by rename, never in place, so a hard link shares bytes safely.
    try:
        os.link(source, destination)
    except OSError:
        shutil.copy2(source, destination)


def publish_copy(source, destination):
    """Replaces folder `destination` by a copy of `source` (hard links where possible): built
    beside it, then renamed in; the folder it replaces is removed afterwards."""
    if os.path.abspath(source) == os.path.abspath(destination):
        return
    parent = os.path.dirname(os.path.abspath(destination))
    os.makedirs(parent, exist_ok=True)
    staging = tempfile.mkdtemp(prefix=".staging-", dir=parent)
    shutil.rmtree(staging)
    shutil.copytree(source, staging, copy_function=_link_or_copy, symlinks=True)
    old = None
    if os.path.lexists(destination):
        old = tempfile.mkdtemp(prefix=".old-", dir=parent)
        os.rmdir(old)
        os.replace(destination, old)
    os.replace(staging, destination)
    if old:
        shutil.rmtree(old, ignore_errors=True)


def copy_file(source, destination):
    """Copies one file atomically (a temporary name beside `destination`, then a rename)."""
    folder = os.path.dirname(os.path.abspath(destination))
    os.makedirs(folder, exist_ok=True)
    handle, temporary = tempfile.mkstemp(prefix=".tmp-", dir=folder)
    os.close(handle)
    shutil.copy2(source, temporary)
    os.replace(temporary, destination)
