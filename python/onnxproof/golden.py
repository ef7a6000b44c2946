"""Golden data sets from Python: freeze once, verify on every later export (GOLDEN_DRIFT).

The pipeline does both by itself: a prove() into a run folder that holds a golden/ set verifies
against it, then carries it over. These are the single steps, as `onnxproof golden` runs them."""
import os

from .core.engine import run_engine


def freeze(model_path, reference, out, providers=("cpu",)):
    """Proves parity on `reference` (test_data_set_N/), then writes the golden set to `out`.
    Returns True when it was frozen, False when parity failed (nothing is frozen then)."""
    code, _ = run_engine(["golden", "freeze", os.fspath(model_path), "--reference", os.fspath(reference),
                          "--out", os.fspath(out), "--provider", ",".join(providers)], quiet=True)
    return code == 0


def verify(model_path, golden, providers=("cpu",)):
    """Runs the golden inputs through `model_path` and compares with the frozen outputs: returns
    (held, the engine's summary with any GOLDEN_DRIFT finding)."""
    code, printed = run_engine(["golden", "verify", os.fspath(model_path), "--golden", os.fspath(golden),
                                "--provider", ",".join(providers)], quiet=True)
    return code == 0, printed
