"""onnxproof.prove() starts the engine once (`pipeline --attach`, python/onnxproof/core/attached.py) and
an engine whose front end goes away ends instead of waiting: real exports, the engine this
checkout built ($ONNXPROOF_ENGINE, set by CTest), and a wrapper script that logs each start."""
import json
import os
import shutil
import stat
import subprocess
import sys
import tempfile
import textwrap
import time
import unittest

import torch
from torch import nn

import onnxproof
from onnxproof.core.engine import engine_path

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "fixtures"))
import divergence_models  # noqa: E402


def logging_engine(folder, real_engine):
    """A script that appends "PID ARGUMENTS" to FOLDER/starts.log, then becomes the real engine."""
    script = os.path.join(folder, "onnxproof")
    with open(script, "w", encoding="utf-8") as handle:
        handle.write(f'#!/bin/sh\necho "$$ $*" >> "{folder}/starts.log"\nexec "{real_engine}" "$@"\n')
    os.chmod(script, os.stat(script).st_mode | stat.S_IXUSR)
    return script


def engine_starts(folder):
    """[(pid, arguments)] of every engine started so far."""
    path = os.path.join(folder, "starts.log")
    if not os.path.exists(path):
        return []
    with open(path, encoding="utf-8") as handle:
        return [(int(line.split(" ", 1)[0]), line.split(" ", 1)[1].strip()) for line in handle if line.strip()]


def ended(pid):
    """True when the process is gone or a zombie (its parent went away before reaping it)."""
    try:
        with open(f"/proc/{pid}/status", encoding="utf-8") as handle:
            return any(line.startswith("State:") and "Z" in line.split()[1] for line in handle)
    except FileNotFoundError:
        return True


def wait_until_ended(pid, seconds):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if ended(pid):
            return True
        time.sleep(0.2)
    return False


class EngineTestCase(unittest.TestCase):
    def setUp(self):
        self.folder = tempfile.mkdtemp(prefix="onnxproof-attached-")
        self.addCleanup(shutil.rmtree, self.folder, ignore_errors=True)
        saved = os.environ.get("ONNXPROOF_ENGINE")
        os.environ["ONNXPROOF_ENGINE"] = logging_engine(self.folder, engine_path())
        if saved is None:
            self.addCleanup(os.environ.pop, "ONNXPROOF_ENGINE", None)
        else:
            self.addCleanup(os.environ.__setitem__, "ONNXPROOF_ENGINE", saved)

    def out(self, name):
        return os.path.join(self.folder, name)


class OneEnginePerProof(EngineTestCase):
    def test_a_passing_model_starts_the_engine_once(self):
        report = onnxproof.prove(nn.Linear(3, 2).eval(), (torch.randn(2, 3),), out=self.out("linear"), quiet=True)
        self.assertEqual(report.verdict, "pass", str(report))
        starts = engine_starts(self.folder)
        self.assertEqual(len(starts), 1, starts)
        self.assertTrue(starts[0][1].startswith("pipeline --attach"), starts)

    def test_a_failing_model_is_localized_by_the_same_engine(self):
        report = onnxproof.prove(divergence_models.shifted_dynamo(), (torch.randn(4, 16),),
                                 dynamic_axes={"x": {0: "batch"}}, exporter="dynamo", out=self.out("planted"),
                                 quiet=True)
        self.assertEqual(report.verdict, "fail")
        self.assertEqual(report.located, "blocks.7.act")
        self.assertEqual(report.raw["localization"]["located"], "blocks.7.act")  # in report.json, as pipeline writes
        self.assertEqual(len(engine_starts(self.folder)), 1, engine_starts(self.folder))

    def test_localize_false_asks_for_no_capture(self):
        report = onnxproof.prove(divergence_models.shifted_dynamo(), (torch.randn(4, 16),), exporter="dynamo",
                                 out=self.out("unlocalized"), quiet=True, localize=False)
        self.assertEqual(report.verdict, "fail")
        self.assertIsNone(report.localization)
        self.assertIn("--no-localize", engine_starts(self.folder)[0][1])


