"""`onnxproof zoo` when things go wrong around it (issue 46): a cached run whose model's imports,
weights file, data spec or environment changed is proved again, never restored; two zoos on one
folder; a zoo killed with SIGKILL, on local processes and on a local Ray instance, leaves no
process behind. Real pipelines on tiny models; labelled slow (tests/CMakeLists.txt)."""
import fcntl
import json
import os
import shutil
import signal
import subprocess
import tempfile
import textwrap
import time
import unittest

import numpy as np

ENGINE = os.environ.get("ONNXPROOF_ENGINE") or os.path.join(
    os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "build", "bin", "onnxproof")

MODELS = textwrap.dedent('''
    import os
    import time

    import numpy as np
    import torch
    from torch import nn

    from helper import hidden_size

    class Scaled(nn.Module):
        def __init__(self):
            super().__init__()
            torch.manual_seed(0)
            self.net = nn.Sequential(nn.Linear(4, hidden_size()), nn.ReLU(), nn.Linear(hidden_size(), 2))
            self.scale = float(np.load(os.path.join(os.path.dirname(__file__), "scale.npy"))[0])
            self.shift = float(os.environ.get("ZOO_TEST_SHIFT", "0"))

        def forward(self, x):
            return self.net(x) * self.scale + self.shift

    def scaled():
        return Scaled()

    def hangs():
        time.sleep(3600)
''')
DATA = textwrap.dedent('''
    import torch

    def samples():
        for seed in range(2):
            yield {"x": torch.randn(2, 4, generator=torch.Generator().manual_seed(seed))}
''')
MANIFEST = textwrap.dedent('''
    [[model]]
    name = "scaled"
    spec = "models.py:scaled"
    inputs = ["x=2x4:float32"]
    data = "data.py:samples"
    samples = 1
    golden = false
    args = ["--no-localize"]
''')
HANGS = '[[model]]\nname = "hangs"\nspec = "models.py:hangs"\ninputs = ["x=2x4:float32"]\n'


def zoo(*arguments, env=None, timeout=600):
    return subprocess.run([ENGINE, "zoo", *arguments], capture_output=True, text=True, stdin=subprocess.DEVNULL,
                          timeout=timeout, env=env)


def carriers_of(token):
    """The pids whose environment carries the zoo token `token` (zoo/guardian.py)."""
    needle = f"ONNXPROOF_ZOO_RUN={token}".encode()
    found = []
    for name in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{name}/environ", "rb") as stream:
                if needle in stream.read():
                    found.append(int(name))
        except OSError:
            continue
    return found


def token_of_children(pid):
    """The zoo token in the environment of any descendant of `pid`, or None."""
    for name in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{name}/stat") as stream:
                parent = int(stream.read().rsplit(")", 1)[1].split()[1])
            if parent != pid:
                continue
            with open(f"/proc/{name}/environ", "rb") as stream:
                for item in stream.read().split(b"\0"):
                    if item.startswith(b"ONNXPROOF_ZOO_RUN="):
                        return item.split(b"=", 1)[1].decode()
        except (OSError, ValueError, IndexError):
            continue
    return None


