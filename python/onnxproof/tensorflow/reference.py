"""The reference of a TensorFlow model: its inputs and float32 outputs for every case
(core/reference.py chooses the cases and writes the folder), the float64 twin's outputs where the
time budget allows (exact.py), and cases.json."""
import os
import time

from ..core.findings import finding
from ..core.reference import (fill_and_publish, not_finite_finding, prepare_folder, reference_failed,
                              reference_samples, write_case, write_cases, write_exact_outputs)


def write_reference(state, source, twin):
    """Writes reference/ into a fresh folder, then swaps it in whole."""
    fill_and_publish(state, prepare_folder(state), lambda folder: fill_reference(state, source, twin, folder))


def fill_reference(state, source, twin, reference):
    cases, finite = [], [0, 0]
    for sizes, sample, origin, arrays in reference_samples(state):
        start = time.perf_counter()
        try:
            outputs = source.call(arrays)
        except Exception as error:
            reference_failed(state, sizes, origin, error)
            continue
        twin.float32_seconds += time.perf_counter() - start
        data_set = f"test_data_set_{len(cases)}"
        folder = os.path.join(reference, data_set)
        write_case(state, folder, arrays, list(zip(state.output_names, outputs)), finite)
        exact = twin.outputs(arrays, outputs) if twin.wanted() else [None] * len(outputs)
        write_exact_outputs(folder, state.output_names, exact)
        cases.append({"data_set": data_set, "sizes": sizes, "sample": sample, "source": origin,
                      "exact_outputs": [index for index, value in enumerate(exact) if value is not None]})
    if finite[1] and not finite[0]:
        state.findings.append(not_finite_finding(state, len(cases)))
    compared = any(name not in state.random_outputs for name in state.output_names)  # value by value
    if twin.reason and compared:
        state.findings.append(finding(
            "EXACT_REFERENCE_MISSING", "info",
            f"no float64 reference, compared with the fixed tolerance instead: {twin.reason}", "",
            "the calibrated rule needs a float64 twin of the model (docs/tensorflow.md says which models have one); "
            "the fixed rule still holds"))
    state.timings["exact_cases"] = twin.cases_run
    state.timings["reference_forward"] = round(twin.float32_seconds, 4)
    state.timings["reference_cases"] = len(cases)
    write_cases(state, reference, cases)
