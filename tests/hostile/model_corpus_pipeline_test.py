"""Every hostile model of model_corpus.py given to the commands that prove a model file against
its source (issue 61's rest of the corpus): `pipeline --onnx` (the given-file proof),
`pipeline --from-export` (an export folder whose model is the hostile file, its recorded sha256 made
to agree), `golden verify` against a golden set of the valid model, and the Python API
(`prove(model, onnx=...)`). Each runs in a process capped at 6 GiB of address space and must end
within two minutes with exit 1, 2 or 3 (never a signal, never a pass), say any error in one
`onnxproof: error:` line (the API: an onnxproof exception or a Report), never traceback or abort,
and write nothing outside its run folder (the work folder is listed before and after)."""
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

from onnx import TensorProto, helper

from model_corpus import capped, write_corpus, write_reference

ENGINE = os.environ.get("ONNXPROOF_ENGINE", "")
MODEL_PY = "import torch\n\n\nclass Double(torch.nn.Module):\n    def forward(self, x):\n        return x + x\n\n\n" \
           "def double():\n    return Double()\n"
API = """import sys
sys.path.insert(0, sys.argv[3])
import numpy as np, torch, onnxproof
from double import Double
try:
    report = onnxproof.prove(Double(), (torch.ones(1, 4),), onnx=sys.argv[1], out=sys.argv[2], quiet=True)
except (onnxproof.UsageError, onnxproof.EngineError) as error:
    print("raised", type(error).__name__, str(error).splitlines()[0])
    sys.exit(2)
print("verdict", report.verdict)
sys.exit(0 if report.verdict == "pass" else 1)
"""
# A valid model whose trouble is its size at run time may end in a fail; none of these may pass.
CRASHES = ("Traceback", "terminate called", "Assertion", "Segmentation", "core dumped")


def listing(folder, skip=()):
    return sorted(os.path.relpath(os.path.join(top, name), folder) for top, folders, files in os.walk(folder)
                  for name in folders + files if not any(os.path.join(top, name).startswith(s) for s in skip))


@unittest.skipUnless(ENGINE, "set ONNXPROOF_ENGINE to the onnxproof binary (ctest sets it)")
class HostileModelsProved(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.work = tempfile.mkdtemp(prefix="onnxproof-hostile-proved-")
        cls.models = os.path.join(cls.work, "models")
        cls.classes = write_corpus(cls.models)
        cls.runs = os.path.join(cls.work, "runs")
        os.makedirs(cls.runs)
        with open(os.path.join(cls.work, "double.py"), "w", encoding="utf-8") as handle:
            handle.write(MODEL_PY)
        cls.spec = os.path.join(cls.work, "double.py") + ":double"
        # The valid model's export (for --from-export), and a golden set of y = x + x under the
        # hostile models' names (for golden verify).
        cls.export = os.path.join(cls.work, "export")
        cls.engine("export", "--model", cls.spec, "--input", "x=1x4:float32", "--out", cls.export)
        valid = os.path.join(cls.work, "valid.onnx")
        graph = helper.make_graph([helper.make_node("Add", ["x", "x"], ["y"])], "double",
                                  [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])],
                                  [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])])
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
        model.ir_version = 8
        with open(valid, "wb") as handle:
            handle.write(model.SerializeToString())
        write_reference(cls.work)
        cls.golden = os.path.join(cls.work, "golden")
        cls.engine("golden", "freeze", valid, "--reference", os.path.join(cls.work, "ref"), "--out", cls.golden)

    @classmethod
    def engine(cls, *arguments):
        done = subprocess.run([ENGINE, *arguments], capture_output=True, text=True, timeout=300,
                              stdin=subprocess.DEVNULL)
        assert done.returncode == 0, done.stderr[-2000:]

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.work, ignore_errors=True)

    def arguments(self, command, name, out):
        """The command line of `command` on the hostile model `name`, its run in `out`."""
        model = os.path.join(self.models, f"{name}.onnx")
        if command == "given":
            return [ENGINE, "pipeline", "--model", self.spec, "--onnx", model, "--out", out, "--no-golden"]
        if command == "from_export":
            export = os.path.join(self.work, "exports", name)
            shutil.copytree(self.export, export)
            shutil.copyfile(model, os.path.join(export, "model.onnx"))
            with open(os.path.join(export, "export.json"), encoding="utf-8") as handle:
                manifest = json.load(handle)
            with open(model, "rb") as handle:  # the export names the hostile file as its own
                manifest["onnx_model"]["sha256"] = hashlib.sha256(handle.read()).hexdigest()
            with open(os.path.join(export, "export.json"), "w", encoding="utf-8") as handle:
                json.dump(manifest, handle)
            return [ENGINE, "pipeline", "--from-export", export, "--out", out, "--no-golden"]
        if command == "golden":
            return [ENGINE, "golden", "verify", model, "--golden", self.golden]
        return [sys.executable, "-c", API, model, out, self.work]  # the Python API

    def run_command(self, command, name):
        out = os.path.join(self.runs, f"{command}-{name}")
        before = listing(self.work, skip=(self.runs, os.path.join(self.work, "exports")))
        env = dict(os.environ, PATH=os.path.dirname(ENGINE) + os.pathsep + os.environ.get("PATH", ""))
        done = subprocess.run(self.arguments(command, name, out), capture_output=True, text=True, errors="replace",
                              timeout=120, stdin=subprocess.DEVNULL, preexec_fn=capped, env=env)
        after = listing(self.work, skip=(self.runs, os.path.join(self.work, "exports")))
        self.assertEqual(after, before, "written outside the run folder")
        return done

    def test_every_proof_refuses_or_fails_every_hostile_model_cleanly(self):
        for name, what in self.classes.items():
            for command in ("given", "from_export", "golden", "api"):
                with self.subTest(model=name, command=command, breaks=what):
                    done = self.run_command(command, name)
                    self.assertIn(done.returncode, (1, 2, 3), done.stdout[-1500:] + done.stderr[-1500:])
                    for crash in CRASHES:
                        self.assertNotIn(crash, done.stderr)
                    errors = [line for line in done.stderr.splitlines() if line.startswith("onnxproof: error:")]
                    if done.returncode in (2, 3) and command != "api":
                        self.assertEqual(len(errors), 1, done.stderr[-2000:])
                    if command == "api":
                        self.assertTrue(done.stdout.startswith(("raised", "verdict")), done.stdout + done.stderr[-1500:])


if __name__ == "__main__":
    unittest.main()
