"""Writes ONNX's backend test data for the installed onnx (1.23.1 in the pinned .venv) into one
folder, in the layout the ONNX test runners read: SUITE/CASE/model.onnx and
SUITE/CASE/test_data_set_N/{input,output}_K.pb.

The onnx wheel ships the model suites (simple, pytorch-converted, pytorch-operator, light) as
files, but the node suite only as its case definitions (onnx/backend/test/case/node/*.py, each
calling expect() with numpy's expected outputs): they are turned into files here, by ONNX's own
collect_testcases(). The shipped suites are copied as they are. A stamp names the onnx version, so
a second run with the same onnx costs nothing.

    python generate_node_data.py OUT_DIR
"""
import argparse
import os
import shutil
import sys

import onnx
from onnx import numpy_helper

# "light" is left out: its models come without input files.
SHIPPED_SUITES = ("simple", "pytorch-converted", "pytorch-operator")


def serialize_value(value, declared):
    """One input or output as a TensorProto / SequenceProto / MapProto / OptionalProto."""
    kind = declared.type.WhichOneof("value")
    if isinstance(value, onnx.TensorProto):
        return value
    if kind == "map_type":
        return numpy_helper.from_dict(value, declared.name)
    if kind == "sequence_type":
        return numpy_helper.from_list(value, declared.name)
    if kind == "optional_type":
        return numpy_helper.from_optional(value, declared.name)
    return numpy_helper.from_array(value, declared.name)


def write_case(case, folder):
    os.makedirs(folder)
    with open(os.path.join(folder, "model.onnx"), "wb") as handle:
        handle.write(case.model.SerializeToString())
    graph = case.model.graph
    for index, (inputs, outputs) in enumerate(case.data_sets):
        data_set = os.path.join(folder, f"test_data_set_{index}")
        os.makedirs(data_set)
        for prefix, values, declared in (("input", inputs, graph.input), ("output", outputs, graph.output)):
            for k, value in enumerate(values):
                with open(os.path.join(data_set, f"{prefix}_{k}.pb"), "wb") as handle:
                    handle.write(serialize_value(value, declared[k]).SerializeToString())


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out_dir")
    args = parser.parse_args()
    stamp = os.path.join(args.out_dir, "ONNX_VERSION")
    if os.path.exists(stamp) and open(stamp).read().strip() == onnx.__version__:
        return 0

    # Built beside the destination, then swapped in: an interrupted run leaves no half suite.
    staging = args.out_dir.rstrip("/") + ".partial"
    shutil.rmtree(staging, ignore_errors=True)
    import warnings
    warnings.simplefilter("ignore")  # the case scripts' own numpy warnings (1 / 0 for an expected inf)
    from onnx.backend.test.case import node
    cases = [case for case in node.collect_testcases() if case.model is not None and case.data_sets]
    for case in cases:
        write_case(case, os.path.join(staging, "node", case.name))
    shipped = os.path.join(os.path.dirname(onnx.__file__), "backend", "test", "data")
    for suite in SHIPPED_SUITES:
        if os.path.isdir(os.path.join(shipped, suite)):
            shutil.copytree(os.path.join(shipped, suite), os.path.join(staging, suite))
    with open(os.path.join(staging, "ONNX_VERSION"), "w") as handle:
        handle.write(onnx.__version__ + "\n")
    shutil.rmtree(args.out_dir, ignore_errors=True)
    os.replace(staging, args.out_dir)
    print(f"ONNX {onnx.__version__} backend test data: {len(cases)} node cases generated, "
          f"suites {', '.join(SHIPPED_SUITES)} copied, into {args.out_dir}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
