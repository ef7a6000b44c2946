"""Model families named by a spec, built with random weights and nothing downloaded, each with the
inputs it takes by default (used when no --input is given):

    torchvision:NAME              torchvision.models.NAME(weights=None); images 2x3x224x224, batch dynamic;
                                  a detector (families_detection.py) on a list of one 3x192x256 image,
                                  height and width dynamic, outputs boxes, labels, scores
    timm:NAME                     timm.create_model(NAME, pretrained=False); images at the model's
                                  own input size, batch dynamic
    hf:CLASS[:key=value,...]      a transformers model class built from its configuration class
                                  with small sizes (2 layers, width 64, vocabulary 1000), the
                                  key=value pairs set on the configuration; token ids and an
                                  attention mask with batch and sequence dynamic; images
                                  (pixel_values), raw audio (input_values: batch and samples
                                  dynamic), audio features or decoder ids for the models that
                                  take those

A transformers model is called with keyword arguments (its forward takes past_key_values and
the like positionally) and runs without a cache; its output object is flattened to named outputs
(logits, last_hidden_state, ...). A causal LM with use_cache=true is the decoder with its cache
instead (generation.py): past_key_values.L.key/value in, present.L.key/value out, the cache's
DynamicCache built inside the graph from the flat tensors (torch.export takes no Cache object).
"""
import torch

from ..core.data import did_you_mean
from ..core.errors import FrontEndError, UsageError
from . import FAMILY_PREFIXES, families_detection


# Small sizes for a transformers configuration, set only where the configuration has the field:
# a proof needs the architecture's operators and shapes, not its width.
HF_SMALL = {
    "hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2,
    "intermediate_size": 128, "vocab_size": 1000, "max_position_embeddings": 128, "image_size": 64,
    "d_model": 64, "encoder_layers": 2, "decoder_layers": 2, "encoder_attention_heads": 4,
    "decoder_attention_heads": 4, "encoder_ffn_dim": 128, "decoder_ffn_dim": 128, "num_layers": 2,
    "num_decoder_layers": 2, "num_heads": 4, "d_ff": 128, "d_kv": 16, "max_source_positions": 64,
    "max_target_positions": 64, "n_positions": 128, "dim": 64, "hidden_dim": 128, "n_layers": 2, "n_heads": 4,
}
BATCH, SEQUENCE, DECODER_SEQUENCE = 2, 16, 8
# Raw audio: half a second at 16 kHz, the rate wav2vec 2.0 and HuBERT were trained at.
SAMPLE_RATE, AUDIO_SECONDS_MAX = 16000, 30
SAMPLES = SAMPLE_RATE // 2
# Channels of each convolution of a raw-audio feature encoder (wav2vec 2.0 uses 512).
HF_SMALL_CONVOLUTION = 32


def is_family(spec):
    return spec.startswith(FAMILY_PREFIXES)  # torch/__init__.py's: core/frameworks.py asks it without torch


def load(spec):
    """(nn.Module in eval mode, description, default inputs {"inputs": [...], "dynamic": [...]})."""
    family, _, rest = spec.partition(":")
    if not rest:
        raise UsageError(f"model spec '{spec}' names no model after '{family}:'")
    torch.manual_seed(0)
    loader = {"torchvision": _torchvision, "timm": _timm, "hf": _transformers}[family]
    model, description, defaults = loader(rest)
    realistic = realistic_parameters(model.eval(), defaults)
    if hasattr(model, "seed_detections"):  # a detector detects nothing with random weights
        realistic += model.seed_detections(_example_tensors(defaults))
    return model.eval(), description + f" (random weights, seed 0{realistic}, eval mode)", defaults


