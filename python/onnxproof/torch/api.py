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
import itertools
import os

from ..core import api_checks as argument_checks, proving
from ..core.data import LABELS, samples_from
from ..core.engine import captured_output, name_list
from ..core.errors import UsageError
from . import api_checks as checks, api_inputs as inputs_of, quantized
from .arrays import to_numpy

# A DataLoader (or any endless iterable) is read for at most this many batches by default.
DEFAULT_DATA_BATCHES = 8


def prove(model, args=(), kwargs=None, *, dynamic_shapes=None, dynamic_axes=None, data=None,
          data_batches=DEFAULT_DATA_BATCHES, opset=None, exporter="auto", targets=("ort-cpu",), providers=("cpu",),
          sweep=None, samples=3, rtol=None, atol=None, out=None, golden=None, quiet=False, localize=True,
          generate=0, quantize=None, repair=False, repair_budget=900, input_names=None, output_names=None,
          opset_version=None, onnx=None, bind=None):
    """Exports `model` called as model(*args, **kwargs), proves the export and returns its Report.

    args and kwargs as torch.export takes them: tensors of any dtype ONNX has (bfloat16, float8,
        complex as its real view), and dicts, lists and tuples of them (each tensor one input,
        named by its path: batch["extras"][0] is batch_extras_0); other values are fixed.
    input_names, output_names, opset_version: torch.onnx.export's (the flat inputs and outputs
        renamed in order; opset_version is opset).

    dynamic_shapes: torch.export's spelling, {input: {axis: Dim("batch", min=1, max=64)}} or a
        tuple in forward()'s parameter order, shaped like the arguments; Dim.STATIC keeps an axis,
        a derived Dim (d + 1) follows its root; dynamic_axes: torch.onnx's, {name: {axis: "batch"}}
        or {name: [axis, ...]} naming inputs and outputs (an output's axes are checked in the
        exported file). One label on several inputs is one shared dimension.
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
    onnx: an ONNX file you made (your own torch.onnx.export call, a converter's output): proved as
        it is against `model`, never changed and never exported again; its inputs are bound to the
        model's by name, then position (`bind`={file input: model input} says otherwise), its
        symbolic dimensions are the dynamic axes proved, and its weights are compared with the
        model's (FILE_WEIGHTS_NOT_FROM_MODEL). exporter and opset shape an export: not with onnx.
    Raises onnxproof.UsageError for bad arguments and onnxproof.EngineError when the tool cannot
    run; a model that fails the proof is a Report with verdict "fail", not an exception.
    """
    from .export import InMemoryModel
    argument_checks.check_arguments(exporter=exporter, targets=targets, providers=providers, opset=opset, rtol=rtol,
                                    atol=atol, samples=samples, data_batches=data_batches, dynamic_shapes=dynamic_shapes,
                                    dynamic_axes=dynamic_axes, sweep=sweep, kwargs=kwargs, out=out, golden=golden)
    checks.check_inputs(args, data)
    targets, providers = name_list(targets), name_list(providers)
    _check_generate(generate, repair, quantize)
    given = argument_checks.given_file_config(onnx, bind, exporter=exporter, opset=opset, opset_version=opset_version,
                                              generate=generate)
    if given and (os.path.isdir(given["onnx"]) or generate):
        _check_given_decoder(args, kwargs, data, quantize, repair)
        out = os.path.abspath(out or checks.default_out(model))
        return _prove_given_decoder(model, given, generate, out, quiet, proving.engine_command(
            out, targets, providers, rtol=rtol, atol=atol, localize=localize, golden=golden, generate=generate),
            sweep, samples)
    if generate:
        return _prove_generation(model, args, kwargs, generate, dict(
            opset=opset, exporter=exporter, targets=targets, providers=providers, sweep=sweep, samples=samples,
            rtol=rtol, atol=atol, out=out, golden=golden, quiet=quiet, localize=localize))
    opset = _opset(opset, opset_version)
    output_names = argument_checks.output_names(output_names) if output_names is not None else None
    flat = _flat_inputs(model, args, kwargs, input_names, output_names)
    inputs, dynamic, output_axes = _declared_inputs(flat, dynamic_shapes, dynamic_axes, sweep)
    out = os.path.abspath(out or checks.default_out(model, inputs, dynamic))
    config = proving.export_config(_describe(model), inputs, dynamic, opset=opset, exporter=exporter, sweep=sweep,
                                   samples=samples)
    config.update({"output_axes": output_axes} if output_axes else {})
    config.update(given)
    proving.check_config(config)
    example = {name: to_numpy(tensor, name) for name, tensor in flat.tensors.items()}
    samples_given = None if data is None else samples_from(
        _flat_samples(model, flat, args, kwargs, _batches(data, data_batches)), list(flat.tensors), "data")
    command = proving.engine_command(out, targets, providers, rtol=rtol, atol=atol, localize=localize, golden=golden,
                                         quantize=quantize, repair=repair, repair_budget=repair_budget)
    return _run_attached(command, config, InMemoryModel(flat.call, config["model"], example, samples_given), model,
                         flat.call, out, quiet)


