"""The two exporters an export stage calls: torch.export + translation (dynamo.py) and the
TorchScript tracer, whose traps (traps.py) become findings; and the differential trace, a second
TorchScript trace at other values and sizes compared with the first."""
import inspect
import os
import shutil

from ..core.cases import coupled_sizes, size_ranges, with_derived
from ..core.export_io import progress, temporary_path
from ..core.findings import finding
from ..core.memory import release_freed_memory
from . import dynamo, exporter_child, traps
from .export_opset import model_bytes


def dynamo_example(state, example):
    """The example torch.export traces: a dynamic axis of size 0 or 1 is traced at 2, since
    torch.export specializes those sizes (and would refuse the axis as dynamic)."""
    import numpy as np
    ranges = size_ranges(state.dynamic)
    sizes = {label: 2 if size < 2 and ranges.get(label, (1, 2))[1] >= 2 else size
             for label, size in state.examples.items()}
    if sizes == state.examples:
        return example
    rng = np.random.default_rng(int(state.config.get("seed", 0)))
    return state.generate_inputs(sizes, rng)


def export_with_dynamo(state, model, example, path):
    args = state.args_for(dynamo_example(state, example))
    # Saved in a folder of its own first: the weights file of a model over 2 GiB is named after
    # the model file, so both get their final names there and are moved together.
    staging = temporary_path(os.path.join(state.out, ".dynamo"))
    os.makedirs(staging, exist_ok=True)
    try:
        program, state.loose_dims = dynamo.capture(model, args, state.inputs, state.dynamic, state.output_dataclasses, state.findings,
                                 derived=state.derived, couplings=state.couplings)
        progress("translating the exported program into ONNX")
        staged = os.path.join(staging, os.path.basename(path))
        # A model with custom ops carries their translations (torch.onnx's custom_translation_table).
        dynamo.translate(program, args, state.inputs, state.dynamic, state.output_names, state.opset, staged,
                         state.out, translations=translation_table(model))
        if os.path.exists(staged + ".data"):
            os.replace(staged + ".data", path + ".data")
        os.replace(staged, path)
        program = None
        release_freed_memory(model_bytes(path))  # the program's graphs and the serialized model
        return True
    except dynamo.DynamoExportFailed as failed:
        state.findings.append(failed.finding)
        return False
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def call_torchscript_exporter(state, model, arrays, target):
    import torch
    # The TorchScript exporter takes tuples, lists and dicts only, and writes a list as one
    # sequence output: both become the flat tuple of tensors the reference holds. A scripted
    # model cannot be wrapped (its calls are not traced): its sequence outputs are expanded
    # after the export (expand_sequence_outputs).
    scripted_lists = state.scripted_lists(model)
    if (state.output_dataclasses or state.output_lists) and not scripted_lists:
        model = traps.with_flat_outputs(model)
    kwargs = dict(opset_version=state.opset, input_names=[spec["name"] for spec in state.inputs],
                  output_names=None if scripted_lists else state.output_names, do_constant_folding=True,
                  export_params=True)
    if "dynamo" in inspect.signature(torch.onnx.export).parameters:
        kwargs["dynamo"] = False
    return torch.onnx.export(model, state.args_for(arrays), target, dynamic_axes=state.dynamic_axes(), **kwargs)


def export_with_torchscript(state, model, example, path):
    import torch
    attempts = [("no_grad", torch.no_grad)]
    while attempts:
        mode, context = attempts.pop(0)
        target = temporary_path(path)  # named here: the path holds this process's id, not the child's
        try:
            records = exporter_child.run_recording_warnings(
                state, lambda: exported_under(context, state, model, example, target))
            if state.scripted_lists(model):
                traps.expand_sequence_outputs(target, state.output_names, state.output_groups,
                                              state.output_ranks)
            else:
                name_constant_outputs(target, state.output_names)
            os.replace(target, path)
            state.findings += traps.classify_tracer_warnings(records)
            return True
        except exporter_child.ExporterDied as died:
            state.findings.append(exporter_died(died))
            return False
        except Exception as error:
            aten = traps.unsupported_aten_op(error)
            if aten in traps.ATEN_FAST_PATHS and mode == "no_grad":
                state.findings.append(finding(
                    "UNSUPPORTED_ATEN_OP", "info",
                    f"{aten} is PyTorch's fused inference fast path, which ONNX cannot express; "
                    "exported again with the fast path off (autograd enabled during the export)", aten,
                    "nothing to do; on torch 2.x torch.backends.mha.set_fastpath_enabled(False) does the same"))
                attempts.append(("enable_grad", torch.enable_grad))
                continue
            report_torchscript_error(state, model, example, error, aten)
            return False
        finally:
            if os.path.exists(target):
                os.remove(target)
    return False


def exported_under(context, state, model, arrays, target):
    with context():
        call_torchscript_exporter(state, model, arrays, target)


def exporter_died(died):
    return finding("EXPORT_FAILED", "error", f"torch.onnx.export(dynamo=False) crashed: {died}", "",
                   "a crash inside torch's TorchScript exporter (native code), not a verdict on the model: "
                   "--exporter dynamo exports through torch.export instead")


