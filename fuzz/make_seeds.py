#!/usr/bin/env python3
"""Writes the fuzz targets' seed corpus into DIR/<target>/ (valid and near-valid inputs of each
format, made with the pinned onnx and numpy): python fuzz/make_seeds.py DIR"""
import io
import json
import pathlib
import struct
import sys

import numpy as np
import onnx
from onnx import helper, numpy_helper, TensorProto


def model_seeds():
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 4])
    weight = numpy_helper.from_array(np.ones((4, 4), np.float32), "w")
    shape = numpy_helper.from_array(np.array([-1, 4], np.int64), "shape")
    nodes = [helper.make_node("MatMul", ["x", "w"], ["m"]), helper.make_node("Reshape", ["m", "shape"], ["r"]),
             helper.make_node("Relu", ["r"], ["y"])]
    plain = helper.make_model(helper.make_graph(nodes, "g", [x], [y], [weight, shape]))
    branch = helper.make_graph([helper.make_node("Identity", ["x"], ["b"])], "branch", [],
                               [helper.make_tensor_value_info("b", TensorProto.FLOAT, ["batch", 4])])
    cond = helper.make_tensor_value_info("cond", TensorProto.BOOL, [])
    with_if = helper.make_model(helper.make_graph(
        [helper.make_node("If", ["cond"], ["y"], then_branch=branch, else_branch=branch)], "g", [cond, x], [y]))
    external = onnx.ModelProto()
    external.CopyFrom(plain)
    tensor = external.graph.initializer[0]
    tensor.ClearField("raw_data")
    tensor.data_location = TensorProto.EXTERNAL
    for key, value in (("location", "../outside.bin"), ("offset", "0"), ("length", "64")):
        tensor.external_data.add(key=key, value=value)
    return {"plain.onnx": plain.SerializeToString(), "if.onnx": with_if.SerializeToString(),
            "external.onnx": external.SerializeToString()}


def _external(tensor, location, offset, length, *extra):
    tensor.ClearField("raw_data")
    tensor.data_location = TensorProto.EXTERNAL
    for key, value in (("location", location), ("offset", str(offset)), ("length", str(length)), *extra):
        tensor.external_data.add(key=key, value=value)


def folder_seeds():
    """A modern model (IR 10, opsets 21 and 23) whose weights lie in weights.bin and sub/more.bin,
    framed for fuzz_model_folder, then one seed per hostile external-data reference."""
    weights = np.arange(16, dtype=np.float32)
    more = np.full(16, 2, np.float32)

    def model(opset, first=("weights.bin", 0, 64), second=("sub/more.bin", 0, 64), extra=()):
        x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 4])
        y = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 4])
        w = numpy_helper.from_array(weights.reshape(4, 4), "w")
        b = numpy_helper.from_array(more.reshape(4, 4), "b")
        _external(w, *first, *extra)
        _external(b, *second)
        branch = helper.make_graph([helper.make_node("Identity", ["m"], ["t"])], "then", [],
                                   [helper.make_tensor_value_info("t", TensorProto.FLOAT, ["batch", 4])])
        nodes = [helper.make_node("MatMul", ["x", "w"], ["m"]), helper.make_node("Add", ["m", "b"], ["y"]),
                 helper.make_node("If", ["c"], ["z"], then_branch=branch, else_branch=branch)]
        c = helper.make_tensor_value_info("c", TensorProto.BOOL, [])
        z = helper.make_tensor_value_info("z", TensorProto.FLOAT, ["batch", 4])
        graph = helper.make_graph(nodes, "g", [x, c], [y, z], [w, b])
        made = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
        made.ir_version = 10
        return made.SerializeToString()

    def framed(model_bytes):
        data = weights.tobytes()
        return struct.pack("<I", len(model_bytes)) + model_bytes + struct.pack("<I", len(data)) + data + more.tobytes()

    hostile = {"outside": ("../outside/secret.bin", 0, 64), "link": ("link.bin", 0, 64),
               "folder_link": ("away/secret.bin", 0, 64), "nested": ("sub/../../outside/secret.bin", 0, 64),
               "absolute": ("/etc/passwd", 0, 64), "drive": ("C:\\outside\\secret.bin", 0, 64),
               "unc": ("\\\\server\\share\\secret.bin", 0, 64), "past_end": ("weights.bin", 60, 64),
               "negative": ("weights.bin", -8, 64), "overflow": ("weights.bin", 0, 2**64 - 4),
               "self": ("model.onnx", 0, 64)}
    seeds = {"opset21": framed(model(21)), "opset23": framed(model(23))}
    for name, first in hostile.items():
        seeds[name] = framed(model(23, first=first))
    seeds["unknown_keys"] = framed(model(23, extra=(("checksum", "0"), ("location", "../outside/secret.bin"))))
    return seeds


