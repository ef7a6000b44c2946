"""The reference captured beside the export by a forked child (reference_ahead.py): whether the child
finishes, is stopped mid-way, dies or is abandoned, reference/ holds the cases a capture in the export
process alone makes: the same cases with the same inputs, and outputs equal up to thread-count
rounding."""
import contextlib
import io
import json
import os
import shutil
import signal
import sys
import tempfile
import time
import unittest
from unittest import mock

import numpy as np
from onnx import numpy_helper

from onnxproof.core import memory
from onnxproof.torch import exact, reference_ahead, reference_child
from onnxproof.torch.export_forward import check_forward
from onnxproof.torch.export_load import example_arrays, load_and_prepare
from onnxproof.torch.export_reference import write_reference
from onnxproof.torch.state import TorchState

# The sleep makes a case last long enough for the test to stop the child between cases.
NET = """import os
import time
import torch

PARENT = os.getpid()  # the process that imported the model: the export process, not the child


def in_child():
    return os.getpid() != PARENT


class Starving(torch.nn.Module):
    # Net (defined last: a test appends to it) that runs out of memory in the child only, on a
    # case of batch 1 (a generated one): an address space limit set there, then an allocation past it.

    def __init__(self):
        super().__init__()
        self.net = Net()

    def forward(self, x):
        if in_child() and x.shape[0] == 1:
            import resource
            with open("/proc/self/status") as handle:
                size = next(int(line.split()[1]) * 1024 for line in handle if line.startswith("VmSize:"))
            resource.setrlimit(resource.RLIMIT_AS, (size + 2**26, resource.RLIM_INFINITY))
            torch.ones(2**28)  # 1 GiB: past the limit
        return self.net(x)


class Spawning(torch.nn.Module):
    # Net that starts a process and a thread in the child on every forward and leaves them
    # running; the process's pid goes into $SPAWNED_LOG.

    def __init__(self):
        super().__init__()
        self.net = Net()

    def forward(self, x):
        if in_child():
            import subprocess, threading
            sleeper = subprocess.Popen(["sleep", "300"])
            with open(os.environ["SPAWNED_LOG"], "a") as handle:
                handle.write(f"{sleeper.pid}\\n")
            threading.Thread(target=time.sleep, args=(300,), daemon=True).start()
        return self.net(x)


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.body = torch.nn.Sequential(torch.nn.Linear(8, 64), torch.nn.Tanh(), torch.nn.Linear(64, 4))

    def forward(self, x):
        if x.shape[0] == 3:
            raise ValueError("this model takes no batch of 3")  # rejected cases, numbered around
        time.sleep(0.05)
        return self.body(x).softmax(-1)
"""


