"""What the installed torch's ONNX exporters do with two models, as JSON (docs/torch-2.15.md).

Run it with each torch to compare (the numbers of docs/torch-2.15.md came from .venv with torch
2.15.0 and a .venv made from the previous lock with torch 2.14.1):

    .venv/bin/python bench/torch_export_compare.py > torch-2.15.json

For ResNet-18 (torchvision, random weights, 1x3x224x224), a small BERT (transformers'
BertModel from its config: 2 layers, hidden 64, 16 tokens) and a two-layer LSTM (2x5x8), each
exported by torch.onnx.export with no exporter named (the default), dynamo=True and dynamo=False,
each with a static shape and with one dynamic axis (the batch; the LSTM's sequence) through
dynamic_axes: whether it exported, the seconds it took (first and second run in this
process), the warnings and printed lines it gave, the opset and IR version written, node counts
and the most used operators, and ONNX Runtime's largest difference from PyTorch's output (for a
dynamic axis, also at a size 3 larger than the example's). Also the
exporter's defaults (torch.onnx.export's signature, the opset constants), and the names
torch.onnx offers.
"""
import contextlib
import collections
import inspect
import io
import json
import logging
import os
import re
import sys
import tempfile
import time
import warnings

import numpy as np
import onnx
import onnxruntime
import torch


def resnet18():
    import torchvision
    torch.manual_seed(0)
    return torchvision.models.resnet18(weights=None).eval(), (torch.randn(1, 3, 224, 224),), ["x"], ["logits"], 0


class Bert(torch.nn.Module):
    def __init__(self):
        super().__init__()
        import transformers
        config = transformers.BertConfig(vocab_size=512, hidden_size=64, num_hidden_layers=2, num_attention_heads=2,
                                         intermediate_size=128, max_position_embeddings=64)
        self.bert = transformers.BertModel(config)

    def forward(self, input_ids):
        return self.bert(input_ids=input_ids).last_hidden_state


def small_bert():
    torch.manual_seed(0)
    return Bert().eval(), (torch.randint(0, 512, (1, 16)),), ["input_ids"], ["hidden"], 0


class Lstm(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lstm = torch.nn.LSTM(8, 16, num_layers=2, batch_first=True)

    def forward(self, x):
        return self.lstm(x)[0]


def lstm():
    """torch 2.15 changed the dynamo exporter's LSTM/GRU decompositions for a dynamic sequence axis."""
    torch.manual_seed(0)
    return Lstm().eval(), (torch.randn(2, 5, 8),), ["x"], ["y"], 1


def first_line(text):
    text = re.sub(r"\x1b\[[0-9;]*m", "", str(text)).strip()
    return text.splitlines()[0][:240] if text else ""


def summarize(path):
    model = onnx.load(path)
    ops = collections.Counter(node.op_type for node in model.graph.node)
    function_nodes = sum(len(f.node) for f in model.functions)
    return {
        "opset": next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), None),
        "other_domains": sorted(f"{o.domain}:{o.version}" for o in model.opset_import if o.domain not in ("", "ai.onnx")),
        "ir_version": model.ir_version,
        "producer": f"{model.producer_name} {model.producer_version}",
        "nodes": len(model.graph.node),
        "function_nodes": function_nodes,
        "initializers": len(model.graph.initializer),
        "top_ops": ops.most_common(6),
        "bytes": os.path.getsize(path) + sum(os.path.getsize(os.path.join(os.path.dirname(path), f))
                                             for f in os.listdir(os.path.dirname(path)) if f.endswith(".data")),
        "input_shapes": [[d.dim_param or d.dim_value for d in i.type.tensor_type.shape.dim] for i in model.graph.input],
    }


def parity(path, model, args):
    session = onnxruntime.InferenceSession(path, providers=["CPUExecutionProvider"])
    feeds = {i.name: a.numpy() for i, a in zip(session.get_inputs(), args)}
    got = session.run(None, feeds)[0]
    with torch.no_grad():
        want = model(*args).numpy()
    return float(np.max(np.abs(got - want)))


def other_size(args, axis):
    """The first input with its dynamic axis 3 longer (token ids stay token ids)."""
    first = args[0]
    shape = list(first.shape)
    shape[axis] += 3
    other = torch.randint(0, 512, shape) if first.dtype == torch.int64 else torch.randn(shape)
    return (other,) + tuple(args[1:])


