"""onnxproof's Python front end: export a PyTorch model to ONNX and capture PyTorch's reference
outputs into a run folder (model.onnx, reference/, export.json). Everything after export is done
by the C++ engine, which reads only those files."""

__version__ = "0.1.0"
