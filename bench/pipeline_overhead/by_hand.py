"""The script a user writes by hand instead of `onnxproof pipeline` (the baseline of
bench/pipeline_overhead/run.py): build the model, torch.onnx.export(..., dynamo=True) with the
dynamic axes, then ONNX Runtime checked against PyTorch on the same cases the pipeline proved
(numpy allclose).

    .venv/bin/python bench/pipeline_overhead/by_hand.py SPEC OUT.onnx CASES.json

BY_HAND_EXPORTER=torchscript exports with the TorchScript exporter (dynamic_axes) instead of
dynamo; BY_HAND_OPSET=N at opset N (the exporter's default otherwise). SPEC is an onnxproof family spec (torchvision:resnet18, timm:NAME, hf:CLASS): the same model, built
the same way (onnxproof.torch.families.load, random weights, seed 0), as the pipeline proves; or FILE.py:NAME,
whose NAME() builds the model and whose DEFAULTS describe its inputs as the families do
(large_bert.py). CASES.json
is the pipeline's reference/cases.json: one comparison per case it lists, with every dynamic axis
at that case's size (random inputs of those sizes; the other axes keep the family's sizes). Exits 1
when ONNX Runtime and PyTorch disagree.
"""
import importlib.util
import json
import os
import sys

import numpy as np
import onnxruntime
import torch

from onnxproof.torch import families


def inputs_at(defaults, sizes, generator):
    """The family's inputs with each dynamic axis at its label's size in `sizes`."""
    axes = {(d["input"], d["axis"]): d["label"] for d in defaults["dynamic"]}
    tensors = []
    for spec in defaults["inputs"]:
        dims = [sizes.get(axes.get((spec["name"], axis)), dim) for axis, dim in enumerate(spec["dims"])]
        if spec["dtype"].startswith("int"):
            low, high = spec.get("range", [0, 100])
            tensors.append(torch.randint(int(low), int(high), dims, generator=generator,
                                         dtype=getattr(torch, spec["dtype"])))
        else:
            tensors.append(torch.randn(dims, generator=generator))
    return tuple(tensors)


def as_list(outputs):
    if isinstance(outputs, torch.Tensor):
        return [outputs]
    if isinstance(outputs, dict):
        return [value for value in outputs.values() if isinstance(value, torch.Tensor)]
    if hasattr(outputs, "to_tuple"):  # transformers' ModelOutput
        return [value for value in outputs.to_tuple() if isinstance(value, torch.Tensor)]
    return list(outputs)


def is_file_spec(spec):
    return spec.partition(":")[0].endswith(".py")


def spec_module(spec):
    """The module of a FILE.py:NAME spec, imported."""
    path = spec.partition(":")[0]
    module_spec = importlib.util.spec_from_file_location(os.path.splitext(os.path.basename(path))[0], path)
    module = importlib.util.module_from_spec(module_spec)
    module_spec.loader.exec_module(module)
    return module


def load(spec):
    """(model, defaults) of a family spec or a FILE.py:NAME spec."""
    if not is_file_spec(spec):
        model, _, defaults = families.load(spec)
        return model, defaults
    module = spec_module(spec)
    return getattr(module, spec.partition(":")[2])(), module.DEFAULTS


def main():
    spec, path, cases_path = sys.argv[1], sys.argv[2], sys.argv[3]
    with open(cases_path) as handle:
        cases = [case["sizes"] for case in json.load(handle)["cases"]]
    model, defaults = load(spec)
    generator = torch.Generator().manual_seed(0)
    example = inputs_at(defaults, {}, generator)
    names = [i["name"] for i in defaults["inputs"]]
    dynamic_shapes = {name: {} for name in names}
    for d in defaults["dynamic"]:
        dynamic_shapes[d["input"]][d["axis"]] = torch.export.Dim.AUTO
    opset = {"opset_version": int(os.environ["BY_HAND_OPSET"])} if os.environ.get("BY_HAND_OPSET") else {}
    if os.environ.get("BY_HAND_EXPORTER", "dynamo") == "dynamo":
        torch.onnx.export(model, example, path, dynamo=True, input_names=names,
                          dynamic_shapes=tuple(dynamic_shapes[n] for n in names), **opset)
    else:  # what a TorchScript user writes: dynamic_axes by label
        dynamic_axes = {d["input"]: {} for d in defaults["dynamic"]}
        for d in defaults["dynamic"]:
            dynamic_axes[d["input"]][d["axis"]] = d["label"]
        with torch.no_grad():
            torch.onnx.export(model, example, path, dynamo=False, input_names=names, dynamic_axes=dynamic_axes, **opset)
    session = onnxruntime.InferenceSession(path, providers=["CPUExecutionProvider"])
    for sizes in cases:
        args = inputs_at(defaults, sizes, generator)
        with torch.no_grad():
            expected = as_list(model(*args))
        actual = session.run(None, {n: a.numpy() for n, a in zip(names, args)})
        for e, a in zip(expected, actual):
            np.testing.assert_allclose(a, e.numpy(), rtol=1e-3, atol=1e-4)
    print(f"by hand: {spec} exported and checked on {len(cases)} cases")


if __name__ == "__main__":
    sys.exit(main())
