"""A proof per ONNX Runtime release (`--target ort-cpu@VERSION`, issue 43): real releases (1.18 and
1.31, which scripts/setup.sh fetches into the cache), real pipelines on a small model whose GELU
ONNX Runtime fuses into one kernel: the default opset fitted to the oldest release, a release
that cannot load the export named with its reason, and per-release rows that differ when one
release's session options make its optimizer change the outputs."""
import json
import math
import os
import shutil
import subprocess
import tempfile
import time
import unittest

ENGINE = os.environ.get("ONNXPROOF_ENGINE") or os.path.join(
    os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "build", "bin", "onnxproof")
CACHE = os.environ.get("ONNXPROOF_ORT_CACHE") or os.path.join(
    os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "onnxproof", "onnxruntime")

# The erf GELU ONNX Runtime fuses (and approximates where a session option says so).
MODEL_FILE = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "fixtures",
                          "release_models.py")


def release(minor):
    """The newest patch of 1.MINOR in the cache (as the engine picks it), or None."""
    found = [name for name in os.listdir(CACHE) if name.startswith(f"1.{minor}.")] if os.path.isdir(CACHE) else []
    return max(found, key=lambda name: [int(part) for part in name.split(".")], default=None)


def pipeline(*arguments, env=None):
    return subprocess.run([ENGINE, "pipeline", *arguments], capture_output=True, text=True,
                          stdin=subprocess.DEVNULL, timeout=900, env=env)


def report_of(folder):
    with open(os.path.join(folder, "report.json")) as stream:
        return json.load(stream)


def releases_of(report):
    step = next(step for step in report["steps"] if step["name"] == "runtimes")
    return {entry["version"]: entry for entry in step["releases"]}, step


