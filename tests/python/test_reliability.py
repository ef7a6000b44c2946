"""Hostile inputs to prove() and `onnxproof export` (issue 25, Reliability II): every bad argument
is a UsageError or exit 2 before any work, the front end's process group ends with the engine, a
killed prove() leaves nothing the next one keeps, a failed write says so, a model whose outputs are
all NaN does not pass."""
import contextlib
import errno
import io
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import textwrap
import time
import unittest
from unittest import mock

import torch
from torch import nn

import onnxproof

ENGINE = os.environ.get("ONNXPROOF_ENGINE", "onnxproof")

SWALLOWS_INTERRUPTS = """
import os, time
import torch

class Stubborn(torch.nn.Module):
    def forward(self, x):
        open(os.environ["STARTED_FILE"], "w").close()
        while True:
            try:
                time.sleep(0.1)
            except KeyboardInterrupt:
                pass

def build():
    return Stubborn()
"""

LINEAR = """
import torch

def build():
    return torch.nn.Linear(3, 2)
"""

# The same model with a branch on a value: the trace keeps one side, so its export fails.
BRANCHING = """
import torch


class Branching(torch.nn.Linear):
    def forward(self, x):
        if x.sum() > 0:
            return super().forward(x)
        return -super().forward(x)


def build():
    return Branching(3, 2)
"""


class NotANumber(nn.Module):
    def forward(self, x):
        return x * float("nan")


def engine(*arguments, **options):
    return subprocess.run([ENGINE, *arguments], capture_output=True, text=True, timeout=600, **options)


def write(path, text):
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(textwrap.dedent(text))
    return path


def running(pid):
    """Whether the process `pid`, or a process of the group `pid` leads, still runs (zombies,
    ended but not yet reaped, do not count)."""
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", encoding="utf-8") as handle:
                fields = handle.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        state, group = fields[0], int(fields[2])
        if state != "Z" and (int(entry) == pid or group == pid):
            return True
    return False


class Folder(unittest.TestCase):
    def setUp(self):
        self.folder = tempfile.mkdtemp(prefix="onnxproof-reliability-")
        self.addCleanup(lambda: subprocess.run(["rm", "-rf", self.folder], check=False))

    def path(self, *names):
        return os.path.join(self.folder, *names)


class ProveArguments(Folder):
    """Item 1: each bad argument is a UsageError, before the export (no run folder appears)."""

    def assert_refused(self, pattern, **arguments):
        out = self.path("out")
        with self.assertRaisesRegex(onnxproof.UsageError, pattern):
            onnxproof.prove(nn.Linear(3, 2), (torch.zeros(2, 3),), out=out, quiet=True, **arguments)
        self.assertFalse(os.path.exists(out))

    def test_bad_values_and_types_are_usage_errors(self):
        self.assert_refused("rtol", rtol=float("nan"))
        self.assert_refused("atol", atol=-1.0)
        self.assert_refused("samples", samples="3")
        self.assert_refused("samples", samples=-2)
        self.assert_refused("data_batches", data_batches=0)
        self.assert_refused("targets", targets=5)
        self.assert_refused("opset", opset="18")
        self.assert_refused("opset", opset=3)
        self.assert_refused("kwargs", kwargs=[1])
        self.assert_refused("data", data=5)
        self.assert_refused("data", data="samples.npy")
        with self.assertRaisesRegex(onnxproof.UsageError, "args"):
            onnxproof.prove(nn.Linear(3, 2), 5, out=self.path("out"), quiet=True)

    def test_a_keyword_argument_name_that_is_no_identifier_is_a_usage_error(self):
        # Issue 46, item 4: it was a raw ValueError from inspect.Parameter.
        self.assert_refused("kwargs", kwargs={"<script>": torch.zeros(2, 3)})
        self.assert_refused("kwargs", kwargs={"class": 1})

    def test_dynamic_shapes_as_a_string_is_refused(self):
        self.assert_refused("dynamic_shapes", dynamic_shapes="batch")
        self.assert_refused("dynamic_axes", dynamic_axes="batch")
        self.assert_refused("dynamic_axes", dynamic_axes={"input": {"first": "batch"}})

    def test_a_sweep_over_4_gib_is_refused_like_an_input(self):
        self.assert_refused("over 4 GiB", dynamic_axes={"input": {0: "batch"}}, sweep={"batch": [1, 2 ** 40]})
        self.assert_refused("sweep", dynamic_axes={"input": {0: "batch"}}, sweep={"batch": ["1"]})
        self.assert_refused("no dynamic axis", dynamic_axes={"input": {0: "batch"}}, sweep={"seq": [1, 2]})

    def test_an_opset_newer_than_the_engine_proves_is_refused(self):
        self.assert_refused("opset 999 is newer", opset=999)

    def test_the_default_run_folder_stays_in_onnxproof_out(self):
        from onnxproof.torch import api_checks
        for name, expected in (("../..", "_.."), ("a/b", "a_b"), (".hidden", "hidden"), ("..", "model"),
                               ("ok-Name_1.2", "ok-Name_1.2")):
            kind = type("Model", (nn.Module,), {})
            kind.__name__ = name
            folder, leaf = os.path.split(api_checks.default_out(kind()))
            self.assertEqual(folder, "onnxproof-out", name)
            self.assertRegex(leaf, "^" + re.escape(expected) + "-[0-9a-f]{8}$", name)


