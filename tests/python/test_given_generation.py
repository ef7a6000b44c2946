"""Generation files the user made, proved as they are (`pipeline --onnx FOLDER`, prove(onnx=FOLDER)):
a small GPT-2 of this test's own exported by transformers' own exporter
(`OnnxExporter.export_for_generation`, a prefill.onnx and decode.onnx pair with export.json),
proved by generation against the model through the engine this checkout built and real ONNX
Runtime: step 0 through the prefill file, every later step through the decode file. Planted: a
prefill file whose weights were edited (the decode file untouched), a folder of files no layout
fits, and a decoder file given alone, which is proved by its own parity."""
import hashlib
import os
import shutil
import subprocess
import tempfile
import unittest
import warnings

import numpy as np
import onnx
import torch
from onnx import numpy_helper

import onnxproof

ENGINE = os.environ.get("ONNXPROOF_ENGINE", "onnxproof")
CONFIG = dict(vocab_size=300, n_embd=32, n_layer=2, n_head=4, n_positions=64)


def small_gpt2(seed=0):
    from transformers import GPT2Config, GPT2LMHeadModel
    torch.manual_seed(seed)
    return GPT2LMHeadModel(GPT2Config(**CONFIG)).eval()


def export_for_generation(model, folder):
    """transformers' own exporter, as a user's script calls it: prefill.onnx and decode.onnx."""
    from transformers.exporters import OnnxConfig, OnnxExporter
    ids = torch.randint(0, CONFIG["vocab_size"], (1, 8), generator=torch.Generator().manual_seed(1))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        OnnxExporter().export_for_generation(model, {"input_ids": ids, "attention_mask": torch.ones_like(ids)},
                                             OnnxConfig(dynamic=True)).save_pretrained(folder)


def digests(folder):
    return {name: hashlib.sha256(open(os.path.join(folder, name), "rb").read()).hexdigest()
            for name in sorted(os.listdir(folder))}


class GivenGenerationFolder(unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        cls.folder = tempfile.mkdtemp(prefix="onnxproof-given-generation-")
        cls.model = small_gpt2()
        cls.model.save_pretrained(os.path.join(cls.folder, "checkpoint"))
        with open(os.path.join(cls.folder, "models.py"), "w", encoding="utf-8") as handle:
            handle.write("from transformers import GPT2LMHeadModel\n\ndef gpt2():\n"
                         f"    return GPT2LMHeadModel.from_pretrained({os.path.join(cls.folder, 'checkpoint')!r}).eval()\n")
        cls.spec = os.path.join(cls.folder, "models.py") + ":gpt2"
        cls.export = os.path.join(cls.folder, "export")
        export_for_generation(cls.model, cls.export)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.folder, ignore_errors=True)

    def pipeline(self, *arguments, out):
        return subprocess.run([ENGINE, "pipeline", "--model", self.spec, "--out", os.path.join(self.folder, out),
                               "--no-golden", *arguments], capture_output=True, text=True, stdin=subprocess.DEVNULL,
                              timeout=600, check=False)

    def test_the_pair_is_proved_by_generation_and_the_folder_is_what_ships(self):
        before = digests(self.export)
        done = self.pipeline("--onnx", self.export, "--generate", "6", out="pair")
        self.assertEqual(done.returncode, 0, done.stdout[-3000:] + done.stderr[-3000:])
        self.assertIn(f"ship {self.export} (the folder proved, as given)", done.stdout)
        self.assertEqual(digests(self.export), before)  # the user's files are never written
        run = os.path.join(self.folder, "pair")
        self.assertTrue(os.path.isfile(os.path.join(run, "components", "prefill.onnx")))
        report = onnxproof.read_report(run)
        self.assertEqual(report.steps["generate"], "pass", report.generation)
        self.assertEqual(report.generation["steps"], 6)
        self.assertEqual(report.given_file["folder"], self.export)
        fixed = [f for f in report.findings if f.code == "FILE_AXIS_FIXED"]
        self.assertEqual(len(fixed), 1, [f.message for f in fixed])  # batch 1, said once for the inputs fixed together

    def test_a_prefill_file_with_an_edited_weight_fails_the_generation(self):
        planted = os.path.join(self.folder, "edited")
        shutil.copytree(self.export, planted)
        path = os.path.join(planted, "prefill.onnx")
        model = onnx.load(path)  # its weights with it, then written back inside the file
        name = next(t.name for t in model.graph.initializer if t.name.endswith("mlp.c_fc.weight"))
        weight = next(t for t in model.graph.initializer if t.name == name)
        values = numpy_helper.to_array(weight).copy()
        values *= 1.5
        weight.CopyFrom(numpy_helper.from_array(values, name))
        os.remove(path + ".data")
        onnx.save(model, path)
        done = self.pipeline("--onnx", planted, "--generate", "6", out="edited-run")
        self.assertEqual(done.returncode, 1, done.stdout[-3000:] + done.stderr[-3000:])
        report = onnxproof.read_report(os.path.join(self.folder, "edited-run"))
        self.assertEqual(report.steps["generate"], "fail", report.generation)
        self.assertEqual(report.steps["parity"], "pass")  # the decode file is the model's: only step 0 differs

    def test_the_decode_file_alone_is_proved_by_its_own_parity(self):
        done = self.pipeline("--onnx", os.path.join(self.export, "decode.onnx"), out="decode-alone")
        self.assertEqual(done.returncode, 0, done.stdout[-3000:] + done.stderr[-3000:])
        report = onnxproof.read_report(os.path.join(self.folder, "decode-alone"))
        self.assertEqual(report.steps["parity"], "pass")
        self.assertNotIn("generate", report.steps)  # no --generate, no prefill: the steps are not looped

    def test_a_folder_no_layout_fits_is_one_usage_error(self):
        odd = os.path.join(self.folder, "odd")
        os.makedirs(odd)
        for name in ("a.onnx", "b.onnx"):
            shutil.copyfile(os.path.join(self.export, "decode.onnx"), os.path.join(odd, name))
        done = self.pipeline("--onnx", odd, out="odd-run")
        self.assertEqual(done.returncode, 2, done.stdout[-2000:] + done.stderr[-2000:])
        self.assertIn("no generation layout fits its files (a.onnx, b.onnx)", done.stderr)
        self.assertFalse(os.path.exists(os.path.join(self.folder, "odd-run", "report.json")))

    def test_prove_takes_the_folder(self):
        report = onnxproof.prove(self.model, onnx=self.export, generate=4, out=os.path.join(self.folder, "api"),
                                 quiet=True)
        self.assertEqual(report.verdict, "pass", str(report))
        self.assertEqual(report.steps["generate"], "pass")


if __name__ == "__main__":
    unittest.main()
