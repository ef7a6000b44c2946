"""Checks a run's Model Explorer overlay (RUN/localize/model_explorer_node_data.json) against the
graph Model Explorer itself builds from the run's model.onnx with its ONNX adapter: the overlay's
graph id must be one of the adapter's graphs and every key of its results one of that graph's node
ids (else Model Explorer shows nothing for it). Runs in an environment of its own, never the
product's:

    python3 -m venv /tmp/me-venv
    /tmp/me-venv/bin/pip install ai-edge-model-explorer==0.1.34 model-explorer-onnx==0.4.2
    /tmp/me-venv/bin/python bench/model_explorer/check_node_data.py RUN

Prints the counts; exits 1 when a graph id or node key is not the adapter's."""
import json
import os
import sys

from model_explorer_onnx.main import ONNXAdapter


def main(run):
    with open(os.path.join(run, "localize", "model_explorer_node_data.json"), encoding="utf-8") as handle:
        overlay = json.load(handle)
    graphs = {graph.id: {node.id for node in graph.nodes}
              for graph in ONNXAdapter().convert(os.path.join(run, "model.onnx"), {})["graphs"]}
    missing = 0
    for graph_id, data in overlay.items():
        if graph_id not in graphs:
            print(f"graph id {graph_id!r} is none of the adapter's: {sorted(graphs)}")
            return 1
        keys = list(data["results"])
        unknown = [key for key in keys if key not in graphs[graph_id]]
        missing += len(unknown)
        print(f"graph {graph_id!r}: {len(graphs[graph_id])} adapter nodes, {len(keys)} overlay results, "
              f"{len(keys) - len(unknown)} matched, {len(unknown)} unknown {unknown[:5]}")
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