def _prove_given_decoder(model, given, generate, out, quiet, command, sweep, samples):
    """prove(model, onnx=FOLDER or a decoder file, generate=N): the model proved as the files'
    decoder step (torch/given_cache.py), whose inputs the files give; args are not needed."""
    from .export import InMemoryModel
    config = proving.export_config(_describe(model), [], [], opset=None, exporter="auto", sweep=sweep, samples=samples)
    config.update(given, generate=generate)
    return _run_attached(command, config, InMemoryModel(model, config["model"], {}, None), model, model, out, quiet)


def _check_given_decoder(args, kwargs, data, quantize, repair):
    """UsageError for what prove(onnx=FOLDER) or prove(onnx=FILE, generate=N) would not use: the
    files give the inputs, and the generation proof comes without quantize and repair."""
    given = [name for name, value in (("args", args), ("kwargs", kwargs), ("data", data)) if value not in (None, (), {})]
    if given:
        raise UsageError(f"onnx= a generation folder (or generate=N): the files give the decoder's inputs; pass no "
                         f"{', '.join(given)}")
    if repair or quantize is not None:
        raise UsageError("quantize and repair prove a single forward; a generation folder is proved step by step: "
                         "one at a time")


def _check_generate(generate, repair, quantize):
    """UsageError unless generate is a number of steps, and one that comes without repair and quantize."""
    if not isinstance(generate, int) or isinstance(generate, bool) or generate < 0:
        raise UsageError(f"generate must be a number of steps (an int >= 0), not {generate!r}")
    if generate and repair:
        raise UsageError("repair=True repairs a single forward's proof; generate=N proves a decoder's steps: one at a time")
    if generate and quantize is not None:
        raise UsageError("quantize proves a model's single forward; generate=N proves a decoder's steps: one at a time")


def _declared_inputs(flat, dynamic_shapes, dynamic_axes, sweep):
    """(input specs, dynamic axes, axes declared on outputs) of the flat inputs, dynamic_shapes and
    dynamic_axes read as torch.export and torch.onnx read them; UsageError for a bad axis or sweep."""
    inputs = [inputs_of.input_spec(name, tensor) for name, tensor in flat.tensors.items()]
    try:
        dynamic, output_axes = inputs_of.dynamic_from(dynamic_shapes, dynamic_axes, flat)
    except (TypeError, ValueError, AttributeError) as error:  # an axis that is no number, a Dim of another kind
        raise UsageError(f"dynamic_shapes / dynamic_axes: {type(error).__name__}: {error}") from error
    checks.check_sweep(sweep, dynamic, flat.tensors)
    return inputs, dynamic, output_axes


