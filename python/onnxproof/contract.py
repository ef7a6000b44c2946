"""The written contract between the C++ engine and this front end (ARCHITECTURE.md, "The Python
boundary"): the configuration the engine passes (--config-json), checked here field by field, and
the schema names of what the front end writes (export.json, reference/cases.json), which the
engine checks on its side. A mismatch is an error naming the field, never a KeyError."""

CONFIG = "onnxproof.config/1"
EXPORT = "onnxproof.export/1"
CASES = "onnxproof.cases/1"

_EXPORTERS = ("auto", "torchscript", "dynamo")


class ContractError(ValueError):
    pass


def _is_int(value):
    return isinstance(value, int) and not isinstance(value, bool)


def _expect(condition, field, what):
    if not condition:
        raise ContractError(f"{field}: expected {what}")


def _check_input(spec, field):
    _expect(isinstance(spec, dict), field, "an object")
    _expect(isinstance(spec.get("name"), str) and spec["name"], f"{field}.name", "a non-empty string")
    _expect(isinstance(spec.get("dims"), list) and all(_is_int(d) for d in spec["dims"]), f"{field}.dims",
            "a list of integers")
    _expect(isinstance(spec.get("dtype"), str), f"{field}.dtype", "a string")
    if "range" in spec:
        _expect(isinstance(spec["range"], list) and len(spec["range"]) == 2 and all(_is_int(v) for v in spec["range"]),
                f"{field}.range", "[LO, HI]")


def _check_dynamic(axis, field):
    _expect(isinstance(axis, dict), field, "an object")
    _expect(isinstance(axis.get("input"), str), f"{field}.input", "a string")
    _expect(_is_int(axis.get("axis")) and axis["axis"] >= 0, f"{field}.axis", "a non-negative integer")
    _expect(isinstance(axis.get("label"), str) and axis["label"], f"{field}.label", "a non-empty string")
    for key in ("min", "max"):
        if key in axis:
            _expect(_is_int(axis[key]) and axis[key] >= 1, f"{field}.{key}", "a positive integer")


_REQUIRED = {"contract", "model", "inputs", "dynamic", "opset", "exporter", "sweep", "samples", "seed", "out"}
# opset_op_limits: {op type: the newest opset every --target table supports it at}, only for
# operators a table does not support at the ceiling (the engine's OpsetLimit::op_limits).
_OPTIONAL = {"opset_ceiling", "opset_ceiling_reason", "opset_op_limits", "data", "data_dir"}


def check_config(config):
    """Raises ContractError naming the first field that does not hold to onnxproof.config/1."""
    _expect(isinstance(config, dict), "config", "an object")
    _expect(config.get("contract") == CONFIG, "config.contract",
            f"'{CONFIG}' (the engine and the front end come from different onnxproof versions)")
    missing = sorted(_REQUIRED - set(config))
    _expect(not missing, f"config.{missing[0] if missing else ''}", "a value (the field is missing)")
    unknown = sorted(set(config) - _REQUIRED - _OPTIONAL)
    _expect(not unknown, f"config.{unknown[0] if unknown else ''}", "no such field in " + CONFIG)
    for key in ("model", "out"):
        _expect(isinstance(config[key], str) and config[key], f"config.{key}", "a non-empty string")
    _expect(isinstance(config["inputs"], list), "config.inputs", "a list")
    for i, spec in enumerate(config["inputs"]):
        _check_input(spec, f"config.inputs[{i}]")
    _expect(isinstance(config["dynamic"], list), "config.dynamic", "a list")
    for i, axis in enumerate(config["dynamic"]):
        _check_dynamic(axis, f"config.dynamic[{i}]")
    for key in ("opset", "samples", "seed"):
        _expect(_is_int(config[key]) and config[key] >= 0, f"config.{key}", "a non-negative integer")
    _expect(config["exporter"] in _EXPORTERS, "config.exporter", " or ".join(_EXPORTERS))
    _expect(isinstance(config["sweep"], dict) and all(
        isinstance(sizes, list) and all(_is_int(s) for s in sizes) for sizes in config["sweep"].values()),
        "config.sweep", "an object of label -> list of integers")
    if "opset_ceiling" in config:
        _expect(_is_int(config["opset_ceiling"]), "config.opset_ceiling", "an integer")
    if "opset_op_limits" in config:
        limits = config["opset_op_limits"]
        _expect(isinstance(limits, dict) and all(isinstance(op, str) and _is_int(opset) and opset > 0
                                                 for op, opset in limits.items()),
                "config.opset_op_limits", "an object of operator type -> positive opset")
    for key in ("opset_ceiling_reason", "data", "data_dir"):
        if key in config:
            _expect(isinstance(config[key], str), f"config.{key}", "a string")
