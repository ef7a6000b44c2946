"""`onnxproof zoo`: a zoo of six small models (four that pass, one whose constructor raises, one
that hangs past its timeout) proved by the real engine on a local Ray instance with two workers;
then the cache, CI shards merged, and a bad manifest. Real pipelines, real Ray, nothing mocked.

The first run takes about a minute on two cores, so the module is labelled slow (tests/CMakeLists.txt)."""
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import textwrap
import time
import unittest

ENGINE = os.environ.get("ONNXPROOF_ENGINE") or os.path.join(
    os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "build", "bin", "onnxproof")

MODELS = textwrap.dedent('''
    import time
    import torch
    from torch import nn

    def mlp():
        torch.manual_seed(0)
        return nn.Sequential(nn.Linear(4, 16), nn.ReLU(), nn.Linear(16, 3))

    def wide():
        torch.manual_seed(1)
        return nn.Sequential(nn.Linear(8, 32), nn.Tanh(), nn.Linear(32, 2))

    def conv():
        torch.manual_seed(2)
        return nn.Sequential(nn.Conv2d(1, 4, 3, padding=1), nn.ReLU(), nn.Flatten(), nn.Linear(4 * 6 * 6, 2))

    class Broken(nn.Module):
        def __init__(self):
            super().__init__()
            raise RuntimeError("this constructor refuses to build")

    def broken():
        return Broken()

    def hangs():
        time.sleep(3600)
''')

# Long enough to be past the front end's start; each wait costs the suite this much wall time.
HANG_TIMEOUT = 10

MANIFEST = textwrap.dedent(f'''
    [defaults]
    samples = 1
    timeout = 600
    sweep = ["batch=1,3"]
    inputs = ["x=2x4:float32"]
    dynamic = ["x:0=batch"]

    [[model]]
    name = "mlp"
    spec = "models.py:mlp"

    [[model]]
    name = "mlp-torchscript"
    spec = "models.py:mlp"
    exporter = "torchscript"

    [[model]]
    name = "wide"
    spec = "models.py:wide"
    inputs = ["x=2x8:float32"]

    [[model]]
    name = "conv"
    spec = "models.py:conv"
    inputs = ["x=2x1x6x6:float32"]

    [[model]]
    name = "broken"
    spec = "models.py:broken"

    [[model]]
    name = "hangs"
    spec = "models.py:hangs"
    timeout = {HANG_TIMEOUT}
''')

PASSING = ["mlp", "mlp-torchscript", "wide", "conv"]
# What a run's rows must agree on, whatever the order, the time taken or the cache.
COMPARED = ("name", "spec", "position", "verdict", "errors", "exporter", "opset", "nodes_before", "nodes_after",
            "key", "report", "log")


def zoo(*arguments):
    """Runs `onnxproof zoo ARGUMENTS` with the engine built here; returns the finished process."""
    return subprocess.run([ENGINE, "zoo", *arguments], capture_output=True, text=True, stdin=subprocess.DEVNULL,
                          timeout=1200)


def read_index(folder):
    with open(os.path.join(folder, "index.json")) as stream:
        return json.load(stream)


def rows_by_name(index):
    return {row["name"]: row for row in index["rows"]}


class ZooTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.work = tempfile.mkdtemp(prefix="onnxproof-zoo-test-")
        with open(os.path.join(cls.work, "models.py"), "w") as stream:
            stream.write(MODELS)
        cls.manifest = os.path.join(cls.work, "zoo.toml")
        with open(cls.manifest, "w") as stream:
            stream.write(MANIFEST)
        cls.out = os.path.join(cls.work, "zoo")
        cls.first = zoo("run", cls.manifest, "--out", cls.out, "--executor", "ray", "--workers", "2")
        cls.index = read_index(cls.out) if os.path.exists(os.path.join(cls.out, "index.json")) else None

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.work, ignore_errors=True)

    def assert_first_run(self):
        self.assertIsNotNone(self.index, self.first.stderr[-3000:])

    def test_dashboard_lists_every_model_with_its_verdict(self):
        self.assert_first_run()
        self.assertEqual(self.first.returncode, 3, self.first.stderr[-3000:])  # error rows: exit 3
        self.assertEqual(self.index["schema"], "onnxproof.zoo/1")
        self.assertEqual(self.index["verdict"], "error")
        self.assertIn("ray, 2 workers", self.index["executor"])
        rows = rows_by_name(self.index)
        self.assertEqual([row["name"] for row in self.index["rows"]], PASSING + ["broken", "hangs"])
        for name in PASSING:
            row = rows[name]
            self.assertEqual(row["verdict"], "pass", row)
            self.assertEqual(row["errors"], [])
            self.assertFalse(row["cached"])
            self.assertGreater(row["nodes_before"], 0)
            self.assertLessEqual(row["nodes_after"], row["nodes_before"])
            self.assertGreater(row["opset"], 0)
            self.assertGreater(row["seconds"], 0)
        self.assertEqual(rows["mlp-torchscript"]["exporter"], "torchscript")
        self.assertEqual(self.index["counts"], {"pass": 4, "fail": 0, "error": 2})
        self.assertIn("zoo error: 6 models, 4 pass, 0 fail, 2 error", self.first.stdout)
        self.assertIn("onnxproof zoo: [6/6]", self.first.stderr)

    def test_each_model_has_its_run_folder_log_and_golden_set(self):
        self.assert_first_run()
        for name in PASSING:
            run = os.path.join(self.out, "runs", name)
            with open(os.path.join(run, "report.json")) as stream:
                self.assertEqual(json.load(stream)["verdict"], "pass")
            for produced in ("report.html", "model.onnx", "export.json"):
                self.assertTrue(os.path.isfile(os.path.join(run, produced)), produced)
            self.assertTrue(os.path.isfile(os.path.join(self.out, "golden", name, "manifest.json")), name)
            with open(os.path.join(self.out, "logs", name + ".log")) as stream:
                self.assertIn("pipeline --model", stream.readline())
        with open(os.path.join(self.out, "index.html")) as stream:
            page = stream.read()
        for name in PASSING + ["broken"]:  # the model that raised has a report saying so
            self.assertIn(f'href="runs/{name}/report.html"', page)
        if rows_by_name(self.index)["hangs"]["report"] is None:  # the zoo's limit ended it: the log only
            self.assertNotIn('href="runs/hangs/report.html"', page)
        for name in PASSING + ["broken", "hangs"]:
            self.assertIn(f'href="logs/{name}.log"', page)
        self.assertIn("<script>", page)  # the sorting, inside the page: nothing fetched
        self.assertNotIn("http", page)

    def test_a_model_that_hangs_is_an_error_row_after_its_timeout(self):
        self.assert_first_run()
        row = rows_by_name(self.index)["hangs"]
        self.assertEqual(row["verdict"], "error")
        # Two limits of HANG_TIMEOUT run: the zoo's on the pipeline and the pipeline's own on the
        # export (--export-timeout), which starts a little later. On a loaded machine the zoo may
        # start waiting later still; then the engine ends the export first and writes its report.
        if row["report"] is None:
            self.assertEqual(row["note"], f"timed out after {HANG_TIMEOUT} s")
        else:
            self.assertIn(f"ran past its time limit of {HANG_TIMEOUT} s", row["note"])
        self.assertLess(row["seconds"], HANG_TIMEOUT + 30)
        # The process group was ended: no front end of it is left sleeping.
        left = subprocess.run(["pgrep", "-f", os.path.join(self.work, "models.py") + ":hangs"],
                              capture_output=True, text=True)
        self.assertEqual(left.stdout.strip(), "", "a hung front end survived its zoo")

    def test_a_model_that_raises_is_an_error_row(self):
        self.assert_first_run()
        row = rows_by_name(self.index)["broken"]
        self.assertEqual(row["verdict"], "error")
        self.assertEqual(row["exit_code"], 3)
        self.assertTrue(os.path.isfile(os.path.join(self.out, "runs", "broken", "report.json")))
        with open(os.path.join(self.out, "logs", "broken.log")) as stream:
            self.assertIn("this constructor refuses to build", row["note"] + stream.read())

    def test_an_interrupted_zoo_ends_its_pipelines(self):
        manifest = os.path.join(self.work, "hang.toml")
        with open(manifest, "w") as stream:
            stream.write('[[model]]\nname = "hangs-long"\nspec = "models.py:hangs"\ninputs = ["x=2x4:float32"]\n')
        out = os.path.join(self.work, "interrupted")
        zoo_process = subprocess.Popen([ENGINE, "zoo", "run", manifest, "--out", out, "--executor", "local"],
                                       stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                       text=True)
        log = os.path.join(out, "logs", "hangs-long.log")
        for _ in range(600):  # until the front end is in the model's constructor
            if os.path.exists(log):
                with open(log) as stream:
                    if "loading" in stream.read():
                        break
            time.sleep(0.1)
        zoo_process.send_signal(signal.SIGINT)
        _, stderr = zoo_process.communicate(timeout=60)
        self.assertEqual(zoo_process.returncode, 3, stderr)
        self.assertIn("onnxproof: error: zoo interrupted", stderr)
        left = subprocess.run(["pgrep", "-f", os.path.join(self.work, "models.py") + ":hangs"],
                              capture_output=True, text=True)
        self.assertEqual(left.stdout.strip(), "", "an interrupted zoo left its pipeline running")

    def test_cached_rerun_reuses_every_passing_run(self):
        self.assert_first_run()
        manifest = os.path.join(self.work, "passing.toml")
        with open(manifest, "w") as stream:  # the same models without the two error rows
            stream.write(MANIFEST.split('[[model]]\nname = "broken"')[0])
        out = os.path.join(self.work, "cached")
        done = zoo("run", manifest, "--out", out, "--cache", os.path.join(self.out, ".cache"), "--executor", "local")
        self.assertEqual(done.returncode, 0, done.stderr[-3000:])
        index = read_index(out)
        self.assertEqual(index["cached"], 4)
        first = rows_by_name(self.index)
        for name, row in rows_by_name(index).items():
            self.assertTrue(row["cached"], name)
            self.assertEqual({k: row[k] for k in COMPARED}, {k: first[name][k] for k in COMPARED})
            # The stored run came back as it was (hard links): no pipeline ran again.
            self.assertTrue(os.path.samefile(os.path.join(out, "runs", name, "report.json"),
                                             os.path.join(self.out, "runs", name, "report.json")))
        self.assertIn("(cached)", done.stderr)
        # --no-cache proves again what the cache holds (one model of it: each run is a cold front end).
        one = os.path.join(self.work, "one.toml")
        with open(one, "w") as stream:
            stream.write(MANIFEST.split("[[model]]")[0] + '[[model]]\nname = "mlp-torchscript"\nspec = "models.py:mlp"\n'
                         'exporter = "torchscript"\n')
        again = zoo("run", one, "--out", os.path.join(self.work, "uncached"), "--no-cache",
                    "--cache", os.path.join(self.out, ".cache"), "--executor", "local")
        self.assertEqual(again.returncode, 0, again.stderr[-3000:])
        index = read_index(os.path.join(self.work, "uncached"))
        self.assertEqual([row["name"] for row in index["rows"]], ["mlp-torchscript"])
        self.assertEqual(index["cached"], 0)

    def test_three_shards_merged_give_the_rows_of_one_run(self):
        self.assert_first_run()
        shards = []
        for shard in ("1/3", "2/3", "3/3"):
            folder = os.path.join(self.work, "shard" + shard[0])
            done = zoo("run", self.manifest, "--out", folder, "--shard", shard, "--executor", "local",
                       "--cache", os.path.join(self.out, ".cache"))
            self.assertIn(done.returncode, (0, 1, 3), done.stderr[-3000:])
            shards.append(folder)
        names = [sorted(rows_by_name(read_index(folder))) for folder in shards]
        self.assertEqual(sorted(sum(names, [])), sorted(PASSING + ["broken", "hangs"]))  # each model once
        self.assertTrue(all(len(n) == 2 for n in names), names)
        merged = os.path.join(self.work, "merged")
        done = zoo("merge", *shards, "--out", merged)
        self.assertEqual(done.returncode, 3, done.stderr[-3000:])
        index = read_index(merged)
        self.assertEqual([{k: r[k] for k in COMPARED + ("note",)} for r in index["rows"]],
                         [{k: r[k] for k in COMPARED + ("note",)} for r in self.index["rows"]])
        self.assertEqual(index["verdict"], self.index["verdict"])
        for name in PASSING:
            self.assertTrue(os.path.isfile(os.path.join(merged, "runs", name, "report.html")))
        again = zoo("merge", shards[0], shards[0], "--out", os.path.join(self.work, "twice"))
        self.assertEqual(again.returncode, 2)
        self.assertIn("is in both", again.stderr)
        # The probe of 2026-12-06: --out inside an input copied the input into itself.
        inside = zoo("merge", shards[0], shards[1], "--out", os.path.join(shards[0], "runs", "merged"))
        self.assertEqual(inside.returncode, 2, inside.stderr)
        self.assertEqual(len(inside.stderr.strip().splitlines()), 1, inside.stderr)
        self.assertIn("inside or around its inputs", inside.stderr)
        # ...and a 100,000-deep index.json was a Python traceback.
        deep = os.path.join(self.work, "deep")
        os.makedirs(deep)
        with open(os.path.join(deep, "index.json"), "w") as stream:
            stream.write("[" * 100000 + "]" * 100000)
        deeper = zoo("merge", deep, "--out", os.path.join(self.work, "from-deep"))
        self.assertEqual(deeper.returncode, 2, deeper.stderr)
        self.assertNotIn("Traceback", deeper.stderr)

    def test_a_bad_manifest_is_a_usage_error_in_one_line(self):
        manifest = os.path.join(self.work, "bad.toml")
        for text, expected in (('[[model]]\nspecs = "models.py:mlp"\n', "unknown key 'specs'"),
                               ('[[model]]\nspec = "missing.py:mlp"\n', "missing.py, which is not a file"),
                               ("[[model]\n", "not valid TOML"), ("", "no [[model]] entries")):
            with open(manifest, "w") as stream:
                stream.write(text)
            done = zoo("run", manifest, "--out", os.path.join(self.work, "bad"))
            self.assertEqual(done.returncode, 2, done.stderr)
            lines = done.stderr.strip().splitlines()
            self.assertEqual(len(lines), 1, done.stderr)
            self.assertTrue(lines[0].startswith("onnxproof: error: "), lines[0])
            self.assertIn(expected, lines[0])
        done = zoo("run", manifest, "--out", self.out, "--shard", "4/3")
        self.assertEqual(done.returncode, 2)
        self.assertFalse(os.path.exists(os.path.join(self.work, "bad")))

    def test_the_engine_lists_zoo_and_forwards_help(self):
        listed = subprocess.run([ENGINE, "--help"], capture_output=True, text=True)
        self.assertIn("zoo", listed.stdout)
        helped = zoo("run", "--help")
        self.assertEqual(helped.returncode, 0, helped.stderr)
        self.assertIn("--shard", helped.stdout)


