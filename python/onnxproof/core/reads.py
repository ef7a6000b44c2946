"""What a model's own code reads, recorded for the zoo's cache (zoo/cache.py): a cached proof is
only as good as its key, and the key cannot know which modules, weights, data files or
environment variables a spec file reaches for. The front end knows: with ONNXPROOF_RECORD_READS
set to a file, it appends one JSON line at exit naming

- "files": every file opened for reading (the spec file, the modules it imports, a weights or
  data file), through Python's audit hook on open();
- "folders": every folder listed (a glob over a weights folder), imports' own listings aside;
- "env": every environment variable read through os.environ / os.getenv;
- "python" and "packages": the interpreter that ran and its frameworks' versions (a TensorFlow
  model runs in another environment than the zoo's).

Python's own installation (stdlib, site-packages), onnxproof's package, the run folder and the
kernel's pseudo-files are left out: the cache key holds their versions or they are outputs.
What this cannot see: reads by native code (a C extension or Rust library opening a file itself,
e.g. safetensors) and environment variables read with C's getenv; docs/zoo.md says so and offers
--no-cache."""
import atexit
import json
import os
import sys
import sysconfig

SWITCH = "ONNXPROOF_RECORD_READS"
# The packages a proof's numbers depend on, in whichever environment the front end runs.
PACKAGES = ("torch", "torchvision", "timm", "transformers", "onnxscript", "tensorflow", "tensorflow-cpu", "keras",
            "tf-keras", "tf2onnx", "onnx", "onnxruntime", "numpy", "ml-dtypes", "protobuf")
_PSEUDO = ("/proc/", "/sys/", "/dev/")
# A shell's bookkeeping, different in every shell and never a model's input: read (by a copy of
# the environment, say), it would make every cached run stale.
_VOLATILE = frozenset({"_", "OLDPWD", "SHLVL"})


def _installed_prefixes():
    """Folders whose files belong to Python, its packages or onnxproof, not to the model."""
    prefixes = {sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix}
    prefixes.update(path for name, path in sysconfig.get_paths().items() if name in ("stdlib", "platstdlib",
                                                                                      "purelib", "platlib"))
    prefixes.update(path for path in sys.path if "site-packages" in path or "dist-packages" in path)
    prefixes.add(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # python/onnxproof
    return tuple(os.path.join(os.path.realpath(p), "") for p in prefixes if p)


def _reads_only(mode, flags):
    if isinstance(mode, str):
        return "r" in mode and "+" not in mode
    return isinstance(flags, int) and flags & os.O_ACCMODE == os.O_RDONLY


def _called_by_import(depth=4):
    """Whether the audit event comes from the import system (its own folder listings)."""
    frame = sys._getframe(2)
    for _ in range(depth):
        if frame is None:
            return False
        if frame.f_globals.get("__name__", "").startswith(("importlib", "zipimport", "pkgutil")):
            return True
        frame = frame.f_back
    return False


class _Recorder:
    def __init__(self, path, outputs):
        self.path = path
        self.pid = os.getpid()
        self.skip = _installed_prefixes() + tuple(os.path.join(os.path.realpath(p), "") for p in outputs if p)
        self.files, self.folders, self.env = set(), set(), set()

    def _kept(self, path):
        if not isinstance(path, (str, bytes, os.PathLike)):  # an fd (os.open of an int) names no file
            return None
        try:
            path = os.path.realpath(os.fsdecode(path))
        except (TypeError, ValueError):
            return None
        if path.startswith(_PSEUDO) or path.startswith(self.skip) or "/__pycache__/" in path:
            return None
        return path

    def audit(self, event, args):
        if event == "open" and args and _reads_only(args[1] if len(args) > 1 else None,
                                                    args[2] if len(args) > 2 else None):
            path = self._kept(args[0])
            if path:
                self.files.add(path)
        elif event in ("os.listdir", "os.scandir") and args and not _called_by_import():
            path = self._kept(args[0] if args[0] is not None else ".")
            if path:
                self.folders.add(path)

    def write(self):
        if os.getpid() != self.pid:  # a forked child (the reference ahead) leaves it to its parent
            return
        record = {"files": sorted(p for p in self.files if os.path.isfile(p)),
                  "folders": sorted(p for p in self.folders if os.path.isdir(p)), "env": sorted(self.env),
                  "python": sys.executable, "packages": package_versions()}
        try:
            flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC
            with os.fdopen(os.open(self.path, flags, 0o644), "w", encoding="utf-8") as stream:
                stream.write(json.dumps(record) + "\n")
        except OSError:
            pass  # no record: the zoo then stores nothing for this run (a cache miss, never a false hit)


def package_versions(packages=PACKAGES):
    """{package: version or None} of `packages` in this interpreter."""
    import importlib.metadata
    versions = {}
    for package in packages:
        try:
            versions[package] = importlib.metadata.version(package)
        except importlib.metadata.PackageNotFoundError:
            versions[package] = None
    return versions


def _recording_environ(recorder):
    """os.environ's class, widened to note each name the model's own code reads (get, [], in,
    copy: all go through __getitem__). A read is the model's when the first frame above the
    standard library's (os, _collections_abc) lies outside Python's installation and
    onnxproof: torch reading its hundreds of TORCH* switches is covered by torch's version."""
    stdlib = os.path.join(os.path.realpath(sysconfig.get_paths()["stdlib"]), "")

    def read_by_the_model():
        frame = sys._getframe(2)
        while frame is not None:
            filename = frame.f_code.co_filename  # os and _collections_abc are frozen modules
            if not filename.startswith("<frozen ") and not os.path.realpath(filename).startswith(stdlib):
                return not filename.startswith("<") and recorder._kept(filename) is not None
            frame = frame.f_back
        return False

    class RecordingEnviron(type(os.environ)):
        def __getitem__(self, key):
            if key not in _VOLATILE and read_by_the_model():
                recorder.env.add(key)
            return super().__getitem__(key)
    return RecordingEnviron


def record_if_asked(outputs=()):
    """Starts recording when SWITCH names a file; `outputs` are folders this run writes."""
    path = os.environ.get(SWITCH)
    if not path:
        return
    recorder = _Recorder(path, outputs)
    sys.addaudithook(recorder.audit)
    os.environ.__class__ = _recording_environ(recorder)
    atexit.register(recorder.write)
