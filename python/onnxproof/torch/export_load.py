"""Export stage 1, load and prepare: the model (from its spec, or the object the Python API
holds), its inputs (a model family's own when none were declared), the exporters to try, the
model in eval mode on the CPU, and the example the other stages run on."""
from ..core.cases import coupled_groups, example_sizes
from ..core.data import did_you_mean
from ..core.errors import UsageError
from ..core.export_io import progress
from ..core.findings import finding
from . import families, given_file, quantized
from . import spec as specs
from .export_opset import choose_opset, resolve_exporters


def load_and_prepare(state):
    """(the model ready to export, the exporters to try in order); UsageError for a malformed spec
    or undeclared inputs."""
    import torch
    model_spec = state.config["model"]
    if state.given is None:
        specs.check_model_spec(model_spec)
    generate = int(state.config.get("generate") or 0)
    given_onnx = bool(state.config.get("onnx"))  # a file the user made: proved as it is, never exported
    if (not state.inputs and state.given is None and not families.is_family(model_spec) and not generate
            and not given_onnx):  # a given file declares the inputs
        raise UsageError("declare the model's inputs with --input NAME=DIMS:DTYPE")
    exporters = ["file"] if given_onnx else resolve_exporters(state.config.get("exporter", "auto"),
                                                               int(state.config.get("opset") or 0))
    if state.given is None:
        progress(f"loading {model_spec}")
        # Seeded: a model built with random weights is the same model when it is loaded again
        # (divergence localization reruns it).
        torch.manual_seed(int(state.config.get("seed", 0)))
        model, state.description, defaults = state.timed("load", specs.load_model, model_spec)
    else:
        model, state.description, defaults = state.given.model, state.given.description, state.given.defaults
    if given_onnx:  # a generation folder, or a file with a cache: the model as its decoder step
        model, defaults = _given_step(state, model, defaults)
    elif generate and not (defaults or {}).get("generation"):
        model, defaults = _as_cache_decoder(state, model)
    if (not state.inputs and defaults is not None) or (defaults or {}).get("generation"):
        # The family's own inputs; a --dynamic given alone is not mixed with them.
        state.inputs, state.dynamic = defaults["inputs"], defaults["dynamic"]
        state.inputs_given = False
        state.derived, state.generation = defaults.get("derived", {}), defaults.get("generation")
        progress("inputs: " + ", ".join(f"{spec['name']} {'x'.join(map(str, spec['dims']))} {spec['dtype']}"
                                        for spec in state.inputs))
    elif state.given is None and not given_onnx:
        check_input_names(model, state.inputs)
    binding = given_file.bind_inputs(state, model) if given_onnx else None
    if state.config.get("merged_decoder") and not (state.generation or {}).get("encoder"):
        raise UsageError("--merged-decoder merges an encoder-decoder's decoder steps: give an hf: encoder-decoder with "
                         "use_cache=true (T5, BART, Marian, Whisper)")
    if generate and not state.generation:
        raise UsageError("--generate needs a decoder with a key/value cache: a causal LM spec with use_cache=true "
                         "(hf:LlamaForCausalLM:use_cache=true) or, in prove(), a model taking past_key_values")
    # A derived axis (torch.export's d + 1) takes its size from its root's in every case.
    state.derived = dict(state.derived, **{axis["label"]: axis["derived"] for axis in state.dynamic if "derived" in axis})
    state.examples = example_sizes(state.inputs, state.dynamic)
    state.exporter = exporters[0]
    if given_onnx:
        bound = given_file.bound_model(prepare(state, model), *binding, state.interface.outputs,
                                       state.given_file["outputs"])
        return bound.eval(), exporters
    state.opset, state.opset_reason = choose_opset(state.config, state.exporter)  # until an export chooses
    return prepare(state, model), exporters


def _given_step(state, model, defaults):
    """(model, defaults) for a given file: the model as the file's decoder step where the file takes
    a cache (torch/given_cache.py; the transformers model inside an hf: spec's wrapper first), with
    no family defaults then; else as they were."""
    from . import given_cache
    inner = model
    while not hasattr(inner, "config") and hasattr(getattr(inner, "model", None), "config"):
        inner = inner.model
    stepped = given_cache.step_decoder(state, inner)
    return (model, defaults) if stepped is inner else (stepped, None)


def _as_cache_decoder(state, model):
    """--generate on a model of the user's: its forward must take past_key_values; it becomes a
    flat cache decoder (generation.py) with inputs read from its cache. A declared input_ids sets
    the prompt's size and id range."""
    from . import generation
    if not generation.takes_cache(model):
        raise UsageError("--generate needs a decoder with a key/value cache: forward(input_ids, attention_mask, "
                         "past_key_values=None), or an hf: causal LM with use_cache=true")
    ids = next((spec for spec in state.inputs if spec["name"] == "input_ids"), None)
    try:
        return generation.user_decoder(model, ids)
    except Exception as error:  # the user's forward does not follow the decoder convention
        raise UsageError(f"--generate: the model is no decoder onnxproof can call with a cache: "
                         f"{type(error).__name__}: {error}") from error


