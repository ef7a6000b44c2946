"""`--quantize static`: the proved float export quantized afterwards with ONNX Runtime's
quantize_static (QDQ format, int8, per-channel weights), and the reference it is proved against.

`python -m onnxproof --quantize-json '{"model": IN, "out": OUT, "reference": REF, "quant_reference": QREF}'`
- calibrates on the inputs of every case in REF (PyTorch's reference: the `--data` samples when
  given, else the generated cases) and writes OUT (model.quant.onnx) atomically;
- writes QREF, the reference of the quantized model: the same inputs, the outputs of ONNX's own
  reference evaluator (onnx.reference, numpy: the fake-quant semantics of the Q/DQ graph, computed
  apart from ONNX Runtime's kernels and fusions), and a float64 twin's outputs (every float tensor
  widened, quantize and dequantize in float64), whose ties against float32 set the steps allowed,
  as PyTorch's float64 twin does for a PT2E model (docs/quantization.md);
- writes QREF/quantization.json: per output, the quantization's own error, the quantized model
  against PyTorch's float outputs (max and mean |difference|, the output's scale, top-1 agreement
  for class scores): the accuracy the user trades, reported, not judged.
Exit codes as the export: 0 written, 3 could not."""
import json
import os
import re
import shutil

from .errors import FrontEndError

QUANTIZE_JSON = "quantization.json"


def _cases_document(reference):
    """The reference's cases.json; for a folder written without one (an export recorded before it
    existed, ONNX's own test layout), its test_data_set_N folders in order."""
    path = os.path.join(reference, "cases.json")
    if os.path.isfile(path):
        with open(path, encoding="utf-8") as handle:
            document = json.load(handle)
        if isinstance(document, dict) and isinstance(document.get("cases"), list):
            return document
        raise FrontEndError(f"{path} holds no list of cases", 3)
    folders = [name for name in os.listdir(reference) if re.fullmatch(r"test_data_set_[0-9]+", name)]
    return {"cases": [{"data_set": name} for name in sorted(folders, key=lambda name: int(name.rsplit("_", 1)[1]))]}


def _cases(reference):
    """(cases.json's document, [(its entry, {"input"|"output": [(name, array)]})]) of the reference."""
    import onnx
    from onnx import numpy_helper
    try:
        document = _cases_document(reference)
    except (OSError, ValueError) as error:
        raise FrontEndError(f"cannot read the reference {reference}: {error}", 3) from error
    cases = []
    for entry in document["cases"]:
        name = entry.get("data_set") if isinstance(entry, dict) else entry
        if not re.fullmatch(r"test_data_set_[0-9]+", str(name)):  # never a path of its own
            raise FrontEndError(f"{reference}/cases.json names a case {name!r}, not test_data_set_N", 3)
        folder = os.path.join(reference, entry["data_set"])
        arrays = {}
        for kind in ("input", "output"):
            k, found = 0, []
            while os.path.isfile(os.path.join(folder, f"{kind}_{k}.pb")):
                tensor = onnx.load_tensor(os.path.join(folder, f"{kind}_{k}.pb"))
                found.append((tensor.name, numpy_helper.to_array(tensor)))
                k += 1
            arrays[kind] = found
        cases.append((entry, arrays))
    return document, cases


def _calibration_reader(model_path, cases):
    from onnxruntime.quantization import CalibrationDataReader
    import onnx
    names = [value.name for value in onnx.load(model_path, load_external_data=False).graph.input]

    class Reader(CalibrationDataReader):
        def __init__(self):
            self.feeds = iter([{name: array for name, array in arrays["input"] if name in names} for _, arrays in cases])

        def get_next(self):
            return next(self.feeds, None)

    return Reader()


