"""The Python API for PyTorch models (onnxproof.prove hands an nn.Module here): the whole pipeline
on a model object in memory.

    report = onnxproof.prove(model, (x,), dynamic_shapes={"x": {0: Dim("batch")}})

The export and PyTorch's reference outputs happen here, in this process (the model never has to
be importable by name); one engine process (`onnxproof pipeline --attach`, attached.py) gives the
export its opset limit, proves the export as `onnxproof pipeline --from-export` does, asks this
process for PyTorch's module outputs when it localizes a divergence, and the typed Report is read
from the run folder's report.json.
"""
import contextlib
import functools
import inspect
import itertools
import os
import re

from ..core import api_checks as argument_checks, contract, proving
from ..core.data import samples_from
from ..core.engine import captured_output, name_list
from ..core.errors import UsageError
from . import api_checks as checks, quantized

# A DataLoader (or any endless iterable) is read for at most this many batches by default.
DEFAULT_DATA_BATCHES = 8


def prove(model, args=(), kwargs=None, *, dynamic_shapes=None, dynamic_axes=None, data=None,
          data_batches=DEFAULT_DATA_BATCHES, opset=None, exporter="auto", targets=("ort-cpu",), providers=("cpu",),
          sweep=None, samples=3, rtol=None, atol=None, out=None, golden=None, quiet=False, localize=True,
          generate=0, quantize=None, repair=False, repair_budget=900):
    """Exports `model` called as model(*args, **kwargs), proves the export and returns its Report.

    dynamic_shapes: torch.export's spelling, {input: {axis: Dim("batch", min=1, max=64)}} or a
        tuple in argument order; dynamic_axes: torch.onnx's, {input: {axis: "batch"}} or
        {input: [axis, ...]}. One label on several inputs is one shared dimension.
    data: real inputs to prove on: a tensor, a list of samples (tuples in argument order or dicts
        by input name; a tuple with one more value ends with labels), or a DataLoader, of which the
        first `data_batches` batches are used. Without data, generated inputs at every shape case.
    exporter: "auto" (torch's default, then the other), "dynamo" or "torchscript".
    targets: runtimes to audit operators against (ort-cpu, ort-cuda, tensorrt, openvino); ort-cpu@1.18
        proves the model on that ONNX Runtime release too (fetched once: docs/cli.md).
    sweep: {label: [sizes]} to prove each dynamic axis at.
    out: the run folder (default onnxproof-out/<model class>-<hash of the inputs' signature and
        the weights>: a retrained model gets a folder of its own, the same model the same one);
        replaced only when it is empty or an earlier onnxproof run.
    golden: a folder for golden outputs, e.g. "tests/onnx/classifier" (keep it in your
        repository): the first run freezes the proved outputs there, every later run verifies
        against them (GOLDEN_DRIFT when they moved; delete the folder to accept a change).
        None (the default): nothing frozen or verified.
    localize: after a parity failure, find the module where the outputs first diverge (the
        Report's `localization` and a DIVERGENCE_LOCATED finding; RUN/localize/).
    generate: N greedy steps from args' input_ids through PyTorch and ONNX Runtime (the generation
        proof, docs/generation.md); the model is a decoder, forward(input_ids, attention_mask,
        past_key_values=None) returning logits and the cache, exported with the cache as inputs
        and outputs (past_key_values.L.key/value, present.L.key/value).
    quantize: "static" also quantizes the proved export with ONNX Runtime's quantize_static (QDQ,
        int8, calibrated on `data` or the generated inputs) into RUN/model.quant.onnx and proves it
        in quantization steps (docs/quantization.md). A PT2E-quantized model (convert_pt2e's
        graph) needs nothing: it is exported with its Q/DQ nodes and proved in steps.
    repair: after a failure, try the changes the findings point at (the other exporter, lower
        opsets, an ONNX Runtime optimizer disabled, a block kept in float32, ...), each proved in
        RUN/repair/ within `repair_budget` seconds (docs/repair.md); the Report's what_to_do
        names the proved fix. The verdict stays the export's own.
    Raises onnxproof.UsageError for bad arguments and onnxproof.EngineError when the tool cannot
    run; a model that fails the proof is a Report with verdict "fail", not an exception.
    """
    from .export import InMemoryModel
    argument_checks.check_arguments(exporter=exporter, targets=targets, providers=providers, opset=opset, rtol=rtol, atol=atol,
                           samples=samples, data_batches=data_batches, dynamic_shapes=dynamic_shapes,
                           dynamic_axes=dynamic_axes, sweep=sweep, kwargs=kwargs, out=out, golden=golden)
    checks.check_inputs(args, data)
    targets, providers = name_list(targets), name_list(providers)
    if not isinstance(generate, int) or isinstance(generate, bool) or generate < 0:
        raise UsageError(f"generate must be a number of steps (an int >= 0), not {generate!r}")
    if generate and repair:
        raise UsageError("repair=True repairs a single forward's proof; generate=N proves a decoder's steps: one at a time")
    if generate and quantize is not None:
        raise UsageError("quantize proves a model's single forward; generate=N proves a decoder's steps: one at a time")
    if generate:
        return _prove_generation(model, args, kwargs, generate, dict(
            opset=opset, exporter=exporter, targets=targets, providers=providers, sweep=sweep, samples=samples,
            rtol=rtol, atol=atol, out=out, golden=golden, quiet=quiet, localize=localize))
    call, tensors = _callable_inputs(model, args, kwargs)
    names = list(tensors)
    inputs = [_input_spec(name, tensor) for name, tensor in tensors.items()]
    try:
        dynamic = _dynamic_from(dynamic_shapes, dynamic_axes, names, tensors)
    except (TypeError, ValueError) as error:  # an axis that is no number, a Dim of another kind
        raise UsageError(f"dynamic_shapes / dynamic_axes: {type(error).__name__}: {error}") from error
    checks.check_sweep(sweep, dynamic, tensors)
    out = os.path.abspath(out or checks.default_out(model, inputs, dynamic))
    config = {
        "contract": contract.CONFIG, "model": _describe(model), "inputs": inputs, "dynamic": dynamic,
        "opset": int(opset or 0), "exporter": exporter, "sweep": {k: [int(s) for s in v] for k, v in (sweep or {}).items()},
        "samples": int(samples), "seed": 0, "out": "",
    }
    proving.check_config(config)
    example = {name: _array(name, tensor) for name, tensor in tensors.items()}
    samples_given = None if data is None else samples_from(_batches(data, data_batches), names, "data")
    arguments = ["--out", out, "--target", ",".join(targets), "--provider", ",".join(providers)]
    arguments += proving.tolerance_arguments(rtol, atol) + ([] if localize else ["--no-localize"])
    arguments += proving.golden_arguments(golden) + proving.quantize_arguments(quantize)
    arguments += proving.repair_arguments(repair, repair_budget)
    return _run_attached(arguments, config, InMemoryModel(call, config["model"], example, samples_given), model, call,
                         out, quiet)