def export_once(model, args, names, outputs, axis, exporter, dynamic, folder):
    path = os.path.join(folder, "model.onnx")
    kwargs = dict(input_names=names, output_names=outputs)
    if exporter != "default":
        kwargs["dynamo"] = exporter == "dynamo"
    if dynamic:
        kwargs["dynamic_axes"] = {names[0]: {axis: "n"}, outputs[0]: {axis: "n"}}
    printed, logged = io.StringIO(), io.StringIO()
    handler = logging.StreamHandler(logged)
    logging.getLogger().addHandler(handler)
    start = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught, contextlib.redirect_stdout(printed), \
            contextlib.redirect_stderr(printed):
        warnings.simplefilter("always")
        try:
            result = torch.onnx.export(model, args, path, **kwargs)
            error = None
        except Exception as exc:  # noqa: BLE001 - the point is to record it
            cause = exc.__cause__ or exc.__context__
            result, error = None, f"{type(exc).__name__}: {first_line(exc)}" + (
                f" (cause: {type(cause).__name__}: {first_line(cause)})" if cause else "")
    seconds = time.perf_counter() - start
    logging.getLogger().removeHandler(handler)
    row = {"seconds": round(seconds, 2), "error": error,
           "returned": type(result).__name__,
           "warnings": sorted({f"{w.category.__name__}: {first_line(w.message)}" for w in caught}),
           "printed": [first_line(line) for line in (printed.getvalue() + logged.getvalue()).splitlines()
                       if line.strip()][:12]}
    if error is None and os.path.exists(path):
        row.update(summarize(path))
        row["max_abs_diff_ort"] = parity(path, model, args)
        if dynamic:
            try:
                row["max_abs_diff_ort_other_size"] = parity(path, model, other_size(args, axis))
            except Exception as exc:  # noqa: BLE001 - ONNX Runtime refusing the size is the finding
                row["max_abs_diff_ort_other_size"] = f"{type(exc).__name__}: {first_line(exc)[:160]}"
    return row


def exporter_facts():
    from torch.onnx import _constants
    signature = inspect.signature(torch.onnx.export)
    facts = {
        "torch": torch.__version__,
        "onnx": onnx.__version__,
        "onnxruntime": onnxruntime.__version__,
        "export_defaults": {name: repr(p.default) for name, p in signature.parameters.items()
                            if p.default is not inspect.Parameter.empty},
        "constants": {name: getattr(_constants, name) for name in dir(_constants)
                      if name.isupper() and isinstance(getattr(_constants, name), int)},
        "torch_onnx_names": sorted(name for name in dir(torch.onnx) if not name.startswith("_")),
    }
    try:
        import onnxscript
        facts["onnxscript"] = onnxscript.__version__
    except ImportError:
        facts["onnxscript"] = None
    try:
        from torch.onnx._internal.exporter import _constants as exporter_constants
        facts["dynamo_constants"] = {name: getattr(exporter_constants, name) for name in dir(exporter_constants)
                                     if name.isupper() and isinstance(getattr(exporter_constants, name), (int, str))}
    except ImportError as exc:
        facts["dynamo_constants"] = str(exc)
    # What calling the TorchScript pieces says (a deprecation is a warning on the call).
    for name, call in (("torch.jit.trace", lambda: torch.jit.trace(torch.nn.Linear(2, 2), torch.randn(1, 2))),
                       ("torch.jit.script", lambda: torch.jit.script(torch.nn.Linear(2, 2))),
                       ("torch.onnx.dynamo_export", lambda: torch.onnx.dynamo_export(torch.nn.Linear(2, 2),
                                                                                     torch.randn(1, 2)))):
        with warnings.catch_warnings(record=True) as caught, contextlib.redirect_stdout(io.StringIO()):
            warnings.simplefilter("always")
            try:
                call()
                outcome = "ok"
            except Exception as exc:  # noqa: BLE001
                outcome = f"{type(exc).__name__}: {first_line(exc)}"
        facts[name] = {"outcome": outcome,
                       "warnings": sorted({f"{w.category.__name__}: {first_line(w.message)}" for w in caught})}
    return facts


def main():
    report = {"facts": exporter_facts(), "exports": []}
    for build in (resnet18, small_bert, lstm):
        model, args, names, outputs, axis = build()
        for exporter in ("default", "dynamo", "torchscript"):
            # Dynamic first: after a static export of an LSTM, no later dynamic LSTM export in the
            # same process keeps its sequence axis (torch 2.14 and 2.15 alike; the last check below).
            for dynamic in (True, False):
                runs = []
                for _ in range(2):
                    with tempfile.TemporaryDirectory() as folder:
                        runs.append(export_once(model, args, names, outputs, axis, exporter, dynamic, folder))
                row = runs[0]
                row["seconds_second_run"] = runs[1]["seconds"]
                row["second_run_error"] = runs[1]["error"]
                row.update(model=build.__name__, exporter=exporter, dynamic=dynamic)
                report["exports"].append(row)
                print(f"{build.__name__} {exporter} dynamic={dynamic}: {row['seconds']} s, {row.get('error')}",
                      file=sys.stderr)
    # A fresh LSTM instance, exported with a dynamic sequence axis after the static exports above.
    model, args, names, outputs, axis = lstm()
    with tempfile.TemporaryDirectory() as folder:
        report["facts"]["lstm_dynamic_after_static"] = export_once(model, args, names, outputs, axis, "dynamo", True,
                                                                   folder)
    json.dump(report, sys.stdout, indent=1, default=str)


if __name__ == "__main__":
    main()
