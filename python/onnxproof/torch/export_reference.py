"""Export stage 4, reference and exact capture: PyTorch's inputs and outputs for every case
(core/reference.py chooses the cases and writes the folder) into reference/, with float64 outputs
where the calibrated rule can use them (exact.py) and cases.json (onnxproof.cases/1)."""
import itertools
import os
import time

from ..core.findings import finding
from ..core.reference import (Capture, fill_and_publish, not_finite_finding, partial_folder, prepare_folder,
                              reference_failed, reference_samples, write_case, write_cases, write_exact_outputs)
from . import traps
from .arrays import to_numpy
from .exact import ExactReference
from .generation_reference import write_generation


def write_reference(state, model, ahead=None):
    """Writes reference/ into a fresh folder, then swaps it in: no data set of an earlier run
    survives, and an interrupted run leaves the old reference whole. `ahead`: the child capturing
    the first cases since before the export (reference_ahead.py), whose cases are kept."""
    done = ahead.finish(state) if ahead is not None else None
    reference = prepare_folder(state) if done is None else partial_folder(state)  # the child's cases kept
    fill_and_publish(state, reference, lambda folder: fill_reference(state, model, folder, done))


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
    for item in itertools.islice(reference_samples(state), capture.consumed, None):
        entry = capture_case(state, model, reference, capture, item)
        if entry is not None:
            pending.append(entry)
    state.timed("exact_reference", exact_pass, state, exact, pending, capture.cases)
    cases, finite = capture.cases, capture.finite
    if finite[1] and not finite[0]:
        state.findings.append(not_finite_finding(state, len(cases)))
    if exact.missing_reason():
        state.findings.append(finding(
            "EXACT_REFERENCE_MISSING", "info",
            f"no float64 reference for some outputs, compared with the fixed tolerance instead: {exact.missing_reason()}",
            "", "the calibrated rule needs the model to run in float64 (model.double()); the fixed rule still holds"))
    state.timings["exact_cases"] = exact.cases_run
    state.timings["exact_mode"] = exact.mode  # copy, in_place or layer_by_layer (exact.py)
    # The model's own float32 forwards of the capture in this process: "reference" minus this and
    # the float64 pass is the capture's per-case overhead (inputs generated, tensors serialized
    # and written). The child's cases are in "reference_ahead" (its time) and its count.
    state.timings["reference_forward"] = round(exact.float32_seconds, 4)
    state.timings["reference_cases"] = len(cases)
    if done is not None:
        state.timings["reference_ahead"] = round(done.seconds, 4)
        state.timings["reference_ahead_cases"] = ahead_cases
    write_cases(state, reference, cases)
    write_generation(state, model, reference)


def capture_case(state, model, reference, capture, item, own_failure=None):
    """One reference case (sizes, sample, source, arrays) in float32: its inputs and PyTorch's
    outputs into `reference`, its entry appended to capture.cases; what the float64 pass needs of
    it (index, folder, inputs, outputs as meta tensors, float32 seconds), or None when PyTorch
    rejected the case. `own_failure(error)` true: the forward's exception is raised instead of
    recorded as PyTorch's refusal (the reference child, out of memory say: reference_ahead.py)."""
    sizes, sample, source, arrays = item
    capture.consumed += 1
    data_set = f"test_data_set_{len(capture.cases)}"
    try:
        start = time.perf_counter()
        outputs, _ = traps.flatten_outputs(state.forward(model, arrays))
        seconds = time.perf_counter() - start
    except Exception as error:
        if own_failure is not None and own_failure(error):
            raise
        reference_failed(state, sizes, source, error)
        return None
    folder = os.path.join(reference, data_set)
    write_case(state, folder, arrays, [(name, to_numpy(value, name)) for name, value in outputs],
               capture.finite)
    # The float64 pass needs each output's dtype and shape only: meta tensors hold no data.
    shapes = [(name, value.detach().to("meta")) for name, value in outputs]
    capture.cases.append({"data_set": data_set, "sizes": sizes, "sample": sample, "source": source,
                          "exact_outputs": []})
    return len(capture.cases) - 1, folder, arrays, shapes, seconds


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


def write_exact(state, exact, folder, arrays, outputs, budgeted=True):
    """The float64 outputs of one case into `folder` (exact_output_K.pb), when the float64 pass
    is within its time budget (or not `budgeted`); the list of them (None where an output has none)."""
    if budgeted and not exact.wanted():
        return [None] * len(outputs)
    names = [name for name, _ in outputs]
    values = exact.outputs(state.forward, arrays, names, [value for _, value in outputs])
    write_exact_outputs(folder, names, values)
    return values
