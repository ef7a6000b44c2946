"""Where a model's callable and the user's real inputs come from, whatever the framework:
FILE.py:CALLABLE / MODULE:CALLABLE specs, --data callables and --data-dir folders, read into
{input name: numpy array} samples."""
import importlib
import importlib.util
import os
import sys

from .errors import FrontEndError, UsageError

LABELS = "labels"  # the optional key of a data sample that holds task labels


def did_you_mean(name, candidates):
    """' (did you mean X?)' for the closest of `candidates` to `name` (case ignored first), else ''."""
    import difflib
    candidates = list(candidates)
    same = [c for c in candidates if c.lower() == name.lower()]
    close = same or difflib.get_close_matches(name, candidates, n=1, cutoff=0.6)
    return f" (did you mean '{close[0]}'?)" if close else ""


def split_callable(spec):
    target, sep, name = spec.rpartition(":")
    if not sep or not target or not name or not name.isidentifier():
        raise UsageError(f"model spec '{spec}' must be FILE.py:CALLABLE, MODULE:CALLABLE, FILE.pt, torchvision:NAME, "
                         "timm:NAME or hf:CLASS")
    return target, name


def import_file(path):
    if not os.path.isfile(path):
        raise FrontEndError(f"no such file: {path}")
    module_name = "onnxproof_user_" + os.path.splitext(os.path.basename(path))[0]
    spec = importlib.util.spec_from_file_location(module_name, path)
    module = importlib.util.module_from_spec(spec)
    # The user's folder goes on the path so the file can import its neighbours; importing it (and
    # them) writes no __pycache__ there: onnxproof writes nothing beside the user's files.
    sys.path.insert(0, os.path.dirname(os.path.abspath(path)))
    writes_bytecode, sys.dont_write_bytecode = sys.dont_write_bytecode, True
    try:
        spec.loader.exec_module(module)
    except Exception as error:  # the user's code: any exception is theirs to see, in one line
        raise FrontEndError(f"importing {path} failed: {type(error).__name__}: {error}") from error
    finally:
        sys.dont_write_bytecode = writes_bytecode
    return module


def resolve_callable(spec, what):
    """The callable named by FILE.py:NAME or MODULE:NAME."""
    target, name = split_callable(spec)
    if target.endswith(".py"):
        module = import_file(target)
    else:
        try:
            module = importlib.import_module(target)
        except ImportError as error:
            raise FrontEndError(f"cannot import module '{target}' for the {what}: {error}") from error
    if not hasattr(module, name):
        public = [n for n in vars(module) if not n.startswith("_") and callable(getattr(module, n))]
        raise UsageError(f"{target} has no '{name}'{did_you_mean(name, public)} "
                         f"(the {what} spec names a missing callable)")
    return getattr(module, name)


def model_from_callable(spec):
    """The model a FILE.py:NAME or MODULE:NAME spec's callable returns, called with no argument;
    FrontEndError naming the spec when the call raises."""
    factory = resolve_callable(spec, "model")
    try:
        return factory()
    except Exception as error:
        raise FrontEndError(f"calling {spec} failed: {type(error).__name__}: {error}") from error


def as_array(value):
    """A numpy array of a framework's tensor or anything array-like: a PyTorch tensor (detached,
    on the CPU) or a TensorFlow one (.numpy()) without importing either framework."""
    import numpy as np
    if hasattr(value, "detach"):
        return value.detach().cpu().numpy()
    if not isinstance(value, np.ndarray) and callable(getattr(value, "numpy", None)):
        return np.asarray(value.numpy())
    return np.asarray(value)


# The most samples a --data callable may give: every sample is kept in memory with its outputs.
MAX_DATA_SAMPLES = 10000


def load_data(spec, input_names):
    """Samples from a data spec (FILE.py:CALLABLE): see samples_from()."""
    source = resolve_callable(spec, "data")
    try:
        return samples_from(source(), input_names, spec)
    except FrontEndError:
        raise
    except Exception as error:
        raise FrontEndError(f"reading data from {spec} failed: {type(error).__name__}: {error}") from error


def samples_from(items, input_names, source):
    """A list of {input name: numpy array} from an iterable of samples.

    Each sample is a dict keyed by input name, or a tuple/list in input order (a single tensor for
    a one-input model), of tensors or arrays. A dict may also carry "labels", and a tuple one value
    more than the model has inputs ends with them, as a DataLoader's (inputs, labels) batches do:
    class indices for the first output's rows, kept for the task metric (accuracy), never fed to
    the model. `source` names the data in messages.
    """
    samples = []
    for item in items:
        # An endless generator would otherwise grow until memory runs out.
        if len(samples) == MAX_DATA_SAMPLES:
            raise UsageError(f"{source} yields more than {MAX_DATA_SAMPLES} samples; give a finite set "
                             "(for a DataLoader, the batches to prove on)")
        if isinstance(item, dict):
            sample = dict(item)
        else:
            values = list(item) if isinstance(item, (tuple, list)) else [item]
            if len(values) == len(input_names) + 1 and LABELS not in input_names:
                sample = dict(zip(input_names + [LABELS], values))
            elif len(values) == len(input_names):
                sample = dict(zip(input_names, values))
            else:
                raise UsageError(f"{source} yielded {len(values)} values, the model has {len(input_names)} inputs")
        missing = [name for name in input_names if name not in sample]
        if missing:
            raise UsageError(f"{source} yielded a sample without input(s) {', '.join(missing)}")
        keep = set(input_names) | ({LABELS} if LABELS not in input_names else set())
        samples.append({name: as_array(value) for name, value in sample.items() if name in keep})
    if not samples:
        raise UsageError(f"{source} yielded no samples")
    return samples


def load_data_dir(folder, input_names):
    """Samples from a folder: one sample of NAME.npy / NAME.pb files, or one subfolder per sample
    (test_data_set_N/input_K.pb as ONNX's tests lay them out, or NAME.npy / NAME.pb)."""
    import numpy as np
    from onnx import numpy_helper, TensorProto

    if not os.path.isdir(folder):
        raise FrontEndError(f"no such folder: {folder}")

    def read(path):
        if path.endswith(".npy"):
            return np.load(path, allow_pickle=False)
        proto = TensorProto()
        with open(path, "rb") as handle:
            proto.ParseFromString(handle.read())
        return numpy_helper.to_array(proto)

    def sample_from(directory):
        sample = {}
        for index, name in enumerate(input_names):
            for candidate in (f"{name}.npy", f"{name}.pb", f"input_{index}.pb"):
                path = os.path.join(directory, candidate)
                if os.path.isfile(path):
                    try:
                        sample[name] = read(path)
                    except Exception as error:
                        raise FrontEndError(f"cannot read {path}: {error}") from error
                    break
        return sample

    samples = []
    top = sample_from(folder)
    if top:
        samples.append(top)
    for entry in sorted(os.listdir(folder)):
        path = os.path.join(folder, entry)
        if os.path.isdir(path):
            sample = sample_from(path)
            if sample:
                samples.append(sample)
    for sample in samples:
        missing = [name for name in input_names if name not in sample]
        if missing:
            raise UsageError(f"{folder}: a sample lacks input(s) {', '.join(missing)}")
    if not samples:
        raise UsageError(f"{folder} holds no input files (expected NAME.npy, NAME.pb or input_K.pb)")
    return samples
