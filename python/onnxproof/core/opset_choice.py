"""The opset an export writes, whatever the framework: --opset when given, else the newest that
both the engine (its ceiling for the targets: ONNX, ONNX Runtime and the target tables) and the
exporter write. The framework says what its exporter writes and what to do without a ceiling
(torch/export_opset.py, tensorflow/exporters.py)."""


def choose_opset(config, newest_opset, names, without_ceiling):
    """(opset, why) for the export configured by `config`. `newest_opset()`: the newest opset the
    exporter writes (asked only without --opset); `names`: the exporter as the reason calls it,
    (leading the reason, after the engine's reason); `without_ceiling(newest)`: the (opset, why)
    where the engine sent no ceiling (an older engine, the front end run by hand)."""
    requested = int(config.get("opset") or 0)
    if requested:
        return requested, "--opset"
    ceiling, newest = int(config.get("opset_ceiling") or 0), newest_opset()
    if not ceiling:
        return without_ceiling(newest)
    reason = config.get("opset_ceiling_reason", "")
    if newest < ceiling:
        return newest, f"{names[0]} writes up to {newest} ({reason})"
    return ceiling, f"{reason}; {names[1]} writes up to {newest}"