class StaleCache(unittest.TestCase):
    """One model whose numbers depend on a helper module, a weights file, a data spec and an
    environment variable, none of them named in the manifest's key: each change is seen."""

    def setUp(self):
        self.work = tempfile.mkdtemp(prefix="onnxproof-zoo-stale-")
        for name, text in (("models.py", MODELS), ("data.py", DATA), ("zoo.toml", MANIFEST),
                           ("helper.py", "def hidden_size():\n    return 8\n")):
            with open(os.path.join(self.work, name), "w") as stream:
                stream.write(text)
        np.save(os.path.join(self.work, "scale.npy"), np.array([1.0], dtype=np.float32))
        self.cache = os.path.join(self.work, "cache")
        self.env = dict(os.environ, ZOO_TEST_SHIFT="0")
        self.runs = 0

    def tearDown(self):
        shutil.rmtree(self.work, ignore_errors=True)

    def run_zoo(self):
        self.runs += 1
        out = os.path.join(self.work, f"out{self.runs}")
        done = zoo("run", os.path.join(self.work, "zoo.toml"), "--out", out, "--cache", self.cache,
                   "--executor", "local", env=self.env)
        self.assertEqual(done.returncode, 0, done.stderr[-3000:])
        with open(os.path.join(out, "index.json")) as stream:
            return json.load(stream)["rows"][0], done.stderr

    def assert_proved_again(self, because):
        row, stderr = self.run_zoo()
        self.assertFalse(row["cached"], stderr[-2000:])
        self.assertIn(f"its cached run is stale ({because})", stderr)
        row, stderr = self.run_zoo()  # and stored anew: the next run restores it
        self.assertTrue(row["cached"], stderr[-2000:])

    def test_every_read_the_key_cannot_name_is_checked(self):
        row, stderr = self.run_zoo()
        self.assertFalse(row["cached"])
        self.assertEqual(row["verdict"], "pass", stderr[-2000:])
        row, stderr = self.run_zoo()
        self.assertTrue(row["cached"], stderr[-2000:])
        with open(os.path.join(self.work, "helper.py"), "w") as stream:  # an imported module
            stream.write("def hidden_size():\n    return 16\n")
        self.assert_proved_again("helper.py changed")
        np.save(os.path.join(self.work, "scale.npy"), np.array([2.0], dtype=np.float32))  # a weights file
        self.assert_proved_again("scale.npy changed")
        self.env["ZOO_TEST_SHIFT"] = "0.5"  # an environment variable the model reads
        self.assert_proved_again("$ZOO_TEST_SHIFT changed")
        with open(os.path.join(self.work, "data.py"), "a") as stream:  # the data spec: part of the key
            stream.write("\n# another sample set\n")
        row, stderr = self.run_zoo()
        self.assertFalse(row["cached"], stderr[-2000:])


    def entry(self):
        """The one entry of the cache: CACHE/KK/KEY."""
        (prefix,) = [name for name in os.listdir(self.cache) if len(name) == 2]
        (key,) = [name for name in os.listdir(os.path.join(self.cache, prefix)) if len(name) == 64]
        return os.path.join(self.cache, prefix, key)

    def test_a_forged_entry_is_proved_again_never_restored_or_run(self):
        # The probe of 2026-12-06: a row saying pass over a failed run, and reads.json naming a
        # program as the interpreter to ask, were trusted (the program was run).
        row, stderr = self.run_zoo()
        self.assertEqual(row["verdict"], "pass", stderr[-2000:])
        entry = self.entry()
        with open(os.path.join(entry, "run", "report.json")) as stream:
            report = json.load(stream)
        report["verdict"] = "fail"
        with open(os.path.join(entry, "run", "report.json"), "w") as stream:
            json.dump(report, stream)
        self.assert_proved_again("the stored run's report says fail, its row pass")
        entry = self.entry()
        evil = os.path.join(self.work, "evil.sh")
        witness = os.path.join(self.work, "ran")
        with open(evil, "w") as stream:
            stream.write(f"#!/bin/sh\ntouch {witness}\necho '{{}}'\n")
        os.chmod(evil, 0o755)
        with open(os.path.join(entry, "reads.json")) as stream:
            reads = json.load(stream)
        reads["pythons"] = {evil: {}}
        with open(os.path.join(entry, "reads.json"), "w") as stream:
            json.dump(reads, stream)
        self.assert_proved_again(f"the recorded interpreter {evil} is not one this zoo runs")
        self.assertFalse(os.path.exists(witness), "the zoo ran the program an entry named")


class KilledZoo(unittest.TestCase):
    def setUp(self):
        self.work = tempfile.mkdtemp(prefix="onnxproof-zoo-killed-")
        with open(os.path.join(self.work, "models.py"), "w") as stream:
            stream.write(MODELS)
        with open(os.path.join(self.work, "helper.py"), "w") as stream:
            stream.write("def hidden_size():\n    return 8\n")
        self.manifest = os.path.join(self.work, "hangs.toml")
        with open(self.manifest, "w") as stream:
            stream.write(HANGS)
        self.out = os.path.join(self.work, "out")

    def tearDown(self):
        shutil.rmtree(self.work, ignore_errors=True)

    def start_hanging_zoo(self, executor):
        process = subprocess.Popen([ENGINE, "zoo", "run", self.manifest, "--out", self.out, "--executor", executor],
                                   stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        log = os.path.join(self.out, "logs", "hangs.log")
        for _ in range(1200):  # until the front end is in the model's constructor
            if os.path.exists(log):
                with open(log, errors="replace") as stream:
                    if "loading" in stream.read():
                        break
            if process.poll() is not None:
                self.fail(process.stderr.read().decode(errors="replace")[-3000:])
            time.sleep(0.1)
        else:
            process.kill()
            self.fail("the model never started")
        return process

    def assert_killed_leaves_nothing(self, executor):
        process = self.start_hanging_zoo(executor)
        token = token_of_children(process.pid)
        self.assertIsNotNone(token, "the zoo's children carry its token")
        self.assertTrue(carriers_of(token))
        process.send_signal(signal.SIGKILL)
        process.wait(timeout=30)
        process.stderr.close()
        deadline = time.time() + 30
        while carriers_of(token) and time.time() < deadline:
            time.sleep(0.2)
        self.assertEqual(carriers_of(token), [], "a process of the killed zoo is still running")
        with open(os.path.join(self.out, ".onnxproof-zoo.lock")) as stream:  # and its lock went with it
            fcntl.flock(stream, fcntl.LOCK_EX | fcntl.LOCK_NB)

    def test_a_zoo_killed_on_local_processes_leaves_nothing(self):
        self.assert_killed_leaves_nothing("local")

    def test_a_zoo_killed_on_a_local_ray_instance_leaves_nothing(self):
        self.assert_killed_leaves_nothing("ray")

    def test_a_second_zoo_on_a_folder_in_use_is_refused(self):
        first = self.start_hanging_zoo("local")
        try:
            second = zoo("run", self.manifest, "--out", self.out, "--executor", "local", timeout=120)
            self.assertEqual(second.returncode, 3, second.stderr)
            self.assertEqual(second.stderr.strip().splitlines(),
                             [f"onnxproof: error: another onnxproof zoo is writing {self.out}: wait for it to end, "
                              "or pick another --out"])
        finally:
            first.send_signal(signal.SIGINT)
            first.communicate(timeout=60)


if __name__ == "__main__":
    unittest.main()
