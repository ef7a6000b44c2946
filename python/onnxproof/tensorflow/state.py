"""The export state of a TensorFlow model: the neutral ExportState plus how a Source is called,
how its exporter was called and which versions did the export."""
import os

from ..core.export_state import ExportState


class TensorFlowState(ExportState):
    framework = "tensorflow"
    source = "TensorFlow"
    call = ""  # how the exporter that wrote model.onnx was called (export.json's exporter_options)

    def forward(self, model, arrays):
        """`model` is a Source (source.py): its flat outputs as numpy arrays."""
        return model.call(arrays)

    def exporter_options(self):
        if not self.exporter or not self.call:
            return {}
        return {"call": self.call, "input_signature": {spec["name"]: [None if any(
            axis["input"] == spec["name"] and axis["axis"] == index for axis in self.dynamic) else dim
            for index, dim in enumerate(spec["dims"])] for spec in self.inputs},
            "reference_kernels": "oneDNN off (TF_ENABLE_ONEDNN_OPTS=0)"
            if os.environ.get("TF_ENABLE_ONEDNN_OPTS") == "0" else "TensorFlow's defaults (oneDNN on where it applies)"}

    def framework_versions(self):
        import keras
        import tensorflow as tf
        import tf2onnx
        return {"tensorflow": tf.__version__, "keras": keras.__version__, "tf2onnx": tf2onnx.__version__}
