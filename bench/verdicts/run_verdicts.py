#!/usr/bin/env python3
"""The proof's precision and recall: planted export bugs and correct exports, each judged by four
methods.

    .venv/bin/python bench/verdicts/run_verdicts.py [--onnxproof build/bin/onnxproof]
                     [--work /tmp/onnxproof-verdicts] [--only NAME,...] [--no-zoo]

1. Base models (models.py: small, seeded, realistic parameters; torchvision's mobilenet_v3_small
   as the issue's own case; Keras models from tests/python/tensorflow/models.py and
   keras:MobileNetV3Small) are exported once each through `onnxproof pipeline` (TorchScript or
   tf2onnx, opset 17); each run folder holds model.onnx and reference/ (the framework's float32
   outputs and the float64 exact outputs of every case).
2. Planted bugs are ONNX graph mutations of those exports (mutations.py), each valid for
   onnx.checker; correct exports are the unmutated ones, the same models through the dynamo
   exporter (opset 18, its oldest), and a few torchvision/timm models (skipped with --no-zoo).
3. Every (model, variant) is judged by
   - calibrated: `onnxproof parity MODEL --reference REF` (the default rule, every case);
   - fixed:      the same with `--rtol 1e-3 --atol 1e-5` (the old rule, every case);
   - fallback:   the default rule with the float64 outputs left out of the reference (what a model
                 that cannot run in float64 gets: the fixed rule at each output's scale);
   - allclose:   numpy.testing.assert_allclose(ort, torch, rtol=1e-3, atol=1e-5) on the example case
                 (test_data_set_0) only, ONNX Runtime run here;
   - optimum:    np.allclose(torch, ort, atol=1e-4) on the example case (Optimum's
                 validate_model_outputs: its atol, numpy's default rtol 1e-5).
   A method "catches" a variant when it says fail (an error running the model counts as fail).
4. The calibrated rows' figures (onnx_error, source_error, budget, scale) let the verdict be
   recomputed exactly for other constants (noise multiple M, floor F epsilons): the sensitivity
   table in RESULTS.md.

Writes bench/verdicts/results.json, RESULTS.md and recall.svg. With --only, the other entries of
the last results.json are kept.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)

import mutations  # noqa: E402
from figures import FLOOR_EPSILONS, METHODS, NOISE_MULTIPLE, fmt, summary, write_results_md, write_svg  # noqa: E402

MODELS_FILE = os.path.join(HERE, "models.py")

# name -> pipeline arguments. Bugs are planted in every base model's TorchScript export.
BASE = {
    "tiny_regressor": ["--model", f"{MODELS_FILE}:tiny_regressor", "--input", "x=2x16:float32",
                       "--dynamic", "x:0=batch", "--sweep", "batch=1,3"],
    "classifier": ["--model", f"{MODELS_FILE}:classifier", "--input", "x=2x32:float32",
                   "--dynamic", "x:0=batch", "--sweep", "batch=1,3"],
    "small_cnn": ["--model", f"{MODELS_FILE}:small_cnn", "--input", "image=2x3x16x16:float32",
                  "--dynamic", "image:0=batch", "--sweep", "batch=1,3"],
    "transformer_block": ["--model", f"{MODELS_FILE}:transformer_block", "--input", "x=2x8x32:float32",
                          "--input", "attention_mask=2x8:int64:0..1", "--dynamic", "x:0=batch",
                          "--dynamic", "x:1=seq", "--dynamic", "attention_mask:0=batch",
                          "--dynamic", "attention_mask:1=seq", "--sweep", "batch=1,3", "--sweep", "seq=3,8"],
    "text_pooler": ["--model", f"{MODELS_FILE}:text_pooler", "--input", "input_ids=2x8:int64:0..49",
                    "--input", "attention_mask=2x8:int64:0..1", "--dynamic", "input_ids:0=batch",
                    "--dynamic", "input_ids:1=seq", "--dynamic", "attention_mask:0=batch",
                    "--dynamic", "attention_mask:1=seq", "--sweep", "batch=1,3", "--sweep", "seq=3,8"],
    "large_output": ["--model", f"{MODELS_FILE}:large_output", "--input", "features=2x8:float32",
                     "--dynamic", "features:0=batch", "--sweep", "batch=1,3"],
    "segmentation_head": ["--model", f"{MODELS_FILE}:segmentation_head", "--input", "features=2x16x8x8:float32",
                          "--dynamic", "features:0=batch", "--sweep", "batch=1,3"],
    "mobilenet_v3_small": ["--model", "torchvision:mobilenet_v3_small", "--sweep", "batch=1,3", "--samples", "1"],
}
# TensorFlow's base models (Keras 3; tests/python/tensorflow/models.py), exported by tf2onnx at
# opset 17 and run by the engine in .venv-tf; bugs are planted in them as in PyTorch's.
KERAS_MODELS = os.path.join(ROOT, "tests", "python", "tensorflow", "models.py")
KERAS_BASE = {
    "keras_text_classifier": ["--model", f"{KERAS_MODELS}:text_classifier", "--sweep", "batch=1,3",
                              "--sweep", "sequence=3,8"],
    "keras_transformer_encoder": ["--model", f"{KERAS_MODELS}:transformer_encoder", "--sweep", "batch=1,3",
                                  "--sweep", "sequence=3,8"],
    "keras_small_cnn": ["--model", f"{KERAS_MODELS}:small_cnn", "--input", "image=2x16x16x3:float32",
                        "--dynamic", "image:0=batch", "--sweep", "batch=1,3"],
    "keras_mobilenet_v3_small": ["--model", "keras:MobileNetV3Small", "--sweep", "batch=1,3", "--samples", "1"],
}
FRAMEWORK = {**{name: "torch" for name in BASE}, **{name: "tensorflow" for name in KERAS_BASE}}
BASE_EXPORTER = {"torch": "torchscript", "tensorflow": "tf2onnx"}
# Extra correct exports (no bugs planted): the base models through the other exporter (dynamo,
# Keras's own model.export), and zoo models.
EXTRA = [(f"{name} (dynamo)", args, "dynamo") for name, args in BASE.items() if not args[1].startswith("torchvision")]
EXTRA += [(f"{name} (keras)", args, "keras") for name, args in KERAS_BASE.items()]
# Quantized models (docs/quantization.md): name -> (pipeline arguments, exporter, the judged model and
# its reference). PT2E graphs (models.py) exported by dynamo with their Q/DQ nodes and proved
# against PyTorch's fake-quant run; float models through --quantize static, whose model.quant.onnx
# is proved against ONNX's reference evaluator (reference-quant/). Both get every mutation and the
# quantized plants (q_*, tests/python/quantized_plants.py).
QUANTIZED = {
    "quantized_small_cnn": (["--model", f"{MODELS_FILE}:quantized_small_cnn", "--input", "image=2x3x16x16:float32"],
                            "dynamo", ("model.onnx", "reference")),
    "quantized_classifier": (["--model", f"{MODELS_FILE}:quantized_classifier", "--input", "x=2x32:float32"],
                             "dynamo", ("model.onnx", "reference")),
    "small_cnn (quantize_static)": (BASE["small_cnn"] + ["--quantize", "static"], "torchscript",
                                    ("model.quant.onnx", "reference-quant")),
    "classifier (quantize_static)": (BASE["classifier"] + ["--quantize", "static"], "torchscript",
                                     ("model.quant.onnx", "reference-quant")),
}
FRAMEWORK.update({name: "torch" for name in QUANTIZED})
ZOO = [
    ("timm:mobilenetv4_conv_small", ["--model", "timm:mobilenetv4_conv_small", "--sweep", "batch=1,3", "--samples", "1"],
     "torchscript"),
    ("torchvision:resnet18", ["--model", "torchvision:resnet18", "--sweep", "batch=1,3", "--samples", "1"],
     "torchscript"),
    ("torchvision:lraspp_mobilenet_v3_large",
     ["--model", "torchvision:lraspp_mobilenet_v3_large", "--sweep", "batch=1,2", "--samples", "1"], "torchscript"),
    ("keras:ResNet50", ["--model", "keras:ResNet50", "--sweep", "batch=1,3", "--samples", "1"], "tf2onnx"),
]



def run(command, timeout=1800):
    for attempt in range(30):  # the engine may be relinked while this runs (others build the checkout)
        start = time.perf_counter()
        try:
            done = subprocess.run(command, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=timeout)
            code, err = done.returncode, done.stderr + done.stdout
        except subprocess.TimeoutExpired:
            code, err = -1, "timed out"
        except OSError as error:
            code, err = -1, f"cannot start {command[0]}: {error}"
            time.sleep(10)
            continue
        break
    return code, err, time.perf_counter() - start


def slug(name):
    return "".join(c if c.isalnum() or c in "._-" else "_" for c in name)


# --- exports -----------------------------------------------------------------------------------

def export(onnxproof, name, args, exporter, work):
    """The pipeline run of one model: its folder, verdict, seconds and float64 cost."""
    folder = os.path.join(work, "runs", slug(name))
    shutil.rmtree(folder, ignore_errors=True)  # a fresh run: an earlier golden set would turn freeze into verify
    samples = [] if "--samples" in args else ["--samples", "2"]
    command = [onnxproof, "pipeline", *args, *samples, "--exporter", exporter,
               "--opset", "18" if exporter == "dynamo" else "17", "--no-localize",
               "--out", folder]
    code, err, seconds = run(command)
    entry = {"name": name, "exporter": exporter, "folder": folder, "exit": code, "seconds": round(seconds, 2),
             "command": " ".join(command)}
    report_path = os.path.join(folder, "report.json")
    if not os.path.exists(os.path.join(folder, "model.onnx")) or not os.path.exists(report_path):
        entry.update(ok=False, note=(err.strip().splitlines() or ["no output"])[-1][:300])
        return entry
    with open(report_path) as handle:
        report = json.load(handle)
    entry["pipeline_verdict"] = report["verdict"]
    entry["pipeline_findings"] = sorted({f"{f['code']} ({f['severity']})" for f in report["findings"]
                                         if f["severity"] in ("error", "warning")})
    entry["steps_s"] = {step["name"]: round(step.get("seconds", 0.0), 2) for step in report["steps"]}
    with open(os.path.join(folder, "export.json")) as handle:
        timings = json.load(handle).get("timings_s", {})
    entry["timings_s"] = timings
    exact, reference = timings.get("exact_reference"), timings.get("reference")
    if exact is not None and reference:
        entry["exact_cost"] = exact / max(reference - exact, 1e-9)
    entry["ok"] = True
    return entry


def example_case(folder, reference="reference"):
    """({input name: array}, [torch float32 outputs]) of test_data_set_0: the example."""
    import onnx
    from onnx import numpy_helper
    case = os.path.join(folder, reference, "test_data_set_0")
    inputs, outputs = {}, []
    index = 0
    while os.path.exists(os.path.join(case, f"input_{index}.pb")):
        tensor = onnx.load_tensor(os.path.join(case, f"input_{index}.pb"))
        inputs[tensor.name] = numpy_helper.to_array(tensor)
        index += 1
    index = 0
    while os.path.exists(os.path.join(case, f"output_{index}.pb")):
        outputs.append(numpy_helper.to_array(onnx.load_tensor(os.path.join(case, f"output_{index}.pb"))))
        index += 1
    return inputs, outputs


# --- the four methods --------------------------------------------------------------------------

def parity(onnxproof, model, reference, out_json, fixed):
    command = [onnxproof, "parity", model, "--reference", reference, "--json", out_json]
    if fixed is True:
        command += ["--rtol", "1e-3", "--atol", "1e-5"]
    code, err, seconds = run(command, timeout=900)
    result = {"seconds": round(seconds, 2), "exit": code}
    if not os.path.exists(out_json):
        result.update(verdict="error", caught=True, note=(err.strip().splitlines() or ["no output"])[-1][:300])
        return result
    with open(out_json) as handle:
        proof = json.load(handle)
    os.remove(out_json)  # a stale file must never stand in for the next run's
    rows = proof.get("parity", [])
    result["verdict"] = proof["verdict"]
    result["caught"] = proof["verdict"] != "pass"
    result["findings"] = sorted({f"{f['code']} ({f['severity']})" for f in proof.get("findings", [])})
    result["rules"] = sorted({row.get("rule", "-") for row in rows if "rule" in row})
    result["rows"] = len(rows)
    result["rows_failed"] = sum(row["status"] != "pass" for row in rows)
    ratios = [row["error_ratio"] for row in rows if row.get("error_ratio") is not None]
    result["max_ratio"] = max(ratios) if ratios else None
    uses = [row["onnx_error"] / row["budget"] for row in rows if row.get("budget")]
    result["max_budget_use"] = max(uses) if uses else None
    result["max_abs"] = max((row.get("max_abs", 0.0) for row in rows if "max_abs" in row), default=None)
    if fixed is False:  # what the sensitivity table recomputes from
        result["row_figures"] = [
            {key: row.get(key) for key in ("case", "output", "optimization", "status", "rule", "onnx_error",
                                           "source_error", "budget", "scale", "shape_match", "nan_mismatch")}
            for row in rows]
    return result


def one_shape(model_path, inputs, expected):
    """The two single-case checks a user writes by hand: (allclose result, optimum result)."""
    import onnxruntime as ort
    start = time.perf_counter()
    try:
        options = ort.SessionOptions()
        options.intra_op_num_threads = 1
        session = ort.InferenceSession(model_path, options, providers=["CPUExecutionProvider"])
        feed = {i.name: inputs[i.name] for i in session.get_inputs()}
        actual = session.run(None, feed)
    except Exception as error:  # a model that does not run fails both checks
        note = f"{type(error).__name__}: {str(error)[:200]}"
        seconds = round(time.perf_counter() - start, 3)
        return ({"caught": True, "note": note, "seconds": seconds}, {"caught": True, "note": note, "seconds": seconds})
    seconds = round(time.perf_counter() - start, 3)
    allclose = {"caught": False, "seconds": seconds}
    optimum = {"caught": False, "seconds": seconds}
    worst = 0.0
    for ort_value, torch_value in zip(actual, expected):
        if ort_value.shape != torch_value.shape:
            allclose.update(caught=True, note="shape")
            optimum.update(caught=True, note="shape")
            continue
        worst = max(worst, float(np.max(np.abs(ort_value.astype(np.float64) - torch_value))) if ort_value.size else 0)
        try:
            np.testing.assert_allclose(ort_value, torch_value, rtol=1e-3, atol=1e-5)
        except AssertionError:
            allclose["caught"] = True
        if not np.allclose(torch_value, ort_value, atol=1e-4):
            optimum["caught"] = True
    if len(actual) != len(expected):
        allclose.update(caught=True, note="output count")
        optimum.update(caught=True, note="output count")
    allclose["max_abs"] = optimum["max_abs"] = worst
    return allclose, optimum


def without_float64(reference, scratch):
    """A copy of the reference without its float64 outputs (exact_output_K.pb), made once per
    reference: the engine then judges every row by the fixed rule at the output's scale."""
    copy = os.path.join(scratch, "no-float64", os.path.relpath(reference, "/").replace(os.sep, "_"))
    if not os.path.isdir(copy):
        shutil.copytree(reference, copy, ignore=shutil.ignore_patterns("exact_output_*.pb"))
    return copy