def _quantization_ops(dtype):
    """QuantizeLinear and DequantizeLinear for onnx.reference, at any opset (its own start at 19),
    computing in `dtype`: the ONNX rule (x / scale rounded half to even, plus the zero point,
    saturated; (q - zero point) x scale) in float32 as the graph says, or in float64 for the twin."""
    import numpy as np
    from onnx.reference.op_run import OpRun

    def along(values, axis, rank):
        values = np.asarray(values).astype(dtype)
        if values.ndim == 0 or rank == 0:
            return values
        shape = [1] * rank
        shape[axis % rank] = -1
        return values.reshape(shape)

    class QuantizeLinear(OpRun):
        op_domain = ""

        def _run(self, x, scale, zero_point=None, axis=1, saturate=True, block_size=0, output_dtype=0, precision=0):
            target = zero_point.dtype if zero_point is not None else np.uint8
            shift = 0 if zero_point is None else along(zero_point, axis, x.ndim)
            info = np.iinfo(target)
            scaled = np.rint(x.astype(dtype) / along(scale, axis, x.ndim)) + shift
            return (np.clip(scaled, info.min, info.max).astype(target),)

    class DequantizeLinear(OpRun):
        op_domain = ""

        def _run(self, x, scale, zero_point=None, axis=1, block_size=0, output_dtype=0):
            shift = 0 if zero_point is None else along(zero_point, axis, x.ndim)
            return ((x.astype(dtype) - shift) * along(scale, axis, x.ndim),)

    return [QuantizeLinear, DequantizeLinear]


def _evaluators(path):
    """onnx.reference evaluators of the quantized model: as it is (float32), and its float64 twin
    (every float32 tensor, input and Cast widened)."""
    import numpy as np
    import onnx
    from onnx import numpy_helper
    from onnx.reference import ReferenceEvaluator

    model = onnx.load(path)
    twin = onnx.ModelProto()
    twin.CopyFrom(model)
    double, single = onnx.TensorProto.DOUBLE, onnx.TensorProto.FLOAT
    for initializer in twin.graph.initializer:
        if initializer.data_type == single:
            initializer.CopyFrom(numpy_helper.from_array(numpy_helper.to_array(initializer).astype(np.float64),
                                                         initializer.name))
    for value in list(twin.graph.input) + list(twin.graph.output) + list(twin.graph.value_info):
        if value.type.tensor_type.elem_type == single:
            value.type.tensor_type.elem_type = double
    for node in twin.graph.node:
        for attribute in node.attribute:
            if node.op_type == "Cast" and attribute.name == "to" and attribute.i == single:
                attribute.i = double
    return (ReferenceEvaluator(model, new_ops=_quantization_ops(np.float32)),
            ReferenceEvaluator(twin, new_ops=_quantization_ops(np.float64)))


def _write_tensor(folder, kind, k, name, array):
    from onnx import numpy_helper
    with open(os.path.join(folder, f"{kind}_{k}.pb"), "wb") as handle:
        handle.write(numpy_helper.from_array(array, name).SerializeToString())


def _write_reference(path, quant_reference, document, cases):
    """QREF: every case's inputs, the reference evaluator's outputs and its float64 twin's."""
    import numpy as np
    single, twin = _evaluators(path)
    staging = quant_reference + ".partial"
    shutil.rmtree(staging, ignore_errors=True)
    os.makedirs(staging)
    entries, outputs = [], []
    for entry, arrays in cases:
        folder = os.path.join(staging, entry["data_set"])
        os.makedirs(folder)
        feeds = {name: array for name, array in arrays["input"]}
        names = [o for o in single.output_names]
        result = single.run(None, feeds)
        exact = twin.run(None, {n: a.astype(np.float64) if a.dtype == np.float32 else a for n, a in feeds.items()})
        for k, (name, array) in enumerate(arrays["input"]):
            _write_tensor(folder, "input", k, name, array)
        exact_indices = []
        for k, (name, value) in enumerate(zip(names, result)):
            _write_tensor(folder, "output", k, name, np.asarray(value))
            if np.asarray(value).dtype == np.float32 and np.shape(exact[k]) == np.shape(value):
                _write_tensor(folder, "exact_output", k, name, np.asarray(exact[k], np.float64))
                exact_indices.append(k)
        entries.append({**entry, "source": "onnx.reference", "exact_outputs": exact_indices})
        outputs.append((arrays["output"], list(zip(names, result))))
    with open(os.path.join(staging, "cases.json"), "w", encoding="utf-8") as handle:
        json.dump({**document, "cases": entries}, handle, indent=2)
    return staging, outputs


