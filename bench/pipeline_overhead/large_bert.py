"""The large model of bench/pipeline_overhead: transformers' BertModel with 20 layers of width 1024
(283 million float32 parameters, 1.1 GB), random weights (seed 0).

    bench/pipeline_overhead/run.py build/bin/onnxproof OUT --pairs 1 bench/pipeline_overhead/large_bert.py:build

DEFAULTS describes its input the way onnxproof.families does for a family model: run.py turns it
into the pipeline's --input and --dynamic, by_hand.py builds the same tensors from it."""
import torch
from transformers import BertConfig, BertModel

VOCABULARY = 30522
DEFAULTS = {
    "inputs": [{"name": "input_ids", "dims": [2, 16], "dtype": "int64", "range": [0, VOCABULARY]}],
    "dynamic": [{"input": "input_ids", "axis": 0, "label": "batch"},
                {"input": "input_ids", "axis": 1, "label": "sequence"}],
}


def build():
    torch.manual_seed(0)
    config = BertConfig(vocab_size=VOCABULARY, hidden_size=1024, num_hidden_layers=20, num_attention_heads=16,
                        intermediate_size=4096)
    return BertModel(config).eval()
