"""`onnxproof zoo run --ray-address` on a two-node Ray cluster that loses a node mid-run.

The cluster is made on this machine: a head (`ray start --head`, 1 CPU) and a second raylet of its
own (`ray start --address`, 2 CPUs and a declared GPU, so that the model asking for a GPU can only
land there). Each node is a `ray start --block` in a session of its own, so the test kills one
node, and cleans up, by session id: no other Ray on the machine (another test's) is touched.
Everything Ray writes (its temp dir, HOME, TMPDIR) stays in the test's temp folder.

Three tiny models: two CPU models (one lands on each node) and one asking for a GPU. When all
three pipelines are running, the second node is killed with SIGKILL (raylet, agents and Ray
workers), as a machine that loses its power. Then: its pipelines end with their workers; the CPU
model is retried on the head and passes, its row saying so; the GPU model, which no live node can
run any more, becomes an error row once it has waited its timeout; and the zoo ends with a row for
every model. Real pipelines, real Ray, nothing mocked: about a minute and a half on two cores (slow)."""
import ctypes
import functools
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import textwrap
import time
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ENGINE = os.environ.get("ONNXPROOF_ENGINE") or os.path.join(ROOT, "build", "bin", "onnxproof")
RAY = os.path.join(os.path.dirname(sys.executable), "ray")  # the ray of the interpreter running the test

# Long enough for the test to see a pipeline running and kill its node meanwhile.
CONSTRUCTOR_SECONDS = 20
# The GPU model's timeout: how long it may wait for a node able to run it once its own is gone.
GPU_TIMEOUT = 45

MODELS = textwrap.dedent(f'''
    import time
    import torch
    from torch import nn

    def _small(seed):
        time.sleep({CONSTRUCTOR_SECONDS})
        torch.manual_seed(seed)
        return nn.Linear(4, 2)

    def first():
        return _small(0)

    def second():
        return _small(1)

    def on_gpu_node():
        time.sleep(3600)  # its node is killed long before
''')

MANIFEST = textwrap.dedent(f'''
    [defaults]
    samples = 1
    inputs = ["x=2x4:float32"]
    golden = false
    timeout = 300

    [[model]]
    name = "first"
    spec = "models.py:first"

    [[model]]
    name = "second"
    spec = "models.py:second"

    [[model]]
    name = "gpu"
    spec = "models.py:on_gpu_node"
    providers = ["cpu", "cuda"]
    timeout = {GPU_TIMEOUT}
''')

NAMES = ["first", "second", "gpu"]
# What a row says its node's loss was: the driver may hear of the worker's death or the node's first.
LOSS = r"its (node was lost \(NodeDiedError\)|Ray worker died \(WorkerCrashedError\))"


def free_port():
    with socket.socket() as probe:
        probe.bind(("", 0))
        return probe.getsockname()[1]


def processes():
    """(pid, parent pid, session id, command line) of every live process (zombies left out)."""
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as stream:
                stat = stream.read()
            with open(f"/proc/{entry}/cmdline", "rb") as stream:
                command = stream.read().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2:].split()  # after the command name, which may hold spaces
        if fields[0] != "Z":
            yield int(entry), int(fields[1]), int(fields[3]), command


def kill_session(session, signal_number=signal.SIGKILL):
    """`signal_number` to every process of `session` (a node's `ray start` and all it started)."""
    for pid, _, sid, _ in processes():
        if sid == session:
            try:
                os.kill(pid, signal_number)
            except ProcessLookupError:
                pass


def wait_for(predicate, seconds, interval=0.5):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(interval)
    return predicate()


def _end_with_test(parent):
    """In a node's `ray start --block` before exec: SIGTERM (which stops its node) when the test
    process dies, however it does (a CTest timeout), so that no cluster outlives the test."""
    ctypes.CDLL(None).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    if os.getppid() != parent:
        os._exit(1)


def read(path):
    try:
        with open(path, errors="replace") as stream:
            return stream.read()
    except OSError:
        return ""


