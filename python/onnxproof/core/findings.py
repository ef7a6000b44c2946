"""Findings in the report's schema (DESIGN.md): code, severity, step, message, where, hint, and
evidence (facts the engine combines findings by). Codes come from the one registry,
data/finding_codes.json, which the C++ engine is generated from too: an unregistered code is an
error here, before it reaches a report."""
import functools
import json
import os


def _registry_path():
    """$ONNXPROOF_DATA's, else the wheel's (onnxproof/_engine/share/onnxproof/data), else the one
    beside the package: <root>/python/onnxproof -> <root>/data in a checkout, and
    <prefix>/share/onnxproof/python/onnxproof -> <prefix>/share/onnxproof/data for cmake --install."""
    package = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # onnxproof/, above core/
    for folder in (os.environ.get("ONNXPROOF_DATA"), os.path.join(package, "_engine", "share", "onnxproof", "data"),
                   os.path.join(os.path.dirname(os.path.dirname(package)), "data")):
        if folder and os.path.isfile(os.path.join(folder, "finding_codes.json")):
            return os.path.join(folder, "finding_codes.json")
    return os.path.join(os.path.dirname(os.path.dirname(package)), "data", "finding_codes.json")


REGISTRY = _registry_path()


@functools.lru_cache(maxsize=None)
def registry():
    """{code: entry} from data/finding_codes.json."""
    with open(REGISTRY, encoding="utf-8") as file:
        return {entry["code"]: entry for entry in json.load(file)["codes"]}


def finding(code, severity, message, where="", hint="", step="export", axis="", source=""):
    if code not in registry():
        raise ValueError(f"finding code {code!r} is not in the registry ({REGISTRY})")
    if severity not in ("error", "warning", "info"):
        raise ValueError(f"finding severity {severity!r} is not error, warning or info")
    result = {"code": code, "severity": severity, "step": step, "message": message, "where": where, "hint": hint}
    evidence = {key: value for key, value in (("axis", axis), ("source", source)) if value}
    if evidence:
        result["evidence"] = evidence
    return result
