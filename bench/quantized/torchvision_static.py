#!/usr/bin/env python3
"""torchvision classifiers through prove(quantize="static") (issue 57): ONNX Runtime's own
quantize_static (QDQ, int8) of MobileNetV3-Small, EfficientNet-B0 and ResNet-50, each proved in
quantization steps against ONNX's reference evaluator at every case and both optimization levels.

    PYTHONPATH=python .venv/bin/python bench/quantized/torchvision_static.py [--work /tmp/onnxproof-tv-static]

Random weights made realistic as the pipeline's torchvision family makes them (no download), a
batch of 2 at 224x224 with a dynamic batch (12 cases). Prints one line per model: the verdict,
the seconds, the quantize step's rows and failing rows, the largest share of logits ONNX Runtime
moved and the reference's own float32-against-float64 share."""
import argparse
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(HERE)), "python"))

MODELS = ("mobilenet_v3_small", "efficientnet_b0", "resnet50")


def prove(name, work):
    import torch
    import torchvision
    import onnxproof
    from onnxproof.torch.families import realistic_parameters
    torch.manual_seed(0)
    model = getattr(torchvision.models, name)(weights=None).eval()
    realistic_parameters(model, {"inputs": [{"name": "x", "dims": [2, 3, 224, 224], "dtype": "float32"}]})
    start = time.perf_counter()
    report = onnxproof.prove(model, (torch.randn(2, 3, 224, 224),), quantize="static", quiet=True, localize=False,
                             out=os.path.join(work, name), dynamic_axes={"x": {0: "batch"}})
    seconds = time.perf_counter() - start
    step = next(s for s in report.raw["steps"] if s["name"] == "quantize")
    rows = [row for row in step.get("rows", []) if row.get("steps")]

    def share(side):
        return max((row["steps"][side]["one"] + row["steps"][side]["over"]) / row["steps"][side]["elements"]
                   for row in rows if row["steps"].get(side))
    failing = sum(1 for row in rows if row["status"] != "pass")
    print(f"| {name} | {report.verdict} | {seconds:.0f} | {len(rows)} | {failing} | {share('onnx'):.1%} | "
          f"{share('source'):.1%} |", flush=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--work", default="/tmp/onnxproof-tv-static")
    options = parser.parse_args()
    print("| model | verdict | seconds | step rows | failing | ONNX Runtime moved (max share) | "
          "reference's twin moved (max share) |")
    print("| --- | --- | ---: | ---: | ---: | ---: | ---: |")
    for name in MODELS:
        prove(name, options.work)


if __name__ == "__main__":
    main()
