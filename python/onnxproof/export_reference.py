"""Export stage 4, reference and exact capture: PyTorch's inputs and outputs for every case
(the example, the user's data or generated shape cases) into reference/, with float64 outputs
where the calibrated rule can use them (exact.py) and cases.json (onnxproof.cases/1)."""
import itertools
import json
import os
import shutil
import time

from . import contract
from . import spec as specs
from . import traps
from .cases import coupled_cases, size_ranges, with_derived
from .exact import ExactReference
from .export_io import write_atomically
from .findings import finding, registry


def reference_samples(state, model):
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
            samples, source = specs.load_data(state.config["data"], input_names), state.config["data"]
        else:
            samples, source = specs.load_data_dir(state.config["data_dir"], input_names), state.config["data_dir"]
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
    """PyTorch's forward raised on a reference case. On the example or the user's data it is
    REFERENCE_FAILED (an error: the proof lacks the case the user asked for); on a generated
    case it is a size or value of ours the model does not take: the case is dropped, and
    finish() says so in one CASE_REJECTED_BY_PYTORCH finding."""
    text = f"{type(error).__name__}: {str(error).strip().splitlines()[0] if str(error).strip() else ''}"
    if source != "generated":
        state.findings.append(finding(
            "REFERENCE_FAILED", "error", f"PyTorch's forward fails at {sizes} ({source}): {text}",
            json.dumps(sizes), "the model does not accept this input in PyTorch either"))
        return
    state.rejected_cases.setdefault(json.dumps(sizes, sort_keys=True), text)


