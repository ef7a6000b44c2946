"""Export stage 3, export with fallback: the first exporter, then the next one allowed when it
fails or ONNX Runtime refuses its model; under the default opset, again at the opset the --target
tables or ONNX Runtime accept. A refused export waits in a stash while the others are tried."""
import os
import re
import shutil

from ..core.export_io import progress
from ..core.ir_version import lower_ir_version
from . import dynamo
from .export_exporters import export_with_dynamo, export_with_torchscript
from .export_opset import (choose_opset, exporter_newest_opset, fallback_finding, lower_opset, refusal_finding,
                           runtime_refusal, table_opset_limit)
from ..core.findings import finding


# How many lower opsets one exporter tries after ONNX Runtime refuses its model.
MAX_LOWERINGS = 3


def export_with_fallback(state, model, example, exporters):
    """Exports with the first exporter; when it fails, or ONNX Runtime cannot run its model
    (checked unless --exporter and --opset were both given), with the next one allowed
    (--exporter auto). Each fallback is an EXPORTER_FALLBACK finding quoting its cause. When
    every exporter fails, each one's findings stand; when ONNX Runtime refuses every export,
    the first one is kept for the proof to report."""
    failures, refused = [], []  # (exporter, its findings); (exporter, opset, ONNX Runtime's message)
    kept = None  # the first refused export's findings, its files in the stash
    for exporter in exporters:
        before = len(state.findings)
        state.opset_notes = []
        cause = export_runnable(state, model, example, exporter)
        if cause == "":
            state.findings += state.opset_notes
            for failed, found in failures:
                state.findings.append(fallback_finding(failed, exporter, found, state.out))
            state.findings += [refusal_finding(failed, opset, said, exporter) for failed, opset, said in refused]
            shutil.rmtree(stash_folder(state), ignore_errors=True)
            return True
        if cause is None:
            failures.append((exporter, state.findings[before:]))
        else:
            refused.append((exporter, state.opset, cause))
            if kept is None:
                kept = (exporter, state.opset, state.opset_reason, state.findings[before:] + state.opset_notes)
                stash_export(state)
        del state.findings[before:]
    if kept is not None:
        restore_export(state, kept, refused)
        return True
    for _, found in failures:
        state.findings += found
    return False


def export_at(state, model, example, exporter, opset=0, reason=""):
    """One export at `opset` (0: the default for this exporter); True when it wrote model.onnx."""
    state.exporter = exporter
    state.opset, state.opset_reason = (opset, reason) if opset else choose_opset(state.config, exporter)
    progress(f"exporting with the {exporter} exporter at opset {state.opset}")
    export = export_with_dynamo if exporter == "dynamo" else export_with_torchscript
    if not export(state, model, example, state.model_path):
        return False
    lowered = lower_ir_version(state.model_path)
    if lowered:
        state.findings.append(lowered)
    return True


def export_runnable(state, model, example, exporter):
    """Exports with `exporter`: None when it could not export, else "" when the model may be
    kept, or ONNX Runtime's reason for refusing it. Under the default opset the model is
    exported again at the opset the --target tables support for its operators, and once more
    at the newest lower opset when ONNX Runtime cannot load or run it on the example."""
    start = len(state.findings)
    if not export_at(state, model, example, exporter):
        newer = newer_opset_needed(state, exporter, start)
        if not newer or not export_again(state, model, example, start, newer,
                                         f"an operator has no translation at opset {state.opset}"):
            return None
    if state.opset_is_default():
        limit, operators = table_opset_limit(state.model_path, state.opset, state.config.get("opset_op_limits") or {})
        if limit:
            export_again(state, model, example, start, limit,
                         f"the --target tables support {', '.join(operators)} only up to opset {limit}")
    if not state.opset_is_default() and state.config.get("exporter", "auto") != "auto":
        return ""  # both chosen by the user: respected, and the proof reports what fails
    cause = state.timed("runtime_check", runtime_refusal, state.model_path, example)
    oldest = dynamo.OLDEST_OPSET if exporter == "dynamo" else 7
    first_cause = cause
    # Down one schema of the operator ONNX Runtime names at a time: a translation may be wrong
    # over several schemas (torch.onnx's Q/DQ rewrites on PT2E graphs at opsets 22 and 23 both).
    for _ in range(MAX_LOWERINGS):
        lower = lower_opset(state.model_path, state.opset, cause, oldest) if cause and state.opset_is_default() else None
        if not lower or not export_again(state, model, example, start, lower,
                                         f"ONNX Runtime cannot run it on the example: {first_cause}"):
            break
        again = state.timed("runtime_check", runtime_refusal, state.model_path, example)
        cause = again and f"{cause}; at opset {lower}: {again}"
    return cause or ""


