"""What one export run knows, shared by its stages (a framework's export.py runs them in order):
the configuration, the model's inputs and axes, the example, the findings and timings so far, the
chosen exporter and opset, and what the forward pass learnt about the outputs. Also the small
operations every stage needs on it: generating inputs, timing a stage. Calling the model is the
source framework's: each framework's state (torch/state.py) adds it."""
import os
import time

import numpy as np

from .memory import StagePeaks
from .cases import domain_of, generate_in_domain, cap_offsets, shape_for, size_ranges, with_derived


class ExportState:
    """One export run's state; the stages read and extend it, export.json is written from it."""

    framework = ""  # the source framework's name (core/frameworks.py), export.json's "framework"
    source = "the source framework"  # its name in messages ("PyTorch's forward fails at ...")

    def __init__(self, config, given=None):
        """`given`: an InMemoryModel (the Python API's model object, example and data) in place
        of loading config["model"] and generating the example."""
        assert self.framework, "a framework's export state names its framework (export.json's framework)"
        self.config = config
        self.given = given
        self.out = config["out"]
        self.model_path = os.path.join(self.out, "model.onnx")
        self.inputs = config["inputs"]
        # The example's inputs are the user's (--input, prove()'s arguments), not a family's own:
        # a forward that refuses them is a usage error (torch/export_forward.py).
        self.inputs_given = True
        self.dynamic = config.get("dynamic", [])
        self.description = ""
        self.exporter = ""  # the exporter of the export kept (set before any stage runs)
        self.opset = None  # chosen once the exporter is known
        self.opset_reason = ""
        self.opset_notes = []  # EXPORTER_FALLBACK notes of the export being tried
        self.findings = []
        self.timings = {}  # {stage: seconds}, and "peak_mib": {stage: MiB}
        self.peaks = StagePeaks()
        self.examples = {}  # {label: the example's size}
        self.example = None  # {input name: array}
        self.domains = {}  # {input name: the value domain of the user's example}
        self.couplings = []  # groups of labels the model needs resized together (the forward check finds them)
        self.fixed_axes = []  # declared labels the model rejects at every other size (AXIS_FIXED_BY_MODEL)
        self.coupling_candidates = []
        self.output_names = []
        self.output_dataclasses = []
        self.output_lists = False
        self.output_groups = None
        self.output_ranks = []
        self.output_axes = {}  # {output: {axis: the declared label it follows}} (export.json's)
        self.output_dim_names = {}  # {output: {axis: its name in model.onnx}}: the label, 3*h or OUTPUT_dimN
        self.random_outputs = []  # outputs two forwards on one input disagree on (cases.json random_outputs)
        self.derived = {}  # {label: [labels]}: an axis whose size is the sum of others' (a cache's total)
        self.generation = None  # a decoder with a cache: its names for the framework's generation proof
        self.detection_sets = []  # outputs compared as sets of detections (cases.json "detections")
        self.rejected_cases = {}  # generated cases the model refused: {sizes as JSON: its error}
        self.given_file = None  # --onnx FILE: export.json's given_file (path, bytes, sha256, the binding)
        self.interface = None  # --onnx FILE: its core.given_file.Interface
        self.given_layout = None  # --onnx FOLDER: its core.given_folder.Layout (the files beside the step file)

    def timed(self, stage, function, *args):
        """function(*args), its seconds added to timings[stage] and its peak resident set kept
        in timings["peak_mib"][stage]."""
        start = time.perf_counter()
        self.peaks.enter()
        try:
            return function(*args)
        finally:
            self.timings[stage] = round(self.timings.get(stage, 0.0) + time.perf_counter() - start, 4)
            self.peaks.leave(stage)
            self.timings["peak_mib"] = self.peaks.peaks

    def forward(self, model, arrays):
        """The model's outputs on `arrays` ({input name: array}), in the source framework's own
        tensors; each framework's state says how its models are called."""
        raise NotImplementedError

    def exporter_options(self):
        """How the exporter that wrote model.onnx was called (export.json's exporter_options; a file
        the user made has none: export.json's given_file says what it is)."""
        return {}

    def framework_versions(self):
        """{distribution: version} of the source framework and its exporters, as export.json lists them."""
        return {}

    def generate_inputs(self, sizes, rng):
        """{input name: array} at the axis sizes `sizes`, inside the example's value domain."""
        sizes = with_derived(sizes, self.derived)
        arrays = {spec["name"]: generate_in_domain(spec, shape_for(spec, self.dynamic, sizes), rng,
                                                   self.domains.get(spec["name"]))
                  for spec in self.inputs}
        return cap_offsets(arrays, self.domains)

    def take_example(self, sizes, before_generating=None):
        """The example ({input name: array}), kept in self.example: the user's own arrays (prove()),
        whose values set the domain every generated input keeps, else inputs generated at `sizes`
        from the configuration's seed, after `before_generating()` (a framework's ranges found by
        running the model) when given."""
        if self.given and self.given.example:
            self.domains = {name: domain_of(name, array) for name, array in self.given.example.items()}
            self.example = dict(self.given.example)
        else:
            self.domains = {}
            if before_generating is not None:
                before_generating()
            self.example = self.generate_inputs(sizes, np.random.default_rng(int(self.config.get("seed", 0))))
        return self.example

    def other_size(self, label, size):
        """A size next to the example's on a dynamic axis, inside its --dynamic range."""
        low, high = size_ranges(self.dynamic).get(label, (1, size + 1))
        return size + 1 if size + 1 <= high else max(size - 1, low)

    def dynamic_axes(self):
        axes = {}
        for axis in self.dynamic:
            axes.setdefault(axis["input"], {})[axis["axis"]] = axis["label"]
        for name, labels in self.output_axes.items():
            if labels:
                axes[name] = {**labels, **self.output_dim_names.get(name, {})}
        return axes

    def opset_is_default(self):
        return not int(self.config.get("opset") or 0)
