"""The 4 GB model of bench/pipeline_overhead: transformers' LlamaForCausalLM sized like a 1.1B
decoder (22 layers of width 2048, MLP 5632, 32 heads over 4 key-value heads, 32,000 tokens:
1,100 million float32 parameters, 4.4 GB), random weights (seed 0), no cache (logits only). Its
ONNX export is past protobuf's 2 GiB, so its weights go to an external data file.

    bench/pipeline_overhead/run.py build/bin/onnxproof OUT --pairs 1 bench/pipeline_overhead/large_decoder.py:build

DEFAULTS describes its input the way onnxproof.families does for a family model: run.py turns it
into the pipeline's --input and --dynamic, by_hand.py builds the same tensors from it."""
import torch
from transformers import LlamaConfig, LlamaForCausalLM

VOCABULARY = 32000
DEFAULTS = {
    "inputs": [{"name": "input_ids", "dims": [2, 16], "dtype": "int64", "range": [0, VOCABULARY]}],
    "dynamic": [{"input": "input_ids", "axis": 0, "label": "batch"},
                {"input": "input_ids", "axis": 1, "label": "sequence"}],
}


def build():
    torch.manual_seed(0)
    config = LlamaConfig(vocab_size=VOCABULARY, hidden_size=2048, intermediate_size=5632, num_hidden_layers=22,
                         num_attention_heads=32, num_key_value_heads=4, max_position_embeddings=2048,
                         use_cache=False, tie_word_embeddings=False)
    return LlamaForCausalLM(config).eval()
