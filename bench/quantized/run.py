#!/usr/bin/env python3
"""Quantized models through onnxproof (issue 45): a PT2E ResNet-18 and a PT2E BERT proved in
quantization steps, the same float models through --quantize static, and the five planted Q/DQ
defects of tests/python/quantized_plants.py in every one of those exports.

    .venv/bin/python bench/quantized/run.py [--work /tmp/onnxproof-quantized] [--engine build/bin/onnxproof]

Random weights (torchvision's and transformers' seeded initialisation: no download; ResNet-18's made
realistic as the pipeline's torchvision family makes them), a batch of 2,
calibrated on 8 seeded batches (PT2E) or on the reference's cases (--quantize static). Writes
bench/quantized/results.json and RESULTS.md: per export the verdict, the step histogram of every
output row against the reference and the reference's own float32-against-float64 histogram, the
seconds, and which plants failed."""
import argparse
import json
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "python"))
sys.path.insert(0, os.path.join(ROOT, "tests", "python"))


def models():
    """name -> (float model, example args, a seeded batch maker)."""
    import torch
    import torchvision
    from transformers import BertConfig, BertForSequenceClassification
    from onnxproof.torch.families import realistic_parameters
    torch.manual_seed(0)
    resnet = torchvision.models.resnet18(weights=None).eval()
    # As the pipeline's torchvision family does: biases and norm weights drawn, BatchNorm statistics
    # estimated on generated inputs. PyTorch's initial statistics (mean 0, variance 1) let the
    # activations grow layer by layer, and one rounding tie spreads to a quarter of the logits.
    realistic_parameters(resnet, {"inputs": [{"name": "x", "dims": [2, 3, 224, 224], "dtype": "float32"}]})
    bert = BertForSequenceClassification(BertConfig(num_hidden_layers=2, hidden_size=128, num_attention_heads=2,
                                                    intermediate_size=256)).eval()
    return {
        "resnet18": (resnet, (torch.randn(2, 3, 224, 224),), lambda: (torch.randn(2, 3, 224, 224),)),
        "bert": (bert, (torch.randint(0, 1000, (2, 16)),), lambda: (torch.randint(0, 1000, (2, 16)),)),
    }


def histograms(rows):
    return [{"case": r["case"], "output": r["output"], "optimization": r["optimization"], "status": r["status"],
             "onnx": r["steps"]["onnx"], "reference": r["steps"].get("source", r["steps"].get("pytorch")),
             "allowed": [r["steps"]["allowed_max"], r["steps"]["allowed_share"]]}
            for r in rows if r.get("steps")]


def plants(engine, model_path, reference, work):
    import onnx
    import quantized_plants
    caught = {}
    for name, plant in quantized_plants.PLANTS.items():
        try:
            planted = plant(onnx.load(model_path))
        except (ValueError, IndexError, StopIteration) as error:
            caught[name] = f"not planted: {error}"
            continue
        path = os.path.join(work, f"{name}.onnx")
        onnx.save(planted, path)
        done = subprocess.run([engine, "parity", path, "--reference", reference], capture_output=True, text=True)
        caught[name] = "caught" if done.returncode == 1 else (
            f"missed (exit {done.returncode}; the planted model's outputs are at most "
            f"{largest_difference(model_path, path, reference):.3g} from the correct export's)")
    return caught


def largest_difference(correct, planted, reference):
    """The largest |difference| between two models' outputs on the reference's first case, both
    run by ONNX Runtime: 0 says no comparison of outputs could tell them apart."""
    import numpy as np
    import onnx
    import onnxruntime
    from onnx import numpy_helper
    case = os.path.join(reference, "test_data_set_0")
    feeds, k = {}, 0
    while os.path.exists(os.path.join(case, f"input_{k}.pb")):
        tensor = onnx.load_tensor(os.path.join(case, f"input_{k}.pb"))
        feeds[tensor.name] = numpy_helper.to_array(tensor)
        k += 1
    outputs = [onnxruntime.InferenceSession(path).run(None, feeds) for path in (correct, planted)]
    return max(float(np.abs(a.astype(np.float64) - b).max()) for a, b in zip(*outputs))


