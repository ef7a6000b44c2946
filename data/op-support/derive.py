"""Derives onnxproof's operator support tables (one CSV per target) from the reference data in
../shared/data/op-support/ (its README cites every source). Run from the repository root:

    .venv/bin/python data/op-support/derive.py ../shared/data/op-support data/op-support

Every table has the same columns, so the loader needs no per-runtime code:
    domain,op_type,since_version,until_version,status,restrictions
status is supported | restricted | unsupported; since/until are the opset versions of the schema
a node resolves to (empty = open-ended). Header lines starting with '#' say what the table
describes: target, runtime and version, source, and the default-domain opset range.
"""
import csv
import os
import sys

HEADER = ["domain", "op_type", "since_version", "until_version", "status", "restrictions"]


def write(path, meta, rows):
    with open(path + ".tmp", "w", newline="") as out:
        for key, value in meta.items():
            out.write(f"# {key}: {value}\n")
        writer = csv.writer(out, lineterminator="\n")
        writer.writerow(HEADER)
        for row in sorted(rows, key=lambda r: (r[0], r[1], int(r[2] or 0))):
            writer.writerow(row)
    os.replace(path + ".tmp", path)


def onnxruntime(source, provider):
    rows = []
    with open(os.path.join(source, "onnxruntime.csv")) as handle:
        for row in csv.DictReader(handle):
            if row["provider"] == provider:
                rows.append([row["domain"], row["op_type"], row["since_version"], row["until_version"], "supported",
                             f"types: {row['types']}"])
    # Constant has no kernel in any provider: ONNX Runtime turns Constant nodes into initializers
    # when it loads the graph, so the kernel list never names it.
    if not any(row[0] == "ai.onnx" and row[1] == "Constant" for row in rows):
        rows.append(["ai.onnx", "Constant", "1", "", "supported",
                     "no kernel needed: ONNX Runtime turns Constant nodes into initializers when it loads the graph"])
    return rows


def tensorrt(source):
    rows = []
    with open(os.path.join(source, "tensorrt.csv")) as handle:
        for row in csv.DictReader(handle):
            if row["supported"] == "Y":
                status = "restricted" if row["restrictions"] else "supported"
            else:
                status = "unsupported"
            rows.append([row["domain"], row["op_type"], "", "", status, row["restrictions"]])
    return rows


def openvino(source):
    rows = []
    with open(os.path.join(source, "openvino.csv")) as handle:
        for row in csv.DictReader(handle):
            versions = [int(v) for v in row["supported_versions"].split(";") if v]
            if row["supported"] == "Y":
                status = "restricted" if row["notes"] else "supported"
                rows.append([row["domain"], row["op_type"], str(min(versions)) if versions else "", "", status, row["notes"]])
            else:
                rows.append([row["domain"], row["op_type"], "", "", "unsupported", row["notes"]])
    return rows


def main():
    source, target = sys.argv[1], sys.argv[2]
    ort_note = ("ONNX Runtime docs/OperatorKernels.md, main branch at commit 735e69a3 (2026-02-13, after 1.24); "
                "kernels registered for the provider")
    write(os.path.join(target, "ort-cuda.csv"),
          {"target": "ort-cuda", "runtime": "ONNX Runtime CUDAExecutionProvider (main, 2026-02, ~1.25)",
           "source": ort_note, "opset_range": "any"},
          onnxruntime(source, "CUDAExecutionProvider"))
    write(os.path.join(target, "ort-cpu-documented.csv"),
          {"target": "ort-cpu", "runtime": "ONNX Runtime CPUExecutionProvider (main, 2026-02, ~1.25)",
           "source": ort_note, "opset_range": "any"},
          onnxruntime(source, "CPUExecutionProvider"))
    write(os.path.join(target, "tensorrt.csv"),
          {"target": "tensorrt", "runtime": "TensorRT 10.15 ONNX parser",
           "source": "onnx/onnx-tensorrt docs/operators.md for TensorRT 10.15 (GA 2026-02-02)",
           "opset_range": "9-24"},
          tensorrt(source))
    write(os.path.join(target, "openvino.csv"),
          {"target": "openvino", "runtime": "OpenVINO ONNX frontend (master, commit 0ae60f0f, 2025 or later)",
           "source": "openvinotoolkit/openvino src/frontends/onnx/docs/supported_ops.md at 0ae60f0f; "
                     "since_version is the lowest opset with a registered translator",
           "opset_range": "any"},
          openvino(source))
    return 0


if __name__ == "__main__":
    sys.exit(main())
