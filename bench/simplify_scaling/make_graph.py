#!/usr/bin/env python3
"""A generated graph of N nodes for the simplify scaling benchmark: a chain of blocks, each with
work that stays (Add, Relu), no-ops the simplifier removes (Identity, a Cast to the same type, a
Reshape to the same static shape, an identity Transpose) and a Shape -> Gather -> Unsqueeze ->
Concat chain over static sizes that folds away.

    .venv/bin/python bench/simplify_scaling/make_graph.py N OUT.onnx
"""
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

BLOCK = 10  # nodes per block


def make(nodes, path):
    blocks = max(1, nodes // BLOCK)
    graph_nodes, initializers = [], [numpy_helper.from_array(np.array([4, 8], dtype=np.int64), "shape_4x8"),
                                     numpy_helper.from_array(np.ones((4, 8), dtype=np.float32), "one"),
                                     numpy_helper.from_array(np.array([0], dtype=np.int64), "index_0")]
    value = "x"
    for b in range(blocks):
        p = f"b{b}_"
        graph_nodes += [
            helper.make_node("Add", [value, "one"], [p + "add"]),
            helper.make_node("Identity", [p + "add"], [p + "id"]),
            helper.make_node("Cast", [p + "id"], [p + "cast"], to=TensorProto.FLOAT),
            helper.make_node("Shape", [p + "cast"], [p + "shape"]),
            helper.make_node("Gather", [p + "shape", "index_0"], [p + "rows"], axis=0),
            helper.make_node("Concat", [p + "rows", "shape_4x8"], [p + "cat"], axis=0),
            helper.make_node("Slice", [p + "cat", "index_0", "index_0"], [p + "unused"]),
            helper.make_node("Reshape", [p + "cast", "shape_4x8"], [p + "reshape"]),
            helper.make_node("Transpose", [p + "reshape"], [p + "t"], perm=[0, 1]),
            helper.make_node("Relu", [p + "t"], [p + "relu"]),
        ]
        value = p + "relu"
    graph = helper.make_graph(graph_nodes, "chain", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 8])],
                              [helper.make_tensor_value_info(value, TensorProto.FLOAT, [4, 8])], initializers)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=10)
    model = onnx.shape_inference.infer_shapes(model)
    onnx.save(model, path)
    print(f"{path}: {len(model.graph.node)} nodes")


if __name__ == "__main__":
    make(int(sys.argv[1]), sys.argv[2])
