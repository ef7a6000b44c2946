"""Export stage 2, check the forward pass and label the output axes: the model runs on the
example (a failure, a non-tensor output or a random forward is a finding), and each dynamic label
is resized in turn to see which output axes follow it."""
import re

from ..core.cases import coupled_sizes, size_ranges
from ..core.output_axes import label_axes_by_resizing
from ..core.errors import UsageError
from ..core.findings import finding
from . import traps


# Words of PyTorch's errors when forward() puts a tensor on a device the export does not use
# (onnxproof runs the model on the CPU): "Torch not compiled with CUDA enabled", "Found no NVIDIA
# driver", "Expected all tensors to be on the same device".
_DEVICE_ERROR_WORDS = ("cuda", "nvidia driver", "same device", "mps", "xpu")


# What PyTorch says when an input does not fit the model: a rank, size, channel count or dtype the
# first layer refuses. Anything else a forward raises (NotImplementedError, .item() on a tensor,
# running out of memory) is the model's to answer for.
_INPUT_REFUSED = re.compile(r"shape|size|dimension|\bdims?\b|channels|dtype|scalar type|\brank\b|mat1|mat2|"
                            r"batched|expected.*input", re.IGNORECASE)


def refuses_the_input(error):
    """The forward's error says the example input does not fit the model."""
    return (isinstance(error, (RuntimeError, ValueError, TypeError, IndexError)) and not is_device_error(error)
            and not isinstance(error, NotImplementedError) and bool(_INPUT_REFUSED.search(str(error))))


def is_device_error(error):
    """The forward moved a tensor to a device the export cannot use (the model's code, not the call)."""
    text = str(error).lower()
    return any(word in text for word in _DEVICE_ERROR_WORDS)


def forward_failure_hint(error):
    """The fix for a forward pass that fails on the example: a device move inside forward() is not
    a wrong --input, so it gets its own advice."""
    if is_device_error(error):
        return ("forward() moves a tensor to a device (.cuda(), .to('cuda'), device='cuda'); onnxproof exports and "
                "proves on the CPU, and an ONNX graph carries no device: create tensors on the input's device "
                "(torch.zeros(..., device=x.device), x.new_tensor) instead")
    return "check the --input names, shapes and dtypes against forward()'s arguments"


def check_forward(state, model, example):
    try:
        result = state.forward(model, example)
    except UsageError:  # output_names naming more outputs than forward returns: the call's, not the model's
        raise
    except Exception as error:
        text = f"{type(error).__name__}: {str(error).strip().splitlines()[0] if str(error).strip() else ''}"
        # An example the user gave that the model itself refuses (a wrong rank, size or dtype) is a
        # mistake in the call, not a model to fail: said as such (exit 2). A family's own example,
        # or a forward that moves tensors to a device, is the model's to answer for.
        if state.inputs_given and refuses_the_input(error):
            described = ", ".join(f"{spec['name']} {'x'.join(map(str, spec['dims']))} {spec['dtype']}"
                                  for spec in state.inputs)
            raise UsageError(f"the model's forward rejects the example input ({described}): {text}; "
                             f"{forward_failure_hint(error)}") from None
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
        # A random forward is no defect of the export: its outputs cannot match value by value,
        # so the engine checks them for shape, dtype and domain only (cases.json random_outputs).
        where = traps.op_source_line(model, state.args_for(example), traps.RANDOM_OPS) or ", ".join(differing)
        state.random_outputs = differing
        state.findings.append(finding(
            "NONDETERMINISTIC_FORWARD", "info",
            f"two forward passes on the same input differ (output {', '.join(differing)}): the forward draws random "
            "numbers, so these outputs are checked for shape, dtype and value domain only, not proved value by value",
            where,
            "if inference should be deterministic, remove the random ops (torch.rand*, bernoulli, multinomial, "
            "F.dropout(training=True)) or take the random values as an input; the other outputs are proved as usual"))
    return outputs


def label_output_axes(state, model, example, outputs):
    """{output name: {axis: label}}: resize one label at a time and see which output axes follow.
    A size PyTorch itself rejects is no ONNX defect: the label is resized with the labels coupled
    to it (coupling_search), and only when PyTorch rejects every size tried is the axis fixed by
    the model: AXIS_FIXED_BY_MODEL, and the export keeps it at the example's size
    (fix_axes_by_model), since an export cannot be more dynamic than its model."""

    def resized_shapes(label, size, rng):
        resized, failure, tried = resized_forward(state, model, label, size, rng)
        if resized is None:
            return None, failure, tried
        if only_broadcast(outputs, resized, tried):
            return None, (f"{failure}; of the other sizes only 1 ran, and no output changed shape at it "
                          "(broadcasting against a fixed size)"), tried[:-1]
        return [tuple(t.shape) for _, t in resized], failure, tried
    return label_axes_by_resizing(state, [tuple(t.shape) for _, t in outputs], resized_shapes)


