"""onnxproof.prove() on a family spec, for bench/pipeline_overhead/run.py --prove: what a notebook
user writes instead of the command line, on the same model (built as by_hand.py builds it) with
the same dynamic axes; exit 0 on a pass, 1 otherwise.

    .venv/bin/python bench/pipeline_overhead/prove_spec.py SPEC OUT_DIR
"""
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import by_hand  # noqa: E402 -- beside this file
import onnxproof  # noqa: E402


def main():
    spec, out = sys.argv[1], sys.argv[2]
    model, defaults = by_hand.load(spec)
    example = by_hand.inputs_at(defaults, {}, torch.Generator().manual_seed(0))
    names = [item["name"] for item in defaults["inputs"]]
    shapes = [{} for _ in names]  # in argument order, as torch.export spells them
    for axis in defaults["dynamic"]:
        shapes[names.index(axis["input"])][axis["axis"]] = torch.export.Dim(axis["label"])
    report = onnxproof.prove(model, example, dynamic_shapes=tuple(shapes), exporter="dynamo", out=out, quiet=True)
    return 0 if report.verdict == "pass" else 1


if __name__ == "__main__":
    sys.exit(main())
