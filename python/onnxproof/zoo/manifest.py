"""ZOO.toml -> a list of Model entries (docs/zoo.md has the format).

    [defaults]                      # optional: every key a model may set
    exporter = "dynamo"
    samples = 1
    timeout = 900

    [[model]]
    spec = "torchvision:resnet18"   # or path/to/file.py:callable (relative to this file), hf:..., timm:...
    name = "resnet18"               # optional: the run folder's name (default: from the spec)
    sweep = ["batch=1,3"]

Every problem is a UsageError naming the entry and the key.
"""
import dataclasses
import os
import re

from ..core.errors import FrontEndError, UsageError

# key -> the types it takes; lists of strings may be written as one string.
_KEYS = {
    "name": str, "spec": str, "family": str, "exporter": (str, list), "opset": int, "inputs": list,
    "dynamic": list, "sweep": list, "samples": int, "generate": int, "targets": (str, list),
    "providers": (str, list), "rtol": (int, float), "atol": (int, float), "timeout": (int, float),
    "memory_gb": (int, float), "weights": (str, list), "golden": bool, "args": list, "data": str,
    "data_dir": str,
}
# The limits of the numbers a manifest may give (the engine's own, or past any real use).
_RANGES = {"opset": (1, 99), "samples": (1, 1024), "generate": (0, 4096), "timeout": (1, 7 * 24 * 3600),
           "memory_gb": (0.001, 1 << 20), "rtol": (0, 1e6), "atol": (0, 1e6)}
# Pipeline options the zoo sets itself: `args` may not redirect a run's outputs or its model.
_ZOO_OWNED = ("--out", "--golden", "--no-golden", "--model", "--from-export", "--attach", "--data", "--data-dir")
MAX_MANIFEST_BYTES = 16 << 20
MAX_MODELS = 100_000
# Every framework's (the engine checks that a model's framework offers the one named).
_EXPORTERS = ("auto", "dynamo", "torchscript", "tf2onnx", "keras", "both")
_CUDA_TARGETS = ("ort-cuda", "tensorrt")
DEFAULT_TIMEOUT = 1800
DEFAULT_MEMORY_GB = 2


@dataclasses.dataclass
class Model:
    """One model of the zoo: what `onnxproof pipeline` is asked, and what the scheduler needs."""
    name: str
    spec: str
    position: int
    options: dict
    family: str = ""
    timeout: float = DEFAULT_TIMEOUT
    memory_gb: float = DEFAULT_MEMORY_GB
    weights: tuple = ()
    golden: bool = True
    data_file: str = None  # the file of a data spec FILE.py:CALLABLE


    @property
    def source_file(self):
        """The .py file of a file.py:callable spec, else None."""
        path, _, _ = self.spec.rpartition(":")
        return path if path.endswith(".py") else None

    @property
    def needs_gpu(self):
        providers = self.options.get("providers", [])
        return "cuda" in providers or any(t in _CUDA_TARGETS for t in self.options.get("targets", []))


def load_manifest(path):
    """The models of the manifest at `path`, in its order; UsageError for anything malformed."""
    try:
        import tomllib
    except ImportError:  # Python 3.10
        try:
            import tomli as tomllib
        except ImportError:
            raise UsageError("reading ZOO.toml needs Python 3.11 or the tomli package") from None
    try:
        with open(path, "rb") as stream:
            text = stream.read(MAX_MANIFEST_BYTES + 1)
        if len(text) > MAX_MANIFEST_BYTES:
            raise UsageError(f"{path}: a manifest over {MAX_MANIFEST_BYTES >> 20} MiB (split it, or use --shard)")
        document = tomllib.loads(text.decode("utf-8"))
    except OSError as error:
        raise FrontEndError(f"cannot read the zoo manifest {path}: {error.strerror or error}") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as error:
        raise UsageError(f"{path}: not valid TOML: {error}") from None
    except RecursionError:
        raise UsageError(f"{path}: not valid TOML: nested too deep") from None
    unknown = sorted(set(document) - {"defaults", "model"})
    if unknown:
        raise UsageError(f"{path}: unknown table '{unknown[0]}' (a manifest has [defaults] and [[model]] entries)")
    defaults = document.get("defaults", {})
    entries = document.get("model", [])
    if not isinstance(defaults, dict) or not isinstance(entries, list) or not entries:
        raise UsageError(f"{path}: no [[model]] entries (each needs spec = \"...\")")
    if len(entries) > MAX_MODELS:
        raise UsageError(f"{path}: {len(entries)} models, over {MAX_MODELS} (split the manifest)")
    _check_keys(defaults, f"{path}: [defaults]")
    if "name" in defaults or "spec" in defaults:
        raise UsageError(f"{path}: [defaults] cannot set name or spec")
    base = os.path.dirname(os.path.abspath(path))
    models = []
    for index, entry in enumerate(entries):
        if not isinstance(entry, dict):
            raise UsageError(f"{path}: model {index + 1} is not a table")
        models.extend(_models_of({**defaults, **entry}, f"{path}: model {index + 1}", base, len(models)))
    _check_unique(models, path)
    return models


