"""The PyTorch models of the given-file benchmark, as a user's own loader module holds them: each
callable returns the model with the weights its ONNX files were exported from, read from the
checkpoints make_files.py saved in the folder $ONNXPROOF_GIVEN_FILES names (a state_dict for the
torchvision models, a save_pretrained folder for the transformers ones). The specs are
`bench/given_files/models.py:resnet18` and so on.

`trained_*` build the seeded models make_files.py saves: torchvision's and transformers' random
initialization with the parameters a trained model would not leave at their initial values
(biases of 0, norm weights of 1, BatchNorm statistics of 0 and 1) drawn, so a wrong bias or a
swapped mean and variance in a file would show."""
import os

import torch

SEED = 0
# The small BERT: 2 layers of width 64, a vocabulary of 1000, three labels.
BERT_CONFIG = dict(vocab_size=1000, hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
                   intermediate_size=128, max_position_embeddings=128, num_labels=3)
GPT2_CONFIG = dict(vocab_size=1000, n_embd=64, n_layer=2, n_head=4, n_positions=128)
LLAMA_CONFIG = dict(vocab_size=1000, hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
                    num_key_value_heads=2, max_position_embeddings=128)
BART_CONFIG = dict(vocab_size=1000, d_model=64, encoder_layers=2, decoder_layers=2, encoder_attention_heads=4,
                   decoder_attention_heads=4, encoder_ffn_dim=128, decoder_ffn_dim=128, max_position_embeddings=128,
                   pad_token_id=1, bos_token_id=0, eos_token_id=2, decoder_start_token_id=2)


def folder():
    path = os.environ.get("ONNXPROOF_GIVEN_FILES")
    if not path:
        raise RuntimeError("set ONNXPROOF_GIVEN_FILES to the folder make_files.py wrote")
    return path


def _drawn(model, generator):
    """Biases that are all zero and norm weights that are all one drawn near those values."""
    with torch.no_grad():
        for module in model.modules():
            is_norm = "norm" in type(module).__name__.lower()
            bias, weight = getattr(module, "bias", None), getattr(module, "weight", None)
            if isinstance(bias, torch.nn.Parameter) and not bias.any():
                bias.copy_(0.1 * torch.randn(bias.shape, generator=generator))
            if is_norm and isinstance(weight, torch.nn.Parameter) and bool((weight == 1).all()):
                weight.copy_(1 + 0.1 * torch.randn(weight.shape, generator=generator))


def _calibrated(model, generator, size=224, passes=3):
    """BatchNorm statistics as training leaves them: a few passes on random images, only the
    BatchNorm layers in train mode, a cumulative average."""
    norms = [m for m in model.modules() if isinstance(m, torch.nn.modules.batchnorm._BatchNorm)]
    for module in norms:
        module.reset_running_stats()
        module.momentum = None
        module.train()
    with torch.no_grad():
        for _ in range(passes):
            model(torch.randn(4, 3, size, size, generator=generator))
    for module in norms:
        module.momentum = 0.1
    return model.eval()


def _trained_torchvision(name, seed=SEED):
    import torchvision
    torch.manual_seed(seed)
    model = getattr(torchvision.models, name)(weights=None).eval()
    generator = torch.Generator().manual_seed(seed)
    _drawn(model, generator)
    return _calibrated(model, generator)


def trained_resnet18():
    return _trained_torchvision("resnet18")


def trained_mobilenet_v3_small():
    return _trained_torchvision("mobilenet_v3_small")


def _checkpoint(name):
    import torchvision
    model = getattr(torchvision.models, name)(weights=None)
    model.load_state_dict(torch.load(os.path.join(folder(), f"{name}.pt"), map_location="cpu"))
    return model.eval()


def resnet18():
    return _checkpoint("resnet18")


def mobilenet_v3_small():
    return _checkpoint("mobilenet_v3_small")


def _trained_transformers(model_class, config_class, settings, seed=SEED):
    torch.manual_seed(seed)
    model = model_class(config_class(**settings)).eval()
    _drawn(model, torch.Generator().manual_seed(seed))
    return model


def trained_bert(seed=SEED):
    from transformers import BertConfig, BertForSequenceClassification
    return _trained_transformers(BertForSequenceClassification, BertConfig, BERT_CONFIG, seed)


def other_resnet18():
    """The controls' model: ResNet-18 from another checkpoint (seed 1), not the files' weights."""
    return _trained_torchvision("resnet18", seed=1)


def other_bert():
    """The controls' model: the BERT classifier from another checkpoint (seed 1)."""
    return trained_bert(seed=1)


def trained_gpt2(seed=SEED):
    from transformers import GPT2Config, GPT2LMHeadModel
    return _trained_transformers(GPT2LMHeadModel, GPT2Config, GPT2_CONFIG, seed)


def other_gpt2():
    """The generation control's model: the GPT-2 from another checkpoint (seed 1)."""
    return trained_gpt2(seed=1).eval()


def trained_llama():
    from transformers import LlamaConfig, LlamaForCausalLM
    return _trained_transformers(LlamaForCausalLM, LlamaConfig, LLAMA_CONFIG)


def trained_bart():
    from transformers import BartConfig, BartForConditionalGeneration
    return _trained_transformers(BartForConditionalGeneration, BartConfig, BART_CONFIG)


def bert():
    """BertForSequenceClassification as save_pretrained wrote it (inputs input_ids,
    attention_mask, token_type_ids, ...; output logits)."""
    from transformers import BertForSequenceClassification
    return BertForSequenceClassification.from_pretrained(os.path.join(folder(), "bert")).eval()


def gpt2():
    from transformers import GPT2LMHeadModel
    return GPT2LMHeadModel.from_pretrained(os.path.join(folder(), "gpt2")).eval()


def llama():
    from transformers import LlamaForCausalLM
    return LlamaForCausalLM.from_pretrained(os.path.join(folder(), "llama")).eval()


def bart():
    from transformers import BartForConditionalGeneration
    return BartForConditionalGeneration.from_pretrained(os.path.join(folder(), "bart")).eval()
