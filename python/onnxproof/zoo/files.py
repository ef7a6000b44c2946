"""The zoo folder and its writes: a folder onnxproof made (it carries MARKER) or a new or empty
one; every file written to a temporary name beside it, then renamed into place."""
import json
import os
import shutil
import tempfile

from ..core.errors import UsageError

MARKER = ".onnxproof-zoo"
# mkstemp makes files 0600; the zoo's files get the permissions a plain open() would give.
_UMASK = os.umask(0)
os.umask(_UMASK)


def claim_zoo_folder(path):
    """Creates `path` (with MARKER) or accepts it when it is empty or carries MARKER; a folder
    holding anything else is refused (UsageError): a zoo never writes into a user's folder."""
    if os.path.islink(path) or (os.path.exists(path) and not os.path.isdir(path)):
        raise UsageError(f"refusing to write the zoo into {path}: not a folder")
    if os.path.isdir(path) and os.listdir(path) and not os.path.isfile(os.path.join(path, MARKER)):
        raise UsageError(f"refusing to write the zoo into {path}: it is not empty and onnxproof zoo did not make it "
                         "(pick a new or empty folder)")
    os.makedirs(path, exist_ok=True)
    for folder in ("runs", "logs", "golden"):
        os.makedirs(os.path.join(path, folder), exist_ok=True)
    write_text(os.path.join(path, MARKER), "a folder written by onnxproof zoo\n")


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
    """The JSON value in `path`, or None when it is missing or unreadable."""
    try:
        with open(path, encoding="utf-8") as stream:
            return json.load(stream)
    except (OSError, ValueError):
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