def _check_keys(entry, where):
    for key, value in entry.items():
        if key not in _KEYS:
            raise UsageError(f"{where}: unknown key '{key}' (known: {', '.join(sorted(_KEYS))})")
        if isinstance(value, bool) and _KEYS[key] is not bool or not isinstance(value, _KEYS[key]):
            raise UsageError(f"{where}: '{key}' has the wrong type ({type(value).__name__})")
        if isinstance(value, list) and not all(isinstance(item, str) for item in value):
            raise UsageError(f"{where}: '{key}' must be a list of strings")
        if key in _RANGES and not _RANGES[key][0] <= value <= _RANGES[key][1]:  # NaN fails both
            low, high = _RANGES[key]
            raise UsageError(f"{where}: '{key}' is {value}; it takes {low:g} to {high:g}")
        for item in _string_list(value) if isinstance(value, (str, list)) else ():
            if "\0" in item:
                raise UsageError(f"{where}: '{key}' holds a NUL byte")
    for argument in entry.get("args", []):
        if argument.split("=", 1)[0] in _ZOO_OWNED:
            raise UsageError(f"{where}: args may not set {argument.split('=', 1)[0]}: the zoo sets it "
                             "(a data spec is the key data)")


def _string_list(value):
    return [value] if isinstance(value, str) else list(value or [])


def _models_of(entry, where, base, first_position):
    """The Model entries of one [[model]] table: one per exporter when `exporter` is a list."""
    _check_keys(entry, where)
    if "spec" not in entry or not entry["spec"].strip():
        raise UsageError(f"{where}: no spec (e.g. spec = \"torchvision:resnet18\" or \"model.py:build\")")
    exporters = entry.get("exporter", "auto")
    if isinstance(exporters, str):
        return [_model(entry, where, base, first_position, None)]
    if not exporters:
        raise UsageError(f"{where}: 'exporter' is an empty list")
    return [_model({**entry, "exporter": exporter}, where, base, first_position + offset, exporter)
            for offset, exporter in enumerate(exporters)]


