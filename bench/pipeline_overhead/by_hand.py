"""The script a user writes by hand instead of `onnxproof pipeline` (the baseline of
bench/pipeline_overhead/run.py): build the model, torch.onnx.export(..., dynamo=True) with the
dynamic axes, then ONNX Runtime checked against PyTorch at the sizes given (numpy allclose).

    .venv/bin/python bench/pipeline_overhead/by_hand.py SPEC OUT.onnx SIZE [SIZE ...]

SPEC is an onnxproof family spec (torchvision:resnet18, timm:NAME, hf:CLASS): the same model, built
the same way (onnxproof.families.load, random weights, seed 0), as the pipeline proves. Each SIZE
is a batch size (the other dynamic axes, e.g. a text model's sequence, keep the family's sizes). Exits 1
when ONNX Runtime and PyTorch disagree.
"""
import sys

import numpy as np
import onnxruntime
import torch

from onnxproof import families


def inputs_at(defaults, size, generator):
    """The family's inputs with the batch axes set to `size` (None: the family's own)."""
    dynamic = {(d["input"], d["axis"]) for d in defaults["dynamic"] if d["label"] == "batch" and size}
    tensors = []
    for spec in defaults["inputs"]:
        dims = [size if (spec["name"], axis) in dynamic else dim for axis, dim in enumerate(spec["dims"])]
        if spec["dtype"].startswith("int"):
            low, high = spec.get("range", [0, 100])
            tensors.append(torch.randint(int(low), int(high), dims, generator=generator,
                                         dtype=getattr(torch, spec["dtype"])))
        else:
            tensors.append(torch.randn(dims, generator=generator))
    return tuple(tensors)


def main():
    spec, path, sizes = sys.argv[1], sys.argv[2], [int(s) for s in sys.argv[3:]]
    model, _, defaults = families.load(spec)
    generator = torch.Generator().manual_seed(0)
    example = inputs_at(defaults, None, generator)
    names = [i["name"] for i in defaults["inputs"]]
    dynamic_shapes = {name: {} for name in names}
    for d in defaults["dynamic"]:
        dynamic_shapes[d["input"]][d["axis"]] = torch.export.Dim.AUTO
    torch.onnx.export(model, example, path, dynamo=True, input_names=names,
                      dynamic_shapes=tuple(dynamic_shapes[n] for n in names))
    session = onnxruntime.InferenceSession(path, providers=["CPUExecutionProvider"])
    for size in sizes:
        args = inputs_at(defaults, size, generator)
        with torch.no_grad():
            expected = model(*args)
        expected = [expected] if isinstance(expected, torch.Tensor) else list(expected.values()) \
            if isinstance(expected, dict) else list(expected)
        actual = session.run(None, {n: a.numpy() for n, a in zip(names, args)})
        for e, a in zip(expected, actual):
            np.testing.assert_allclose(a, e.numpy(), rtol=1e-3, atol=1e-4)
    print(f"by hand: {spec} exported and checked at sizes {sizes}")


if __name__ == "__main__":
    sys.exit(main())
