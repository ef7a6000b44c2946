"""The front end's framework boundary (core/frameworks.py): the neutral core imports no source
framework, and every framework registered there is a subpackage answering the same questions."""
import os
import subprocess
import sys
import tempfile
import textwrap
import unittest

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


class Registry(unittest.TestCase):
    def test_every_framework_answers_the_boundary_questions(self):
        from onnxproof.core import frameworks
        for name in frameworks.FRAMEWORKS:
            package = frameworks.framework(name)
            self.assertEqual(package.NAME, name)
            for attribute in ("TITLE", "owns_spec", "owns_object", "export", "localize", "prove"):
                self.assertTrue(hasattr(package, attribute), f"{name} lacks {attribute}")

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


if __name__ == "__main__":
    unittest.main()