PROVE_TWICE = """
import torch, onnxproof
from torch import nn
torch.manual_seed(0)
model = nn.Sequential(nn.Linear(4, 16), nn.ReLU(), nn.Linear(16, 3)).eval()
for exporter in ("torchscript", "dynamo"):
    report = onnxproof.prove(model, (torch.randn(8, 4),), dynamic_axes={"input": {0: "batch"}}, exporter=exporter,
                             out=f"{OUT}/{exporter}", quiet=True)
    print(report.verdict)
"""


class NothingOutsideTheRun(Folder):
    """Issue 46, item 3: a prove() run left ONNX Runtime's telemetry files in $TMPDIR
    (mat-debug-PID.log, .ses) and $HOME/.cache (its Python package, imported to check the export)."""

    def test_prove_writes_nothing_in_home_or_the_temporary_folder(self):
        home, temporary = self.path("home"), self.path("tmp")
        os.makedirs(home)
        os.makedirs(temporary)
        environment = {key: value for key, value in os.environ.items()
                       if key not in ("XDG_CACHE_HOME", "ORT_DISABLE_TELEMETRY")}
        environment.update(HOME=home, TMPDIR=temporary)
        program = PROVE_TWICE.replace("{OUT}", self.path("runs"))
        result = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, timeout=900,
                                env=environment)
        self.assertEqual(result.stdout.split(), ["pass", "pass"], result.stderr[-3000:])
        left = [os.path.relpath(os.path.join(root, name), self.folder) for folder in (home, temporary)
                for root, folders, files in os.walk(folder) for name in files + folders]
        self.assertEqual(left, [], "written outside the run folders")


def digests(folder):
    """{relative path: sha256} of every file under `folder`."""
    import hashlib
    result = {}
    for root, _, files in os.walk(folder):
        for name in files:
            with open(os.path.join(root, name), "rb") as handle:
                result[os.path.relpath(os.path.join(root, name), folder)] = hashlib.sha256(handle.read()).hexdigest()
    return result


class ReRuns(Folder):
    """Issue 46, items 1 and 2: a re-run that does not pass never replaces a run that passed (its
    model.onnx and report were gone, or truncated by a full disk); it goes beside it, RUN.failed."""

    def prove(self, run, *arguments, source=LINEAR):
        model = write(self.path("model.py"), source)
        return engine("pipeline", "--model", f"{model}:build", "--dynamic", "x:0=batch", "--samples", "1",
                      "--no-golden", "--out", run, *arguments)

    def test_a_failed_re_run_keeps_the_passing_run_and_goes_beside_it(self):
        run = self.path("run")
        first = self.prove(run, "--input", "x=2x3:float32")
        self.assertEqual(first.returncode, 0, first.stderr)
        passing = digests(run)
        again = self.prove(run, "--input", "x=2x3:float32", "--exporter", "torchscript", source=BRANCHING)
        self.assertEqual(again.returncode, 1, again.stderr)
        self.assertEqual(digests(run), passing)
        with open(self.path("run.failed", "report.json"), encoding="utf-8") as handle:
            self.assertEqual(json.load(handle)["verdict"], "fail")
        self.assertIn(self.path("run.failed", "report.md"), again.stdout + again.stderr)

    def test_a_re_run_on_a_full_disk_leaves_the_passing_run_whole(self):
        disk = self.path("disk")
        os.makedirs(disk)
        if os.geteuid() != 0 or subprocess.run(["mount", "-t", "tmpfs", "-o", "size=8m", "tmpfs", disk],
                                               capture_output=True).returncode != 0:
            self.skipTest("a small filesystem needs root (mount -t tmpfs)")
        self.addCleanup(subprocess.run, ["umount", "-l", disk], check=False)
        run = os.path.join(disk, "run")
        first = self.prove(run, "--input", "x=2x3:float32")
        self.assertEqual(first.returncode, 0, first.stderr)
        passing = digests(run)
        free = os.statvfs(disk).f_bavail * os.statvfs(disk).f_frsize
        with open(os.path.join(disk, "filler"), "wb") as handle:  # 40 KiB left, as in the probe
            handle.write(b"\0" * max(free - 40 * 1024, 0))
        again = self.prove(run, "--input", "x=2x3:float32")
        self.assertNotEqual(again.returncode, 0, again.stdout)
        self.assertEqual(digests(run), passing)