def _prove_generation(model, args, kwargs, steps, options):
    """prove(..., generate=N): the decoder as a flat cache decoder (generation.py) with its own
    inputs, the example's input_ids being args' (the prompt), then the same engine run with
    --generate N."""
    from . import generation, seq2seq
    _, tensors = _callable_inputs(model, args, kwargs)
    if seq2seq.is_seq2seq(type(model).__name__, getattr(model, "config", None)):
        return _prove_seq2seq_generation(model, tensors, steps, options)
    ids = tensors.get("input_ids")
    if ids is None or not generation.takes_cache(model):
        raise UsageError("generate=N needs a decoder, forward(input_ids, attention_mask, past_key_values=None), "
                         "called with input_ids (and attention_mask) in args")
    try:
        decoder, defaults = generation.user_decoder(model, {"dims": list(ids.shape)})
    except Exception as error:  # the user's forward does not follow the decoder convention
        raise UsageError(f"generate=N: the model is no decoder onnxproof can call with a cache: "
                         f"{type(error).__name__}: {error}") from error
    example = _decoder_example(defaults)
    example["input_ids"] = _array("input_ids", ids)
    return _prove_decoder(model, decoder, defaults, example, steps, options)


def _decoder_example(defaults):
    """A cache decoder's example inputs, generated from its default inputs."""
    import numpy as np
    from ..core.cases import generate_in_domain, with_derived, example_sizes, shape_for
    sizes = with_derived(example_sizes(defaults["inputs"], defaults["dynamic"]), defaults.get("derived", {}))
    rng = np.random.default_rng(0)
    return {spec["name"]: generate_in_domain(spec, shape_for(spec, defaults["dynamic"], sizes), rng)
            for spec in defaults["inputs"]}


def _prove_seq2seq_generation(model, tensors, steps, options):
    """prove(model, args, generate=N) on a transformers encoder-decoder (a fine-tuned T5, BART,
    Marian, Whisper): exported as encoder.onnx and the decoder step (seq2seq.py), the request in
    `args` (its encoder inputs: input_ids and attention_mask, or input_features) proved first."""
    from . import seq2seq
    names = ("input_ids", "attention_mask", "input_features")
    given = {name: _array(name, tensor) for name, tensor in tensors.items() if name in names}
    if not given:
        raise UsageError("generate=N on an encoder-decoder needs its encoder's inputs in args: input_ids (and "
                         "attention_mask), or input_features")
    batch = int(next(iter(given.values())).shape[0])
    try:
        decoder, defaults = seq2seq.cache_decoder_of(type(model).__name__, model, model.config, batch)
    except Exception as error:  # a model whose cache is not transformers' EncoderDecoderCache
        raise UsageError(f"generate=N: onnxproof cannot read this encoder-decoder's cross-attention cache: "
                         f"{type(error).__name__}: {error}") from error
    expected = [spec["name"] for spec in defaults["generation"]["encoder"]["inputs"]]
    if sorted(given) != sorted(expected):
        raise UsageError(f"generate=N: give the encoder's inputs {expected} in args, not {sorted(given)}")
    defaults["generation"]["encoder"]["given"] = given
    return _prove_decoder(model, decoder, defaults, _decoder_example(defaults), steps, options)


