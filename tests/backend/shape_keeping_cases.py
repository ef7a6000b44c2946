"""Backend-style cases of onnxproof's own: nodes whose output has their input's shape, some with
different values (a reversal, a shift, a transpose of a square, a gather that permutes, a lossy
cast round trip) and some true no-ops. ONNX's suite has none that keeps the shape and changes the
values with constant arguments, the pattern a shape-only simplify rule gets wrong (torch.flip and
reflection padding export such Slices). The expected outputs come from numpy, independent of ONNX
Runtime and of onnxproof; generate_node_data.py writes them as the "shape-keeping" suite.
"""
import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OPSET = 17
INT64_MIN = np.iinfo(np.int64).min
INT64_MAX = np.iinfo(np.int64).max


def _ints(name, values):
    return numpy_helper.from_array(np.array(values, dtype=np.int64), name)


def _model(nodes, x_shape, y_shape, initializers, y_type=TensorProto.FLOAT):
    graph = helper.make_graph(
        nodes, "shape_keeping",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, x_shape)],
        [helper.make_tensor_value_info("y", y_type, y_shape)], initializer=initializers)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)])
    model.ir_version = 8
    onnx.checker.check_model(model, full_check=True)
    return model


def _slice(starts, ends, axes, steps, then_add=False):
    nodes = [helper.make_node("Slice", ["x", "starts", "ends", "axes", "steps"], ["s" if then_add else "y"])]
    inits = [_ints("starts", starts), _ints("ends", ends), _ints("axes", axes), _ints("steps", steps)]
    if then_add:  # torch.flip(x, [0]) + 1, as the TorchScript exporter writes it
        nodes.append(helper.make_node("Add", ["s", "one"], ["y"]))
        inits.append(numpy_helper.from_array(np.array(1.0, dtype=np.float32), "one"))
    return nodes, inits


def _pad(mode, pads):
    return [helper.make_node("Pad", ["x", "pads"], ["y"], mode=mode)], [_ints("pads", pads)]


def _cases(x):
    """(name, nodes, initializers, expected y) for x of shape 4x4."""
    shifted = np.concatenate([np.zeros((4, 1), np.float32), x[:, :-1]], axis=1)
    reflected_shift = np.pad(x, ((0, 0), (1, 0)), mode="reflect")[:, :-1]
    edge_shift = np.pad(x, ((0, 0), (0, 1)), mode="edge")[:, 1:]
    return [
        ("slice_reverse_axis0", *_slice([-1], [INT64_MIN], [0], [-1]), x[::-1]),
        ("slice_reverse_both_axes", *_slice([-1, -1], [INT64_MIN, INT64_MIN], [0, 1], [-1, -1]), x[::-1, ::-1]),
        ("slice_reverse_then_add", *_slice([-1], [INT64_MIN], [0], [-1], then_add=True), x[::-1] + 1),
        ("slice_whole_axis_forward", *_slice([0], [INT64_MAX], [1], [1]), x),
        ("pad_constant_shift", *_pad("constant", [0, 1, 0, -1]), shifted),
        ("pad_reflect_shift", *_pad("reflect", [0, 1, 0, -1]), reflected_shift),
        ("pad_edge_shift", *_pad("edge", [0, -1, 0, 1]), edge_shift),
        ("pad_reflect_zero", *_pad("reflect", [0, 0, 0, 0]), x),
        ("transpose_square_default_perm", [helper.make_node("Transpose", ["x"], ["y"])], [], x.T),
        ("gather_reversed_rows", [helper.make_node("Gather", ["x", "rows"], ["y"], axis=0)],
         [_ints("rows", [3, 2, 1, 0])], x[::-1]),
        ("reshape_transpose_square",
         [helper.make_node("Reshape", ["x", "shape"], ["r"]), helper.make_node("Transpose", ["r"], ["y"], perm=[1, 0])],
         [_ints("shape", [4, 4])], x.T),
        ("cast_round_trip_through_int",
         [helper.make_node("Cast", ["x"], ["i"], to=TensorProto.INT32),
          helper.make_node("Cast", ["i"], ["y"], to=TensorProto.FLOAT)], [], np.trunc(x).astype(np.float32)),
        ("tile_ones", [helper.make_node("Tile", ["x", "repeats"], ["y"])], [_ints("repeats", [1, 1])], x),
        ("concat_one_input", [helper.make_node("Concat", ["x"], ["y"], axis=1)], [], x),
        # The TorchScript exporter's Pad: the pads vector computed at run time, then reversed
        # (torchvision's detection transform pads its images this way).
        ("pad_with_reversed_pads_vector",
         [helper.make_node("Shape", ["x"], ["size"]), helper.make_node("Sub", ["size", "less"], ["begin"]),
          helper.make_node("Concat", ["begin", "zeros"], ["pads"], axis=0),
          helper.make_node("Slice", ["pads", "starts", "ends", "axes", "steps"], ["reversed"]),
          helper.make_node("Pad", ["x", "reversed"], ["y"])],
         [_ints("less", [4, 3]), _ints("zeros", [0, 0]), _ints("starts", [-1]), _ints("ends", [INT64_MIN]),
          _ints("axes", [0]), _ints("steps", [-1])], np.pad(x, ((0, 1), (0, 0)))),
    ]


def shape_keeping_cases():
    """(name, model, [(inputs, outputs)]) for each case, on one fixed random 4x4 input."""
    x = (np.random.default_rng(0).standard_normal((4, 4)) * 3).astype(np.float32)
    result = []
    for name, nodes, inits, expected in _cases(x):
        model = _model(nodes, [4, 4], list(expected.shape), inits)
        result.append((name, model, [([x], [np.ascontiguousarray(expected)])]))
    return result
