"""The front end's framework boundary (core/frameworks.py): the neutral core imports no source
framework, and every framework registered there is a subpackage answering the same questions."""
import importlib
import inspect
import json
import os
import pkgutil
import subprocess
import sys
import tempfile
import textwrap
import types
import unittest
from unittest import mock

CHECKOUT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PYTHON_PACKAGE_PARENT = os.path.join(CHECKOUT, "python")

# An interpreter without the frameworks: each import of one fails as it would where it is not
# installed (a None entry in sys.modules makes `import torch` raise ImportError), and after every
# core module is imported none of them has been loaded.
WITHOUT_FRAMEWORKS = textwrap.dedent("""
    import importlib, pkgutil, sys
    FRAMEWORKS = ("torch", "torchvision", "tensorflow", "keras", "tf2onnx", "jax")
    for name in FRAMEWORKS:
        sys.modules[name] = None
    import onnxproof
    import onnxproof.core
    from onnxproof.core import frameworks
    modules = [m.name for m in pkgutil.walk_packages(onnxproof.core.__path__, "onnxproof.core.")]
    for name in modules:
        importlib.import_module(name)
    for name in frameworks.FRAMEWORKS:
        package = frameworks.framework(name)
        package.owns_spec("model.py:build")
        package.owns_object(object())
    frameworks.for_spec("torchvision:resnet18")
    loaded = [name for name in FRAMEWORKS if sys.modules.get(name) is not None]
    print(len(modules), "core modules;", "loaded:", loaded)
    sys.exit(1 if loaded else 0)
""")


class NeutralCore(unittest.TestCase):
    def test_the_core_imports_without_any_source_framework(self):
        result = subprocess.run([sys.executable, "-c", WITHOUT_FRAMEWORKS], capture_output=True, text=True,
                                env=dict(os.environ, PYTHONPATH=PYTHON_PACKAGE_PARENT), timeout=120)
        self.assertEqual(result.returncode, 0, result.stdout + result.stderr)
        self.assertRegex(result.stdout, r"^\d+ core modules; loaded: \[\]")
        self.assertGreaterEqual(int(result.stdout.split()[0]), 15)

    def test_a_pytorch_spec_in_an_interpreter_without_torch_is_one_line_exit_3(self):
        config = ('{"contract": "onnxproof.config/1", "model": "m.py:build", "out": "%s", "inputs": [], '
                  '"dynamic": [], "opset": 0, "exporter": "auto", "sweep": {}, "samples": 1, "seed": 0}')
        program = "import sys; sys.modules['torch'] = None; import runpy; runpy.run_module('onnxproof', run_name='__main__')"
        with tempfile.TemporaryDirectory() as folder:
            result = subprocess.run([sys.executable, "-c", program, "--config-json", config % folder],
                                    capture_output=True, text=True, timeout=120,
                                    env=dict(os.environ, PYTHONPATH=PYTHON_PACKAGE_PARENT))
        self.assertEqual(result.returncode, 3, result.stderr)
        self.assertEqual(result.stderr.count("\n"), 1, result.stderr)
        self.assertIn("cannot import torch: PyTorch models need torch", result.stderr)


class NameLists(unittest.TestCase):
    def test_targets_and_providers_are_spelled_as_a_list_or_one_string(self):
        from onnxproof.core.engine import name_list
        self.assertEqual(name_list("cpu, cuda,"), ("cpu", "cuda"))
        self.assertEqual(name_list(["ort-cpu", " tensorrt "]), ("ort-cpu", "tensorrt"))


class Registry(unittest.TestCase):
    def test_every_framework_answers_the_boundary_questions(self):
        from onnxproof.core import frameworks
        for name in frameworks.FRAMEWORKS:
            package = frameworks.framework(name)
            self.assertEqual(package.NAME, name)
            for attribute in ("TITLE", "owns_spec", "owns_object", "run_export", "run_localize", "prove"):
                self.assertTrue(hasattr(package, attribute), f"{name} lacks {attribute}")
            for module in pkgutil.iter_modules(package.__path__):  # an imported submodule must not shadow an answer
                importlib.import_module(f"onnxproof.{name}.{module.name}")
            for attribute in ("owns_spec", "owns_object", "run_export", "run_localize", "prove"):
                self.assertTrue(inspect.isfunction(getattr(package, attribute)), f"{name}.{attribute} is not a function")

    def test_specs_objects_and_runs_find_their_framework(self):
        import torch
        from onnxproof.core import frameworks
        self.assertEqual(frameworks.for_spec("torchvision:resnet18").NAME, "torch")
        self.assertEqual(frameworks.for_spec("model.pt").NAME, "torch")
        self.assertEqual(frameworks.for_object(torch.nn.Linear(2, 2)).NAME, "torch")
        self.assertFalse(frameworks.framework("torch").owns_object(object()))
        with tempfile.TemporaryDirectory() as folder:
            self.assertEqual(frameworks.for_run(folder).NAME, "torch")  # no export.json: the first
            with open(os.path.join(folder, "export.json"), "w", encoding="utf-8") as handle:
                handle.write('{"framework": "torch"}')
            self.assertEqual(frameworks.for_run(folder).NAME, "torch")
            with open(os.path.join(folder, "export.json"), "w", encoding="utf-8") as handle:
                handle.write('{"framework": "caffe"}')
            from onnxproof.core.errors import UsageError
            with self.assertRaisesRegex(UsageError, "unknown source framework 'caffe'"):
                frameworks.for_run(folder)