def _model(entry, where, base, position, exporter_suffix):
    spec = _resolve_spec(entry["spec"].strip(), base, where)
    name = entry.get("name") or default_name(entry["spec"])
    if exporter_suffix:
        name = f"{name}.{exporter_suffix}"
    if not is_model_name(name):
        raise UsageError(f"{where}: name '{name}' must be letters, digits, '.', '_' or '-'")
    options = {key: entry[key] for key in ("opset", "samples", "generate", "rtol", "atol") if key in entry}
    for key in ("inputs", "dynamic", "sweep", "targets", "providers", "args"):
        if key in entry:
            options[key] = _string_list(entry[key])
    exporter = entry.get("exporter", "auto")
    if exporter not in _EXPORTERS:
        raise UsageError(f"{where}: exporter '{exporter}' is not one of {', '.join(_EXPORTERS)}")
    if exporter != "auto":
        options["exporter"] = exporter
    weights = tuple(_resolve_path(p, base, where, "weights") for p in _string_list(entry.get("weights")))
    data_file = None
    if "data" in entry:
        options["data"] = _resolve_spec(entry["data"].strip(), base, where)
        data_file = options["data"].rpartition(":")[0] if options["data"].rpartition(":")[0].endswith(".py") else None
    if "data_dir" in entry:
        folder = os.path.normpath(os.path.join(base, os.path.expanduser(entry["data_dir"])))
        if not os.path.isdir(folder):
            raise UsageError(f"{where}: data_dir names {entry['data_dir']}, which is not a folder")
        options["data_dir"] = folder  # its files are in the recorded reads (cache.py), not the key
    return Model(name=name, spec=spec, position=position, options=options, family=entry.get("family", ""),
                 data_file=data_file,
                 timeout=float(entry.get("timeout", DEFAULT_TIMEOUT)), weights=weights,
                 memory_gb=float(entry.get("memory_gb", _estimated_memory_gb(weights))),
                 golden=entry.get("golden", True))


def is_model_name(name):
    """Whether `name` may name a model's run folder: one plain path component, at most 200 bytes."""
    return isinstance(name, str) and len(name) <= 200 and re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]*", name) is not None


def default_name(spec):
    """A run folder's name from a spec: torchvision:resnet18 -> torchvision_resnet18,
    models/mlp.py:build -> mlp_build."""
    path, _, rest = spec.rpartition(":")
    if path.endswith(".py"):
        spec = os.path.splitext(os.path.basename(path))[0] + "_" + rest
    return re.sub(r"[^A-Za-z0-9._-]+", "_", spec).strip("_.-") or "model"


def _resolve_spec(spec, base, where):
    """A spec's file or folder taken relative to the manifest: FILE.py:CALLABLE, FILE.keras,
    saved_model:DIR (TensorFlow's); families as they are."""
    if spec.startswith("saved_model:"):
        folder = os.path.normpath(os.path.join(base, os.path.expanduser(spec[len("saved_model:"):])))
        if not os.path.isdir(folder):
            raise UsageError(f"{where}: spec names the SavedModel folder {spec[len('saved_model:'):]}, which is not a folder")
        return "saved_model:" + folder
    if spec.endswith(".keras"):
        return _resolve_path(spec, base, where, "spec")
    path, colon, rest = spec.rpartition(":")
    if not path.endswith(".py"):
        return spec
    return _resolve_path(path, base, where, "spec") + colon + rest


def _resolve_path(path, base, where, key):
    resolved = os.path.normpath(os.path.join(base, os.path.expanduser(path)))
    if not os.path.isfile(resolved):
        raise UsageError(f"{where}: {key} names {path}, which is not a file")
    return resolved


def _estimated_memory_gb(weights):
    """A model with weights files asks for four times their size (weights, export, two sessions)
    plus one GB; a model without, the default class."""
    size = sum(os.path.getsize(path) for path in weights)
    return max(DEFAULT_MEMORY_GB, 4 * size / 2**30 + 1) if weights else DEFAULT_MEMORY_GB


def _check_unique(models, path):
    seen = {}
    for model in models:
        if model.name in seen:
            raise UsageError(f"{path}: two models are named '{model.name}' (set name = \"...\" on one)")
        seen[model.name] = model


def parse_shard(text):
    """'I/N' -> (I, N) with 1 <= I <= N; UsageError otherwise."""
    match = re.fullmatch(r"(\d+)/(\d+)", text or "")
    if not match or not 1 <= int(match.group(1)) <= int(match.group(2)):
        raise UsageError(f"--shard {text}: expected I/N with 1 <= I <= N, e.g. 2/3")
    return int(match.group(1)), int(match.group(2))


def shard_of(models, shard):
    """The models of shard (I, N): by the sorted names, every N-th from the (I-1)-th, so that each
    model is in exactly one shard whatever the manifest's order."""
    index, count = shard
    names = sorted(model.name for model in models)
    mine = {name for position, name in enumerate(names) if position % count == index - 1}
    return [model for model in models if model.name in mine]
