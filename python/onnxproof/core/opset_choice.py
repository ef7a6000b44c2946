"""The opset an export writes, whatever the framework: --opset when given, else the lowest of
- the engine's ceiling for the targets (ONNX, ONNX Runtime and the target tables),
- the newest opset the exporter writes,
- the exporter's own default (the opset its makers test most: torch's 20, tf2onnx's 15),
- the newest opset every ONNX Runtime release of the last 18 months loads (the engine's
  `opset_portable`, from data/onnxruntime-releases.csv),
so a model exported with the defaults loads on the runtimes deployed today and the exporter
writes what it is tested on; an operator that only a later opset has raises it (the framework's
export stage). The framework says what its exporter writes and what to do without a ceiling
(torch/export_opset.py, tensorflow/exporters.py)."""


def choose_opset(config, newest_opset, names, without_ceiling, exporter_default=0):
    """(opset, why) for the export configured by `config`. `newest_opset()`: the newest opset the
    exporter writes (asked only without --opset); `names`: the exporter as the reason calls it,
    (leading the reason, after the engine's reason); `without_ceiling(newest)`: the (opset, why)
    where the engine sent no ceiling (an older engine, the front end run by hand);
    `exporter_default`: the exporter's own default opset (0: none known)."""
    requested = int(config.get("opset") or 0)
    if requested:
        return requested, "--opset"
    ceiling, newest = int(config.get("opset_ceiling") or 0), newest_opset()
    if not ceiling:
        return without_ceiling(newest)
    reason = config.get("opset_ceiling_reason", "")
    limits = [(newest, f"{names[0]} writes up to {newest}")]
    if exporter_default:
        limits.append((exporter_default, f"{names[0]} defaults to {exporter_default}"))
    portable = int(config.get("opset_portable") or 0)
    if portable:
        limits.append((portable, config.get("opset_portable_reason") or f"portable up to {portable}"))
    opset = min([ceiling] + [value for value, _ in limits])
    binding = [why for value, why in limits if value == opset]
    if not binding:
        return ceiling, f"{reason}; {names[1]} writes up to {newest}"
    return opset, "; ".join(binding) + f" (the engine proves up to {ceiling}: {reason})"


def operators_newer_than(model, opset):
    """{op type: the first opset that has it} for every default-domain operator of `model` (an
    onnx.ModelProto; subgraphs included) that ONNX has only after `opset`: a converter that writes
    one (tf2onnx 1.17 writes BitwiseAnd-18 into an opset-15 model) made a file no runtime loads."""
    from onnx import defs
    found = {}

    def walk(graph):
        for node in graph.node:
            if node.domain in ("", "ai.onnx") and node.op_type not in found:
                try:
                    defs.get_schema(node.op_type, opset)
                except defs.SchemaError:
                    if defs.has(node.op_type):
                        found[node.op_type] = min(schema.since_version for schema in defs.get_all_schemas_with_history()
                                                  if schema.name == node.op_type and not schema.domain)
            for attribute in node.attribute:
                for body in ([attribute.g] if attribute.HasField("g") else []) + list(attribute.graphs):
                    walk(body)
    walk(model.graph)
    return found
