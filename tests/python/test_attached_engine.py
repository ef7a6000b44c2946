"""onnxproof.prove() starts the engine once (`pipeline --attach`, python/onnxproof/core/attached.py) and
an engine whose front end goes away ends instead of waiting: real exports, the engine this
checkout built ($ONNXPROOF_ENGINE, set by CTest), and a wrapper script that logs each start."""
import json
import os
import shutil
import signal
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
from onnxproof.core import attached, proving
from onnxproof.core.engine import EngineError, engine_path

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "fixtures"))
import divergence_models  # noqa: E402


def command(out, **changes):
    """prove()'s command for a run into `out` (its defaults), with `changes` to its parts."""
    document = proving.engine_command(out, ["ort-cpu"], ["cpu"], rtol=None, atol=None, localize=True, golden=None)
    for part, values in changes.items():
        document[part].update(values) if isinstance(document[part], dict) else document.update({part: values})
    return document


def command_line(out, **changes):
    """The attached engine's first line: the command message."""
    return json.dumps({"event": "command", "protocol": attached.PROTOCOL, "command": command(out, **changes)}) + "\n"


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
        with open(report.path("command.json"), encoding="utf-8") as handle:  # the command prove() sent, recorded
            self.assertTrue(json.load(handle)["run"]["no_localize"])


class FrontEndGoesAway(EngineTestCase):
    def attached(self, out):
        engine = subprocess.Popen([os.environ["ONNXPROOF_ENGINE"], "pipeline", "--attach"],
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.addCleanup(engine.__exit__, None, None, None)  # closes its pipes, waits for it
        engine.stdin.write(command_line(out))
        engine.stdin.flush()
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
        self.assertEqual((limit["event"], limit["protocol"]), ("opset_limit", "onnxproof.attach/2"))
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

    def test_attach_takes_its_command_from_the_front_end_only(self):
        engine = subprocess.run([os.environ["ONNXPROOF_ENGINE"], "pipeline", "--attach", "--out", self.out("own")],
                                stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60)
        self.assertEqual(engine.returncode, 2, engine.stderr)
        self.assertIn("--attach takes its command from the front end", engine.stderr)
        users = self.out("users")
        os.makedirs(users)
        with open(os.path.join(users, "notes.txt"), "w") as handle:
            handle.write("mine")
        for line, said in ((command_line(""), "the attached command names no run folder"),
                           (command_line(users), "give --out a new or empty folder"),
                           (command_line(self.out("own"), model={"model": "torchvision:resnet18"}),
                            "--attach takes the export from the front end"),
                           (command_line(self.out("own"), targets="warp-drive"), "unknown target 'warp-drive'"),
                           (command_line(self.out("own"), run={"repair": True, "repair_budget": -1}),
                            "--repair-budget must be a positive number"),
                           (command_line(self.out("own"), quantize="dynamic"), "quantize")):
            with self.subTest(said=said):
                engine = subprocess.run([os.environ["ONNXPROOF_ENGINE"], "pipeline", "--attach"], input=line,
                                        capture_output=True, text=True, timeout=60)
                self.assertEqual(engine.returncode, 2, engine.stderr)
                self.assertIn(said, engine.stderr)
                error = json.loads(engine.stdout.splitlines()[0])
                self.assertEqual((error["event"], error["code"]), ("error", "usage"))
        self.assertFalse(os.path.exists(self.out("own")))
        self.assertEqual(os.listdir(users), ["notes.txt"])

    def test_a_command_the_engine_refuses_is_the_callers_usage_error(self):
        with self.assertRaisesRegex(onnxproof.UsageError, "unknown target 'warp-drive'"):
            with attached.AttachedEngine(command(self.out("refused"), targets="warp-drive"), quiet=True) as engine:
                engine.opset_limit()

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

    def test_an_engine_interrupted_by_ctrl_c_is_a_keyboard_interrupt_and_leaves_no_run(self):
        # Ctrl-C reaches the engine (the terminal signals the whole process group) while prove()
        # still exports: prove() raises KeyboardInterrupt, not an EngineError, and publishes nothing.
        script = textwrap.dedent(f"""
            import time, torch
            from torch import nn
            import onnxproof.torch.api as api
            class Slow(nn.Linear):
                def forward(self, x):
                    time.sleep(0.5)
                    return super().forward(x)
            try:
                api.prove(Slow(3, 2).eval(), (torch.randn(2, 3),), out={self.out("interrupted")!r}, quiet=True)
            except KeyboardInterrupt as interrupt:
                print("KeyboardInterrupt:", interrupt)
            except BaseException as other:
                print("raised", type(other).__name__, other)
        """)
        front_end = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     text=True)
        deadline = time.monotonic() + 120
        while not engine_starts(self.folder) and time.monotonic() < deadline:
            time.sleep(0.1)
        self.assertTrue(engine_starts(self.folder), "the engine never started")
        time.sleep(1)
        os.kill(engine_starts(self.folder)[0][0], signal.SIGINT)
        out, err = front_end.communicate(timeout=300)
        self.assertIn("KeyboardInterrupt: the proof was interrupted (Ctrl-C)", out, err[-2000:])
        self.assertFalse(os.path.exists(self.out("interrupted")))
        self.assertEqual(sorted(os.listdir(self.folder)), ["onnxproof", "starts.log"])  # no staging left

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


