"""prove() on a model object, whatever the framework: one attached engine (attached.py) gives the
export its opset limit, the framework's exporter writes the run into a staging folder beside the
run folder, the engine proves it (asking the framework's capture for module outputs when it
localizes a divergence), and the typed Report is read from the run folder. Also the command
every framework's prove() sends the engine, and the staging folders killed calls left behind."""
import functools
import os
import re
import shutil
import sys
import tempfile

from . import contract
from .attached import AttachedEngine
from .engine import EngineError, captured_output
from .errors import FrontEndError, UsageError, write_failure
from .report import read_report

# prove()'s staging folders: STAGING_PREFIX + the pid of the process exporting + "-" + random.
STAGING_PREFIX = ".onnxproof-export-"


def run_attached(command, config, export, capture, out, quiet):
    """The proof of the export `export(config)` writes into config["out"] (a staging folder beside
    `out`) by an engine given `command` (engine_command), with `capture(folder, model_file, case)`
    answering the engine's localization requests. The typed Report."""
    os.makedirs(os.path.dirname(out), exist_ok=True)
    with AttachedEngine(command, quiet) as engine:
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
        if isinstance(error, FrontEndError) and not isinstance(error, (UsageError, EngineError)):
            # A file the tool cannot read (a corrupt --onnx file): the command line's exit 3, and
            # here one of the two exceptions prove() documents, not an internal class.
            raise EngineError(str(error)) from None
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


def engine_command(out, targets, providers, *, rtol, atol, localize, golden, quantize=None, repair=False,
                   repair_budget=None, generate=0):
    """The attached engine's command (onnxproof.command/1, schemas/command.schema.json: the same
    document RUN/command.json records) for prove()'s options, `targets` and `providers` as lists
    of names: sent as the engine's first message, checked there as the command line's options
    are. UsageError for a bad quantize, repair or repair_budget (said in prove()'s words first)."""
    check_quantize(quantize)
    check_repair(repair, repair_budget)
    model = {"model": "", "inputs": [], "dynamic": [], "opset": 0, "exporter": "auto", "sweep": [], "samples": 3,
             "generate": int(generate or 0), "merged_decoder": False, "data": "", "data_dir": "", "python": "",
             "export_timeout": 1800, "from_export": ""}
    proof = {"providers": ",".join(providers), "output_tolerances": [], "skip_optimization_check": False,
             "precision": "fp32", "disabled_optimizers": [], "keep_float32": []}
    proof.update({name: float(value) for name, value in (("rtol", rtol), ("atol", atol)) if value is not None})
    run = {"out": out, "no_localize": not localize, "golden": os.path.abspath(golden) if golden is not None else "",
           "no_golden": golden is None, "repair": bool(repair),
           "repair_budget": float(repair_budget) if repair else 900.0}
    return {"schema": contract.COMMAND, "model": model, "proof": proof, "targets": ",".join(targets),
            "quantize": quantize or "", "no_simplify": False, "run": run}


def check_config(config):
    """The configuration as the export will check it, before any work: a value it refuses is the
    caller's bad argument."""
    try:
        contract.check_config(dict(config, out=config["out"] or "."))
    except contract.ContractError as error:
        raise UsageError(f"an argument breaks the export configuration: {error}") from error


def check_quantize(quantize):
    """prove(quantize=): None or "static"; UsageError otherwise."""
    if quantize is not None and quantize != "static":
        raise UsageError(f"quantize must be None or 'static' (ONNX Runtime's quantize_static), not {quantize!r}")


def check_repair(repair, repair_budget):
    """prove(repair=, repair_budget=): a bool, and with repair a positive number of seconds."""
    if not isinstance(repair, bool):
        raise UsageError(f"repair must be True or False, not {repair!r}")
    if repair and (isinstance(repair_budget, bool) or not isinstance(repair_budget, (int, float))
                   or not repair_budget > 0):
        raise UsageError(f"repair_budget must be a positive number of seconds, not {repair_budget!r}")


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
