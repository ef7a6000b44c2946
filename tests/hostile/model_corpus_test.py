"""Every hostile model of model_corpus.py given to every command that reads a model file alone
(check, ops, simplify, run, parity), each in a process whose address space is capped at 6 GiB: it must end
within a minute with a documented exit code (0-3, never a signal), say any error in one
`onnxproof: error:` line (no traceback, no abort), write nothing beside the models, and refuse what
it cannot judge: no model that is not valid ONNX passes `check`, and `ops` answers no model whose
opset or IR version no runtime here runs."""
import os
import shutil
import subprocess
import tempfile
import unittest

from model_corpus import capped, write_corpus, write_reference

ENGINE = os.environ.get("ONNXPROOF_ENGINE", "")
COMMANDS = {
    "check": "check {model}",
    "ops": "ops {model}",
    "simplify": "simplify {model} -o {out}/sim.onnx",
    "run": "run {model} --input x={work}/x.pb --output-dir {out}/outputs",
    "parity": "parity {model} --reference {work}/ref --json {out}/parity.json",
}
# Valid models whose trouble is their size at run time (a fold would be gigabytes).
VALID = {"constant_of_shape_bomb", "expand_bomb", "tile_bomb", "range_bomb", "injected_external_keys",
         "protobuf_near_2gib"}
# No answer about operators may be given for these.
UNJUDGEABLE = {"opset_999", "ir_version_99", "truncated", "not_a_protobuf", "empty_file", "nested_if_3000"}


@unittest.skipUnless(ENGINE, "set ONNXPROOF_ENGINE to the onnxproof binary (ctest sets it)")
class HostileModels(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.work = tempfile.mkdtemp(prefix="onnxproof-hostile-models-")
        cls.models = os.path.join(cls.work, "models")
        cls.classes = write_corpus(cls.models)
        write_reference(cls.work)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.work, ignore_errors=True)

    def run_command(self, name, command):
        out = tempfile.mkdtemp(dir=self.work, prefix=f"{name}-{command}-")
        model = os.path.join(self.models, f"{name}.onnx")
        arguments = COMMANDS[command].format(model=model, out=out, work=self.work).split()
        before = sorted(os.listdir(self.models))
        done = subprocess.run([ENGINE, *arguments], capture_output=True, text=True, errors="replace", timeout=60,
                              stdin=subprocess.DEVNULL, preexec_fn=capped)
        self.assertEqual(sorted(os.listdir(self.models)), before, "written beside the models")
        return done

    def test_every_command_ends_cleanly_on_every_hostile_model(self):
        for name, what in self.classes.items():
            for command in COMMANDS:
                with self.subTest(model=name, command=command, breaks=what):
                    done = self.run_command(name, command)
                    self.assertIn(done.returncode, (0, 1, 2, 3), done.stderr[-2000:])
                    for crash in ("Traceback", "terminate called", "Assertion", "Segmentation"):
                        self.assertNotIn(crash, done.stderr)
                    if done.returncode in (2, 3):
                        lines = done.stderr.strip().splitlines()
                        self.assertEqual(len(lines), 1, done.stderr[-2000:])
                        self.assertTrue(lines[0].startswith("onnxproof: error: "), lines[0])

    def test_no_invalid_model_passes_the_check(self):
        for name in sorted(set(self.classes) - VALID):
            with self.subTest(model=name):
                self.assertIn(self.run_command(name, "check").returncode, (1, 3))

    def test_ops_answers_nothing_about_a_model_no_runtime_here_runs(self):
        for name in sorted(UNJUDGEABLE):
            with self.subTest(model=name):
                done = self.run_command(name, "ops")
                self.assertEqual(done.returncode, 3, done.stdout + done.stderr)


if __name__ == "__main__":
    unittest.main()