def judge(onnxproof, model_path, folder, scratch, reference_name="reference"):
    reference = os.path.join(folder, reference_name)
    inputs, expected = example_case(folder, reference_name)
    allclose, optimum = one_shape(model_path, inputs, expected)
    return {
        "calibrated": parity(onnxproof, model_path, reference, os.path.join(scratch, "calibrated.json"), False),
        "fixed": parity(onnxproof, model_path, reference, os.path.join(scratch, "fixed.json"), True),
        "fallback": parity(onnxproof, model_path, without_float64(reference, scratch),
                           os.path.join(scratch, "fallback.json"), "fallback"),
        "allclose": allclose,
        "optimum": optimum,
    }


def judge_entry(onnxproof, kind, model_name, variant, what, model_path, folder, scratch, reference="reference"):
    os.makedirs(scratch, exist_ok=True)
    start = time.perf_counter()
    methods = judge(onnxproof, model_path, folder, scratch, reference)
    entry = {"kind": kind, "model": model_name, "variant": variant, "what": what, "model_path": model_path,
             "run_folder": folder, "methods": methods, "seconds": round(time.perf_counter() - start, 2),
             "framework": _framework_of(folder)}
    flags = " ".join(f"{m}={'FAIL' if methods[m]['caught'] else 'pass'}" for m in METHODS)
    ratio = methods["calibrated"].get("max_ratio")
    print(f"  {variant:22} {flags}  ratio {fmt(ratio)}", file=sys.stderr, flush=True)
    return entry


