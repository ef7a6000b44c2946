"""The reference folder, whatever the framework: the cases to capture (the example, the user's
data or generated shape cases), each case's inputs and outputs as .pb files, the float64 outputs,
cases.json (onnxproof.cases/1), the findings about what the source framework itself refused, and
the swap that publishes the folder whole. A framework's capture (torch/export_reference.py) runs
the model and hands its outputs here as numpy arrays."""
import json
import os
import shutil

from . import contract, data
from .cases import coupled_cases, size_ranges, with_derived
from .export_io import write_atomically
from .findings import finding, registry


def reference_samples(state):
    """(sizes, sample index, source, arrays) for every reference data set."""
    import numpy as np
    input_names = [spec["name"] for spec in state.inputs]
    if state.given and state.given.samples is not None:
        for index, arrays in enumerate(state.given.samples):
            sizes = {axis["label"]: int(arrays[axis["input"]].shape[axis["axis"]]) for axis in state.dynamic
                     if axis["axis"] < arrays[axis["input"]].ndim}
            yield sizes, index, "data", arrays
        return
    if state.config.get("data") or state.config.get("data_dir"):
        if state.config.get("data"):
            samples, source = data.load_data(state.config["data"], input_names), state.config["data"]
        else:
            samples, source = data.load_data_dir(state.config["data_dir"], input_names), state.config["data_dir"]
        for index, arrays in enumerate(samples):
            sizes = {axis["label"]: int(arrays[axis["input"]].shape[axis["axis"]]) for axis in state.dynamic
                     if axis["axis"] < arrays[axis["input"]].ndim}
            yield sizes, index, source, arrays
        return
    fixed = {axis["label"] for axis in state.fixed_axes}  # AXIS_FIXED_BY_MODEL says their sweep is dropped
    sweep = {label: [int(size) for size in sizes] for label, sizes in (state.config.get("sweep") or {}).items()
             if label not in fixed}
    samples = int(state.config.get("samples", 3))
    rng = np.random.default_rng(int(state.config.get("seed", 0)) + 1)
    cases = []
    for sizes in coupled_cases(state.examples, sweep, size_ranges(state.dynamic), state.couplings):
        sizes = with_derived(sizes, state.derived)  # a derived label's own sizes are no cases
        if sizes not in cases:
            cases.append(sizes)
    for number, sizes in enumerate(cases):
        for index in range(samples):
            # The example the user gave is always a case, the first.
            if number == 0 and index == 0 and state.example is not None:
                yield sizes, index, "example", state.example
                continue
            yield sizes, index, "generated", state.generate_inputs(sizes, rng)


def reference_failed(state, sizes, source, error):
    """The source framework's forward raised on a reference case. On the example or the user's data it is
    REFERENCE_FAILED (an error: the proof lacks the case the user asked for); on a generated
    case it is a size or value of ours the model does not take: the case is dropped, and
    finish() says so in one CASE_REJECTED_BY_PYTORCH finding."""
    text = f"{type(error).__name__}: {str(error).strip().splitlines()[0] if str(error).strip() else ''}"
    if source != "generated":
        state.findings.append(finding(
            "REFERENCE_FAILED", "error", f"{state.source}'s forward fails at {sizes} ({source}): {text}",
            json.dumps(sizes), f"the model does not accept this input in {state.source} either"))
        return
    state.rejected_cases.setdefault(json.dumps(sizes, sort_keys=True), text)


def rejected_finding(state):
    """The one finding for the generated cases the source framework rejected (None when there were none): a
    warning when a dynamic label was left proved at its example size only, else info."""
    rejected = state.rejected_cases
    if not rejected:
        return None
    listed = "; ".join(f"{sizes}: {text[:200]}" for sizes, text in list(rejected.items())[:6])
    more = f" (and {len(rejected) - 6} more)" if len(rejected) > 6 else ""
    proved = {}
    try:
        with open(os.path.join(state.out, "reference", "cases.json"), encoding="utf-8") as handle:
            for case in json.load(handle).get("cases", []):
                for label, size in (case.get("sizes") or {}).items():
                    proved.setdefault(label, set()).add(size)
    except (OSError, ValueError):
        pass
    unproved = [label for label, size in state.examples.items() if proved.get(label, {size}) <= {size}
                and any(json.loads(sizes).get(label) != size for sizes in rejected)]
    severity = "warning" if unproved else "info"
    left = f"; '{', '.join(unproved)}' was proved at its example size only" if unproved else ""
    return finding("CASE_REJECTED_BY_PYTORCH", severity,
                   f"{state.source} itself rejects {len(rejected)} generated case(s), left out of the proof{left}: "
                   f"{listed}{more}", ", ".join(rejected)[:300],
                   "declare the sizes the model takes (--sweep, a --dynamic range, one label for axes that "
                   "share a size) or prove on real data")


