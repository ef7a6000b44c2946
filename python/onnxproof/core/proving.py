"""prove() on a model object, whatever the framework: one attached engine (attached.py) gives the
export its opset limit, the framework's exporter writes the run into a staging folder beside the
run folder, the engine proves it (asking the framework's capture for module outputs when it
localizes a divergence), and the typed Report is read from the run folder. Also the arguments
every framework's prove() passes the engine, and the staging folders killed calls left behind."""
import functools
import os
import re
import shutil
import sys
import tempfile

from . import contract
from .attached import AttachedEngine
from .engine import EngineError, captured_output
from .errors import UsageError, write_failure
from .report import read_report

# prove()'s staging folders: STAGING_PREFIX + the pid of the process exporting + "-" + random.
STAGING_PREFIX = ".onnxproof-export-"


def run_attached(arguments, config, export, capture, out, quiet):
    """The proof of the export `export(config)` writes into config["out"] (a staging folder beside
    `out`), with `capture(folder, model_file, case)` answering the engine's localization requests.
    The typed Report."""
    os.makedirs(os.path.dirname(out), exist_ok=True)
    with AttachedEngine(arguments, quiet) as engine:
        config.update(opset_ceiling(engine.opset_limit()))
        check_opset(config["opset"], config["opset_ceiling"], config["opset_ceiling_reason"])
        remove_dead_staging(os.path.dirname(out))
        staging = tempfile.mkdtemp(prefix=staging_prefix(), dir=os.path.dirname(out))
        try:
            config["out"] = staging
            _export(engine, config, export, quiet)
            outcome = engine.prove(staging, capture, functools.partial(_export_again, engine, config, export, quiet))
        finally:
            shutil.rmtree(staging, ignore_errors=True)
    if outcome["verdict"] == "error" and outcome.get("error"):
        print(f"onnxproof: the proof's verdict is error: {outcome['error']}", file=sys.stderr)
    return read_report(os.path.dirname(outcome["report"]))


def _export(engine, config, export, quiet):
    """The export into config["out"], everything it prints in export.log there; the engine is
    told when it did not happen."""
    try:
        contract.check_config(config)
        engine.hold_progress(True)
        with captured_output(os.path.join(config["out"], "export.log"), quiet):
            export(config)
    except BaseException as error:
        failure = write_failure(error)  # a full disk: one line, as on the command line
        engine.abort(str(failure) if failure else f"{type(error).__name__}: {error}")
        if failure:
            raise EngineError(str(failure)) from error
        raise
    finally:
        engine.hold_progress(False)


def _export_again(engine, config, export, quiet, folder, exporter, opset):
    """Another export of the same model for the engine's repair (pipeline --repair) into `folder`,
    with `exporter` and `opset` ("" and 0: the first export's), its log in folder/export.log. The
    export's exception is the reason the engine records."""
    again = dict(config, out=folder, exporter=exporter or config["exporter"], opset=int(opset or config["opset"]))
    contract.check_config(again)
    os.makedirs(folder, exist_ok=True)
    engine.hold_progress(True)
    try:
        with captured_output(os.path.join(folder, "export.log"), quiet):
            export(again)
    finally:
        engine.hold_progress(False)


def export_config(description, inputs, dynamic, *, opset, exporter, sweep, samples, framework=None):
    """The export's configuration (onnxproof.config/1) from prove()'s arguments, its "out" left for
    run_attached (the staging folder). `framework`: named unless it is the first one (PyTorch)."""
    config = {"contract": contract.CONFIG, "model": description}
    if framework:
        config["framework"] = framework
    config.update({"inputs": inputs, "dynamic": dynamic, "opset": int(opset or 0), "exporter": exporter,
                   "sweep": {label: [int(size) for size in sizes] for label, sizes in (sweep or {}).items()},
                   "samples": int(samples), "seed": 0, "out": ""})
    return config


def engine_arguments(out, targets, providers, *, rtol, atol, localize, golden, quantize=None, repair=False,
                     repair_budget=None, generate=0):
    """The attached engine's command-line arguments for prove()'s options (`targets` and
    `providers` as lists of names); UsageError for a bad quantize, repair or repair_budget."""
    arguments = ["--out", out, "--target", ",".join(targets), "--provider", ",".join(providers)]
    arguments += ["--generate", str(generate)] if generate else []
    arguments += tolerance_arguments(rtol, atol) + ([] if localize else ["--no-localize"])
    arguments += golden_arguments(golden) + quantize_arguments(quantize)
    return arguments + repair_arguments(repair, repair_budget)


def check_config(config):
    """The configuration as the export will check it, before any work: a value it refuses is the
    caller's bad argument."""
    try:
        contract.check_config(dict(config, out=config["out"] or "."))
    except contract.ContractError as error:
        raise UsageError(f"an argument breaks the export configuration: {error}") from error


def golden_arguments(golden):
    """--golden DIR when prove() was given a golden folder; --no-golden otherwise (the default)."""
    return ["--golden", os.path.abspath(golden)] if golden is not None else ["--no-golden"]


def quantize_arguments(quantize):
    """--quantize static for prove(quantize="static"); UsageError for another value."""
    if quantize is None:
        return []
    if quantize != "static":
        raise UsageError(f"quantize must be None or 'static' (ONNX Runtime's quantize_static), not {quantize!r}")
    return ["--quantize", "static"]


def repair_arguments(repair, repair_budget):
    """--repair --repair-budget S for prove(repair=True); UsageError for a bad budget."""
    if not isinstance(repair, bool):
        raise UsageError(f"repair must be True or False, not {repair!r}")
    if not repair:
        return []
    if isinstance(repair_budget, bool) or not isinstance(repair_budget, (int, float)) or not repair_budget > 0:
        raise UsageError(f"repair_budget must be a positive number of seconds, not {repair_budget!r}")
    return ["--repair", "--repair-budget", repr(float(repair_budget))]


def tolerance_arguments(rtol, atol):
    return (["--rtol", repr(float(rtol))] if rtol is not None else []) + (
        ["--atol", repr(float(atol))] if atol is not None else [])


def opset_ceiling(limit):
    """The config's opset ceiling from the engine's limit for the targets (the newest opset ONNX,
    ONNX Runtime and every target support) and the opset the recent ONNX Runtime releases all load
    (the default stays within both: core/opset_choice.py)."""
    return {"opset_ceiling": int(limit["opset"]), "opset_ceiling_reason": str(limit["reason"]),
            "opset_portable": int(limit.get("portable") or 0),
            "opset_portable_reason": str(limit.get("portable_reason", "")),
            "opset_op_limits": {str(op): int(opset) for op, opset in limit.get("op_limits", {}).items()}}


def check_opset(opset, ceiling, reason):
    """Raises UsageError for an opset newer than the engine can prove (its limit for the targets)."""
    if opset and ceiling and opset > ceiling:
        raise UsageError(f"opset {opset} is newer than onnxproof can prove ({reason}); the newest is {ceiling}")


def staging_prefix():
    return f"{STAGING_PREFIX}{os.getpid()}-"


def remove_dead_staging(folder):
    """Removes the staging folders in `folder` that a prove() of a process no longer running left
    (killed mid-export); a live process's folder is never touched."""
    try:
        names = os.listdir(folder)
    except OSError:
        return
    for name in names:
        match = re.fullmatch(re.escape(STAGING_PREFIX) + r"(\d+)-.+", name)
        if match and not _process_runs(int(match.group(1))):
            shutil.rmtree(os.path.join(folder, name), ignore_errors=True)


def _process_runs(pid):
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError, OSError):
        return True  # another user's process (or a number we cannot ask about): leave it
    return True