class FrontEndGoesAway(EngineTestCase):
    def attached(self, out):
        engine = subprocess.Popen([os.environ["ONNXPROOF_ENGINE"], "pipeline", "--attach", "--out", out],
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.addCleanup(engine.__exit__, None, None, None)  # closes its pipes, waits for it
        return engine

    def run_dying_front_end(self, script, timeout, engine_grace):
        """Runs a prove() script whose process dies with status 9; its one engine must end too."""
        front_end = subprocess.run([sys.executable, "-c", script], env=dict(os.environ), timeout=timeout,
                                   stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        self.assertEqual(front_end.returncode, 9, front_end.stdout)
        starts = engine_starts(self.folder)
        self.assertEqual(len(starts), 1, starts)
        self.assertTrue(wait_until_ended(starts[0][0], engine_grace), "the engine outlived its front end")

    def test_end_of_input_ends_the_engine_with_an_error_and_no_run(self):
        engine = self.attached(self.out("eof"))
        limit = json.loads(engine.stdout.readline())
        self.assertEqual((limit["event"], limit["protocol"]), ("opset_limit", "onnxproof.attach/1"))
        self.assertGreaterEqual(limit["opset"], 17)
        engine.stdin.close()
        self.assertEqual(engine.wait(timeout=60), 3)
        self.assertIn("the front end went away", engine.stderr.read())
        self.assertFalse(os.path.exists(self.out("eof")))

    def test_a_malformed_line_ends_the_engine_with_an_error(self):
        engine = self.attached(self.out("malformed"))
        engine.stdout.readline()
        engine.stdin.write("export ready, I think\n")
        engine.stdin.flush()
        self.assertEqual(engine.wait(timeout=60), 3)
        self.assertIn("malformed line", engine.stderr.read())
        error = json.loads(engine.stdout.readline())
        self.assertEqual(error["event"], "error")

    def test_an_abort_ends_the_engine_with_the_front_ends_reason_and_no_run(self):
        engine = self.attached(self.out("aborted"))
        engine.stdout.readline()
        engine.stdin.write(json.dumps({"event": "abort", "reason": "the model raised in forward()"}) + "\n")
        engine.stdin.flush()
        self.assertEqual(engine.wait(timeout=60), 3)
        error = json.loads(engine.stdout.readline())
        self.assertEqual(error["event"], "error")
        self.assertIn("the front end gave up the export: the model raised in forward()", error["message"])
        self.assertFalse(os.path.exists(self.out("aborted")))

    def test_attach_refuses_a_missing_out_and_a_model_of_its_own(self):
        for arguments, said in ((["pipeline", "--attach"], "--attach needs --out"),
                                (["pipeline", "--attach", "--model", "torchvision:resnet18", "--out", self.out("own")],
                                 "--attach takes the export from the front end")):
            engine = subprocess.run([os.environ["ONNXPROOF_ENGINE"], *arguments], stdin=subprocess.DEVNULL,
                                    capture_output=True, text=True, timeout=60)
            self.assertEqual(engine.returncode, 2, engine.stderr)
            self.assertIn(said, engine.stderr)
        self.assertFalse(os.path.exists(self.out("own")))

    def test_a_front_end_killed_mid_protocol_leaves_no_engine_running(self):
        # A prove() whose process dies while the engine waits for its export.
        script = textwrap.dedent(f"""
            import os, torch
            from torch import nn
            import onnxproof.torch.api as api
            from onnxproof.torch.export import Exporter
            Exporter.run = lambda self: os._exit(9)
            api.prove(nn.Linear(3, 2).eval(), (torch.randn(2, 3),), out={self.out("killed")!r}, quiet=True)
        """)
        self.run_dying_front_end(script, timeout=300, engine_grace=60)
        self.assertFalse(os.path.exists(self.out("killed")))

    def test_a_front_end_killed_during_the_capture_leaves_the_run_written_without_localization(self):
        # The engine asks for PyTorch's module outputs; the front end dies instead of answering.
        script = textwrap.dedent(f"""
            import os, sys, torch
            sys.path.insert(0, {os.path.join(HERE, "..", "fixtures")!r})
            import divergence_models
            import onnxproof.torch.api as api
            api._capture_module_outputs = lambda *args: os._exit(9)
            api.prove(divergence_models.shifted_dynamo(), (torch.randn(4, 16),), exporter="dynamo",
                      out={self.out("capture")!r}, quiet=True)
        """)
        self.run_dying_front_end(script, timeout=600, engine_grace=120)
        with open(os.path.join(self.out("capture"), "report.json"), encoding="utf-8") as handle:
            report = json.load(handle)
        self.assertEqual(report["verdict"], "fail")
        self.assertIn("the front end went away", report["localization"]["error"])


if __name__ == "__main__":
    unittest.main()