class ManifestTest(unittest.TestCase):
    """The manifest and the shards, without running anything."""

    def test_the_bench_zoo_manifest_loads_with_the_families_of_issue_24(self):
        from onnxproof.zoo.manifest import load_manifest
        root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        models = load_manifest(os.path.join(root, "bench", "zoo", "zoo.toml"))
        specs = {model.spec for model in models}
        for spec in ("torchvision:ssdlite320_mobilenet_v3_large", "torchvision:fasterrcnn_mobilenet_v3_large_320_fpn",
                     "torchvision:retinanet_resnet50_fpn", "hf:LlamaForCausalLM:use_cache=true",
                     "hf:GPT2LMHeadModel:use_cache=true", "hf:Wav2Vec2Model", "hf:SegformerForSemanticSegmentation"):
            self.assertIn(spec, specs)
        by_name = {model.name: model for model in models}
        self.assertEqual(by_name["hf_GPT2LMHeadModel_use_cache_true.dynamo"].options["generate"], 16)
        self.assertEqual(by_name["torchvision_retinanet_resnet50_fpn.torchscript"].options["sweep"],
                         ["height=160,192,225", "width=256,199"])
        self.assertEqual(by_name["torchvision_resnet18.dynamo"].options["sweep"], ["batch=1,3"])
        self.assertTrue(os.path.isfile(by_name["tiny_detector_tiny_detector.dynamo"].source_file))

    def test_shards_deal_every_model_to_exactly_one_shard(self):
        from onnxproof.zoo.manifest import Model, shard_of
        models = [Model(name=f"m{index:03d}", spec="torchvision:resnet18", position=index, options={})
                  for index in range(0, 300, 7)]
        for count in (1, 2, 5, 50):
            shards = [[m.name for m in shard_of(models, (index, count))] for index in range(1, count + 1)]
            self.assertEqual(sorted(sum(shards, [])), sorted(m.name for m in models))
            self.assertLessEqual(max(map(len, shards)) - min(map(len, shards)), 1)
            reordered = [[m.name for m in shard_of(list(reversed(models)), (index, count))]
                         for index in range(1, count + 1)]
            self.assertEqual([sorted(s) for s in shards], [sorted(s) for s in reordered])


if __name__ == "__main__":
    unittest.main()