def numpy_framework():
    """A second framework made of the neutral core alone, as a new folder would be: its models are
    numpy functions of one input ("numpy:double" doubles x), exported by writing the ONNX graph
    by hand, its reference captured through core/reference.py, its export.json by core's finish."""
    import numpy as np
    import onnx
    from onnx import TensorProto, helper
    from onnxproof.core import reference
    from onnxproof.core.cases import example_sizes
    from onnxproof.core.export_finish import finish
    from onnxproof.core.export_state import ExportState

    factors = {"double": 2.0, "triple": 3.0}

    class NumpyState(ExportState):
        framework, source = "numpy_functions", "numpy"

        def forward(self, model, arrays):
            return arrays["x"] * model

        def framework_versions(self):
            return {"numpy": np.__version__}

    def export(config):
        state = NumpyState(config)
        factor = factors[config["model"].split(":", 1)[1]]
        state.examples = example_sizes(state.inputs, state.dynamic)
        state.example = state.generate_inputs(state.examples, np.random.default_rng(0))
        state.output_names, state.exporter = ["y"], "by-hand"
        dims = ["batch" if axis == 0 else size for axis, size in enumerate(state.inputs[0]["dims"])]
        graph = helper.make_graph(
            [helper.make_node("Mul", ["x", "factor"], ["y"])], "numpy_function",
            [helper.make_tensor_value_info("x", TensorProto.FLOAT, dims)],
            [helper.make_tensor_value_info("y", TensorProto.FLOAT, dims)],
            [helper.make_tensor("factor", TensorProto.FLOAT, [], [factor])])
        onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8), state.model_path)
        folder, capture = reference.prepare_folder(state), reference.Capture()
        for sizes, sample, source, arrays in reference.reference_samples(state):
            case = os.path.join(folder, f"test_data_set_{len(capture.cases)}")
            output = state.forward(np.float32(factor), arrays)
            reference.write_case(state, case, arrays, [("y", output)], capture.finite)
            reference.write_exact_outputs(case, ["y"], [arrays["x"].astype(np.float64) * factor])
            capture.cases.append({"data_set": os.path.basename(case), "sizes": sizes, "sample": sample,
                                  "source": source, "exact_outputs": [0]})
        reference.write_cases(state, folder, capture.cases)
        reference.publish(state, folder)
        return finish(state, exported=True)

    return types.SimpleNamespace(NAME="numpy_functions", TITLE="numpy", owns_spec=lambda spec: spec.startswith("numpy:"),
                                 owns_object=lambda model: False, run_export=export, run_localize=None,
                                 prove=None)


class SecondFramework(unittest.TestCase):
    """What a second framework needs from the front end: its folder (here a module object) and
    one line in FRAMEWORKS; the engine proves what it exported like any PyTorch export."""

    def test_a_framework_made_of_the_core_alone_is_exported_and_proved(self):
        from onnxproof.core import frameworks, main
        engine = os.environ.get("ONNXPROOF_ENGINE")
        with tempfile.TemporaryDirectory() as folder, \
                mock.patch.dict(sys.modules, {"onnxproof.numpy_functions": numpy_framework()}), \
                mock.patch.object(frameworks, "FRAMEWORKS", ("torch", "numpy_functions")):
            config = {"contract": "onnxproof.config/1", "model": "numpy:double", "out": os.path.join(folder, "export"),
                      "inputs": [{"name": "x", "dims": [2, 3], "dtype": "float32"}],
                      "dynamic": [{"input": "x", "axis": 0, "label": "batch"}], "opset": 0, "exporter": "auto",
                      "sweep": {}, "samples": 1, "seed": 0}
            self.assertEqual(main.main(["--config-json", json.dumps(config)]), 0)
            with open(os.path.join(folder, "export", "export.json"), encoding="utf-8") as handle:
                exported = json.load(handle)
            self.assertEqual(exported["framework"], "numpy_functions")
            self.assertEqual(exported["versions"]["numpy"], __import__("numpy").__version__)
            with open(os.path.join(folder, "export", "reference", "cases.json"), encoding="utf-8") as handle:
                self.assertEqual(sorted({case["sizes"]["batch"] for case in json.load(handle)["cases"]}), [1, 2, 3, 4])
            if not engine:
                self.skipTest("ONNXPROOF_ENGINE is not set: the engine's half needs the built binary")
            proved = subprocess.run([engine, "pipeline", "--from-export", os.path.join(folder, "export"),
                                     "--out", os.path.join(folder, "run")], capture_output=True, text=True, timeout=300)
            self.assertEqual(proved.returncode, 0, proved.stdout + proved.stderr)
            with open(os.path.join(folder, "run", "report.json"), encoding="utf-8") as handle:
                self.assertEqual(json.load(handle)["verdict"], "pass")


if __name__ == "__main__":
    unittest.main()