class ReferenceAhead(unittest.TestCase):
    def setUp(self):
        self.folder = tempfile.mkdtemp(prefix="onnxproof-ahead-")
        self.addCleanup(shutil.rmtree, self.folder, ignore_errors=True)
        with open(os.path.join(self.folder, "net.py"), "w") as handle:
            handle.write(NET)

    def prepared(self, name, model_class="Net"):
        """(state, model) of a run folder `name`, as the export leaves them before its export step."""
        import torch
        torch.manual_seed(0)
        out = os.path.join(self.folder, name)
        os.makedirs(out)
        state = TorchState({"model": os.path.join(self.folder, "net.py") + ":" + model_class, "out": out,
                             "inputs": [{"name": "x", "dims": [2, 8], "dtype": "float32"}],
                             "dynamic": [{"input": "x", "axis": 0, "label": "batch"}], "samples": 3})
        model, _ = load_and_prepare(state)
        self.assertIsNotNone(check_forward(state, model, example_arrays(state)))
        state.timings["forward"] = 0.01
        return state, model

    def sequential(self, model_class="Net"):
        """cases.json and the run folder of a capture in one process, after the export."""
        state, model = self.prepared("sequential", model_class)
        write_reference(state, model)
        return self.cases(state), state

    def cases(self, state):
        with open(os.path.join(state.out, "reference", "cases.json")) as handle:
            return json.load(handle)["cases"]

    def assert_same_reference(self, state, expected, expected_state):
        """The same cases, inputs bit for bit, float32 outputs to rounding, each exact output
        present where cases.json says so and close to the float64 truth."""
        got = self.cases(state)
        self.assertEqual([(c["data_set"], c["sizes"], c["sample"], c["source"]) for c in got],
                         [(c["data_set"], c["sizes"], c["sample"], c["source"]) for c in expected])
        for case in got:
            mine = os.path.join(state.out, "reference", case["data_set"])
            theirs = os.path.join(expected_state.out, "reference", case["data_set"])
            self.assertEqual(self.tensor(mine, "input_0").tobytes(), self.tensor(theirs, "input_0").tobytes())
            np.testing.assert_allclose(self.tensor(mine, "output_0"), self.tensor(theirs, "output_0"), atol=1e-6)
            files = sorted(name for name in os.listdir(mine) if name.startswith("exact_output_"))
            self.assertEqual(files, [f"exact_output_{k}.pb" for k in case["exact_outputs"]])
            if case["exact_outputs"]:
                np.testing.assert_allclose(self.tensor(mine, "exact_output_0"), self.tensor(mine, "output_0"),
                                           atol=1e-5)
        self.assertEqual(state.rejected_cases, expected_state.rejected_cases)
        self.assertEqual(len(state.rejected_cases), 1)
        self.assertEqual(state.findings, expected_state.findings)
        left = [name for name in os.listdir(state.out) if name != "reference"]
        self.assertEqual(left, [], "the child's folder or checkpoint was left behind")

    def tensor(self, folder, name):
        from onnx import TensorProto
        proto = TensorProto()
        with open(os.path.join(folder, name + ".pb"), "rb") as handle:
            proto.ParseFromString(handle.read())
        return numpy_helper.to_array(proto)

    def started(self, state, model):
        ahead = reference_ahead.start(state, model)
        self.assertIsNotNone(ahead, "no child started (fewer than two cores?)")
        self.addCleanup(ahead.close)
        return ahead

    def frozen_after(self, ahead, count):
        """Waits until the child has saved `count` cases, then stops it (SIGSTOP) where it is,
        so that it cannot finish every case before finish() kills it."""
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            saved = ahead.read_checkpoint()
            if saved is not None and len(saved.cases) >= count:
                os.kill(ahead.pid, signal.SIGSTOP)
                return
            time.sleep(0.01)
        self.fail(f"the child did not save {count} cases")

    def test_a_child_killed_after_two_cases_leaves_the_rest_to_the_export_process(self):
        expected, expected_state = self.sequential()
        state, model = self.prepared("ahead")
        ahead = self.started(state, model)
        self.frozen_after(ahead, 2)
        write_reference(state, model, ahead)
        self.assertGreaterEqual(state.timings["reference_ahead_cases"], 2)
        self.assertLess(state.timings["reference_ahead_cases"], len(expected))
        self.assert_same_reference(state, expected, expected_state)

    def test_proves_child_is_a_new_interpreter_and_gives_the_same_reference(self):
        """prove()'s model is an object in the user's process: its child is started afresh (never
        a fork of that process), the model pickled to it."""
        import importlib
        import torch
        from onnxproof.torch.export import InMemoryModel
        expected, expected_state = self.sequential()
        state, _ = self.prepared("spawned")
        sys.path.insert(0, self.folder)  # the user's model comes from a module the child can import
        self.addCleanup(sys.path.remove, self.folder)
        sys.modules.pop("net", None)
        self.addCleanup(sys.modules.pop, "net", None)
        torch.manual_seed(0)
        model = importlib.import_module("net").Net().eval()
        state.given = InMemoryModel(model, "net.Net", dict(state.example))
        with mock.patch.object(reference_ahead, "fork_is_safe", return_value=False):  # a notebook's process
            ahead = self.started(state, model)
        self.assertIsNotNone(ahead.process)  # a subprocess.Popen: a new interpreter, not a fork
        self.frozen_after(ahead, 2)
        write_reference(state, model, ahead)
        self.assertGreaterEqual(state.timings["reference_ahead_cases"], 2)
        self.assert_same_reference(state, expected, expected_state)

    def test_proves_child_of_a_model_that_does_not_pickle_is_not_started(self):
        state, model = self.prepared("unpicklable")
        model.hook = lambda: None  # a lambda attribute: pickle refuses the model
        from onnxproof.torch.export import InMemoryModel
        state.given = InMemoryModel(model, "net.Net", dict(state.example))
        with mock.patch.object(reference_ahead, "fork_is_safe", return_value=False):
            self.assertIsNone(reference_ahead.start(state, model))
        self.assertFalse(os.path.exists(os.path.join(state.out, "reference.partial")))
        write_reference(state, model)  # the export process captures every case itself
        self.assertEqual(len(self.cases(state)), len(self.sequential()[0]))

    def test_above_the_in_place_size_the_child_copies_and_the_export_process_widens_in_place(self):
        expected, expected_state = self.sequential()
        with mock.patch.object(exact, "IN_PLACE_ABOVE_BYTES", 100):
            state, model = self.prepared("ahead")
            before = {name: value.clone() for name, value in model.state_dict().items()}
            ahead = self.started(state, model)
            self.frozen_after(ahead, 2)
            write_reference(state, model, ahead)
        self.assertLess(state.timings["reference_ahead_cases"], len(expected))
        self.assert_same_reference(state, expected, expected_state)
        for name, value in model.state_dict().items():  # narrowed back exactly
            self.assertEqual(value.dtype, before[name].dtype)
            self.assertTrue(bool((value == before[name]).all()), name)

    def test_a_child_done_with_every_case_adds_float64_runs_the_budget_skipped(self):
        expected, expected_state = self.sequential()
        with mock.patch.object(exact, "TIME_BUDGET", 0.0):  # only the first case within budget
            state, model = self.prepared("ahead")
            ahead = self.started(state, model)
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:  # the export "runs" until the child has done everything
            saved = ahead.read_checkpoint()
            if saved and saved.complete and all(case["exact_outputs"] for case in saved.cases):
                break
            time.sleep(0.05)
        write_reference(state, model, ahead)
        self.assertEqual(state.timings["reference_ahead_cases"], len(expected))
        self.assertTrue(all(case["exact_outputs"] == [0] for case in self.cases(state)))
        self.assert_same_reference(state, expected, expected_state)

    def test_a_model_the_child_cannot_copy_to_float64_is_said_as_without_a_child(self):
        with open(os.path.join(self.folder, "net.py"), "a") as handle:
            handle.write("\n    def uncopyable(self):\n        self.numbers = (n for n in range(3))  # a generator\n")
            handle.write("\n\nclass Uncopyable(Net):\n    def __init__(self):\n        super().__init__()\n"
                         "        self.uncopyable()\n")
        expected, expected_state = self.sequential("Uncopyable")
        state, model = self.prepared("ahead", "Uncopyable")
        ahead = self.started(state, model)
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and not getattr(ahead.read_checkpoint(), "complete", False):
            time.sleep(0.05)
        write_reference(state, model, ahead)
        self.assertEqual(state.timings["reference_ahead_cases"], len(expected))
        self.assertIn("EXACT_REFERENCE_MISSING", [f["code"] for f in state.findings])
        self.assert_same_reference(state, expected, expected_state)

    def test_a_child_that_fails_before_saving_a_case_costs_only_its_work(self):
        expected, expected_state = self.sequential()
        state, model = self.prepared("ahead")
        with mock.patch.object(reference_child, "run_child", side_effect=RuntimeError("planted")):
            ahead = self.started(state, model)  # the forked child inherits the patch
        write_reference(state, model, ahead)
        self.assertNotIn("reference_ahead", state.timings)
        self.assert_same_reference(state, expected, expected_state)

    def test_a_fork_that_fails_leaves_the_capture_to_the_export_process(self):
        state, model = self.prepared("ahead")
        said = io.StringIO()
        with mock.patch.object(os, "fork", side_effect=BlockingIOError(11, "Resource temporarily unavailable")), \
                contextlib.redirect_stderr(said):
            self.assertIsNone(reference_ahead.start(state, model))
        self.assertEqual(said.getvalue(), "onnxproof export: the reference is captured after the export "
                                          "([Errno 11] Resource temporarily unavailable)\n")
        self.assertEqual(os.listdir(state.out), [])

    def test_an_error_taking_the_childs_cases_costs_only_their_work(self):
        expected, expected_state = self.sequential()
        state, model = self.prepared("ahead")
        ahead = self.started(state, model)
        self.frozen_after(ahead, 2)
        said = io.StringIO()
        with mock.patch.object(reference_ahead.Ahead, "tidy", side_effect=PermissionError(13, "Permission denied")), \
                contextlib.redirect_stderr(said):
            write_reference(state, model, ahead)
        self.assertIn("the cases captured beside the export are not used ([Errno 13] Permission denied)", said.getvalue())
        self.assertNotIn("reference_ahead", state.timings)
        self.assert_same_reference(state, expected, expected_state)

    def test_a_child_killed_mid_case_never_counts_its_half_case(self):
        # SIGKILL (what the kernel's OOM killer sends) while the child is inside a case: the
        # case it was writing is not taken, whatever of it reached the disk.
        expected, expected_state = self.sequential()
        state, model = self.prepared("ahead")
        ahead = self.started(state, model)
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            saved = ahead.read_checkpoint()
            if saved is not None and len(saved.cases) >= 2:
                break
            time.sleep(0.005)
        time.sleep(0.02)  # inside the next case's forward (0.05 s) or its writing
        os.kill(ahead.pid, signal.SIGKILL)
        write_reference(state, model, ahead)
        self.assertLess(state.timings["reference_ahead_cases"], len(expected))
        self.assert_same_reference(state, expected, expected_state)

    def test_a_child_out_of_memory_does_not_turn_a_case_into_one_pytorch_rejects(self):
        # The child runs out of memory where the export process would not: the case is the export
        # process's to capture, not a CASE_REJECTED_BY_PYTORCH of the child's.
        expected, expected_state = self.sequential("Starving")
        state, model = self.prepared("ahead", "Starving")
        ahead = self.started(state, model)
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and os.waitpid(ahead.pid, os.WNOHANG) == (0, 0):
            time.sleep(0.05)  # the child ends on its own (out of memory) or goes on to the end
        ahead.pid = None  # reaped here
        write_reference(state, model, ahead)
        self.assert_same_reference(state, expected, expected_state)

    def test_a_forward_that_spawns_leaves_nothing_running(self):
        # The child's forward starts a process and a thread and leaves them: killing the child
        # kills what it started, and the reference is the same.
        log = os.path.join(self.folder, "spawned.log")
        with mock.patch.dict(os.environ, {"SPAWNED_LOG": log}):
            expected, expected_state = self.sequential("Spawning")
            state, model = self.prepared("ahead", "Spawning")
            ahead = self.started(state, model)
            self.frozen_after(ahead, 2)
            os.kill(ahead.pid, signal.SIGCONT)  # running again: killed while it may be spawning
            write_reference(state, model, ahead)
        self.assert_same_reference(state, expected, expected_state)
        with open(log) as handle:
            spawned = [int(line) for line in handle if line.strip()]
        self.assertGreaterEqual(len(spawned), 2)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and not all(gone(pid) for pid in spawned):
            time.sleep(0.1)
        self.assertEqual([pid for pid in spawned if not gone(pid)], [], "the child's processes outlived it")

    def test_an_abandoned_child_is_killed_and_its_files_removed(self):
        state, model = self.prepared("ahead")
        ahead = self.started(state, model)
        pid = ahead.pid
        ahead.close()
        with self.assertRaises(ChildProcessError):
            os.waitpid(pid, os.WNOHANG)  # reaped: no such child any more
        self.assertEqual(os.listdir(state.out), [])

    def test_switched_off_or_short_of_memory_runs_no_child(self):
        state, model = self.prepared("ahead")
        with mock.patch.dict(os.environ, {reference_ahead.SWITCH: "0"}):
            self.assertIsNone(reference_ahead.start(state, model))
        needed = reference_ahead.memory_needed(model)
        with mock.patch.object(reference_ahead, "available_memory", return_value=needed - 1):
            self.assertIsNone(reference_ahead.start(state, model))
        # Memory unknown: a model the float64 pass would widen in place gets no child.
        with mock.patch.object(reference_ahead, "available_memory", return_value=None), \
                mock.patch.object(exact, "IN_PLACE_ABOVE_BYTES", 100):
            self.assertIsNone(reference_ahead.start(state, model))
        self.assertEqual(os.listdir(state.out), [])

    def test_available_memory_is_what_the_kernel_says_at_most(self):
        with open("/proc/meminfo") as handle:
            kernel = next(int(line.split()[1]) * 1024 for line in handle if line.startswith("MemAvailable:"))
        available = memory.available_memory()
        self.assertGreater(available, 0)
        self.assertLessEqual(available, kernel * 1.1)  # the two reads are moments apart


def gone(pid):
    """True when the process has ended (a zombie waiting for init to reap it counts)."""
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().rsplit(")", 1)[1].split()[0] == "Z"
    except FileNotFoundError:
        return True


if __name__ == "__main__":
    unittest.main()