def realistic_parameters(model, defaults, seed=0, passes=3):
    """Makes a freshly initialized model look trained where that matters to a proof: PyTorch's
    initial values (biases 0, norm weights 1 and biases 0, BatchNorm statistics 0 and 1) make
    translation bugs in those parameters invisible (a wrong epsilon, a dropped bias, a swapped
    mean and variance all give the same outputs). Seeded: the model is the same when it is loaded
    again. Returns the words for the model's description ('' when nothing changed)."""
    generator = torch.Generator().manual_seed(seed)
    changed = 0
    with torch.no_grad():
        for name, module in model.named_modules():
            is_norm = "norm" in type(module).__name__.lower()
            for parameter_name in ("weight", "bias"):
                parameter = getattr(module, parameter_name, None)
                if not isinstance(parameter, torch.nn.Parameter) or not parameter.is_floating_point():
                    continue
                if parameter_name == "bias" and not parameter.any():
                    parameter.copy_(0.1 * torch.randn(parameter.shape, generator=generator))
                    changed += 1
                elif is_norm and parameter_name == "weight" and bool((parameter == 1).all()):
                    parameter.copy_(1 + 0.1 * torch.randn(parameter.shape, generator=generator))
                    changed += 1
    calibrated = _batch_norm_statistics(model, defaults, generator, passes)
    words = ([f"{changed} bias/norm parameters drawn"] if changed else []) + (
        ["BatchNorm statistics estimated on generated inputs"] if calibrated else [])
    return ", " + ", ".join(words) if words else ""


def _batch_norm_statistics(model, defaults, generator, passes):
    """BatchNorm running statistics as training would leave them: a few forward passes on
    generated inputs with only the BatchNorm layers in train mode (a cumulative average:
    momentum None), under no_grad; the model ends in eval mode. False when the model has no
    BatchNorm or its forward refuses the generated inputs (the statistics stay as built)."""
    import numpy as np
    from ..core.cases import generate_in_domain
    norms = [module for module in model.modules() if isinstance(module, torch.nn.modules.batchnorm._BatchNorm)
             and module.track_running_stats]
    if not norms or not defaults or not defaults.get("inputs"):
        return False
    # A family may calibrate on other inputs than its example's (a detector on several images:
    # one image's smallest feature maps are 1x1, on which BatchNorm cannot train).
    calibration = defaults.get("calibration_inputs", defaults["inputs"])
    saved = [module.momentum for module in norms]
    rng = np.random.default_rng(int(torch.randint(0, 2**31 - 1, (1,), generator=generator)))
    model.eval()
    try:
        for module in norms:
            module.reset_running_stats()
            module.momentum = None
            module.train()
        with torch.no_grad():
            for _ in range(passes):
                model(*(torch.from_numpy(generate_in_domain(spec, spec["dims"], rng)) for spec in calibration))
        return True
    except Exception:  # noqa: BLE001 -- a model that cannot take them keeps its built statistics
        for module in norms:
            module.reset_running_stats()
        return False
    finally:
        for module, momentum in zip(norms, saved):
            module.momentum = momentum
        model.eval()


def _example_tensors(defaults, seed=0):
    """Generated tensors for the default inputs, seeded (the same every load)."""
    import numpy as np
    from ..core.cases import generate_in_domain
    rng = np.random.default_rng(seed)
    return [torch.from_numpy(generate_in_domain(spec, spec["dims"], rng)) for spec in defaults["inputs"]]


def _image_inputs(name, size, channels=3):
    return {"inputs": [{"name": name, "dims": [BATCH, channels, size, size], "dtype": "float32"}],
            "dynamic": [{"input": name, "axis": 0, "label": "batch"}]}


def missing_package(spec, package, extra=None):
    """The one-line error for a model family whose package is not installed, naming the install."""
    install = f"pip install 'onnxproof[{extra}]'" if extra else f"pip install {package}"
    return FrontEndError(f"{spec} needs the {package} package, which this Python lacks: {install}")


def torchvision_install():
    """The install line that keeps this torch: each torchvision release requires one torch release,
    and pip, asked for torchvision alone, would rather replace an older torch than pick an older
    torchvision. Pinning the torch installed (its local label left out: 2.13.0 matches 2.13.0+cpu)
    makes pip choose the torchvision built for it."""
    release = torch.__version__.split("+")[0]
    return f"pip install 'onnxproof[vision]' 'torch=={release}' (the pin keeps your torch {torch.__version__})"