@unittest.skipUnless(os.access(ENGINE, os.X_OK), "build the engine first")
class RuntimeReleases(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.old, cls.new = release(18), release(31)
        if not cls.old or not cls.new:  # setup fetches both; a missing one is a broken setup, not a skip
            raise AssertionError(f"ONNX Runtime 1.18 and 1.31 are not in {CACHE}: run scripts/setup.sh "
                                 "(scripts/fetch-onnxruntime-versions.sh 1.18 1.31)")
        cls.work = tempfile.mkdtemp(prefix="onnxproof-releases-")
        cls.spec = MODEL_FILE + ":build"

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.work, ignore_errors=True)

    def prove(self, name, *arguments, env=None):
        out = os.path.join(self.work, name)
        done = pipeline("--model", self.spec, "--input", "x=8x16:float32", "--out", out, "--no-golden", *arguments,
                        env=env)
        return done, out

    def test_the_default_opset_fits_the_oldest_release_and_both_match(self):
        done, out = self.prove("both", "--target", "ort-cpu,ort-cpu@1.18,ort-cpu@1.31")
        self.assertEqual(done.returncode, 0, done.stdout[-3000:] + done.stderr[-2000:])
        report = report_of(out)
        releases, step = releases_of(report)
        self.assertEqual(set(releases), {self.old, self.new})
        opset = report["signature"]["opsets"]["ai.onnx"]
        self.assertLessEqual(opset, releases[self.old]["newest_opset"])
        for version, entry in releases.items():
            self.assertEqual(entry["outcome"], "pass", entry)
            self.assertGreater(entry["rows"], 0)
            self.assertEqual(entry["rows"], entry["rows_passed"])
        self.assertEqual(step["reason"], f"loads and matches on {self.old}, {self.new}")
        answers = {answer["question"]: answer for answer in report["headline"]}
        said = answers["Does every runtime release named by --target load the model and match?"]
        self.assertEqual(said["answer"], "yes")

    def test_an_opset_above_a_release_is_a_usage_error_naming_both_limits(self):
        done, _ = self.prove("too-new", "--opset", "23", "--target", "ort-cpu@1.18")
        self.assertEqual(done.returncode, 2, done.stderr)
        line = done.stderr.strip().splitlines()[-1]
        self.assertIn("--opset 23", line)
        self.assertIn(f"ONNX Runtime {self.old} (--target ort-cpu@1.18) runs up to 21", line)

    def test_a_release_that_cannot_load_the_export_is_named_with_its_reason(self):
        done, exported = self.prove("opset23", "--opset", "23")
        self.assertEqual(done.returncode, 0, done.stderr[-2000:])
        out = os.path.join(self.work, "opset23-on-releases")
        done = pipeline("--from-export", exported, "--out", out, "--no-golden",
                        "--target", "ort-cpu,ort-cpu@1.18,ort-cpu@1.31")
        self.assertEqual(done.returncode, 1, done.stdout[-3000:])
        report = report_of(out)
        releases, step = releases_of(report)
        self.assertEqual(releases[self.old]["outcome"], "refused")
        self.assertEqual(releases[self.old]["reason"], "opset 23 is above the 21 it runs")
        self.assertEqual(releases[self.new]["outcome"], "pass")
        self.assertEqual(step["reason"], f"loads and matches on {self.new}; {self.old} refuses it: opset 23 is above "
                                         "the 21 it runs")
        refusals = [f for f in report["findings"] if f["code"] == "RUNTIME_VERSION_REFUSES"]
        self.assertEqual(len(refusals), 1, report["findings"])
        self.assertEqual(refusals[0]["where"], f"ONNX Runtime {self.old}")

    def test_rows_differ_where_one_releases_optimizer_changes_the_outputs(self):
        # Two releases as an application embeds them: 1.31's sets the session option that makes
        # ONNX Runtime's optimizer replace Gelu by its tanh approximation (FastGelu).
        cache = os.path.join(self.work, "deployments")
        for version in (self.old, self.new):
            os.makedirs(os.path.join(cache, version))
            os.symlink(os.path.join(CACHE, version, "libonnxruntime.so.1"),
                       os.path.join(cache, version, "libonnxruntime.so.1"))
        with open(os.path.join(cache, self.new, "session-config"), "w") as stream:
            stream.write("# the application's session options\noptimization.enable_gelu_approximation=1\n")
        env = dict(os.environ, ONNXPROOF_ORT_CACHE=cache)
        done, out = self.prove("planted", "--opset", "18", "--target", "ort-cpu,ort-cpu@1.18,ort-cpu@1.31", env=env)
        self.assertEqual(done.returncode, 1, done.stdout[-3000:] + done.stderr[-2000:])
        report = report_of(out + ".failed" if os.path.isdir(out + ".failed") else out)
        releases, step = releases_of(report)
        rows = {version: {(row["optimization"], row["status"]) for row in entry["parity"]}
                for version, entry in releases.items()}
        self.assertEqual(rows[self.old], {("all", "pass")})
        self.assertEqual(rows[self.new], {("all", "fail"), ("disabled", "pass")})  # the optimizer, not the export
        mismatches = [f for f in report["findings"] if f["code"] == "PARITY_MISMATCH"]
        self.assertTrue(mismatches and all(f["where"].startswith(f"ONNX Runtime {self.new}") for f in mismatches),
                        mismatches)
        engine_parity = next(step for step in report["steps"] if step["name"] == "parity")
        self.assertEqual(engine_parity["status"], "pass")  # the engine's own library has no such option set
        self.assertTrue(math.isfinite(float(releases[self.new]["newest_opset"])))

    def deployment(self, name):
        """A release cache holding the engine-tested release's library (a link) in a folder of its
        own: its session-config is the test's to write. (the cache, the session-config's path)."""
        cache = os.path.join(self.work, name)
        os.makedirs(os.path.join(cache, self.new))
        os.symlink(os.path.join(CACHE, self.new, "libonnxruntime.so.1"),
                   os.path.join(cache, self.new, "libonnxruntime.so.1"))
        return cache, os.path.join(cache, self.new, "session-config")

    def test_a_malformed_session_config_stops_the_run_not_the_model(self):
        # The deployment's file is wrong, not the export: exit 3 before any work, never a refusal.
        cache, config = self.deployment("broken-deployment")
        with open(config, "w") as stream:
            stream.write("no equals sign here\n")
        done, out = self.prove("broken", "--target", "ort-cpu@1.31", env=dict(os.environ, ONNXPROOF_ORT_CACHE=cache))
        self.assertEqual(done.returncode, 3, done.stdout[-2000:] + done.stderr[-2000:])
        self.assertEqual(len(done.stderr.strip().splitlines()), 1, done.stderr)
        self.assertIn("session-config line 1: expected KEY=VALUE", done.stderr)
        self.assertFalse(os.path.exists(out))

    def test_a_session_config_value_the_release_rejects_is_the_deployments_error_not_a_refusal(self):
        # The probe: a value ONNX Runtime rejects was RUNTIME_VERSION_REFUSES, "the release cannot
        # load the model", with a staging path and an opset hint.
        cache, config = self.deployment("rejected-deployment")
        with open(config, "w") as stream:
            stream.write("session.graph_optimizations_loop_level=abc\n")  # stoi fails on it
        done, out = self.prove("rejected", "--target", "ort-cpu@1.31", env=dict(os.environ, ONNXPROOF_ORT_CACHE=cache))
        self.assertEqual(done.returncode, 3, done.stdout[-2000:] + done.stderr[-2000:])
        self.assertIn("the session-config beside this ONNX Runtime holds options it rejects", done.stderr)
        self.assertNotIn("RUNTIME_VERSION_REFUSES", done.stdout)

    def test_a_session_config_that_is_no_file_is_said_never_waited_on_or_skipped(self):
        # The probe of 2026-12-06: a FIFO blocked 120 s and blamed the export front end; a folder
        # was skipped, proving the release without the deployment's options.
        for kind in ("fifo", "folder"):
            cache, config = self.deployment(f"{kind}-deployment")
            os.mkfifo(config) if kind == "fifo" else os.makedirs(config)
            start = time.monotonic()
            done, _ = self.prove(kind, "--target", "ort-cpu@1.31", env=dict(os.environ, ONNXPROOF_ORT_CACHE=cache))
            self.assertLess(time.monotonic() - start, 60)
            self.assertEqual(done.returncode, 3, done.stdout[-2000:] + done.stderr[-2000:])
            self.assertIn("session-config is not a regular file", done.stderr)


if __name__ == "__main__":
    unittest.main()