class FrontEndBreaksTheProtocol(EngineTestCase):
    """Crafted front ends: every breach ends the engine with exit 3, one error line, an "error"
    event, and no run folder; nothing waits."""

    def attached(self, out):
        engine = subprocess.Popen([os.environ["ONNXPROOF_ENGINE"], "pipeline", "--attach"],
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.addCleanup(engine.__exit__, None, None, None)
        engine.stdin.write(command_line(out).encode())
        engine.stdin.flush()
        self.assertEqual(json.loads(engine.stdout.readline())["event"], "opset_limit")
        return engine

    def assert_ended(self, engine, out, said):
        self.assertEqual(engine.wait(timeout=60), 3)
        stderr = engine.stderr.read().decode()
        self.assertEqual(len(stderr.splitlines()), 1, stderr)
        self.assertTrue(stderr.startswith("onnxproof: error: "), stderr)
        self.assertIn(said, stderr)
        self.assertEqual(json.loads(engine.stdout.readline())["event"], "error")
        self.assertFalse(os.path.exists(out))

    def test_malformed_unknown_and_out_of_order_lines(self):
        export = self.out("an-export")
        os.makedirs(export)
        with open(os.path.join(export, "export.json"), "w") as handle:
            handle.write("{}")
        os.symlink(export, self.out("linked"))
        with open(self.out("a-file"), "w") as handle:
            handle.write("x")
        os.makedirs(self.out("empty"))
        ready = lambda folder: (json.dumps({"event": "export_ready", "folder": folder}) + "\n").encode()  # noqa: E731
        for sent, said in (
                (b'{"event": "export_ready", "folder": "\xff\xfe"}\n', "malformed line"),  # not UTF-8
                (b'{"event": "export_ready", "folder": \n', "malformed line"),
                (b'["export_ready"]\n', "malformed line"),
                (b'{"event": 5}\n', "malformed line"),
                (b'{"event": "hello"}\n', 'sent "hello" where export_ready or abort was expected'),
                (b'{"event": "captured"}\n', 'sent "captured" where export_ready or abort was expected'),
                (b'{"event": "export_ready", "folder": 7}\n', 'has no "folder" text'),
                (b'{"event": "export_ready", "fol', "went away mid-line"),  # then end of input
                (ready(self.out("missing")), "which does not exist"),
                (ready(self.out("a-file")), "which is not a folder"),
                (ready(self.out("empty")), "holds no export.json"),
                (ready(self.out("linked")), "a link"),
                (ready(""), "no folder")):
            with self.subTest(sent=sent[:60]):
                out = self.out("run")
                engine = self.attached(out)
                engine.stdin.write(sent)
                engine.stdin.close()
                self.assert_ended(engine, out, said)

    def test_a_line_that_never_ends_is_refused_at_the_limit_not_buffered(self):
        out = self.out("endless")
        engine = self.attached(out)
        sent = 0
        chunk = b"x" * (1 << 20)
        with self.assertRaises(BrokenPipeError):  # the engine stopped reading long before
            for _ in range(512):  # 512 MiB, no newline
                engine.stdin.write(chunk)
                engine.stdin.flush()
                sent += 1
        self.assertLess(sent, 16)
        engine.stdin = None  # closed under the writer: nothing left to flush
        self.assert_ended(engine, out, f"a line longer than {1 << 20} bytes")

    def test_a_front_end_that_never_reads_the_engine_still_ends_it(self):
        out = self.out("deaf")
        engine = subprocess.Popen([os.environ["ONNXPROOF_ENGINE"], "pipeline", "--attach"],
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        self.addCleanup(engine.__exit__, None, None, None)
        engine.stdin.write(command_line(out).encode() + b'{"event": "abort", "reason": "not listening"}\n')
        engine.stdin.close()
        self.assertEqual(engine.wait(timeout=60), 3)  # its messages wait in the pipe; it does not
        self.assertFalse(os.path.exists(out))

    def test_a_reason_past_the_line_limit_is_cut_by_the_front_end(self):
        engine = attached.AttachedEngine(command(self.out("long-reason")), quiet=True)
        with engine:
            engine.opset_limit()
            engine.abort("x" * (5 << 20))
        self.assertEqual(engine._process.returncode, 3)  # ended on its own, not killed after 60 s
        self.assertTrue(engine._errors[-1].startswith("the front end gave up the export: xxx"), engine._errors[-1][:100])
        self.assertLess(len(engine._errors[-1]), 2000)


FAKE_ENGINE = """#!{python}
import os, sys, time
with open({pid_file!r}, "w") as handle:
    handle.write(str(os.getpid()))
sys.stdout.buffer.write({sent!r})
sys.stdout.flush()
if {linger!r}:
    import signal
    signal.signal(signal.SIGTERM, signal.SIG_IGN)  # only SIGKILL ends it
    while True:
        time.sleep(1)
"""


class EngineBreaksTheProtocol(unittest.TestCase):
    """A fake engine says crafted things to prove()'s side (attached.py): each is onnxproof's one
    line (EngineError), never a traceback, a hang or an engine left running."""

    def setUp(self):
        self.folder = tempfile.mkdtemp(prefix="onnxproof-fake-engine-")
        self.addCleanup(shutil.rmtree, self.folder, ignore_errors=True)
        saved = os.environ.get("ONNXPROOF_ENGINE")
        self.addCleanup(os.environ.__setitem__, "ONNXPROOF_ENGINE", saved) if saved else \
            self.addCleanup(os.environ.pop, "ONNXPROOF_ENGINE", None)

    def fake(self, sent, linger=True):
        script = os.path.join(self.folder, "onnxproof")
        self.pid_file = os.path.join(self.folder, "pid")
        with open(script, "w") as handle:
            handle.write(FAKE_ENGINE.format(python=sys.executable, sent=sent, pid_file=self.pid_file, linger=linger))
        os.chmod(script, 0o755)
        os.environ["ONNXPROOF_ENGINE"] = script

    def assert_refused(self, said, action=lambda engine: engine.opset_limit()):
        with self.assertRaises(EngineError) as raised:
            with attached.AttachedEngine(command(os.path.join(self.folder, "run")), quiet=True) as engine:
                action(engine)
        message = str(raised.exception)
        self.assertNotIn("\n", message)
        self.assertIn(said, message)
        with open(self.pid_file) as handle:
            self.assertTrue(wait_until_ended(int(handle.read()), 5), "the fake engine was left running")
        return message

    def test_lines_that_break_the_protocol(self):
        limit = json.dumps({"event": "opset_limit", "protocol": attached.PROTOCOL, "opset": 17, "reason": "",
                            "op_limits": {}}).encode() + b"\n"
        for sent, said in ((b"x" * (3 << 20), "a line longer than 1048576 characters"),
                           (b"not json\n", "malformed line"),
                           (b"[1, 2]\n", "malformed line"),
                           (b"\xff\xfe\n", "malformed line"),
                           (b'{"event": "hello"}\n', "the engine sent 'hello' where opset_limit was expected"),
                           (b'{"event": "error", "message": "two\\nlines"}\n', "two lines")):
            with self.subTest(sent=sent[:40]):
                self.fake(sent, linger=b'"error"' not in sent)  # an engine that sent its error ends
                start = time.monotonic()
                self.assert_refused(said)
                self.assertLess(time.monotonic() - start, 30)  # killed, not waited for (60 s)
        for outcome, said in (({"event": "outcome"}, "an outcome without a verdict and a report"),
                              ({"event": "capture", "folder": 1}, "a capture request without")):
            with self.subTest(outcome=outcome):
                self.fake(limit + json.dumps(outcome).encode() + b"\n")
                self.assert_refused(said, lambda engine: (engine.opset_limit(),
                                                          engine.prove(self.folder, lambda *args: None)))

    def test_an_engine_that_ends_mid_line(self):
        self.fake(b'{"event": "opset_limit", "protocol": "onnxproof.at', linger=False)
        self.assert_refused("the engine ended mid-line")

    def test_a_failing_stderr_never_stops_the_draining(self):
        # A fake engine that writes 1 MiB of progress before its first message: with prove()'s
        # stderr broken, a progress reader that stopped would leave it blocked forever.
        script = textwrap.dedent(f"""
            import io, json, os, sys
            sys.path.insert(0, {os.path.join(HERE, "..", "..", "python")!r})
            from onnxproof.core import attached
            class Broken(io.TextIOBase):
                def write(self, text):
                    raise OSError(5, "Input/output error")
            engine = os.path.join({self.folder!r}, "chatty")
            with open(engine, "w") as handle:
                handle.write("#!{sys.executable}\\nimport sys\\nsys.stderr.write(('progress ' * 100 + '\\\\n') * 1100)\\n"
                             "print(json.dumps({{'event': 'opset_limit', 'protocol': 'onnxproof.attach/2'}}))\\n"
                             .replace("json.dumps", "__import__('json').dumps"))
            os.chmod(engine, 0o755)
            os.environ["ONNXPROOF_ENGINE"] = engine
            sys.stderr = Broken()
            with attached.AttachedEngine({{}}, quiet=False) as attached_engine:
                attached_engine.opset_limit()
            sys.stdout.write("done")
        """)
        finished = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
        self.assertEqual(finished.stdout, "done", finished.stderr)


if __name__ == "__main__":
    unittest.main()
