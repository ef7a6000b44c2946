"""The exact reference: the same model in float64 on the same inputs.

PyTorch's float32 output differs from the exact answer by the model's own rounding noise at that
input; the engine proves ONNX Runtime's output against the exact answer with a budget derived from
that noise (see parity/calibrated.cpp). This module runs the float64 copy and says, per output,
why no exact value exists when one cannot be had (an op without a double kernel, a model that
casts internally, a model too large to copy)."""
import contextlib
import copy
import time

from . import traps

# A float64 copy doubles a float32 model's parameters on top of the original: above this many
# bytes of parameters (the copy's size) the exact pass is skipped, said in a finding.
MAX_COPY_BYTES = 8 * 2**30

# The float64 pass may take this many times the float32 capture's time. The first case always
# runs; later ones while the pass stays within the budget (CPU convolutions in float64 run 10-20x
# slower than in float32). Cases without a float64 run are judged with the median noise of those
# with one (the engine's rule "pooled").
TIME_BUDGET = 1.3


@contextlib.contextmanager
def default_dtype(dtype):
    """Tensors the forward creates without a dtype (torch.zeros, torch.arange of floats) follow
    the copy's precision instead of silently staying float32."""
    import torch
    before = torch.get_default_dtype()
    torch.set_default_dtype(dtype)
    try:
        yield
    finally:
        torch.set_default_dtype(before)


class ExactReference:
    """A float64 copy of the model, made once, run once per case. `reason` says why there is no
    copy (then every output falls back to the fixed tolerance)."""

    def __init__(self, model):
        self.model = None
        self.reason = ""
        self.output_reasons = {}  # output name -> why its exact value is missing (first case seen)
        self.float32_seconds = 0.0  # the reference capture's float32 forwards so far (the caller adds)
        self.last_float32_seconds = 0.0  # the current case's float32 forward (the caller sets)
        self.float32_of_exact = 0.0  # the float32 time of the cases that got a float64 run
        self.exact_seconds = 0.0
        self.cases_run = 0
        try:
            self.model = self.copy_in_float64(model)
        except Exception as error:  # any failure of the copy is a reason, not a crash
            self.reason = f"the model cannot be copied to float64: {type(error).__name__}: {error}"

    def copy_in_float64(self, model):
        import torch
        if isinstance(model, torch.jit.ScriptModule):
            # A TorchScript archive carries its dtypes in compiled code; .double() changes the
            # parameters only and casts inside the code stay float32.
            raise TypeError("a TorchScript module's code keeps its own dtypes")
        size = sum(p.numel() for p in model.parameters()) + sum(b.numel() for b in model.buffers())
        if size * 8 > MAX_COPY_BYTES:
            raise MemoryError(f"its float64 copy would take {size * 8 / 2**30:.1f} GiB")
        return copy.deepcopy(model).double().eval()

    def wanted(self):
        """Whether the current case gets a float64 run: always the first, then while its predicted
        cost (its float32 time times the float64/float32 ratio seen so far) keeps the pass within
        TIME_BUDGET of the float32 capture."""
        if self.model is None or self.cases_run == 0:
            return self.model is not None
        ratio = self.exact_seconds / max(self.float32_of_exact, 1e-9)
        predicted = ratio * self.last_float32_seconds
        return self.exact_seconds + predicted <= TIME_BUDGET * self.float32_seconds

    def outputs(self, forward, arrays, names, float32_outputs):
        """Float64 arrays aligned with `float32_outputs` (None where an output has no exact value).
        `forward(model, arrays)` is the export's own call of the model; `arrays` the case's inputs
        by name (floating ones are widened to float64, the others passed as they are)."""
        import numpy as np
        import torch
        exact = [None] * len(names)
        if self.model is None:
            return exact
        widened = {name: value.astype(np.float64) if np.asarray(value).dtype.kind == "f" else value
                   for name, value in arrays.items()}
        start = time.perf_counter()
        try:
            with default_dtype(torch.float64):
                result, _ = traps.flatten_outputs(forward(self.model, widened))
        except Exception as error:
            self.reason = self.reason or f"the float64 forward fails: {type(error).__name__}: {str(error)[:200]}"
            self.model = None  # one failure says it all: no later case tries again
            return exact
        finally:
            self.exact_seconds += time.perf_counter() - start
            self.float32_of_exact += self.last_float32_seconds
            self.cases_run += 1
        for index, (name, value) in enumerate(zip(names, [v for _, v in result])):
            expected = float32_outputs[index]
            if not expected.is_floating_point():
                continue  # integers and bools are compared exactly: no exact value needed
            if value.dtype != torch.float64:
                self.output_reasons.setdefault(name, f"the float64 model returns {str(value.dtype).split('.')[-1]} "
                                                     "(the model casts internally)")
            elif tuple(value.shape) != tuple(expected.shape):
                self.output_reasons.setdefault(name, f"the float64 model returns shape {tuple(value.shape)}, "
                                                     f"float32 {tuple(expected.shape)}")
            else:
                exact[index] = value.detach().cpu().numpy()
        return exact

    def missing_reason(self):
        """One sentence for the info finding when some output has no exact value; '' when all do."""
        if self.reason:
            return self.reason
        return "; ".join(f"output '{name}': {why}" for name, why in self.output_reasons.items())