def _quantization_error(outputs):
    """Per output, over the cases: the quantized model against PyTorch's float outputs."""
    import numpy as np
    figures = {}
    for floats, quantized in outputs:
        by_name = dict(floats)
        for name, value in quantized:
            if name not in by_name or np.shape(by_name[name]) != np.shape(value) or np.asarray(value).dtype.kind != "f":
                continue
            expected, got = by_name[name].astype(np.float64), np.asarray(value, np.float64)
            entry = figures.setdefault(name, {"output": name, "max_abs": 0.0, "sum_abs": 0.0, "elements": 0,
                                              "scale": 0.0, "rows": 0, "top1_agree": 0})
            difference = np.abs(got - expected)
            entry["max_abs"] = max(entry["max_abs"], float(difference.max(initial=0.0)))
            entry["sum_abs"] += float(difference.sum())
            entry["elements"] += int(difference.size)
            entry["scale"] = max(entry["scale"], float(np.abs(expected).max(initial=0.0)))
            if expected.ndim == 2 and expected.shape[1] > 1:  # class scores: does the top class agree?
                entry["rows"] += int(expected.shape[0])
                entry["top1_agree"] += int((expected.argmax(1) == got.argmax(1)).sum())
    for entry in figures.values():
        entry["mean_abs"] = entry.pop("sum_abs") / max(1, entry["elements"])
        for key in ("max_abs", "mean_abs", "scale"):  # JSON has no NaN or Infinity: said as null
            entry[key] = entry[key] if np.isfinite(entry[key]) else None
    return list(figures.values())


def quantize(request):
    """Quantizes request["model"] into request["out"] and writes request["quant_reference"]."""
    try:
        import onnxruntime.quantization  # noqa: F401
    except ImportError as error:
        raise FrontEndError(f"--quantize static needs onnxruntime's quantization tools: {error}", 3) from error
    document, cases = _cases(request["reference"])
    if not cases:
        raise FrontEndError(f"{request['reference']} holds no case to calibrate on", 3)
    staging_model = request["out"] + ".partial"
    try:
        return _quantize(request, document, cases, staging_model)
    finally:  # a failed run leaves neither half-written file behind
        for leftover in (staging_model, request["quant_reference"] + ".partial"):
            if os.path.isdir(leftover):
                shutil.rmtree(leftover, ignore_errors=True)
            elif os.path.exists(leftover):
                os.remove(leftover)


def _quantize(request, document, cases, staging_model):
    from onnxruntime.quantization import QuantFormat, QuantType, quantize_static
    try:
        quantize_static(request["model"], staging_model, _calibration_reader(request["model"], cases),
                        quant_format=QuantFormat.QDQ, per_channel=True, activation_type=QuantType.QInt8,
                        weight_type=QuantType.QInt8)
    except Exception as error:  # quantize_static raises plain exceptions of several kinds
        raise FrontEndError(f"onnxruntime.quantization.quantize_static cannot quantize {request['model']}: "
                            f"{type(error).__name__}: {error}", 3) from error
    print(f"onnxproof quantize: calibrated on {len(cases)} case(s); computing the quantized model's reference "
          "with onnx.reference", flush=True)
    try:
        staging, outputs = _write_reference(staging_model, request["quant_reference"], document, cases)
    except Exception as error:  # the reference evaluator lacks an operator, or fails on one
        raise FrontEndError(f"onnx.reference cannot run the quantized model: {type(error).__name__}: {error}", 3) from error
    with open(os.path.join(staging, QUANTIZE_JSON), "w", encoding="utf-8") as handle:
        json.dump({"calibration_cases": len(cases), "outputs": _quantization_error(outputs)}, handle, indent=2,
                  allow_nan=False)
    shutil.rmtree(request["quant_reference"], ignore_errors=True)
    os.replace(staging, request["quant_reference"])
    os.replace(staging_model, request["out"])
    return 0


def main(request):
    return quantize(request)
