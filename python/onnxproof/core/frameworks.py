"""The source frameworks the front end serves, one subpackage each (onnxproof/torch/, ...), and
which of them a model spec, a model object or a run folder belongs to.

A framework's package is imported to ask it; its __init__ imports nothing heavy (no torch, no
tensorflow), so asking is cheap and this module stays framework-neutral. Each package provides:
  NAME, TITLE                   "torch", "PyTorch" (export.json's framework; messages)
  owns_spec(spec) -> bool       a --model spec of a form only it loads (a family prefix, a file
                                type); FILE.py:CALLABLE specs, which every framework could
                                load, go to the first framework in FRAMEWORKS
  owns_object(model) -> bool    a model object prove() was handed (checked without importing
                                the framework: the object's class names its module)
  run_export(config) -> int     python -m onnxproof --config-json: the export, the exit code
  run_localize(request) -> int  python -m onnxproof --localize-json: module outputs for a case
  prove(model, args, ...)       onnxproof.prove() on an object it owns
"""
import importlib
import json
import os

from .errors import UsageError

# In the order a spec is offered; the first that owns it exports it. One line per framework.
FRAMEWORKS = ("torch", "tensorflow")


def framework(name):
    """The package of framework `name`; UsageError for a name that is not one."""
    if name not in FRAMEWORKS:
        raise UsageError(f"unknown source framework '{name}' (known: {', '.join(FRAMEWORKS)})")
    return importlib.import_module(f"onnxproof.{name}")


def for_spec(spec):
    """The framework that loads a --model spec; the first one for a spec no framework claims by
    its form (a FILE.py:CALLABLE spec, or a malformed one its loader then names)."""
    return _first_owner("owns_spec", spec)


def for_object(model):
    """The framework of a model object; the first one for an object no framework claims (its
    prove() then says which objects it takes)."""
    return _first_owner("owns_object", model)


def _first_owner(question, value):
    for name in FRAMEWORKS:
        package = framework(name)
        if getattr(package, question)(value):
            return package
    return framework(FRAMEWORKS[0])


def for_run(run):
    """The framework that exported the run folder `run` (its export.json's "framework"; runs
    exported before the field existed are PyTorch's); the first framework when `run` is no
    readable run folder (None included), whose own reading then says what is wrong."""
    try:
        with open(os.path.join(run, "export.json"), encoding="utf-8") as handle:
            name = json.load(handle).get("framework") or FRAMEWORKS[0]
    except (OSError, ValueError, TypeError, AttributeError):
        name = FRAMEWORKS[0]  # the framework's own reading says what is wrong with the folder
    return framework(name)