def _opset(opset, opset_version):
    """prove()'s opset, given as opset or as torch.onnx.export's opset_version."""
    if opset_version is not None and opset is not None and opset != opset_version:
        raise UsageError(f"opset={opset!r} and opset_version={opset_version!r} disagree: give one")
    return opset if opset is not None else opset_version


def _flat_inputs(model, args, kwargs, input_names=None, output_names=None):
    """api_inputs.flatten of model(*args, **kwargs), after checking model is a torch.nn.Module."""
    import torch
    if not isinstance(model, torch.nn.Module):
        raise UsageError(f"model must be a torch.nn.Module, not {type(model).__name__}")
    args = (args,) if isinstance(args, torch.Tensor) else tuple(args)
    return inputs_of.flatten(model, args, dict(kwargs or {}), input_names, output_names)


def _prove_generation(model, args, kwargs, steps, options):
    """prove(..., generate=N): the decoder as a flat cache decoder (generation.py) with its own
    inputs, the example's input_ids being args' (the prompt), then the same engine run with
    --generate N."""
    from . import generation, seq2seq
    tensors = _flat_inputs(model, args, kwargs).tensors
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
    example["input_ids"] = to_numpy(ids, "input_ids")
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
    given = {name: to_numpy(tensor, name) for name, tensor in tensors.items() if name in names}
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
    dynamic = [dict(entry) for entry in defaults["dynamic"]]
    config = dict(proving.export_config(_describe(model), defaults["inputs"], dynamic, opset=options["opset"],
                                        exporter=options["exporter"], sweep=options["sweep"],
                                        samples=options["samples"]), generate=steps)
    proving.check_config(config)
    command = proving.engine_command(out, options["targets"], options["providers"], rtol=options["rtol"],
                                         atol=options["atol"], localize=options["localize"], golden=options["golden"],
                                         generate=steps)
    given = InMemoryModel(decoder, config["model"], example, None, defaults)
    return _run_attached(command, config, given, model, decoder, out, options["quiet"])


def _run_attached(command, config, given, model, call, out, quiet):
    """The proof (core/proving.py) of the export made here, where the model object is (the engine
    cannot load it again), with the localization's PyTorch half answered here too."""
    def export(config):
        from .export import Exporter, caches_inside
        with caches_inside(config["out"]), _restored(model):
            Exporter(config, given).run()
    return proving.run_attached(command, config, export, functools.partial(_capture_module_outputs, model, call, quiet),
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


def _flat_samples(model, flat, args, kwargs, samples):
    """Each sample with its tensors as arrays of their own dtype (bfloat16 included); a tuple
    sample of a model whose inputs are flattened (dicts, lists, keywords) flattened the same way,
    by input name (one more value than args: the labels, kept)."""
    import torch
    count = 1 if isinstance(args, torch.Tensor) else len(tuple(args))
    for sample in samples:
        if isinstance(sample, (tuple, list)) and flat.call is not model and len(sample) in (count, count + 1):
            flattened = {name: to_numpy(tensor, name) for name, tensor in
                         _flat_inputs(model, tuple(sample[:count]), kwargs, list(flat.tensors)).tensors.items()}
            yield dict(flattened, **({LABELS: sample[count]} if len(sample) > count else {}))
        elif isinstance(sample, torch.Tensor):
            yield to_numpy(sample, "data")
        elif isinstance(sample, (tuple, list)):
            yield [to_numpy(value, "data") if isinstance(value, torch.Tensor) else value for value in sample]
        elif isinstance(sample, dict):
            yield {key: to_numpy(value, key) if isinstance(value, torch.Tensor) else value for key, value in sample.items()}
        else:
            yield sample


def _batches(data, limit):
    """Samples from a tensor, a list of samples or a DataLoader (its first `limit` batches)."""
    import torch
    if isinstance(data, torch.Tensor):
        return [(data,)]
    if isinstance(data, (list, tuple)):
        return data
    return itertools.islice(iter(data), int(limit))