class Capture:
    """The reference capture so far, resumable between cases: a forked child (torch/reference_ahead.py)
    captures the first cases while the export runs, and the export process the rest."""

    def __init__(self):
        self.cases = []  # cases.json's entries, in order
        self.finite = [0, 0]  # [finite values, values] over every output of every case
        self.consumed = 0  # samples taken from reference_samples() (a rejected one included)
        self.exact = None  # the exact reference's summary of the float64 runs made (None: none tried)
        self.findings = []  # the findings the child's cases added (merged by the export process)
        self.rejected = {}  # the child's generated cases PyTorch refused (state.rejected_cases)
        self.seconds = 0.0  # the child's time
        self.complete = False  # the child captured every case


def partial_folder(state):
    """The run folder's `reference.partial`: where the reference is captured before it is published."""
    return os.path.join(state.out, "reference") + ".partial"


def prepare_folder(state):
    """A fresh `reference.partial` folder in the run folder, for write_reference to swap in."""
    reference = partial_folder(state)
    shutil.rmtree(reference, ignore_errors=True)
    os.makedirs(reference)
    return reference


def fill_and_publish(state, reference, fill):
    """`fill(reference)` captures the cases into the folder `reference`, which is then published
    as reference/ (publish). A capture that fails takes its folder with it: no half folder is left,
    and the reference of an earlier run stays whole."""
    try:
        fill(reference)
    except BaseException:
        shutil.rmtree(reference, ignore_errors=True)
        raise
    publish(state, reference)


def write_case(state, folder, arrays, outputs, finite):
    """One case's inputs, the framework's float32 outputs ((name, numpy array) pairs, counted into
    `finite`) and labels."""
    from onnx import numpy_helper
    os.makedirs(folder, exist_ok=True)
    for index, spec in enumerate(state.inputs):
        tensor = numpy_helper.from_array(real_view(arrays[spec["name"]]), spec["name"])
        write_atomically(os.path.join(folder, f"input_{index}.pb"), tensor.SerializeToString())
    for index, (name, value) in enumerate(outputs):
        count_finite(finite, value)
        tensor = numpy_helper.from_array(value, name)
        write_atomically(os.path.join(folder, f"output_{index}.pb"), tensor.SerializeToString())
    if data.LABELS in arrays and data.LABELS not in [spec["name"] for spec in state.inputs]:
        labels = numpy_helper.from_array(arrays[data.LABELS].astype("int64"), data.LABELS)
        write_atomically(os.path.join(folder, "labels.pb"), labels.SerializeToString())


def real_view(array):
    """A complex array as the exporters feed it (torch.onnx's dynamo exporter makes a complex input
    a real one with a last axis of 2: real and imaginary parts); any other array as it is."""
    import numpy as np
    array = np.asarray(array)
    return np.stack([array.real, array.imag], axis=-1) if array.dtype.kind == "c" else array


def count_finite(counts, value):
    """Adds `value`'s finite values and all its values to counts ([finite, total]); a value of a
    type without NaN (integers, bool) counts as finite."""
    import numpy as np
    total = int(value.size)
    counts[1] += total
    if np.issubdtype(value.dtype, np.inexact):
        counts[0] += int(np.isfinite(value).sum())
    else:
        counts[0] += total


def write_exact_outputs(folder, names, values):
    """The float64 outputs of one case (numpy arrays, None where an output has none) into
    `folder` as exact_output_K.pb."""
    from onnx import numpy_helper
    for index, value in enumerate(values):
        if value is not None:
            tensor = numpy_helper.from_array(value, names[index])
            write_atomically(os.path.join(folder, f"exact_output_{index}.pb"), tensor.SerializeToString())


def publish(state, reference):
    """Swaps the filled folder `reference` in as reference/: no data set of an earlier run
    survives, and an interrupted run leaves the old reference whole."""
    final = os.path.join(state.out, "reference")
    if os.path.exists(final):
        shutil.rmtree(final + ".old", ignore_errors=True)
        os.replace(final, final + ".old")
    os.replace(reference, final)
    shutil.rmtree(final + ".old", ignore_errors=True)


def not_finite_finding(state, cases):
    """REFERENCE_NOT_FINITE: every value the source framework output was NaN or Inf."""
    return finding("REFERENCE_NOT_FINITE", "error",
                   f"every value {state.source}'s forward outputs on the {cases} reference case(s) is NaN or Inf: "
                   "the ONNX model cannot be proved against it", "", registry()["REFERENCE_NOT_FINITE"]["hint"])


def write_cases(state, reference, cases):
    """reference/cases.json (onnxproof.cases/1): the inputs, outputs, axes and cases captured."""
    manifest = {
        "schema": contract.CASES,
        "inputs": [spec["name"] for spec in state.inputs],
        "outputs": state.output_names,
        "dynamic_axes": {label: size for label, size in state.examples.items()},
        "cases": cases,
    }
    if state.detection_sets:
        manifest["detections"] = state.detection_sets
    if state.random_outputs:
        manifest["random_outputs"] = state.random_outputs
    write_atomically(os.path.join(reference, "cases.json"), contract.dumps(manifest, "cases", indent=2) + "\n")