def rejected_finding(state):
    """The one finding for the generated cases PyTorch rejected (None when there were none): a
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
                   f"PyTorch itself rejects {len(rejected)} generated case(s), left out of the proof{left}: "
                   f"{listed}{more}", ", ".join(rejected)[:300],
                   "declare the sizes the model takes (--sweep, a --dynamic range, one label for axes that "
                   "share a size) or prove on real data")


class Capture:
    """The reference capture so far, resumable between cases: a forked child (reference_ahead.py)
    captures the first cases while the export runs, and the export process the rest."""

    def __init__(self):
        self.cases = []  # cases.json's entries, in order
        self.finite = [0, 0]  # [finite values, values] over every output of every case
        self.consumed = 0  # samples taken from reference_samples() (a rejected one included)
        self.exact = None  # ExactReference.summary() of the float64 runs made (None: none tried)
        self.findings = []  # the findings the child's cases added (merged by the export process)
        self.rejected = {}  # the child's generated cases PyTorch refused (state.rejected_cases)
        self.seconds = 0.0  # the child's time
        self.complete = False  # the child captured every case


def prepare_folder(state):
    """A fresh `reference.partial` folder in the run folder, for write_reference to swap in."""
    reference = os.path.join(state.out, "reference") + ".partial"
    shutil.rmtree(reference, ignore_errors=True)
    os.makedirs(reference)
    return reference


def write_reference(state, model, ahead=None):
    """Writes reference/ into a fresh folder, then swaps it in: no data set of an earlier run
    survives, and an interrupted run leaves the old reference whole. `ahead`: the child capturing
    the first cases since before the export (reference_ahead.py), whose cases are kept."""
    final = os.path.join(state.out, "reference")
    done = ahead.finish(state) if ahead is not None else None
    reference = final + ".partial"
    if done is None:
        reference = prepare_folder(state)
    try:
        fill_reference(state, model, reference, done)
    except BaseException:
        shutil.rmtree(reference, ignore_errors=True)  # a failed capture leaves no half folder
        raise
    if os.path.exists(final):
        shutil.rmtree(final + ".old", ignore_errors=True)
        os.replace(final, final + ".old")
    os.replace(reference, final)
    shutil.rmtree(final + ".old", ignore_errors=True)


def fill_reference(state, model, reference, done=None):
    """PyTorch's inputs and outputs of every case, and cases.json, into the folder `reference`,
    after the cases of `done` (a Capture) when a child captured some. Two passes: every case in
    float32, then the float64 pass over the cases its time budget allows, so a large model
    widened in place is float64 once, not once per case."""
    capture = done or Capture()
    ahead_cases = len(capture.cases)  # the child's
    pending = []  # per case: (its index in cases, folder, inputs, outputs' names and meta tensors, float32 s)
    exact = state.timed("exact_reference", ExactReference, model)
    exact.resume(capture.exact)
    for item in itertools.islice(reference_samples(state, model), capture.consumed, None):
        entry = capture_case(state, model, reference, capture, item)
        if entry is not None:
            pending.append(entry)
    state.timed("exact_reference", exact_pass, state, exact, pending, capture.cases)
    cases, finite = capture.cases, capture.finite
    if finite[1] and not finite[0]:
        state.findings.append(finding(
            "REFERENCE_NOT_FINITE", "error",
            f"every value PyTorch's forward outputs on the {len(cases)} reference case(s) is NaN or Inf: "
            "the ONNX model cannot be proved against it", "", registry()["REFERENCE_NOT_FINITE"]["hint"]))
    if exact.missing_reason():
        state.findings.append(finding(
            "EXACT_REFERENCE_MISSING", "info",
            f"no float64 reference for some outputs, compared with the fixed tolerance instead: {exact.missing_reason()}",
            "", "the calibrated rule needs the model to run in float64 (model.double()); the fixed rule still holds"))
    state.timings["exact_cases"] = exact.cases_run
    # The model's own float32 forwards of the capture in this process: "reference" minus this and
    # the float64 pass is the capture's per-case overhead (inputs generated, tensors serialized
    # and written). The child's cases are in "reference_ahead" (its time) and its count.
    state.timings["reference_forward"] = round(exact.float32_seconds, 4)
    state.timings["reference_cases"] = len(cases)
    if done is not None:
        state.timings["reference_ahead"] = round(done.seconds, 4)
        state.timings["reference_ahead_cases"] = ahead_cases
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
    steps = int(state.config.get("generate") or 0)
    if steps and state.generation:
        from .generation import record_generation
        state.timed("generation_reference", record_generation, state, model, reference, steps)


def capture_case(state, model, reference, capture, item):
    """One reference case (sizes, sample, source, arrays) in float32: its inputs and PyTorch's
    outputs into `reference`, its entry appended to capture.cases; what the float64 pass needs of
    it (index, folder, inputs, outputs as meta tensors, float32 seconds), or None when PyTorch
    rejected the case."""
    sizes, sample, source, arrays = item
    capture.consumed += 1
    data_set = f"test_data_set_{len(capture.cases)}"
    try:
        start = time.perf_counter()
        outputs, _ = traps.flatten_outputs(state.forward(model, arrays))
        seconds = time.perf_counter() - start
    except Exception as error:
        reference_failed(state, sizes, source, error)
        return None
    folder = os.path.join(reference, data_set)
    write_case(state, folder, arrays, outputs, capture.finite)
    # The float64 pass needs each output's dtype and shape only: meta tensors hold no data.
    shapes = [(name, value.detach().to("meta")) for name, value in outputs]
    capture.cases.append({"data_set": data_set, "sizes": sizes, "sample": sample, "source": source,
                          "exact_outputs": []})
    return len(capture.cases) - 1, folder, arrays, shapes, seconds


def write_case(state, folder, arrays, outputs, finite):
    """One case's inputs, PyTorch's float32 outputs (counted into `finite`) and labels."""
    from onnx import numpy_helper
    os.makedirs(folder, exist_ok=True)
    for index, spec in enumerate(state.inputs):
        tensor = numpy_helper.from_array(arrays[spec["name"]], spec["name"])
        write_atomically(os.path.join(folder, f"input_{index}.pb"), tensor.SerializeToString())
    for index, (name, value) in enumerate(outputs):
        count_finite(finite, value)
        tensor = numpy_helper.from_array(value.detach().cpu().numpy(), name)
        write_atomically(os.path.join(folder, f"output_{index}.pb"), tensor.SerializeToString())
    if specs.LABELS in arrays and specs.LABELS not in [spec["name"] for spec in state.inputs]:
        labels = numpy_helper.from_array(arrays[specs.LABELS].astype("int64"), specs.LABELS)
        write_atomically(os.path.join(folder, "labels.pb"), labels.SerializeToString())


def exact_pass(state, exact, pending, cases):
    """The float64 outputs of the cases the time budget allows, in case order with the float32
    time accumulated as the capture went (so the float64 runs spread over the cases as before)."""
    if not pending:
        return  # a child captured every case: no float64 copy to make
    with exact.float64_model():
        for entry in pending:
            exact_case(state, exact, entry, cases)


def exact_case(state, exact, entry, cases):
    """One case's float64 outputs (capture_case's `entry`), when the budget allows them."""
    index, folder, arrays, outputs, seconds = entry
    exact.last_float32_seconds = seconds
    exact.float32_seconds += seconds
    values = write_exact(state, exact, folder, arrays, outputs)
    cases[index]["exact_outputs"] = [k for k, value in enumerate(values) if value is not None]


def count_finite(counts, value):
    """Adds `value`'s finite values and all its values to counts ([finite, total]); a value of a
    type without NaN (integers, bool) counts as finite."""
    import torch
    total = value.numel()
    counts[1] += total
    if value.is_floating_point() or value.is_complex():
        counts[0] += int(torch.isfinite(value.detach()).sum())
    else:
        counts[0] += total


def write_exact(state, exact, folder, arrays, outputs, budgeted=True):
    """The float64 outputs of one case into `folder` (exact_output_K.pb), when the float64 pass
    is within its time budget (or not `budgeted`); the list of them (None where an output has none)."""
    from onnx import numpy_helper
    if budgeted and not exact.wanted():
        return [None] * len(outputs)
    values = exact.outputs(state.forward, arrays, [name for name, _ in outputs], [value for _, value in outputs])
    for index, value in enumerate(values):
        if value is not None:
            tensor = numpy_helper.from_array(value, outputs[index][0])
            write_atomically(os.path.join(folder, f"exact_output_{index}.pb"), tensor.SerializeToString())
    return values
