"""A TorchScript exporter that crashes in native code is one failed export, not the death of the
process that called prove() (issue 57): torch 2.15's exporter ends its process with SIGFPE on a
zero-size reshape with a dynamic batch, so it runs in a forked child (torch/exporter_child.py).

Own models, the real exporter, the engine this checkout built ($ONNXPROOF_ENGINE)."""
import inspect
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import unittest

import torch
from torch import nn
from torch.export import Dim

import onnxproof

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


class ZeroSizeView(nn.Module):
    """The class torch's exporter dies on: a zero-size slice reshaped with the dynamic batch."""
    def forward(self, x):
        empty = x[:, :0]
        return torch.cat([x, empty.reshape(x.shape[0], 0)], dim=1) * 2


class AbortsWhileTraced(nn.Module):
    """Any native crash of the exporter, torch's version aside: the process ends while tracing."""
    def __init__(self):
        super().__init__()
        self.linear = nn.Linear(4, 3)

    def forward(self, x):
        if torch.jit.is_tracing():
            os.kill(os.getpid(), signal.SIGABRT)
        return self.linear(x)


# The same model in a file of its own, for the command line.
MODEL_FILE = "import os, signal, torch\nfrom torch import nn\n\n\n" + inspect.getsource(AbortsWhileTraced)


class ExporterCrash(unittest.TestCase):
    def setUp(self):
        self.folder = tempfile.mkdtemp(prefix="onnxproof-exporter-crash-")
        self.addCleanup(shutil.rmtree, self.folder, ignore_errors=True)

    def prove(self, model, **options):
        return onnxproof.prove(model, (torch.randn(3, 4),), exporter="torchscript", samples=1, quiet=True,
                               dynamic_shapes={"x": {0: Dim("batch")}}, out=os.path.join(self.folder, "run"),
                               **options)

    def crash_finding(self, report):
        return [f for f in report.findings if f.code == "EXPORT_FAILED" and "crashed" in f.message]

    def test_a_crash_while_tracing_is_a_failed_export_and_the_caller_lives(self):
        report = self.prove(AbortsWhileTraced())
        self.assertEqual(report.verdict, "fail")
        crashes = self.crash_finding(report)
        self.assertEqual(len(crashes), 1, [f.message for f in report.findings])
        self.assertIn("SIGABRT", crashes[0].message)
        self.assertIn("--exporter dynamo", crashes[0].hint)

    def test_torchs_own_division_by_zero_on_a_zero_size_view(self):
        report = self.prove(ZeroSizeView())
        # torch 2.15 dies (SIGFPE): a failed export; a torch that exports it proves it.
        if report.verdict != "pass":
            crashes = self.crash_finding(report)
            self.assertEqual(len(crashes), 1, [f.message for f in report.findings])
            self.assertIn("SIGFPE", crashes[0].message)

    def test_a_dynamo_export_before_leaves_the_crash_caught(self):
        # The dynamo exporter's progress bars leave tqdm's monitor thread running: a fork with it
        # was refused, and the exporter's crash then ended the caller (the false-alarm corpus saw it).
        onnxproof.prove(nn.Linear(4, 2).eval(), (torch.randn(3, 4),), exporter="dynamo", samples=1, quiet=True,
                        out=os.path.join(self.folder, "dynamo"))
        report = self.prove(AbortsWhileTraced())
        self.assertEqual(len(self.crash_finding(report)), 1, [f.message for f in report.findings])

    def test_in_this_process_when_switched_off_the_exporter_still_exports(self):
        os.environ["ONNXPROOF_EXPORT_CHILD"] = "0"
        self.addCleanup(os.environ.pop, "ONNXPROOF_EXPORT_CHILD", None)
        model = AbortsWhileTraced()
        model.forward = lambda x: torch.relu(model.linear(x))  # the same, crashing nowhere
        self.assertEqual(self.prove(model).verdict, "pass")

    def test_the_command_line_says_the_same(self):
        path = os.path.join(self.folder, "crashing.py")
        with open(path, "w") as handle:
            handle.write(MODEL_FILE)
        run = os.path.join(self.folder, "cli-run")
        engine = os.environ.get("ONNXPROOF_ENGINE", os.path.join(REPO, "build", "bin", "onnxproof"))
        done = subprocess.run([engine, "pipeline", "--model", f"{path}:AbortsWhileTraced", "--input", "x=3x4:float32",
                               "--dynamic", "x:0=batch", "--exporter", "torchscript", "--out", run],
                              capture_output=True, text=True, timeout=600, stdin=subprocess.DEVNULL)
        self.assertEqual(done.returncode, 1, done.stdout + done.stderr)
        self.assertIn("crashed", done.stdout)
        self.assertIn("SIGABRT", done.stdout)


if __name__ == "__main__":
    unittest.main()