def check_input_names(model, inputs):
    """Declared inputs go to forward() in order; a name that is a typo of one of forward()'s
    parameters is refused with the name meant, another name is said, never taken silently."""
    import inspect
    try:
        parameters = list(inspect.signature(model.forward).parameters.values())
    except (TypeError, ValueError):
        return  # a TorchScript or C++ forward: no Python signature to compare with
    if any(p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD) for p in parameters):
        return
    names = [p.name for p in parameters]
    declared = [spec["name"] for spec in inputs]
    if len(declared) > len(names):
        raise UsageError(f"{len(declared)} inputs declared; forward({', '.join(names)}) takes {len(names)}")
    for position, name in enumerate(declared):
        if name in names:
            continue
        meant = did_you_mean(name, [n for n in names if n not in declared])
        if meant:
            raise UsageError(f"--input '{name}' is not a parameter of forward({', '.join(names)}){meant}")
        progress(f"input '{name}' is forward()'s parameter '{names[position]}' (inputs are passed in order)")


def prepare(state, model):
    import torch
    if quantized.census(model):
        # A PT2E graph was traced in the mode it had: its flag says nothing, and torchao makes
        # train()/eval() raise on it. A model onnxproof loaded itself gets the calls back for
        # good; prove()'s caller's object has them back after the run (api.py).
        if state.given is None:
            quantized.allow_mode_calls(model)
        model.train(False)
    if model.training:
        # Modules whose forward differs in training mode; without any, the mode only matters to
        # code that reads self.training itself.
        changing = sorted({type(m).__name__ for m in model.modules()
                           if isinstance(m, (torch.nn.modules.dropout._DropoutNd, torch.nn.modules.batchnorm._NormBase))})
        if state.given is None:
            # onnxproof called the spec's callable (constructors return train mode): the user never
            # held the object and onnxproof exports in eval mode anyway; nothing to fix.
            state.findings.append(finding(
                "TRAINING_MODE", "info", "the model spec's callable returned the model in training mode, as "
                "nn.Module constructors do; onnxproof exported it in eval mode", "", ""))
        else:
            state.findings.append(finding(
                "TRAINING_MODE", "warning" if changing else "info",
                f"the model came in training mode ({', '.join(changing)} behave differently in it); exported in "
                "eval mode" if changing else "the model came in training mode; exported in eval mode (it holds no "
                "dropout or batch norm, so only code reading self.training could differ)",
                "", "call model.eval() before exporting; onnxproof did it for you"))
        model.eval()
    devices = {parameter.device.type for parameter in model.parameters()}
    if devices - {"cpu"}:
        state.findings.append(finding("MOVED_TO_CPU", "info", f"the model was on {', '.join(sorted(devices))}; "
                                      "moved to the CPU for export and reference outputs", "", ""))
        model.cpu()
    return model


def example_arrays(state, model=None):
    """The example: the user's own arrays (the Python API), whose values set the domain every
    generated input keeps, or generated ones (signed integers where the model takes them:
    signed_integer_ranges). Also the candidate groups of coupled labels."""
    state.couplings = []  # groups of labels PyTorch needs at one size (label_output_axes finds them)
    state.coupling_candidates = coupled_groups(state.inputs, state.dynamic)
    return state.take_example(state.examples, None if model is None else lambda: signed_integer_ranges(state, model))


# Integer inputs declared without a range are generated in [0, 10) (cases.DEFAULT_INT_RANGE):
# indices and token ids must not be negative. An input the model takes negative values of (an
# arithmetic one: a count, an offset, a value divided or taken modulo) gets this range instead,
# or a floor division or modulo the exporter translated wrongly for negatives could never show.
SIGNED_RANGE = [-10, 10]


def signed_integer_ranges(state, model):
    """Gives each signed integer input declared without a range (and not a mask) SIGNED_RANGE when
    the model's forward runs on negative values of it, the others at their default."""
    import numpy as np
    from ..core.cases import looks_like_mask, numpy_dtype
    for index, spec in enumerate(state.inputs):
        dtype = numpy_dtype(spec["dtype"])
        if dtype.kind != "i" or spec.get("range") or looks_like_mask(spec["name"], dtype):
            continue
        trial = [dict(other, range=SIGNED_RANGE) if other is spec else other for other in state.inputs]
        saved, state.inputs = state.inputs, trial
        try:
            arrays = state.generate_inputs(state.examples, np.random.default_rng(11))
            state.forward(model, arrays)
            state.inputs = saved
        except Exception:  # noqa: BLE001 -- negative values are no input of this model: the default stays
            state.inputs = saved
            continue
        state.inputs = [dict(spec, range=SIGNED_RANGE) if i == index else other for i, other in enumerate(saved)]
        progress(f"input '{spec['name']}': the model takes negative values, generated in [{SIGNED_RANGE[0]}, "
                 f"{SIGNED_RANGE[1]})")
