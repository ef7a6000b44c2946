"""The framework-neutral core of the front end: the contract with the engine (schemas), findings,
errors, shape cases and generated inputs, the reference folder and export.json, the engine and
its attach protocol, the typed Report, and which source framework owns a spec, an object or a run
(frameworks.py). Nothing here imports a source framework (tests/python/test_framework_boundary.py)."""

ONNXPROOF_VERSION = "0.1.0"  # the package's (pyproject.toml's): onnxproof.__version__, export.json's