def _prove_decoder(model, decoder, defaults, example, steps, options):
    """The engine run with --generate N on a cache decoder made here."""
    from .export import InMemoryModel
    out = os.path.abspath(options["out"] or checks.default_out(model, defaults["inputs"], defaults["dynamic"]))
    config = {"contract": contract.CONFIG, "model": _describe(model), "inputs": defaults["inputs"],
              "dynamic": [{key: value for key, value in entry.items()} for entry in defaults["dynamic"]],
              "opset": int(options["opset"] or 0), "exporter": options["exporter"],
              "sweep": {k: [int(s) for s in v] for k, v in (options["sweep"] or {}).items()},
              "samples": int(options["samples"]), "seed": 0, "out": "", "generate": steps}
    proving.check_config(config)
    arguments = ["--out", out, "--target", ",".join(options["targets"]), "--provider", ",".join(options["providers"]),
                 "--generate", str(steps)] + proving.tolerance_arguments(options["rtol"], options["atol"])
    arguments += ([] if options["localize"] else ["--no-localize"]) + proving.golden_arguments(options["golden"])
    given = InMemoryModel(decoder, config["model"], example, None, defaults)
    return _run_attached(arguments, config, given, model, decoder, out, options["quiet"])


def _run_attached(arguments, config, given, model, call, out, quiet):
    """The proof (core/proving.py) of the export made here, where the model object is (the engine
    cannot load it again), with the localization's PyTorch half answered here too."""
    def export(config):
        from .export import Exporter, caches_inside
        with caches_inside(config["out"]), _restored(model):
            Exporter(config, given).run()
    return proving.run_attached(arguments, config, export, functools.partial(_capture_module_outputs, model, call, quiet),
                                out, quiet)


def _capture_module_outputs(model, call, quiet, folder, model_file, case):
    """Localization's PyTorch half, asked by the engine: module outputs by hooks on `case`,
    written to FOLDER/localize/; the caller's model keeps its mode and device."""
    from . import localize
    # What torch prints, logs or warns while tracing again joins the export's log in the run folder.
    log = os.path.join(folder, "export.log")
    with _restored(model), captured_output(log, quiet, append=os.path.isfile(log)):
        localize.write_localization(folder, model_file, case, call.eval().cpu())


@contextlib.contextmanager
def _restored(model):
    """The export puts the model in eval mode on the CPU (with a finding when it was not); the
    caller's model object gets its mode and device back afterwards."""
    training = model.training
    devices = {tensor.device for tensor in itertools.chain(model.parameters(), model.buffers())}
    with quantized.mode_calls_allowed(model):
        try:
            yield
        finally:
            model.train(training)
            if len(devices) == 1 and next(iter(devices)).type != "cpu":
                model.to(next(iter(devices)))


def _describe(model):
    kind = type(model)
    return f"{kind.__module__}.{kind.__qualname__}"