def name_constant_outputs(path, names):
    """The TorchScript exporter keeps an output that constant folding made an initializer (a
    forward with no inputs) under the initializer's name, whatever output_names says: an Identity
    gives it its name. Nothing is read whole or rewritten when every output has its name."""
    import onnx
    from onnx import helper
    outputs = onnx.load(path, load_external_data=False).graph.output
    if len(outputs) != len(names) or all(value.name == name for value, name in zip(outputs, names)):
        return
    model = onnx.load(path)
    for value, name in zip(model.graph.output, names):
        if value.name != name:
            model.graph.node.append(helper.make_node("Identity", [value.name], [name], name=f"output_name_{name}"))
            value.name = name
    onnx.save(model, path)


def report_torchscript_error(state, model, example, error, aten):
    message = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
    if aten:
        message = message.split(". Please feel free")[0]
        where = traps.op_source_line(model, state.args_for(example), (aten,)) or aten
        state.findings.append(finding(
            "UNSUPPORTED_ATEN_OP", "error",
            f"the exporter cannot translate {aten} at opset {state.opset}: {message}", where,
            f"try a newer --opset, the dynamo exporter (--exporter dynamo, torch 2.5+), or rewrite {aten} "
            "with supported ops (a decomposition); a custom op needs a plugin in every target runtime",
            source=aten))
    else:
        state.findings.append(finding("EXPORT_FAILED", "error", f"{type(error).__name__}: {message}", "",
                                      "see the exporter's message; --exporter dynamo may get further"))


def differential_trace(state, model, example, path):
    """Export again with other values and every dynamic axis resized; compare the graphs."""
    import numpy as np
    import onnx
    other = {label: state.other_size(label, size) for label, size in state.examples.items()}
    for group in state.couplings:  # labels PyTorch needs resized together move with the group's first
        other = coupled_sizes(dict(other, **{label: state.examples[label] for label in group[1:]}),
                              state.examples, [group], group[0]) or other
    other = with_derived(other, state.derived)
    rng = np.random.default_rng(11)
    arrays = state.generate_inputs(other, rng)
    flipped = False  # whether some input's values moved to the other side of zero
    for spec in state.inputs:
        values = arrays[spec["name"]]
        domain = state.domains.get(spec["name"]) or {}
        if values.dtype.kind == "f" and values.size and domain.get("low", -1) < 0 and "constant" not in domain:
            # move the mean to the other side of zero: value branches flip (where the example
            # itself has both signs: a domain of non-negative values stays in it)
            values = (values - values.mean() - 2 * example[spec["name"]].mean()).astype(values.dtype)
            flipped = True
        arrays[spec["name"]] = values
    # Into a file of its own folder, never a buffer: a model over 2 GiB can only be written with
    # its weights beside it (in memory the exporter refuses it, and the trace proved nothing).
    folder = temporary_path(os.path.join(state.out, ".second-trace"))
    os.makedirs(folder)
    second_path = os.path.join(folder, "second.onnx")
    import torch
    try:
        try:
            context = torch.no_grad if not state.fast_path_retried() else torch.enable_grad
            exporter_child.run_recording_warnings(
                state, lambda: exported_under(context, state, model, arrays, second_path), action="ignore")
            if not state.scripted_lists(model):  # named as the first export was
                name_constant_outputs(second_path, state.output_names)
        except Exception as error:
            state.findings.append(finding(
                "TRACER_WARNING", "warning",
                f"the second trace (at {other}) failed, so it proves nothing: {type(error).__name__}: {error}",
                "", "make the model accept every size production sends"))
            return
        # The graphs without their weights: only the small integer constants are read, from the file.
        first = onnx.load(path, load_external_data=False)
        second = onnx.load(second_path, load_external_data=False)
        traps.load_small_external_tensors(first, os.path.dirname(path))
        traps.load_small_external_tensors(second, folder)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    if state.scripted_lists(model):  # as the first export was
        traps.expand_sequences(second, state.output_names, state.output_groups, state.output_ranks)
    differences = traps.diff_graphs(first, second, state.examples, other)
    state.findings += differences
    if not any(f["code"] == "DATA_DEPENDENT_CONTROL_FLOW" for f in differences):
        # The branch the tracer warned about took the same path at other values and sizes
        # (e.g. a test on a fixed image size): still a risk, no longer a proven problem.
        for f in state.findings:
            if f["code"] == "DATA_DEPENDENT_CONTROL_FLOW" and f["severity"] == "error":
                f["severity"] = "warning"
                tried = ("values of the other sign" if flipped else
                         "other values in the example's domain (no input has negative values, so no other "
                         "sign was tried)")
                f["message"] += (f"; tracing again at {other} with {tried} gave the same graph, "
                                 "so it held for the shapes and values tried")


def translation_table(model):
    """The model's `onnx_translation_table` ({torch op: onnxscript function}), looked for on the
    model and on the module a wrapper holds as `.model`; None when it has none."""
    for candidate in (model, getattr(model, "model", None)):
        table = getattr(candidate, "onnx_translation_table", None)
        if table:
            return dict(table)
    return None