def exported(args, name, pipeline_args, exporter, exports):
    """The run folder of one export (its entry appended to `exports`); None when it failed."""
    print(f"[export] {name}", file=sys.stderr, flush=True)
    run_entry = export(args.onnxproof, name, pipeline_args, exporter, args.work)
    exports.append(run_entry)
    if not run_entry["ok"]:
        print(f"  export failed: {run_entry['note']}", file=sys.stderr, flush=True)
        return None
    return run_entry["folder"]


def plant_and_judge(args, name, folder, exporter, bugs, model_file="model.onnx", reference="reference"):
    """The entries of one export: it unmutated, then each bug of `bugs` planted in it."""
    import onnx
    model_path = os.path.join(folder, model_file)
    scratch = os.path.join(args.work, "judge", slug(name))
    entries = [judge_entry(args.onnxproof, "correct", name, f"correct ({exporter})", "unmutated export", model_path,
                           folder, scratch, reference)]
    model = onnx.load(model_path)
    inputs, _ = example_case(folder, reference)
    context = mutations.Context(inputs)
    mutant_dir = os.path.join(args.work, "mutants", slug(name))
    shutil.rmtree(mutant_dir, ignore_errors=True)
    os.makedirs(mutant_dir)
    for bug in bugs:
        try:
            mutated = mutations.mutate(model, bug, context)
        except Exception as error:  # a mutation that breaks the checker is left out, said so
            print(f"  {bug}: not planted ({type(error).__name__}: {str(error)[:120]})", file=sys.stderr)
            continue
        if mutated is None:
            continue
        path = os.path.join(mutant_dir, f"{bug}.onnx")
        onnx.save(mutated[0], path)
        entries.append(judge_entry(args.onnxproof, "bug", name, bug, mutated[1], path, folder, scratch, reference))
    return entries