def _positionalname_list(model, count):
    try:
        parameters = list(inspect.signature(model.forward).parameters.values())
    except (TypeError, ValueError):
        parameters = []
    names = [p.name for p in parameters if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    return names[:count] if len(names) >= count else [f"input_{i}" for i in range(count)]


def _takes_var_positional(model):
    try:
        parameters = inspect.signature(model.forward).parameters.values()
    except (TypeError, ValueError):
        return False
    return any(p.kind == p.VAR_POSITIONAL for p in parameters)


def _callable_inputs(model, args, kwargs):
    """(module to export, {input name: tensor}): tensors in args and kwargs become the model's
    inputs, named after forward()'s parameters; other keyword values stay fixed."""
    import torch
    if not isinstance(model, torch.nn.Module):
        raise UsageError(f"model must be a torch.nn.Module, not {type(model).__name__}")
    args = (args,) if isinstance(args, torch.Tensor) else tuple(args)
    for index, value in enumerate(args):
        if not isinstance(value, torch.Tensor):
            raise UsageError(f"args[{index}] is a {type(value).__name__}: positional inputs must be tensors "
                             "(pass fixed values as kwargs)")
    kwargs = dict(kwargs or {})
    tensors = dict(zip(_positionalname_list(model, len(args)), args))
    keyword_tensors = {name: value for name, value in kwargs.items() if isinstance(value, torch.Tensor)}
    if set(keyword_tensors) & set(tensors):
        raise UsageError(f"{sorted(set(keyword_tensors) & set(tensors))} given both in args and kwargs")
    if not keyword_tensors and not kwargs:
        # forward(self, *args): torch.export binds the inputs as one tuple named `args`, which
        # dynamic shapes keyed per input cannot describe; a wrapper names each input.
        return (_keyword_call(model, list(tensors), len(args), {}) if _takes_var_positional(model) else model), tensors
    fixed = {name: value for name, value in kwargs.items() if name not in keyword_tensors}
    tensors.update(keyword_tensors)
    return _keyword_call(model, list(tensors), len(args), fixed), tensors


def _keyword_call(model, names, positional, fixed):
    """A module whose forward takes every input positionally, under its own name (torch.export
    keys dynamic shapes by forward()'s parameter names), and calls the model with keywords."""
    import torch

    class KeywordInputs(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.model = model

        def forward(self, *values):
            return self.model(*values[:positional], **dict(zip(names[positional:], values[positional:])), **fixed)

    parameters = [inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD)]
    parameters += [inspect.Parameter(name, inspect.Parameter.POSITIONAL_OR_KEYWORD) for name in names]
    KeywordInputs.forward.__signature__ = inspect.Signature(parameters)
    wrapper = KeywordInputs()
    wrapper.train(model.training)
    return wrapper


def _input_spec(name, tensor):
    """The input as the export contract declares it; integer inputs are generated inside the
    range the example spans (token ids stay inside what the example used)."""
    import torch
    dtype = str(tensor.dtype).replace("torch.", "")
    spec = {"name": name, "dims": [int(d) for d in tensor.shape], "dtype": dtype}
    if tensor.dtype in (torch.int8, torch.int16, torch.int32, torch.int64, torch.uint8) and tensor.numel():
        spec["range"] = [int(tensor.min()), int(tensor.max()) + 1]
    return spec


def _array(name, tensor):
    try:
        return tensor.detach().cpu().numpy()
    except TypeError as error:  # bfloat16 and other types numpy has not
        raise UsageError(f"input {name!r}: {tensor.dtype} inputs are not supported by the export front end yet "
                         f"({error})") from error


def _label(name, axis):
    return re.sub(r"\W", "_", f"{name}_dim{axis}")


def _dynamic_from(dynamic_shapes, dynamic_axes, names, tensors):
    """The config's dynamic axes from either spelling: [{"input", "axis", "label"[, "min", "max"]}]."""
    if dynamic_shapes is not None and dynamic_axes is not None:
        raise UsageError("give dynamic_shapes (torch.export's spelling) or dynamic_axes (torch.onnx's), not both")
    dynamic = []
    if dynamic_axes is not None:
        for name, axes in dict(dynamic_axes).items():
            items = axes.items() if isinstance(axes, dict) else ((axis, _label(name, axis)) for axis in axes)
            dynamic += [{"input": name, "axis": int(axis), "label": str(label)} for axis, label in items]
    elif dynamic_shapes is not None:
        by_name = dynamic_shapes if isinstance(dynamic_shapes, dict) else dict(zip(names, dynamic_shapes))
        for name, axes in by_name.items():
            items = axes.items() if isinstance(axes, dict) else enumerate(axes or ())
            dynamic += [_dim_axis(name, int(axis), dim) for axis, dim in items if dim is not None]
    for axis in dynamic:
        if axis["input"] not in tensors:
            raise UsageError(f"a dynamic axis names input {axis['input']!r}; the inputs are {', '.join(names)}")
        if not 0 <= axis["axis"] < tensors[axis["input"]].dim():
            raise UsageError(f"input {axis['input']!r} has no axis {axis['axis']} (rank {tensors[axis['input']].dim()})")
    return dynamic


def _dim_axis(name, axis, dim):
    """One torch.export Dim as a dynamic axis: its name is the label, its bounds the range."""
    label = getattr(dim, "__name__", None)
    if not isinstance(label, str) or label in ("AUTO", "DYNAMIC", "STATIC"):
        label = _label(name, axis)  # Dim.AUTO / Dim.DYNAMIC: no name of the user's
    entry = {"input": name, "axis": axis, "label": label}
    low, high = getattr(dim, "min", None), getattr(dim, "max", None)
    if isinstance(high, int) and high < 2 ** 31:
        entry.update(min=max(int(low or 1), 1), max=int(high))
    return entry


def _batches(data, limit):
    """Samples from a tensor, a list of samples or a DataLoader (its first `limit` batches)."""
    import torch
    if isinstance(data, torch.Tensor):
        return [(data,)]
    if isinstance(data, (list, tuple)):
        return data
    return itertools.islice(iter(data), int(limit))