def tensor_seeds():
    seeds = {}
    for name, array in (("float", np.arange(6, dtype=np.float32).reshape(2, 3)), ("int64", np.array([1, -2], np.int64)),
                        ("bool", np.array([True, False])), ("scalar", np.array(1.5, np.float64))):
        seeds[f"{name}.pb"] = b"\x01" + numpy_helper.from_array(array, name).SerializeToString()
        buffer = io.BytesIO()
        np.save(buffer, array)
        seeds[f"{name}.npy"] = b"\x00" + buffer.getvalue()
    strings = helper.make_tensor("s", TensorProto.STRING, [2], [b"a", b"bc"])
    seeds["string.pb"] = b"\x01" + strings.SerializeToString()
    int4 = helper.make_tensor("q", TensorProto.INT4, [3], [1, -2, 3])
    seeds["int4.pb"] = b"\x01" + int4.SerializeToString()
    return seeds


def manifest_seeds():
    base = {"schema": "onnxproof.golden/1", "model_sha256": "0" * 64, "data_sets": 1,
            "tolerances": {"y": {"rtol": 0.001, "atol": 1e-05}},
            "files": {"test_data_set_0/input_0.pb": "0" * 64, "test_data_set_0/output_0.pb": "0" * 64}}
    hostile = dict(base, files={"../../etc/passwd": "0" * 64})
    loose = dict(base, tolerances={"y": {"rtol": 1e9, "atol": 1}})
    # Found by the fuzzer: a count beyond int (undefined behaviour when converted); kept as a seed.
    huge_count = dict(base, data_sets=1e26)
    return {name: json.dumps(value).encode() for name, value in
            (("valid.json", base), ("hostile.json", hostile), ("loose.json", loose), ("huge_count.json", huge_count))}


def spec_seeds():
    texts = [b"\x00x=1x3x224x224:float32", b"\x00ids=2x7:int64:0..1000", b"\x01x:0=batch", b"\x02batch=1,3,8",
             b"\x03logits=1e-2,1e-4",
             b'\x04{"code": "FROZEN_DIMENSION", "severity": "error", "step": "check", "message": "m", '
             b'"evidence": {"axis": "batch", "sizes": {"batch": 3}}}',
             b'\x05{"schema": "onnxproof.cases/1", "dynamic_axes": {"batch": 2}, '
             b'"cases": [{"data_set": "test_data_set_0", "sizes": {"batch": 2}, "sample": 0, "source": "generated"}]}',
             b'\x06{"schema": "onnxproof.export/1", "exporter": "torchscript", "versions": {"torch": "2.14.1"}, '
             b'"findings": [], "onnx_model": {"path": "model.onnx", "sha256": "00"}, '
             b'"inputs": [{"name": "x", "dims": [2, 8], "dtype": "float32"}], '
             b'"options": {"dynamic": [{"input": "x", "axis": 0, "label": "batch"}]}, '
             b'"outputs": [{"name": "y", "dynamic_axes": {"0": "batch"}}]}']
    return {f"spec_{i}": text for i, text in enumerate(texts)}


def main(out):
    root = pathlib.Path(out)
    for target, seeds in (("fuzz_model_loader", model_seeds()), ("fuzz_model_folder", folder_seeds()),
                          ("fuzz_tensor_files", tensor_seeds()),
                          ("fuzz_golden_manifest", manifest_seeds()), ("fuzz_specs", spec_seeds())):
        folder = root / target
        folder.mkdir(parents=True, exist_ok=True)
        for name, data in seeds.items():
            (folder / name).write_bytes(data)


if __name__ == "__main__":
    main(sys.argv[1])