@unittest.skipUnless(os.path.isfile(RAY) and os.path.isdir("/proc"), "needs Ray's `ray` command and /proc")
class ZooClusterTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        # A short path: Ray's sockets live under its temp dir, and a socket's path has 107 bytes at most.
        cls.work = tempfile.mkdtemp(prefix="opz-")
        cls.nodes = []
        try:
            cls._run_zoo_losing_a_node()
        except BaseException:
            cls.tearDownClass()
            raise

    @classmethod
    def tearDownClass(cls):
        for node in cls.nodes:  # SIGTERM lets `ray start --block` stop its node; SIGKILL what is left
            kill_session(node.pid, signal.SIGTERM)
        for node in cls.nodes:
            try:
                node.wait(timeout=15)
            except subprocess.TimeoutExpired:
                pass
        for node in cls.nodes:
            kill_session(node.pid)
            node.wait()
        shutil.rmtree(cls.work, ignore_errors=True)

    @classmethod
    def _environment(cls):
        env = {name: value for name, value in os.environ.items() if not name.startswith("RAY_")}
        for folder in ("home", "tmp"):
            os.makedirs(os.path.join(cls.work, folder))
        paths = [os.path.join(ROOT, "python")] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]
        # The workers import onnxproof from this checkout; a cluster on one machine needs no token.
        env.update(HOME=os.path.join(cls.work, "home"), TMPDIR=os.path.join(cls.work, "tmp"),
                   PYTHONPATH=os.pathsep.join(paths), RAY_AUTH_MODE="disabled", RAY_USAGE_STATS_ENABLED="0")
        return env

    @classmethod
    def _start_node(cls, name, *arguments):
        """`ray start --block ARGUMENTS` in a session of its own; returns its log's path."""
        log = os.path.join(cls.work, name + ".log")
        with open(log, "wb") as stream:
            node = subprocess.Popen([RAY, "start", "--block", "--temp-dir", os.path.join(cls.work, name),
                                     "--object-store-memory", str(100 << 20), "--disable-usage-stats",
                                     "--dashboard-agent-listen-port", str(free_port()), *arguments],
                                    env=cls.env, stdin=subprocess.DEVNULL, stdout=stream, stderr=subprocess.STDOUT,
                                    start_new_session=True, preexec_fn=functools.partial(_end_with_test, os.getpid()))
        cls.nodes.append(node)
        started = wait_for(lambda: "Ray runtime started" in read(log) or node.poll() is not None, 120)
        if not started or node.poll() is not None:
            raise AssertionError(f"ray start {name} did not start:\n{read(log)[-3000:]}")
        return log

    @classmethod
    def _run_zoo_losing_a_node(cls):
        with open(os.path.join(cls.work, "models.py"), "w") as stream:
            stream.write(MODELS)
        cls.models = os.path.join(cls.work, "models.py")
        manifest = os.path.join(cls.work, "zoo.toml")
        with open(manifest, "w") as stream:
            stream.write(MANIFEST)
        cls.env = cls._environment()
        head_log = cls._start_node("head", "--head", "--port", str(free_port()), "--num-cpus", "1",
                                   "--resources", '{"head": 1}', "--include-dashboard", "false")
        cls.address = re.search(r"ray start --address='([^']+)'", read(head_log)).group(1)
        cls._start_node("node2", "--address", cls.address, "--num-cpus", "2", "--num-gpus", "1",
                        "--resources", '{"worker_node": 1}')
        cls.worker_session = cls.nodes[1].pid
        cls.out = os.path.join(cls.work, "zoo")
        with open(os.path.join(cls.work, "zoo.stdout"), "wb") as out, \
                open(os.path.join(cls.work, "zoo.stderr"), "wb") as err:
            zoo = subprocess.Popen([ENGINE, "zoo", "run", manifest, "--out", cls.out, "--executor", "ray",
                                    "--ray-address", cls.address], env=cls.env, stdin=subprocess.DEVNULL,
                                   stdout=out, stderr=err)
        try:
            cls.victims, cls.moved = cls._kill_second_node_mid_run()
            wait_for(lambda: not cls._alive(cls.victims), 60)
            cls.victims_left = cls._alive(cls.victims)
            cls.returncode = zoo.wait(timeout=400)
        finally:
            if zoo.poll() is None:
                zoo.kill()
                zoo.wait()
        cls.stdout = read(os.path.join(cls.work, "zoo.stdout"))
        cls.stderr = read(os.path.join(cls.work, "zoo.stderr"))
        cls.index = json.loads(read(os.path.join(cls.out, "index.json")) or "null")

    @classmethod
    def _on_second_node(cls):
        """{model name: pids of its pipeline and front end} for the pipelines a worker of the
        second node started (their parent is in its session; they are in sessions of their own)."""
        table = list(processes())
        sessions = {pid: sid for pid, _, sid, _ in table}
        found = {}
        for pid, parent, _, command in table:
            match = re.search(re.escape(cls.models) + r":(\w+)", command)
            if match and " pipeline " in command and sessions.get(parent) == cls.worker_session:
                name = {"on_gpu_node": "gpu"}.get(match.group(1), match.group(1))
                found[name] = {pid} | {p for p, _, _, c in table if p != pid and cls.models + ":" + match.group(1) in c
                                       and sessions.get(p) != cls.worker_session}
        return found

    @classmethod
    def _kill_second_node_mid_run(cls):
        """Waits until the GPU model and a CPU model run on the second node, a CPU model's front end
        in its constructor; kills the node; returns (the pids of the pipelines that ran on it and of
        their front ends, the names of the CPU models among them)."""
        def ready():
            running = cls._on_second_node()
            loading = [name for name in running if name != "gpu"
                       and "loading" in read(os.path.join(cls.out, "logs", name + ".log"))]
            return "gpu" in running and loading
        if not wait_for(ready, 240):
            raise AssertionError(f"the second node never ran the GPU model and a CPU model; on it: "
                                 f"{cls._on_second_node()}\n{read(os.path.join(cls.work, 'zoo.stderr'))[-3000:]}")
        running = cls._on_second_node()  # now, with the front ends the pipelines started since
        kill_session(cls.worker_session)
        return set().union(*running.values()), set(running) - {"gpu"}

    @staticmethod
    def _alive(pids):
        live = {pid for pid, _, _, _ in processes()}
        return set(pids) & live

    def assert_ran(self):
        self.assertIsNotNone(self.index, self.stderr[-3000:])

    def rows(self):
        return {row["name"]: row for row in self.index["rows"]}

    def test_every_model_has_a_row(self):
        self.assert_ran()
        self.assertEqual(sorted(self.rows()), sorted(NAMES), self.stderr[-3000:])
        self.assertEqual(self.returncode, 3, self.stderr[-3000:])  # the GPU model's error row
        self.assertEqual(self.index["counts"], {"pass": 2, "fail": 0, "error": 1})
        self.assertIn("zoo error: 3 models, 2 pass, 0 fail, 1 error", self.stdout)
        self.assertIn(f"cluster {self.address}", self.index["executor"])

    def test_a_model_whose_node_was_lost_is_retried_and_passes(self):
        self.assert_ran()
        self.assertTrue(self.moved, "no CPU model ran on the second node")
        for name in ("first", "second"):
            row = self.rows()[name]
            self.assertEqual(row["verdict"], "pass", row)
            if name in self.moved:
                self.assertRegex(row["note"], f"^retried: {LOSS} on its first attempt$")
                self.assertRegex(self.stderr, f"{name}: pass in [0-9.]+ s: retried: {LOSS}")
            else:
                self.assertEqual(row["note"], "")

    def test_a_model_no_live_node_can_run_is_an_error_row(self):
        self.assert_ran()
        row = self.rows()["gpu"]
        self.assertEqual(row["verdict"], "error")
        self.assertIsNone(row["report"])
        self.assertRegex(row["note"], f"^{LOSS}; no live node of the cluster can run it "
                                      r"\(it asks for 1 CPU, 2\.0 GB, 1 GPU\); gave up after \d+ s$")

    def test_the_dashboard_says_what_happened(self):
        self.assert_ran()
        with open(os.path.join(self.out, "index.html")) as stream:
            page = stream.read()
        for row in self.index["rows"]:
            if row["note"]:
                self.assertIn(row["note"].replace("'", "&#x27;"), page)
        self.assertIn("retried: its node was lost", page)
        self.assertIn("no live node of the cluster can run it", page)

    def test_no_pipeline_outlives_its_worker_or_the_zoo(self):
        self.assert_ran()
        self.assertTrue(self.victims, "no pipeline was seen on the second node")
        self.assertEqual(self.victims_left, set(), "a pipeline of the lost node outlived its worker")
        left = [command for _, _, _, command in processes() if self.models + ":" in command]
        self.assertEqual(left, [], "a pipeline or front end outlived its zoo")


if __name__ == "__main__":
    unittest.main()