def only_broadcast(outputs, resized, tried):
    """True when the one size PyTorch took besides the example's is 1, after refusing others, and
    no output changed shape: size 1 broadcast against a fixed size (x + a learned table of fixed
    length), which says nothing of the axis being dynamic."""
    return len(tried) > 1 and tried[-1] == 1 and all(
        tuple(before.shape) == tuple(after.shape) for (_, before), (_, after) in zip(outputs, resized))


# How many sizes quoted by PyTorch's errors are tried besides the next size and twice the
# example's: each costs a forward for every coupling candidate.
MESSAGE_SIZES = 3


def resized_forward(state, model, label, size, rng):
    """(PyTorch's flat outputs with `label` resized, PyTorch's first error or "", sizes tried) or
    (None, PyTorch's first error, sizes tried). The sizes: the next one and twice the example's,
    then sizes PyTorch's errors quote; each alone and with every candidate group of coupled
    labels (coupling_search), the group recorded in state.couplings when PyTorch needs it."""
    low, high = size_ranges(state.dynamic).get(label, (1, None))

    def allowed(other):
        return other != size and other >= low and (high is None or other <= high)

    sizes = [other for other in dict.fromkeys((state.other_size(label, size), 2 * size)) if allowed(other)]
    if not sizes:
        return [], "", []  # a range of one size: nothing to resize, nothing frozen either
    groups = coupling_search(state, label)
    failure, tried, quoted = "", [], 0
    while sizes:
        other = sizes.pop(0)
        tried.append(other)
        for group in groups:
            case = coupled_sizes(dict(state.examples, **{label: other}), state.examples, [group], label)
            if case is None:
                continue
            try:
                resized, _ = traps.flatten_outputs(state.forward(model, state.generate_inputs(case, rng)))
            except Exception as error:  # noqa: BLE001 -- PyTorch's own refusal, reported by the caller
                text = f"{type(error).__name__}: {error}"
                failure = failure or text.strip().splitlines()[0][:300]  # its first line says it
                for asked in sizes_quoted(text):
                    if quoted < MESSAGE_SIZES and allowed(asked) and asked not in tried and asked not in sizes:
                        sizes.append(asked)
                        quoted += 1
                continue
            if len(group) > 2:  # every label at once: keep only those PyTorch needs moved with it
                group = smallest_group(state, model, label, other, group, rng)
            if len(group) > 1 and group not in state.couplings:
                state.couplings.append(group)
            return resized, failure, tried
    return None, failure, tried


def smallest_group(state, model, label, size, group, rng):
    """`group` (labels PyTorch runs when resized together with `label` at `size`) less every label
    it also runs without, tried one at a time (with the partners it is known to need): the
    search's last try moves every label at once, and a batch that moved with an image's width
    would never be proved on its own."""
    kept = list(group)
    for other in group:
        # A label goes with the partners it is already known to need (h with hs): moved alone
        # with `label`, either would break the pair and look needed.
        unit = {other}.union(*(known for known in state.couplings if other in known))
        if label in unit or not unit <= set(kept):
            continue
        smaller = [member for member in kept if member not in unit]
        case = coupled_sizes(dict(state.examples, **{label: size}), state.examples, [smaller], label)
        if case is None:
            continue
        try:
            state.forward(model, state.generate_inputs(case, rng))
        except Exception:  # noqa: BLE001 -- PyTorch needs `other` moved too: it stays
            continue
        kept = smaller
    return kept


def coupling_search(state, label):
    """The groups `label` is resized with, in order: alone; with the labels of its example size
    on other inputs (an RNN's input batch and h0's batch); with each other label in proportion
    to their example sizes (a view onto another input's shape ties element counts, pixel_shuffle
    ties channels to a multiple); with every label at once."""
    groups = [[label]] + [group for group in state.coupling_candidates if label in group]
    for other in state.examples:
        if other != label:
            groups.append(sorted((label, other)))
    if len(state.examples) > 2:
        groups.append(sorted(state.examples))
    unique = []
    for group in groups:
        if group not in unique:
            unique.append(group)
    return unique


def sizes_quoted(text):
    """The sizes an error message asks for ("Expected 8, got 9", "shape '[2, 12]' is invalid for
    input of size 30"): its whole numbers from 1 to 4096, in order, once each."""
    import re
    return list(dict.fromkeys(int(n) for n in re.findall(r"(?<![\w.])(\d{1,4})(?![\w.])", text) if 0 < int(n) <= 4096))


DETECTION_KEYS = {"boxes", "scores", "labels", "extra", "score_threshold"}


def detection_sets(state, model, outputs):
    """The outputs the model declares to be detections (`onnxproof_detections`: a list of
    {"boxes", "scores", "labels", "extra", "score_threshold"} naming its outputs, or a method of
    the output names returning one), kept in state.detection_sets for cases.json: the engine
    compares them as sets matched by IoU, not element by element. Their axis 0 counts detections,
    which the data decides, whatever the image size. UsageError for a malformed declaration."""
    from ..core.errors import UsageError
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
            state.output_dim_names.get(name, {}).pop(0, None)  # the data decides it, no label does
    state.detection_sets = checked