def _framework_of(folder):
    """The run's source framework (export.json's framework; PyTorch's before the field existed)."""
    try:
        with open(os.path.join(folder, "export.json")) as handle:
            return json.load(handle).get("framework") or "torch"
    except (OSError, ValueError):
        return "torch"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--onnxproof", default=os.path.join(ROOT, "build", "bin", "onnxproof"))
    parser.add_argument("--work", default="/tmp/onnxproof-verdicts")
    parser.add_argument("--only", default="", help="comma-separated model names (base, '(dynamo)' or zoo names)")
    parser.add_argument("--no-zoo", action="store_true", help="skip the torchvision/timm correct exports")
    args = parser.parse_args()
    only = set(filter(None, args.only.split(",")))
    wanted = lambda name: not only or name in only  # noqa: E731

    exports, entries = [], []
    started = time.perf_counter()
    for name, pipeline_args in {**BASE, **KERAS_BASE}.items():
        exporter = BASE_EXPORTER[FRAMEWORK[name]]
        folder = wanted(name) and exported(args, name, pipeline_args, exporter, exports)
        if folder:
            entries += plant_and_judge(args, name, folder, exporter, mutations.MUTATIONS)

    for name, (pipeline_args, exporter, (model_file, reference)) in QUANTIZED.items():
        folder = wanted(name) and exported(args, name, pipeline_args, exporter, exports)
        if folder:
            entries += plant_and_judge(args, name, folder, exporter,
                                       {**mutations.MUTATIONS, **mutations.QUANTIZED_MUTATIONS}, model_file, reference)

    extras = EXTRA + ([] if args.no_zoo else ZOO)
    for name, pipeline_args, exporter in extras:
        folder = wanted(name) and exported(args, name, pipeline_args, exporter, exports)
        if not folder:
            continue
        entries.append(judge_entry(args.onnxproof, "correct", name, f"correct ({exporter})", "unmutated export",
                                   os.path.join(folder, "model.onnx"), folder, os.path.join(args.work, "judge",
                                                                                            slug(name))))

    results_path = os.path.join(HERE, "results.json")
    if only and os.path.exists(results_path):  # keep the other models' entries of the last run
        with open(results_path) as handle:
            last = json.load(handle)
        entries = [e for e in last["entries"] if e["model"] not in only] + entries
        exports = [e for e in last["exports"] if e["name"] not in only] + exports
    result = {"schema": "onnxproof.bench.verdicts/1", "constants": {"noise_multiple": NOISE_MULTIPLE,
                                                                    "floor_epsilons": FLOOR_EPSILONS},
              "seconds": round(time.perf_counter() - started, 1), "exports": exports, "entries": entries}
    result["summary"] = summary(entries)
    result["summary_by_framework"] = {framework: summary([e for e in entries if e.get("framework", "torch") == framework])
                                      for framework in sorted({e.get("framework", "torch") for e in entries})}
    with open(results_path + ".tmp", "w") as handle:
        json.dump(result, handle, indent=1)
    os.replace(results_path + ".tmp", results_path)
    write_svg(os.path.join(HERE, "recall.svg"), result)
    write_results_md(os.path.join(HERE, "RESULTS.md"), result)
    print(json.dumps(result["summary"]["methods"], indent=1), file=sys.stderr)
    print(json.dumps(result["summary"]["ratios"], indent=1), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