def _torchvision(name):
    import inspect
    try:
        import torchvision
    except ImportError as error:
        raise FrontEndError(f"torchvision:{name} needs the torchvision package, which this Python lacks: "
                            f"{torchvision_install()}") from error
    except (RuntimeError, OSError) as error:  # a torchvision built for another torch: its operators do not load
        first = str(error).splitlines()[0] if str(error) else type(error).__name__
        raise FrontEndError(f"torchvision:{name}: torchvision does not load beside torch {torch.__version__} "
                            f"({first}); install the one built for it: {torchvision_install()}") from error
    try:  # every registered model: classification, detection, segmentation, video
        builder = torchvision.models.get_model_builder(name)
    except (ValueError, AttributeError):
        builder = getattr(torchvision.models, name, None)
    if builder is None or not callable(builder):
        raise UsageError(f"torchvision has no model '{name}'{did_you_mean(name, torchvision.models.list_models())}")
    if families_detection.is_detection(builder):
        return families_detection.load(name, builder)
    options = {"weights": None}
    if "weights_backbone" in inspect.signature(builder).parameters:
        options["weights_backbone"] = None  # its default would download ImageNet weights
    model = builder(**options)
    size = 299 if name == "inception_v3" else 224
    return model, f"torchvision.models.{name}", _image_inputs("image", size)


def _timm(name):
    try:
        import timm
    except ImportError as error:
        raise missing_package(f"timm:{name}", "timm") from error
    if name not in timm.list_models():
        raise UsageError(f"timm has no model '{name}'{did_you_mean(name, timm.list_models())} "
                         "(timm.list_models() lists them)")
    model = timm.create_model(name, pretrained=False)
    channels, height, width = model.pretrained_cfg.get("input_size", (3, 224, 224))
    defaults = _image_inputs("image", height, channels)
    defaults["inputs"][0]["dims"][3] = width
    return model, f"timm.create_model('{name}')", defaults


class KeywordCall(torch.nn.Module):
    """Calls a transformers model with its inputs as keyword arguments, by name."""

    def __init__(self, model, names):
        super().__init__()
        self.model = model
        self.names = names

    def call(self, *values):
        return self.model(**dict(zip(self.names, values)), return_dict=True)


# One wrapper per input signature: torch.export keys dynamic shapes by forward()'s parameter names.
class TextModel(KeywordCall):
    def forward(self, input_ids, attention_mask):
        return self.call(input_ids, attention_mask)


class TextToTextModel(KeywordCall):
    def forward(self, input_ids, attention_mask, decoder_input_ids):
        return self.call(input_ids, attention_mask, decoder_input_ids)


class ImageModel(KeywordCall):
    def forward(self, pixel_values):
        return self.call(pixel_values)


class AudioModel(KeywordCall):
    def forward(self, input_values):
        return self.call(input_values)


class AudioToTextModel(KeywordCall):
    def forward(self, input_features, decoder_input_ids):
        return self.call(input_features, decoder_input_ids)


def _parse_overrides(text):
    overrides = {}
    for item in filter(None, text.split(",")):
        key, sep, value = item.partition("=")
        if not sep or not key.isidentifier():
            raise UsageError(f"hf: configuration override '{item}' must be key=value")
        lowered = value.lower()
        if lowered in ("true", "false"):
            overrides[key] = lowered == "true"
        else:
            try:
                overrides[key] = int(value)
            except ValueError:
                try:
                    overrides[key] = float(value)
                except ValueError:
                    overrides[key] = value
    return overrides