def newer_opset_needed(state, exporter, start):
    """The opset to export again at when the export at the default opset failed for want of an
    operator's translation there (UNSUPPORTED_ATEN_OP) and the exporter names the opset that has
    one ("added in version 21"), within what it writes under the engine's ceiling; None where the
    opset was given, the failure is another or names no opset (the dynamo exporter translates with
    torchlib at opset 18 and converts the result, so a missing translation is missing at every
    target; trying each would export a failing model again for nothing), or none is allowed."""
    if not state.opset_is_default():
        return None
    missing = [f for f in state.findings[start:] if f["code"] == "UNSUPPORTED_ATEN_OP" and f["severity"] == "error"]
    if not missing:
        return None
    newest = min(exporter_newest_opset(exporter), int(state.config.get("opset_ceiling") or 0) or 10**6)
    named = [int(match) for f in missing for match in re.findall(r"added in (?:opset )?version (\d+)", f["message"])]
    return max(named) if named and state.opset < max(named) <= newest else None


def export_again(state, model, example, start, opset, cause):
    """Replaces the export (and its findings from `start` on) by one at `opset`, noting why;
    when that export fails, the first one stands. True when replaced."""
    first, first_reason, before = state.opset, state.opset_reason, len(state.findings)
    if export_at(state, model, example, state.exporter, opset, f"opset {first} replaced: {cause}"):
        del state.findings[start:before]
        state.opset_notes.append(finding(
            "EXPORTER_FALLBACK", "info",
            f"the {state.exporter} exporter's model at {'opset' if 'replaced' in first_reason else 'the default opset'} "
            f"{first} was exported again at opset {opset}: {cause}", f"opset {first}",
            "nothing to do; --opset pins one (then a model the runtime refuses is reported, not replaced)",
            source=state.exporter))
        return True
    del state.findings[before:]
    state.opset, state.opset_reason = first, first_reason
    return False


def stash_folder(state):
    return os.path.join(state.out, ".refused-export")


def stash_export(state):
    """Moves model.onnx (and its weights file) aside while other exports are tried."""
    stash = stash_folder(state)
    shutil.rmtree(stash, ignore_errors=True)
    os.makedirs(stash)
    for path in (state.model_path, state.model_path + ".data"):
        if os.path.exists(path):
            os.replace(path, os.path.join(stash, os.path.basename(path)))


def restore_export(state, kept, refused):
    """Puts the first refused export back, with its findings and one finding naming every refusal."""
    state.exporter, state.opset, state.opset_reason, found = kept
    for path in (state.model_path, state.model_path + ".data"):
        if os.path.exists(path):
            os.remove(path)
        stashed = os.path.join(stash_folder(state), os.path.basename(path))
        if os.path.exists(stashed):
            os.replace(stashed, path)
    shutil.rmtree(stash_folder(state), ignore_errors=True)
    said = "; ".join(f"{exporter} at opset {opset}: {cause}" for exporter, opset, cause in refused)
    state.findings += found + [finding(
        "EXPORTER_FALLBACK", "warning",
        f"ONNX Runtime refused every export tried ({said}); the {state.exporter} export at opset {state.opset} "
        "is kept and proved", f"opset {state.opset}",
        "the quoted runtime errors name the operator; --exporter and --opset choose another export",
        source=state.exporter)]
