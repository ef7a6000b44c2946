"""The export state of a PyTorch model: the neutral ExportState plus how PyTorch calls the model,
how its exporters were called and which versions did the export."""
import os

from ..core.cases import size_ranges
from ..core.export_state import ExportState


class TorchState(ExportState):
    framework = "torch"
    source = "PyTorch"
    loose_dims = frozenset()  # labels torch.export got as Dim.DYNAMIC (dynamo.capture), not a named Dim

    def args_for(self, arrays):
        """Fresh tensors for every call: a forward that mutates an input in place (x[i] += u) must
        not change the stored arrays, which are what ONNX Runtime is fed later. np.array also turns
        a 0-d numpy scalar (numpy.bool_) into the 0-d array torch.from_numpy needs."""
        from .arrays import to_torch
        return tuple(to_torch(arrays[spec["name"]]) for spec in self.inputs)

    def forward(self, model, arrays):
        import torch
        with torch.no_grad():
            return model(*self.args_for(arrays))

    def fast_path_retried(self):
        return any(f["code"] == "UNSUPPORTED_ATEN_OP" and f["severity"] == "info" for f in self.findings)

    def scripted_lists(self, model):
        import torch
        return isinstance(model, torch.jit.ScriptModule) and self.output_lists

    def exporter_options(self):
        from . import dynamo
        if self.exporter == "dynamo":
            ranges = size_ranges(self.dynamic)
            return {"call": "torch.export.export(strict=False), then torch.onnx.export(ExportedProgram, dynamo=True)",
                    "dynamic_shapes": {label: {"dim": "Dim.DYNAMIC"} if label in self.loose_dims else
                                       {"min": ranges.get(label, (None, None))[0],
                                        "max": ranges.get(label, (None, None))[1]} for label in self.examples},
                    "report": dynamo.REPORT_NAME if os.path.exists(os.path.join(self.out, dynamo.REPORT_NAME)) else None,
                    "external_data": os.path.exists(os.path.join(self.out, "model.onnx.data"))}
        if self.exporter == "torchscript":
            return {"call": "torch.onnx.export(dynamo=False)", "dynamic_axes": self.dynamic_axes(),
                    "do_constant_folding": True, "grad": "enabled (fast path retried)" if self.fast_path_retried()
                    else "no_grad"}
        return super().exporter_options()

    def framework_versions(self):
        import torch
        return {"torch": torch.__version__}
