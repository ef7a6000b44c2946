"""Export stage 2, check the forward pass and label the output axes: the model runs on the
example (a failure, a non-tensor output or a random forward is a finding), and each dynamic label
is resized in turn to see which output axes follow it."""
from . import traps
from .cases import size_ranges
from .findings import finding


# Words of PyTorch's errors when forward() puts a tensor on a device the export does not use
# (onnxproof runs the model on the CPU): "Torch not compiled with CUDA enabled", "Found no NVIDIA
# driver", "Expected all tensors to be on the same device".
_DEVICE_ERROR_WORDS = ("cuda", "nvidia driver", "same device", "mps", "xpu")


def forward_failure_hint(error):
    """The fix for a forward pass that fails on the example: a device move inside forward() is not
    a wrong --input, so it gets its own advice."""
    text = str(error).lower()
    if any(word in text for word in _DEVICE_ERROR_WORDS):
        return ("forward() moves a tensor to a device (.cuda(), .to('cuda'), device='cuda'); onnxproof exports and "
                "proves on the CPU, and an ONNX graph carries no device: create tensors on the input's device "
                "(torch.zeros(..., device=x.device), x.new_tensor) instead")
    return "check the --input names, shapes and dtypes against forward()'s arguments"


def check_forward(state, model, example):
    try:
        result = state.forward(model, example)
    except Exception as error:
        state.findings.append(finding("EXPORT_FAILED", "error",
                                      f"the model's forward fails on the example input: {type(error).__name__}: {error}",
                                      "", forward_failure_hint(error)))
        return None
    outputs, problems = traps.flatten_outputs(result)
    state.output_dataclasses = traps.dataclass_types(result)
    state.output_lists = traps.has_lists(result)
    state.output_groups = traps.output_groups(result)
    state.output_ranks = [tensor.dim() for _, tensor in outputs]
    if problems:
        location = traps.forward_location(model)
        for problem in problems:
            if location:
                problem["where"] += f" (returned by forward, {location})"
        state.findings += problems
        return None
    state.output_names = [name for name, _ in outputs]
    again, _ = traps.flatten_outputs(state.forward(model, example))
    differing = traps.compare_forwards(outputs, again)
    if differing:
        where = traps.op_source_line(model, state.args_for(example), traps.RANDOM_OPS) or ", ".join(differing)
        state.findings.append(finding(
            "NONDETERMINISTIC_FORWARD", "error",
            f"two forward passes on the same input differ (output {', '.join(differing)}): the forward draws random numbers",
            where,
            "remove random ops from inference (torch.rand*, bernoulli, F.dropout(training=True)) or seed them "
            "outside the model; no parity proof can hold otherwise"))
    return outputs


def label_output_axes(state, model, example, outputs):
    """{output name: {axis: label}}: resize one label at a time and see which output axes follow.
    A size PyTorch itself rejects is no ONNX defect: the label is resized with the labels that
    share its example size (coupled: an RNN's input batch and h0 batch), then at twice its size
    (divisibility: pixel_shuffle channels); only when no variation runs is the axis frozen."""
    import numpy as np
    axes = {name: {} for name in state.output_names}
    rng = np.random.default_rng(7)
    for label, size in state.examples.items():
        resized, failure = resized_forward(state, model, label, size, rng)
        if resized is None:
            other = state.other_size(label, size)
            state.findings.append(finding(
                "FROZEN_DIMENSION", "error",
                f"PyTorch's own forward fails when '{label}' is {other} (example: {size}), alone or with the "
                f"labels of the same size: {failure}", label,
                "the model itself only accepts the example's size on this axis; drop the --dynamic axis or fix "
                "the model", axis=label))
            continue
        for (name, before), (_, after) in zip(outputs, resized):
            for axis, (a, b) in enumerate(zip(before.shape, after.shape)):
                if a != b:
                    axes[name].setdefault(axis, label)
    return axes


def resized_forward(state, model, label, size, rng):
    """(PyTorch's flat outputs with `label` resized, None) or (None, PyTorch's error): tries the
    label alone, then with each candidate group of coupled labels (recorded in state.couplings
    when PyTorch needs it), at the next size and at twice the example's."""
    low, high = size_ranges(state.dynamic).get(label, (1, None))
    others = [other for other in dict.fromkeys((state.other_size(label, size), 2 * size))
              if other != size and other >= low and (high is None or other <= high)]
    if not others:
        return [], ""  # a range of one size: nothing to resize, nothing frozen either
    groups = [[label]] + [group for group in state.coupling_candidates if label in group]
    failure = ""
    for other in others:
        for group in groups:
            sizes = dict(state.examples, **{member: other for member in group})
            try:
                resized, _ = traps.flatten_outputs(state.forward(model, state.generate_inputs(sizes, rng)))
            except Exception as error:  # noqa: BLE001 -- PyTorch's own refusal, reported by the caller
                failure = failure or f"{type(error).__name__}: {error}"
                continue
            if len(group) > 1 and group not in state.couplings:
                state.couplings.append(group)
            return resized, ""
    return None, failure


DETECTION_KEYS = {"boxes", "scores", "labels", "extra", "score_threshold"}


def detection_sets(state, model, outputs):
    """The outputs the model declares to be detections (`onnxproof_detections`: a list of
    {"boxes", "scores", "labels", "extra", "score_threshold"} naming its outputs, or a method of
    the output names returning one), kept in state.detection_sets for cases.json: the engine
    compares them as sets matched by IoU, not element by element. Their axis 0 counts detections,
    which the data decides, whatever the image size. UsageError for a malformed declaration."""
    from .errors import UsageError
    declared = getattr(model, "onnxproof_detections", None)
    if declared is None:
        return
    sets = declared(state.output_names) if callable(declared) else declared
    shapes = {name: tuple(tensor.shape) for name, tensor in outputs}
    checked = []
    for entry in sets or []:
        if not isinstance(entry, dict) or not {"boxes", "scores"} <= entry.keys() or set(entry) - DETECTION_KEYS:
            raise UsageError("onnxproof_detections: each entry is a dict with 'boxes' and 'scores' (and optionally "
                             f"'labels', 'extra', 'score_threshold'); got {entry!r}")
        members = [entry["boxes"], entry["scores"]] + ([entry["labels"]] if entry.get("labels") else []) + \
            list(entry.get("extra", []))
        for name in members:
            if name not in shapes:
                raise UsageError(f"onnxproof_detections names output '{name}', which forward() does not return "
                                 f"(outputs: {', '.join(state.output_names)})")
            if len(shapes[name]) == 0 or shapes[name][0] != shapes[entry["boxes"]][0]:
                raise UsageError(f"onnxproof_detections: output '{name}' must have one row per box of "
                                 f"'{entry['boxes']}' (shapes {shapes[name]} and {shapes[entry['boxes']]})")
        if len(shapes[entry["boxes"]]) != 2 or shapes[entry["boxes"]][1] != 4:
            raise UsageError(f"onnxproof_detections: boxes output '{entry['boxes']}' must be Nx4 "
                             f"(x1, y1, x2, y2), not {shapes[entry['boxes']]}")
        checked.append({"boxes": entry["boxes"], "scores": entry["scores"], "labels": entry.get("labels", ""),
                        "extra": list(entry.get("extra", [])),
                        "score_threshold": float(entry.get("score_threshold", 0.0))})
        for name in members:
            state.output_axes.setdefault(name, {})[0] = "detections"
    state.detection_sets = checked
