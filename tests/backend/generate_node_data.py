"""Writes ONNX's backend test data for the installed onnx (1.23.2 in the pinned .venv) into one
folder, in the layout the ONNX test runners read: SUITE/CASE/model.onnx and
SUITE/CASE/test_data_set_N/{input,output}_K.pb.

The onnx wheel ships the model suites (simple, pytorch-converted, pytorch-operator, light) as
files, but the node suite only as its case definitions (onnx/backend/test/case/node/*.py, each
calling expect() with numpy's expected outputs): they are turned into files here, by ONNX's own
collect_testcases(). The shipped suites are copied as they are. A stamp names the onnx, numpy and
ml_dtypes versions, so a second run with the same ones costs nothing.

    python generate_node_data.py OUT_DIR
"""
import argparse
import os
import shutil
import sys

import ml_dtypes
import numpy
import onnx
from onnx import numpy_helper

# "light" is left out: its models come without input files.
SHIPPED_SUITES = ("simple", "pytorch-converted", "pytorch-operator")

# Written into the stamp beside onnx's version: a change to the suites generated here regenerates
# the folder.
GENERATOR_VERSION = "onnxproof-suites-3"


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


def constant_inputs_case(case):
    """The case with every input after the first an initializer holding data set 0's value: the
    variant a simplifier sees when an exporter writes starts, steps, pads, shapes and axes as
    constants (the node suite feeds them as inputs, where no rule can read them). None when the
    case has one input or a non-tensor one."""
    graph = case.model.graph
    inputs, outputs = case.data_sets[0]
    if len(graph.input) < 2 or any(not d.type.HasField("tensor_type") for d in graph.input):
        return None
    if any(isinstance(v, (list, dict)) or v is None for v in inputs):
        return None
    model = onnx.ModelProto()
    model.CopyFrom(case.model)
    kept = model.graph.input[0]
    for declared, value in zip(list(model.graph.input)[1:], inputs[1:]):
        if not declared.name:  # an omitted optional input stays omitted
            continue
        tensor = value if isinstance(value, onnx.TensorProto) else numpy_helper.from_array(value, declared.name)
        tensor.name = declared.name
        model.graph.initializer.append(tensor)
    first = onnx.ValueInfoProto()
    first.CopyFrom(kept)
    del model.graph.input[:]
    model.graph.input.append(first)
    if model.ir_version < 4:
        model.ir_version = 4  # initializers that are not graph inputs need IR version 4
    return SimpleCase(case.name, model, [([inputs[0]], outputs)])


class SimpleCase:
    """A case of this script's own: a name, a model and data sets of (inputs, outputs)."""

    def __init__(self, name, model, data_sets):
        self.name, self.model, self.data_sets = name, model, data_sets


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out_dir")
    args = parser.parse_args()
    stamp = os.path.join(args.out_dir, "ONNX_VERSION")
    # numpy and ml_dtypes compute the expected outputs (ml_dtypes 0.7.0 casts out-of-range values
    # to int4 as 0, 0.6.0 keeps the low 4 bits as ONNX Runtime does): a change to either regenerates.
    versions = [onnx.__version__, GENERATOR_VERSION, numpy.__version__, ml_dtypes.__version__]
    if os.path.exists(stamp) and open(stamp).read().split() == versions:
        return 0

    # Built beside the destination, then swapped in: an interrupted run leaves no half suite.
    staging = args.out_dir.rstrip("/") + ".partial"
    shutil.rmtree(staging, ignore_errors=True)
    import warnings
    warnings.simplefilter("ignore")  # the case scripts' own numpy warnings (1 / 0 for an expected inf)
    from onnx.backend.test.case import node
    cases = [case for case in node.collect_testcases() if case.model is not None and case.data_sets]
    variants = 0
    for case in cases:
        write_case(case, os.path.join(staging, "node", case.name))
        variant = constant_inputs_case(case)
        if variant is not None:
            write_case(variant, os.path.join(staging, "node-constant", case.name))
            variants += 1
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from shape_keeping_cases import shape_keeping_cases  # noqa: E402 (beside this script)
    own = shape_keeping_cases()
    for name, model, data_sets in own:
        write_case(SimpleCase(name, model, data_sets), os.path.join(staging, "shape-keeping", name))
    shipped = os.path.join(os.path.dirname(onnx.__file__), "backend", "test", "data")
    for suite in SHIPPED_SUITES:
        if os.path.isdir(os.path.join(shipped, suite)):
            shutil.copytree(os.path.join(shipped, suite), os.path.join(staging, suite))
    with open(os.path.join(staging, "ONNX_VERSION"), "w") as handle:
        handle.write(" ".join(versions) + "\n")
    shutil.rmtree(args.out_dir, ignore_errors=True)
    os.replace(staging, args.out_dir)
    print(f"ONNX {onnx.__version__} backend test data: {len(cases)} node cases generated "
          f"({variants} with constant inputs too), {len(own)} shape-keeping cases, "
          f"suites {', '.join(SHIPPED_SUITES)} copied, into {args.out_dir}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
