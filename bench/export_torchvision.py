"""Exports torchvision classification architectures with `onnxproof export` (the default opset,
dynamic batch, one sample per shape case) and prints a Markdown table: exit code, wall time,
findings. (The 2026-12-02 table in bench/RESULTS.md was made with torch 1.13 at opset 17.)

    .venv/bin/python bench/export_torchvision.py build/bin/onnxproof [NAME ...]
"""
import json
import os
import subprocess
import sys
import tempfile
import time

DEFAULT = ["alexnet", "convnext_tiny", "densenet121", "efficientnet_b0", "efficientnet_v2_s", "googlenet",
           "inception_v3", "mnasnet0_5", "mobilenet_v2", "mobilenet_v3_small", "regnet_x_400mf", "regnet_y_400mf",
           "resnet18", "resnet50", "resnext50_32x4d", "shufflenet_v2_x0_5", "squeezenet1_0", "swin_t", "vgg11",
           "vit_b_16", "wide_resnet50_2"]


def main():
    binary = sys.argv[1]
    names = sys.argv[2:] or DEFAULT
    print("| architecture | exit | wall s | export s | findings (severity code) |")
    print("| --- | ---: | ---: | ---: | --- |")
    for name in names:
        size = 299 if name == "inception_v3" else 224
        with tempfile.TemporaryDirectory() as out:
            start = time.perf_counter()
            result = subprocess.run([binary, "export", "--model", f"torchvision:{name}", "--input",
                                     f"input=1x3x{size}x{size}:float32", "--dynamic", "input:0=batch",
                                     "--samples", "1", "--out", out], capture_output=True, text=True)
            wall = time.perf_counter() - start
            path = os.path.join(out, "export.json")
            if os.path.exists(path):
                with open(path) as handle:
                    manifest = json.load(handle)
                findings = sorted({f"{f['severity']} {f['code']}" for f in manifest["findings"]})
                export_s = manifest["timings_s"].get("export", float("nan"))
            else:
                findings = [result.stderr.strip().splitlines()[-1] if result.stderr.strip() else "no manifest"]
                export_s = float("nan")
        print(f"| {name} | {result.returncode} | {wall:.1f} | {export_s:.2f} | {'; '.join(findings) or 'none'} |",
              flush=True)


if __name__ == "__main__":
    main()