def prove(model, args, out, **options):
    import onnxproof
    start = time.perf_counter()
    report = onnxproof.prove(model, args, out=out, quiet=True, **options)
    return report, time.perf_counter() - start


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--work", default="/tmp/onnxproof-quantized")
    parser.add_argument("--engine", default=os.path.join(ROOT, "build", "bin", "onnxproof"))
    options = parser.parse_args()
    os.environ.setdefault("ONNXPROOF_ENGINE", options.engine)
    from quantized_models import quantize_pt2e
    results = []
    for name, (model, args, batch) in models().items():
        converted = quantize_pt2e(model, args[0], [batch()[0] for _ in range(8)])
        for kind, source, extra, judged in (("pt2e", converted, {}, ("model.onnx", "reference")),
                                            ("quantize_static", model, {"quantize": "static"},
                                             ("model.quant.onnx", "reference-quant"))):
            out = os.path.join(options.work, f"{name}-{kind}")
            print(f"[{name} {kind}] proving", file=sys.stderr, flush=True)
            report, seconds = prove(source, args, out, **extra)
            with open(os.path.join(out, "report.json"), encoding="utf-8") as handle:
                document = json.load(handle)
            quantize = next((s for s in document["steps"] if s["name"] == "quantize"), None)
            rows = quantize["rows"] if quantize else document["parity"]
            scratch = os.path.join(options.work, f"{name}-{kind}-plants")
            os.makedirs(scratch, exist_ok=True)
            entry = {"model": name, "kind": kind, "verdict": report.verdict, "seconds": round(seconds, 1),
                     "findings": sorted({f"{f.code} ({f.severity})" for f in report.findings
                                         if f.severity in ("error", "warning")}),
                     "rows": histograms(rows),
                     "quantization_error": quantize["quantization_error"] if quantize else None,
                     "plants": plants(options.engine, os.path.join(out, judged[0]), os.path.join(out, judged[1]),
                                      scratch)}
            print(json.dumps({k: entry[k] for k in ("model", "kind", "verdict", "seconds", "plants")}),
                  file=sys.stderr, flush=True)
            results.append(entry)
    with open(os.path.join(HERE, "results.json"), "w", encoding="utf-8") as handle:
        json.dump({"schema": "onnxproof.bench.quantized/1", "results": results}, handle, indent=1)
    write_markdown(results)
    return 0


def write_markdown(results):
    import onnxruntime
    import torch
    import torchao
    lines = ["# Quantized models: results", "",
             f"`bench/quantized/run.py`: random weights, batch 2, torch {torch.__version__}, torchao "
             f"{torchao.__version__}, ONNX Runtime {onnxruntime.__version__}. Shares are the largest over the rows "
             "(cases x optimization levels); the reference is PyTorch's fake-quant graph (pt2e) or ONNX's "
             "reference evaluator (quantize_static).", "",
             "| model | source | verdict | seconds | rows | ONNX Runtime at 1 step (max share) | at 2+ (max) | "
             "reference's own float32 vs float64 at 1 step (max share) | plants caught |",
             "| --- | --- | --- | ---: | ---: | ---: | ---: | ---: | --- |"]
    for entry in results:
        rows = entry["rows"]
        share = lambda count: count["one"] / count["elements"] if count and count["elements"] else 0.0  # noqa: E731
        onnx_share = max((share(r["onnx"]) for r in rows), default=0.0)
        over = max((r["onnx"]["over"] for r in rows), default=0)
        own = max((share(r["reference"]) for r in rows if r["reference"]), default=0.0)
        caught = sum(v == "caught" for v in entry["plants"].values())
        lines.append(f"| {entry['model']} | {entry['kind']} | {entry['verdict']} | {entry['seconds']} | {len(rows)} | "
                     f"{100 * onnx_share:.1f}% | {over} | {100 * own:.1f}% | {caught} of {len(entry['plants'])} |")
    lines += ["", "Plants per export:", ""]
    for entry in results:
        lines.append(f"- {entry['model']} ({entry['kind']}): " +
                     ", ".join(f"{name} {outcome}" for name, outcome in entry["plants"].items()))
    with open(os.path.join(HERE, "RESULTS.md"), "w", encoding="utf-8") as handle:
        handle.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    sys.exit(main())
