"""Output axes, whatever the framework: which output axes follow each declared label (every label
resized in turn, the forward being the framework's: torch/export_forward.py, tensorflow/export.py),
the names model.onnx gives them, and the labels the model itself fixes (AXIS_FIXED_BY_MODEL)."""
import numpy as np

from .findings import finding


def label_axes_by_resizing(state, shapes, resized_shapes):
    """{output name: {axis: label}}: each label of the example resized in turn, and the output axes
    that follow it (state.output_dim_names names them in model.onnx); a label the model rejects at
    every other size tried is fixed by the model (fix_axes_by_model). `shapes`: the outputs' shapes
    on the example, in state.output_names' order. `resized_shapes(label, size, rng)` is the
    framework's forward with `label` resized: (the outputs' shapes, or None where the framework
    rejected every size; its first error or ""; the sizes tried, the one that ran last)."""
    axes = {name: {} for name in state.output_names}
    followed = {}  # {(output, axis): [(label, example size, resized size, output before, after)]}
    fixed = {}
    rng = np.random.default_rng(7)  # one stream across the labels, seeded as always: the same inputs run after run
    for label, size in state.examples.items():
        after, failure, tried = resized_shapes(label, size, rng)
        if after is None:
            fixed[label] = (size, tried, failure)
            continue
        follow_resized(axes, followed, state.output_names, shapes, after, label, size, tried[-1])
    fix_axes_by_model(state, fixed)
    state.output_dim_names = output_dim_names(followed, state.couplings)
    return axes


def follow_resized(axes, followed, names, before, after, label, size, other):
    """Records the output axes whose size changed when `label` went from `size` to `other`:
    axes {output: {axis: the first label it followed}}, followed {(output, axis): [(label, size,
    other, size before, size after)]}; `before` and `after` are the outputs' shapes in order."""
    for name, old, new in zip(names, before, after):
        for axis, (a, b) in enumerate(zip(old, new)):
            if a != b:
                axes[name].setdefault(axis, label)
                followed.setdefault((name, axis), []).append((label, size, other, a, b))


def output_dim_names(followed, couplings):
    """{output: {axis: the name model.onnx gives it}}: the label where the axis is the label's
    size, `3*h` where it is a whole multiple of one label (x.flatten(1) of an (n, 3, h) input) or
    of labels that always move together (a coupling), else `OUTPUT_dimAXIS`, so that no output
    axis claims to equal an input axis it only follows (h*w, h+2)."""
    names = {}
    for (name, axis), labels in followed.items():
        label, size, other, before, after = labels[0]
        multiple, rest = divmod(before, size)
        together = {entry[0] for entry in labels}
        one = len(together) == 1 or any(together <= set(group) for group in couplings)
        if one and not rest and after == multiple * other:
            dim = label if multiple == 1 else f"{multiple}*{label}"
        else:
            dim = f"{name}_dim{axis}"
        names.setdefault(name, {})[axis] = dim
    return names


def fix_axes_by_model(state, fixed):
    """Each label of `fixed` ({label: (example size, sizes tried, the framework's error)}) leaves the
    declared axes: the export, the cases and the frozen-shape analysis keep it at the example's
    size, and one AXIS_FIXED_BY_MODEL warning per label says so."""
    if not fixed:
        return
    for label, (size, tried, failure) in fixed.items():
        axes = [axis for axis in state.dynamic if axis["label"] == label]
        spelled = ", ".join(f"{axis['input']}:{axis['axis']}" for axis in axes)
        sweep = (state.config.get("sweep") or {}).get(label)
        state.findings.append(finding(
            "AXIS_FIXED_BY_MODEL", "warning",
            f"axis '{label}' ({spelled}) was declared dynamic, but {state.source}'s own forward rejects every other size "
            f"tried ({', '.join(str(s) for s in tried)}; example: {size}), alone and with the axes coupled to it: "
            f"{failure}. The export keeps it at {size}"
            + (f" and the --sweep sizes {', '.join(str(s) for s in sweep)} of it are not cases" if sweep else "")
            + "; the proof goes on with the other axes", label,
            f"declare '{label}' static (drop its --dynamic / dynamic_axes entry); the export is as dynamic as the "
            "model, which only runs at this size", axis=label))
        state.fixed_axes.append({"label": label, "size": size, "tried": list(tried)})
    state.dynamic = [axis for axis in state.dynamic if axis["label"] not in fixed]
    state.examples = {label: size for label, size in state.examples.items() if label not in fixed}
    state.coupling_candidates = [group for group in state.coupling_candidates if not set(group) & fixed.keys()]
    state.couplings = [group for group in state.couplings if not set(group) & fixed.keys()]


def check_declared_output_names(state):
    """UsageError when an axis declared on an output (torch.onnx.export's dynamic_axes naming an
    output: config's output_axes) names no output the forward returns."""
    from .errors import UsageError
    for name in state.config.get("output_axes") or {}:
        if name not in state.output_names:
            inputs = ", ".join(spec["name"] for spec in state.inputs) or "none"
            raise UsageError(f"a dynamic axis (--dynamic, dynamic_axes) names {name!r}, which is neither an input "
                             f"({inputs}) nor an output ({', '.join(state.output_names)})")


def declared_output_findings(state):
    """Findings for each axis declared dynamic on an output that model.onnx writes with a fixed
    size: FROZEN_DIMENSION, an error, where the model's own output follows a dynamic label there
    (the export froze it); AXIS_FIXED_BY_MODEL, a warning, where the model keeps that size
    whatever the inputs (the declaration asks for more than the model does)."""
    import onnx
    declared = state.config.get("output_axes") or {}
    if not declared:
        return []
    graph = onnx.load(state.model_path, load_external_data=False).graph
    shapes = {output.name: output.type.tensor_type.shape for output in graph.output}
    problems = []
    for name, axes in declared.items():
        shape = shapes.get(name)
        for axis, label in axes.items():
            if shape is None or int(axis) >= len(shape.dim):
                where = "is not an output of model.onnx" if shape is None else f"has rank {len(shape.dim)} in model.onnx"
                problems.append(finding("FROZEN_DIMENSION", "error", f"output '{name}' axis {axis}, declared dynamic "
                                        f"as '{label}', cannot be checked: '{name}' {where}", name,
                                        "declare axes the exported outputs have"))
                continue
            dim = shape.dim[int(axis)]
            if not dim.HasField("dim_value"):
                continue
            follows = (state.output_axes.get(name) or {}).get(int(axis))
            if follows:
                problems.append(finding(
                    "FROZEN_DIMENSION", "error", f"output '{name}' axis {axis} was declared dynamic as '{label}' and "
                    f"{state.source}'s output follows '{follows}' there, but model.onnx fixes it at {dim.dim_value}",
                    f"{name}:{axis}", "keep sizes symbolic in forward() (x.shape[0] or -1 instead of a Python int)"))
            else:
                problems.append(finding(
                    "AXIS_FIXED_BY_MODEL", "warning", f"output '{name}' axis {axis} was declared dynamic as '{label}', but "
                    f"{state.source}'s own output keeps size {dim.dim_value} there at every input size tried, and so "
                    "does model.onnx", f"{name}:{axis}", f"drop '{name}' axis {axis} from dynamic_axes, or make the "
                    "model's output follow the input axis it should"))
    return problems