class GeneratedSizes(unittest.TestCase):
    def test_the_front_end_refuses_an_input_over_4_gib_instead_of_allocating_it(self):
        """A model family's own inputs reach the front end unchecked: a --sweep size is refused there."""
        import numpy as np
        from onnxproof.core import cases
        spec = {"name": "x", "dims": [1, 3], "dtype": "float32"}
        with self.assertRaisesRegex(onnxproof.UsageError, "over 4 GiB"):
            cases.generate_in_domain(spec, [2 ** 40, 3], np.random.default_rng(0))


class CommandLineChecks(Folder):
    """Item 1 on the command line: --sweep is capped as --input is, --data is checked before Python
    starts, and importing the model file writes no __pycache__ beside it."""

    def test_a_sweep_over_4_gib_is_exit_2(self):
        model = write(self.path("model.py"), LINEAR)
        result = engine("export", "--model", f"{model}:build", "--input", "x=2x3:float32", "--dynamic",
                        "x:0=batch", "--sweep", "batch=1,99999999999", "--out", self.path("out"))
        self.assertEqual(result.returncode, 2, result.stderr)
        self.assertIn("over 4 GiB", result.stderr)
        self.assertFalse(os.path.exists(self.path("out", "export.log")))

    def test_a_missing_data_file_is_refused_before_python_starts(self):
        model = write(self.path("model.py"), LINEAR)
        result = engine("export", "--model", f"{model}:build", "--input", "x=2x3:float32", "--data",
                        self.path("missing.py") + ":samples", "--out", self.path("out"))
        self.assertEqual(result.returncode, 3, result.stderr)
        self.assertIn("no such file", result.stderr)
        self.assertFalse(os.path.exists(self.path("out", "export.log")))  # Python never ran

    def test_importing_the_model_file_writes_no_pycache_beside_it(self):
        os.mkdir(self.path("models"))
        model = write(self.path("models", "model.py"), LINEAR)
        writes_bytecode = {name: value for name, value in os.environ.items() if name != "PYTHONDONTWRITEBYTECODE"}
        result = engine("export", "--model", f"{model}:build", "--input", "x=2x3:float32",
                        "--out", self.path("out"), env=writes_bytecode)
        self.assertIn(result.returncode, (0, 1), result.stderr)
        self.assertEqual(os.listdir(self.path("models")), ["model.py"])


class Signals(Folder):
    """Item 2: SIGINT to onnxproof ends the front end even when the model swallows KeyboardInterrupt."""

    def test_sigint_ends_a_front_end_that_swallows_keyboard_interrupt(self):
        model = write(self.path("stubborn.py"), SWALLOWS_INTERRUPTS)
        started = self.path("started")
        process = subprocess.Popen([ENGINE, "export", "--model", f"{model}:build", "--input", "x=2x3:float32",
                                    "--out", self.path("out")], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                   env=dict(os.environ, STARTED_FILE=started))
        try:
            deadline = time.monotonic() + 300
            while not os.path.exists(started) and process.poll() is None and time.monotonic() < deadline:
                time.sleep(0.2)
            self.assertTrue(os.path.exists(started), "the forward never started")
            children = subprocess.run(["pgrep", "-P", str(process.pid)], capture_output=True, text=True).stdout.split()
            self.assertEqual(len(children), 1, children)
            child = int(children[0])
            process.send_signal(signal.SIGINT)
            process.wait(timeout=10)
            deadline = time.monotonic() + 5
            while running(child) and time.monotonic() < deadline:
                time.sleep(0.1)
            self.assertFalse(running(child), "the front end outlived onnxproof")
        finally:
            if process.poll() is None:
                process.kill()
                process.wait()
            if "child" in locals() and running(child):
                os.kill(child, signal.SIGKILL)  # the child alone: it may share this test's process group


