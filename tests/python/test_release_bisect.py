"""Since when (`onnxproof bisect-release RUN`, issue 64): real ONNX Runtime releases (1.18, 1.22
and 1.31, which scripts/setup.sh fetches), each in a folder of a deployment cache of its own as an
application embeds it, with a regression planted from 1.22 on: the application's session-config
turns on the GELU approximation there. The run proves 1.18 (pass) and 1.31 (fail); the bisection
proves 1.22 and must name it, and on it the optimizer to blame, in the run's reports."""
import json
import os
import shutil
import subprocess
import tempfile
import unittest

from test_runtime_releases import CACHE, ENGINE, MODEL_FILE, release

PLANTED = "optimization.enable_gelu_approximation=1"


def engine(*arguments, env):
    return subprocess.run([ENGINE, *arguments], capture_output=True, text=True, stdin=subprocess.DEVNULL,
                          timeout=900, env=env)


@unittest.skipUnless(os.access(ENGINE, os.X_OK), "build the engine first")
class ReleaseBisection(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.versions = [release(18), release(22), release(31)]
        if not all(cls.versions):  # setup fetches them; a missing one is a broken setup, not a skip
            raise AssertionError(f"ONNX Runtime 1.18, 1.22 and 1.31 are not all in {CACHE}: run scripts/setup.sh")
        cls.work = tempfile.mkdtemp(prefix="onnxproof-bisect-")
        cls.cache = os.path.join(cls.work, "deployments")
        for version in cls.versions:
            os.makedirs(os.path.join(cls.cache, version))
            os.symlink(os.path.join(CACHE, version, "libonnxruntime.so.1"),
                       os.path.join(cls.cache, version, "libonnxruntime.so.1"))
        for version in cls.versions[1:]:  # the regression: from 1.22 on
            with open(os.path.join(cls.cache, version, "session-config"), "w") as stream:
                stream.write(f"# the application's session options\n{PLANTED}\n")
        cls.env = dict(os.environ, ONNXPROOF_ORT_CACHE=cls.cache)
        cls.run_folder = os.path.join(cls.work, "run")
        old, _, new = cls.versions
        cls.proved = engine("pipeline", "--model", MODEL_FILE + ":build", "--input",
                            "x=8x16:float32", "--out", cls.run_folder, "--no-golden", "--opset", "18", "--target",
                            f"ort-cpu,ort-cpu@{old},ort-cpu@{new}", env=cls.env)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.work, ignore_errors=True)

    def copy_of_run(self, name):
        folder = os.path.join(self.work, name)
        shutil.copytree(self.run_folder, folder, symlinks=True)
        return folder

    def test_the_bisection_names_the_first_failing_release_and_its_optimizer(self):
        self.assertEqual(self.proved.returncode, 1, self.proved.stdout[-3000:] + self.proved.stderr[-2000:])
        run = self.copy_of_run("bisected")
        done = engine("bisect-release", run, env=self.env)
        self.assertEqual(done.returncode, 0, done.stdout[-3000:] + done.stderr[-3000:])
        old, middle, new = self.versions
        with open(os.path.join(run, "bisect", "bisect.json")) as stream:
            found = json.load(stream)
        self.assertEqual((found["last_good"], found["first_bad"], found["direction"]), (old, middle, "regression"))
        self.assertEqual(found["proved"], [middle])  # the run proved both ends already
        outcomes = {entry["version"]: entry["outcome"] for entry in found["releases"]}
        self.assertEqual(outcomes, {old: "pass", middle: "fail", new: "fail"})
        optimizer = found["optimizer"]
        self.assertEqual(optimizer["optimizers"][-1], "GeluApproximation", optimizer)
        self.assertEqual(optimizer["session_option"], "optimization.disable_specified_optimizers=GeluApproximation")
        self.assertEqual(optimizer["session_config_added"], [PLANTED])
        self.assertTrue(os.path.isfile(os.path.join(run, optimizer["evidence"])))
        self.assertTrue(found["evidence_rows"])
        self.assertTrue(all(row["status"] == "fail" and row["status_without"] == "pass"
                            for row in found["evidence_rows"]), found["evidence_rows"])
        self.assertTrue(os.path.isfile(os.path.join(run, "bisect", middle, "parity.json")))
        self.assertIn("RUNTIME_RELEASE_REGRESSION", done.stdout)
        # The run's reports say it where people look first; a second bisection replaces the words.
        self.assertEqual(engine("bisect-release", run, env=self.env).returncode, 0)
        with open(os.path.join(run, "report.json")) as stream:
            said = json.load(stream)["ship"]["what_to_do"]
        self.assertEqual(said.count("onnxproof bisect-release"), 1, said)
        self.assertIn(f"deploy ONNX Runtime {old}", said)
        self.assertIn("disable_specified_optimizers=GeluApproximation", said)
        for view in ("report.md", "report.html"):
            with open(os.path.join(run, view)) as stream:
                self.assertEqual(stream.read().count("onnxproof bisect-release"), 1, view)

    def test_given_ends_that_do_not_disagree_are_a_usage_error(self):
        run = self.copy_of_run("same-outcome")
        old, middle, _ = self.versions
        done = engine("bisect-release", run, "--good", old, "--bad", old, env=self.env)
        self.assertEqual(done.returncode, 2, done.stderr)
        done = engine("bisect-release", run, "--good", middle, "--bad", self.versions[2], env=self.env)
        self.assertEqual(done.returncode, 2, done.stderr)
        self.assertIn(f"--good {middle}: the model fails on ONNX Runtime {middle}", done.stderr)
        self.assertEqual(len(done.stderr.strip().splitlines()[-1:]), 1)
        done = engine("bisect-release", run, "--good", old, env=self.env)
        self.assertEqual(done.returncode, 2, done.stderr)
        self.assertFalse(os.path.exists(os.path.join(run, "bisect")))

    def test_an_end_the_cache_no_longer_holds_is_a_usage_error_naming_the_fetch(self):
        # The run proved 1.18 on a cache that had it; bisected where the cache lacks it.
        run = self.copy_of_run("moved")
        cache = os.path.join(self.work, "without-the-good-end")
        for version in self.versions[1:]:
            os.makedirs(os.path.join(cache, version))
            os.symlink(os.path.join(CACHE, version, "libonnxruntime.so.1"),
                       os.path.join(cache, version, "libonnxruntime.so.1"))
        done = engine("bisect-release", run, env=dict(self.env, ONNXPROOF_ORT_CACHE=cache))
        self.assertEqual(done.returncode, 2, done.stderr)
        self.assertIn(f"ONNX Runtime {self.versions[0]} is not fetched into {cache}", done.stderr)
        self.assertIn(f"fetch-onnxruntime-versions.sh {self.versions[0]}", done.stderr)
        self.assertFalse(os.path.exists(os.path.join(run, "bisect")))

    def test_a_run_without_a_passing_and_a_failing_release_is_a_usage_error(self):
        done = engine("bisect-release", MODEL_FILE, env=self.env)
        self.assertEqual(done.returncode, 2, done.stderr)
        self.assertIn("is not a run folder", done.stderr)
        run = self.copy_of_run("no-releases")
        with open(os.path.join(run, "report.json")) as stream:
            report = json.load(stream)
        report["steps"] = [step for step in report["steps"] if step["name"] != "runtimes"]
        with open(os.path.join(run, "report.json"), "w") as stream:
            json.dump(report, stream)
        done = engine("bisect-release", run, env=self.env)
        self.assertEqual(done.returncode, 2, done.stderr)
        self.assertIn("name them with --good and --bad", done.stderr)


if __name__ == "__main__":
    unittest.main()