def _transformers(text):
    try:
        import transformers
    except ImportError as error:
        raise missing_package(f"hf:{text.partition(':')[0]}", "transformers") from error
    name, _, override_text = text.partition(":")
    model_class = getattr(transformers, name, None)
    config_class = getattr(model_class, "config_class", None)
    if model_class is None or config_class is None:
        classes = [n for n in dir(transformers) if n[:1].isupper() and ("Model" in n or "For" in n)]
        raise UsageError(f"transformers has no model class '{name}'{did_you_mean(name, classes)} "
                         "(e.g. BertModel, GPT2LMHeadModel)")
    defaults = config_class()
    # Only where the field is one number: a per-stage list (Segformer's heads) keeps its default.
    settings = {key: value for key, value in HF_SMALL.items()
                if hasattr(defaults, key) and not isinstance(getattr(defaults, key), (list, tuple))}
    # Special token ids of the full vocabulary would index past the small one.
    vocabulary = settings.get("vocab_size", 0)
    for key in ("pad_token_id", "bos_token_id", "eos_token_id", "decoder_start_token_id"):
        value = getattr(defaults, key, None)
        if vocabulary and isinstance(value, int) and value >= vocabulary:
            settings[key] = vocabulary - 1
    if isinstance(getattr(defaults, "conv_dim", None), (list, tuple)):  # one width per layer
        settings["conv_dim"] = [HF_SMALL_CONVOLUTION] * len(defaults.conv_dim)
    settings.update(_parse_overrides(override_text))
    try:
        config = config_class(**settings)
        with_cache = settings.get("use_cache") is True
        config.use_cache = with_cache
        model = model_class(config)
    except Exception as error:  # the user's override or the library's own check: said in one line
        raise FrontEndError(f"building {name} from {config_class.__name__}({settings}) failed: "
                            f"{type(error).__name__}: {error}") from error
    if with_cache:
        wrapper, inputs = _cache_decoder_of(name, model, config)
    else:
        wrapper, inputs = _signature_of(model, config)
    settings_text = ", ".join(f"{key}={value}" for key, value in sorted(settings.items()))
    return wrapper, f"transformers.{name}({config_class.__name__}({settings_text}))", inputs


def _signature_of(model, config):
    """The wrapper that calls `model` and its default inputs, from what the model takes."""
    main = getattr(model, "main_input_name", "input_ids")
    vocabulary = int(getattr(config, "vocab_size", 1000) or 1000)
    ids = {"name": "input_ids", "dims": [BATCH, SEQUENCE], "dtype": "int64", "range": [0, vocabulary]}
    mask = {"name": "attention_mask", "dims": [BATCH, SEQUENCE], "dtype": "int64", "range": [1, 2]}
    decoder = {"name": "decoder_input_ids", "dims": [BATCH, DECODER_SEQUENCE], "dtype": "int64",
               "range": [0, vocabulary]}
    batch = lambda name: {"input": name, "axis": 0, "label": "batch"}  # noqa: E731
    axis = lambda name, index, label: {"input": name, "axis": index, "label": label}  # noqa: E731
    if main == "pixel_values":
        size = int(getattr(config, "image_size", 224))
        channels = int(getattr(config, "num_channels", 3))
        return ImageModel(model, ["pixel_values"]), _image_inputs("pixel_values", size, channels)
    if main == "input_features":  # speech encoder-decoders (Whisper): frames fixed by the encoder
        frames = 2 * int(getattr(config, "max_source_positions", 1500))
        features = {"name": "input_features", "dims": [BATCH, int(config.num_mel_bins), frames], "dtype": "float32"}
        return (AudioToTextModel(model, ["input_features", "decoder_input_ids"]),
                {"inputs": [features, decoder], "dynamic": [batch("input_features"), batch("decoder_input_ids"),
                                                            axis("decoder_input_ids", 1, "decoder_sequence")]})
    if main == "input_values" and hasattr(config, "conv_kernel"):
        return AudioModel(model, ["input_values"]), _raw_audio_inputs(config)
    if main == "input_values":  # a spectrogram of fixed length (Audio Spectrogram Transformer)
        frames, bins = int(getattr(config, "max_length", 1024)), int(config.num_mel_bins)
        values = {"name": "input_values", "dims": [BATCH, frames, bins], "dtype": "float32"}
        return AudioModel(model, ["input_values"]), {"inputs": [values], "dynamic": [batch("input_values")]}
    if main != "input_ids":
        raise UsageError(f"{type(model).__name__} takes '{main}' first; onnxproof builds inputs for token ids, "
                         "images, raw audio and audio features (give --input for others)")
    dynamic = [batch("input_ids"), axis("input_ids", 1, "sequence"), batch("attention_mask"),
               axis("attention_mask", 1, "sequence")]
    # Learned position embeddings bound the sequence: declared, so torch.export accepts the axis.
    positions = getattr(config, "max_position_embeddings", None) or getattr(config, "n_positions", None)
    if isinstance(positions, int) and positions >= SEQUENCE:
        for entry in dynamic[1::2]:
            entry.update(min=1, max=positions)
    if getattr(config, "is_encoder_decoder", False):
        dynamic += [batch("decoder_input_ids"), axis("decoder_input_ids", 1, "decoder_sequence")]
        return (TextToTextModel(model, ["input_ids", "attention_mask", "decoder_input_ids"]),
                {"inputs": [ids, mask, decoder], "dynamic": dynamic})
    return TextModel(model, ["input_ids", "attention_mask"]), {"inputs": [ids, mask], "dynamic": dynamic}