class Staging(Folder):
    """Item 3: prove() removes the staging folders of dead processes, never a live one's."""

    def test_the_next_prove_removes_what_a_killed_prove_left(self):
        dead = subprocess.Popen(["true"])
        dead.wait()
        live = subprocess.Popen(["sleep", "600"])
        self.addCleanup(lambda: (live.kill(), live.wait()))
        os.makedirs(self.path("runs", f".onnxproof-export-{dead.pid}-abc123"))
        os.makedirs(self.path("runs", f".onnxproof-export-{live.pid}-def456"))
        onnxproof.prove(nn.Linear(3, 2).eval(), (torch.randn(2, 3),), out=self.path("runs", "linear"), quiet=True,
                        localize=False)
        left = sorted(name for name in os.listdir(self.path("runs")) if name.startswith(".onnxproof-export-"))
        self.assertEqual(left, [f".onnxproof-export-{live.pid}-def456"])


class WriteFailures(Folder):
    """Item 4: a write that fails (full disk, file size limit) is the front end's one-line error,
    `cannot write PATH: REASON`, and the engine's io error (exit 3), not "ended without export.json"."""

    def test_the_front_end_reports_a_full_disk_in_one_line(self):
        from onnxproof.core import main
        from onnxproof.torch import export
        config = {"contract": "onnxproof.config/1", "model": "m.py:build", "out": self.path("out"), "inputs": [],
                  "dynamic": [], "opset": 0, "exporter": "auto", "sweep": {}, "samples": 1, "seed": 0}
        full = OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), self.path("out", "export.json"))
        stderr = io.StringIO()
        with mock.patch.object(export.Exporter, "run", side_effect=full), contextlib.redirect_stderr(stderr):
            code = main.main(["--config-json", json.dumps(config)])
        self.assertEqual(code, 4)
        self.assertEqual(stderr.getvalue(), f"onnxproof: error: cannot write {self.path('out', 'export.json')}: "
                                            "No space left on device\n")

    def test_prove_says_which_write_failed(self):
        from onnxproof.core import reference

        def full_disk(path, data):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), path)

        with mock.patch.object(reference, "write_atomically", full_disk), \
                self.assertRaisesRegex(onnxproof.EngineError, r"^cannot write \S+\.pb: No space left on device$"):
            onnxproof.prove(nn.Linear(3, 2).eval(), (torch.randn(2, 3),), out=self.path("out"), quiet=True)

    def test_the_engine_passes_a_failed_write_through(self):
        model = write(self.path("model.py"), LINEAR)
        # An interpreter whose files may hold 8 KiB at most (Python ignores SIGXFSZ: writes fail with EFBIG).
        limited = write(self.path("python.sh"), f"#!/bin/sh\nulimit -f 8\nexec {sys.executable} \"$@\"\n")
        os.chmod(limited, 0o755)
        result = engine("export", "--model", f"{model}:build", "--input", "x=2x3:float32", "--dynamic", "x:0=batch",
                        "--sweep", "batch=1,2000", "--python", limited, "--out", self.path("out"))
        self.assertEqual(result.returncode, 3, result.stderr)
        self.assertRegex(result.stderr, r"onnxproof: error: cannot write \S+\.pb: File too large")
        self.assertNotIn("ended without", result.stderr)


class NotFinite(Folder):
    """Item 1: a model whose reference outputs are all NaN does not pass; nothing could be proved,
    so the verdict is error (not fail: the export may be faithful)."""

    def test_an_all_nan_model_is_not_proved_with_reference_not_finite(self):
        report = onnxproof.prove(NotANumber(), (torch.randn(2, 3),), out=self.path("nan"), quiet=True,
                                 localize=False)
        self.assertEqual(report.verdict, "error")
        codes = [finding.code for finding in report.findings]
        self.assertIn("REFERENCE_NOT_FINITE", codes)

    def test_export_json_records_the_opset_the_model_declares(self):
        """The dynamo exporter asked for an opset it does not write writes its own: export.json
        says which opset model.onnx has, not the one asked for."""
        from onnxproof.core import export_finish
        from onnxproof.torch.state import TorchState
        import onnx
        from onnx import helper
        graph = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "g",
                                  [helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [1])],
                                  [helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [1])])
        onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)]), self.path("model.onnx"))
        state = TorchState({"out": self.folder, "exporter": "dynamo", "inputs": []})
        state.opset, state.opset_reason, state.exporter = 999, "--opset", "dynamo"
        self.assertEqual(export_finish.written_opset(state)["value"], 18)

if __name__ == "__main__":
    unittest.main()