def _raw_audio_inputs(config):
    """Raw audio for a convolutional feature encoder (wav2vec 2.0, HuBERT, WavLM): float samples,
    batch and samples dynamic, from the fewest samples that give two frames (torch.export treats
    a size of 1 as a constant, so one frame would narrow the declared range) to 30 seconds."""
    receptive, stride = 1, 1
    for kernel, step in zip(config.conv_kernel, config.conv_stride):
        receptive += (int(kernel) - 1) * stride
        stride *= int(step)
    two_frames = receptive + stride
    values = {"name": "input_values", "dims": [BATCH, SAMPLES], "dtype": "float32"}
    return {"inputs": [values], "dynamic": [
        {"input": "input_values", "axis": 0, "label": "batch"},
        {"input": "input_values", "axis": 1, "label": "samples", "min": two_frames,
         "max": AUDIO_SECONDS_MAX * SAMPLE_RATE}]}


# Causal LM classes: the ones use_cache=true exports with their key/value cache.
CAUSAL_LM_SUFFIXES = ("ForCausalLM", "LMHeadModel")
CACHE_SEQUENCE, CACHE_PAST = 4, 8  # the example: 4 new tokens after 8 cached ones


def _cache_decoder_of(name, model, config):
    """The decoder with its cache as flat tensors, and its default inputs (generation.py; an
    encoder-decoder's in seq2seq.py)."""
    from . import generation, seq2seq
    if seq2seq.is_seq2seq(name, config):
        return seq2seq.cache_decoder_of(name, model, config, BATCH)
    if not name.endswith(CAUSAL_LM_SUFFIXES) or getattr(config, "is_encoder_decoder", False):
        raise UsageError(f"use_cache=true exports a causal LM's decoder, or an encoder-decoder's encoder and decoder, "
                         f"with its cache; {name} is neither (a class ending in {' or '.join(CAUSAL_LM_SUFFIXES)}, "
                         "or ForConditionalGeneration)")
    decoder = generation.flat_cache_decoder(model, generation.TransformersStep)
    positions = getattr(config, "max_position_embeddings", None) or getattr(config, "n_positions", None)
    vocabulary = int(getattr(config, "vocab_size", 1000) or 1000)
    try:
        inputs = generation.decoder_inputs(decoder.eval(), BATCH, CACHE_SEQUENCE, CACHE_PAST, vocabulary,
                                           positions if isinstance(positions, int) else None)
    except Exception as error:  # the library's cache classes changed shape: one clear line
        raise FrontEndError(f"{name} with use_cache=true: cannot read its cache: {type(error).__name__}: {error}") \
            from error
    return decoder, inputs
