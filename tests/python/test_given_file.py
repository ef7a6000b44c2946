"""A file the user made, proved as it is (prove(onnx=...), `pipeline --onnx`): each test exports a
file the way a user's own script does (torch.onnx.export with input_names, output_names,
dynamic_axes; the dynamo exporter's ONNXProgram.save), then proves it against the model through
the engine this checkout built and real ONNX Runtime. Planted: a file from another checkpoint, a
batch the export left static, inputs reordered and renamed, a hand-edited weight, a file that
reaches outside its folder for its data."""
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest
import warnings

import numpy as np
import onnx
import torch
from onnx import numpy_helper
from torch import nn

import onnxproof

ENGINE = os.environ.get("ONNXPROOF_ENGINE", "onnxproof")


class ConvNet(nn.Module):
    """A convolution with a batch norm the TorchScript exporter folds into it, and a head."""

    def __init__(self, seed=0):
        super().__init__()
        torch.manual_seed(seed)
        self.conv = nn.Conv2d(3, 8, 3, padding=1)
        self.norm = nn.BatchNorm2d(8)
        self.head = nn.Linear(8, 5)
        with torch.no_grad():
            self.norm.running_mean.uniform_(-0.5, 0.5)
            self.norm.running_var.uniform_(0.5, 2.0)
            self.norm.weight.uniform_(0.5, 2.0)

    def forward(self, x):
        return self.head(torch.relu(self.norm(self.conv(x))).mean(dim=(2, 3)))


class TokenPooler(nn.Module):
    """Two integer inputs, as a text classifier takes them."""

    def __init__(self):
        super().__init__()
        torch.manual_seed(1)
        self.embed = nn.Embedding(50, 16)
        self.head = nn.Linear(16, 3)

    def forward(self, input_ids, attention_mask):
        hidden = self.embed(input_ids) * attention_mask.unsqueeze(-1).to(torch.float32)
        return self.head(hidden.sum(1) / attention_mask.sum(1, keepdim=True).clamp(min=1))


class MaskFirst(nn.Module):
    """The same model with its inputs the other way round: the file's order is not the model's."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, attention_mask, input_ids):
        return self.model(input_ids, attention_mask)


TEXT_AXES = {"input_ids": {0: "batch", 1: "sequence"}, "attention_mask": {0: "batch", 1: "sequence"},
             "logits": {0: "batch"}}


def torchscript_export(model, args, path, **options):
    """torch.onnx.export as a user's script calls it (the eval-mode model, TorchScript)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(model.eval(), args, path, dynamo=False, **options)
    model.eval()  # torch.onnx.export puts back the wrapper's mode on every submodule


def digest(path):
    with open(path, "rb") as handle:
        return hashlib.sha256(handle.read()).hexdigest()


class GivenFileProof(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.folder = tempfile.mkdtemp(prefix="onnxproof-given-")
        cls.image = torch.randn(1, 3, 16, 16)
        cls.conv_file = os.path.join(cls.folder, "convnet.onnx")
        torchscript_export(ConvNet(), (cls.image,), cls.conv_file, input_names=["image"], output_names=["logits"],
                           dynamic_axes={"image": {0: "batch"}, "logits": {0: "batch"}})
        cls.ids, cls.mask = torch.randint(0, 50, (2, 7)), torch.ones(2, 7, dtype=torch.int64)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.folder, ignore_errors=True)

    def prove(self, model, args, onnx_file, name, **options):
        return onnxproof.prove(model.eval(), args, onnx=onnx_file, localize=False, quiet=True,
                               out=os.path.join(self.folder, name), **options)

    def codes(self, report, severity):
        return [f.code for f in report.findings if f.severity == severity]

    def test_a_users_torchscript_export_is_proved_as_given_and_shipped_by_its_path(self):
        before = digest(self.conv_file)
        report = self.prove(ConvNet(), (self.image,), self.conv_file, "convnet")
        self.assertEqual(report.verdict, "pass", str(report))
        self.assertEqual(digest(self.conv_file), before)  # never written
        self.assertEqual(report.given_file["sha256"], before)
        self.assertEqual(digest(report.path("model.onnx")), before)  # proved byte for byte
        self.assertEqual([(b["file"], b["model"], b["by"]) for b in report.given_file["inputs"]],
                         [("image", "x", "position")])
        self.assertIn(self.conv_file, report.what_to_do)
        self.assertNotIn("simplify", report.steps)  # a simplified copy would be another file
        # The file's own symbolic batch is the axis proved, at several sizes.
        self.assertGreater(len({row.sizes.get("batch") for row in report.parity}), 2)

    def test_a_file_from_another_checkpoint_fails_naming_the_weights(self):
        report = self.prove(ConvNet(seed=7), (self.image,), self.conv_file, "stale")
        self.assertEqual(report.verdict, "fail", str(report))
        self.assertIn("FILE_WEIGHTS_NOT_FROM_MODEL", self.codes(report, "error"))
        self.assertEqual(report.raw["ship"]["cause"], "FILE_WEIGHTS_NOT_FROM_MODEL")

    def test_a_static_batch_fails_where_the_batch_is_declared_dynamic(self):
        static = os.path.join(self.folder, "static.onnx")
        torchscript_export(ConvNet(), (self.image,), static, input_names=["image"], output_names=["logits"])
        declared = self.prove(ConvNet(), (self.image,), static, "static-declared", dynamic_axes={"x": {0: "batch"}})
        self.assertEqual(declared.verdict, "fail", str(declared))
        self.assertEqual(declared.raw["ship"]["cause"], "FILE_AXIS_FIXED")
        undeclared = self.prove(ConvNet(), (self.image,), static, "static-undeclared")
        self.assertEqual(undeclared.verdict, "pass", str(undeclared))
        self.assertIn("FILE_AXIS_FIXED", self.codes(undeclared, "warning"))  # the model runs other batches

    def test_a_hand_edited_weight_fails_parity(self):
        edited = os.path.join(self.folder, "edited.onnx")
        model = onnx.load(self.conv_file)
        weight = next(t for t in model.graph.initializer if t.name == "head.weight")
        values = numpy_helper.to_array(weight).copy()
        values[0, 0] += 0.5
        weight.CopyFrom(numpy_helper.from_array(values, weight.name))
        onnx.save(model, edited)
        report = onnxproof.prove(ConvNet().eval(), (self.image,), onnx=edited, quiet=True,
                                 out=os.path.join(self.folder, "edited"))
        self.assertEqual(report.verdict, "fail", str(report))
        self.assertIn("PARITY_MISMATCH", self.codes(report, "error"))
        self.assertNotIn("FILE_WEIGHTS_NOT_FROM_MODEL", self.codes(report, "error"))  # one value of 296
        # Localized in the file as given: the module whose weight was edited, by the file's node names.
        located = [f for f in report.findings if f.code == "DIVERGENCE_LOCATED"]
        self.assertTrue(located, str(report))
        self.assertIn("'head'", located[0].message)

    def test_reordered_inputs_bind_by_name_and_an_int32_file_is_fed_the_models_ids(self):
        model = TokenPooler()
        reordered = os.path.join(self.folder, "reordered.onnx")
        torchscript_export(MaskFirst(model), (self.mask, self.ids), reordered,
                           input_names=["attention_mask", "input_ids"], output_names=["logits"], dynamic_axes=TEXT_AXES)
        report = self.prove(model, (self.ids, self.mask), reordered, "reordered", dynamic_axes=TEXT_AXES)
        self.assertEqual(report.verdict, "pass", str(report))
        self.assertEqual([(b["file"], b["by"]) for b in report.given_file["inputs"]],
                         [("attention_mask", "name"), ("input_ids", "name")])
        narrow = os.path.join(self.folder, "int32.onnx")

        class Int32Ids(nn.Module):
            def __init__(self):
                super().__init__()
                self.model = model

            def forward(self, input_ids, attention_mask):
                return self.model(input_ids.long(), attention_mask.long())
        torchscript_export(Int32Ids(), (self.ids.int(), self.mask.int()), narrow,
                           input_names=["input_ids", "attention_mask"], output_names=["logits"], dynamic_axes=TEXT_AXES)
        report = self.prove(model, (self.ids, self.mask), narrow, "int32", dynamic_axes=TEXT_AXES)
        self.assertEqual(report.verdict, "pass", str(report))
        self.assertEqual(report.given_file["inputs"][0].get("cast"), "int32 -> int64")

    def test_names_that_match_nothing_are_one_error_and_bind_settles_them(self):
        model = TokenPooler()
        renamed = os.path.join(self.folder, "renamed.onnx")
        torchscript_export(MaskFirst(model), (self.mask, self.ids), renamed, input_names=["mask", "tokens"],
                           output_names=["logits"])
        with self.assertRaises(onnxproof.UsageError) as raised:
            self.prove(model, (self.ids, self.mask), renamed, "renamed")
        self.assertIn("mask, tokens", str(raised.exception))
        self.assertIn("input_ids, attention_mask", str(raised.exception))
        self.assertIn("bind", str(raised.exception))
        report = self.prove(model, (self.ids, self.mask), renamed, "renamed-bound",
                            bind={"mask": "attention_mask", "tokens": "input_ids"})
        self.assertEqual(report.verdict, "pass", str(report))

    def test_a_dynamo_export_saved_by_the_user_is_proved(self):
        path = os.path.join(self.folder, "dynamo.onnx")
        batch = torch.export.Dim("batch", min=1, max=32)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            torch.onnx.export(ConvNet().eval(), (self.image.repeat(2, 1, 1, 1),), path, dynamo=True,
                              input_names=["image"], output_names=["logits"], dynamic_shapes=({0: batch},))
        report = self.prove(ConvNet(), (self.image.repeat(2, 1, 1, 1),), path, "dynamo")
        self.assertEqual(report.verdict, "pass", str(report))
        self.assertEqual(report.raw["signature"]["exporter"], "file")

    def test_assert_proved_freezes_the_files_golden_set_and_verifies_it_again(self):
        from onnxproof.testing import assert_proved
        golden = os.path.join(self.folder, "golden-convnet")
        first = assert_proved(ConvNet(), (self.image,), onnx=self.conv_file, golden=golden, localize=False,
                              out=os.path.join(self.folder, "golden-1"))
        self.assertEqual(first.steps.get("golden"), "pass")
        self.assertTrue(os.path.isfile(os.path.join(golden, "manifest.json")))
        again = assert_proved(ConvNet(), (self.image,), onnx=self.conv_file, golden=golden, localize=False,
                              out=os.path.join(self.folder, "golden-2"))
        self.assertEqual(again.steps.get("golden"), "pass")
        with self.assertRaises(AssertionError):  # another checkpoint's file against the frozen set
            assert_proved(ConvNet(seed=7), (self.image,), onnx=self.conv_file, golden=golden, localize=False,
                          out=os.path.join(self.folder, "golden-3"))

    def test_options_that_shape_an_export_are_refused_with_a_given_file(self):
        with self.assertRaises(onnxproof.UsageError):
            self.prove(ConvNet(), (self.image,), self.conv_file, "opset", opset=17)
        with self.assertRaises(onnxproof.UsageError):
            self.prove(ConvNet(), (self.image,), os.path.join(self.folder, "missing.onnx"), "missing")


class GivenFileCommandLine(unittest.TestCase):
    """`onnxproof pipeline --model SPEC --onnx FILE`: the exit codes and the lines a user sees."""

    @classmethod
    def setUpClass(cls):
        cls.folder = tempfile.mkdtemp(prefix="onnxproof-given-cli-")
        with open(os.path.join(cls.folder, "models.py"), "w", encoding="utf-8") as handle:
            handle.write("import sys\nsys.path.insert(0, %r)\nfrom test_given_file import ConvNet\n\n"
                         "def convnet():\n    return ConvNet()\n" % os.path.dirname(os.path.abspath(__file__)))
        cls.spec = os.path.join(cls.folder, "models.py") + ":convnet"
        cls.file = os.path.join(cls.folder, "user.onnx")
        torchscript_export(ConvNet(), (torch.randn(1, 3, 16, 16),), cls.file, input_names=["image"],
                           output_names=["logits"], dynamic_axes={"image": {0: "batch"}, "logits": {0: "batch"}})

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.folder, ignore_errors=True)

    def pipeline(self, *arguments, out="run"):
        return subprocess.run([ENGINE, "pipeline", "--model", self.spec, "--out", os.path.join(self.folder, out),
                               "--no-golden", *arguments], capture_output=True, text=True, stdin=subprocess.DEVNULL,
                              timeout=600, check=False)

    def test_the_command_proves_the_file_and_names_it_in_the_ship_line(self):
        done = self.pipeline("--onnx", self.file)
        self.assertEqual(done.returncode, 0, done.stdout + done.stderr)
        self.assertIn(f"ship {self.file}", done.stdout)
        with open(os.path.join(self.folder, "run", "command.json"), encoding="utf-8") as handle:
            self.assertEqual(json.load(handle)["model"]["onnx"], self.file)

    def test_typos_and_export_options_are_usage_errors(self):
        for arguments in (["--onnx", self.file, "--opset", "17"], ["--onnx", self.file + ".missing"],
                          ["--onnx", self.file, "--dynamic", "imag:0=batch"], ["--onnx", self.file, "--bind", "x"]):
            done = self.pipeline(*arguments, out="usage")
            self.assertEqual(done.returncode, 2, (arguments, done.stdout, done.stderr))
            self.assertEqual(len(done.stderr.strip().splitlines()[-1:]), 1)
            self.assertIn("onnxproof: error:", done.stderr)
        self.assertIn("did you mean 'image'", self.pipeline("--onnx", self.file, "--dynamic", "imag:0=batch",
                                                            out="typo").stderr)

    def test_hostile_external_data_is_refused_in_one_line_before_any_read(self):
        # The external-data classes of ONNX's advisories (CVE-2022-25882, CVE-2024-5187, CVE-2024-27318,
        # CVE-2026-27489): absolute, climbing, nested, Windows and UNC locations, a link out of the
        # folder, offsets and lengths past the file's end, a truncated protobuf.
        secret = os.path.join(self.folder, "secret.bin")
        with open(secret, "wb") as handle:
            handle.write(b"S3CRET" * 40)
        cases = {"absolute": (secret, {}), "climbing": ("../secret.bin", {}), "nested": ("a/../../secret.bin", {}),
                 "windows": ("C:\\secret.bin", {}), "unc": ("\\\\host\\share\\w.bin", {}),
                 "link": ("link.bin", {}), "offset": ("w.bin", {"offset": "1000000000"}),
                 "length": ("w.bin", {"length": "1000000000000"}), "negative": ("w.bin", {"offset": "-5"}),
                 "not-a-number": ("w.bin", {"offset": "ten"})}
        for name, (location, entries) in cases.items():
            folder = os.path.join(self.folder, "hostile-" + name)
            os.makedirs(folder)
            model = onnx.load(self.file)
            weight = next(t for t in model.graph.initializer if t.name == "head.weight")
            values = weight.raw_data or numpy_helper.to_array(weight).tobytes()
            with open(os.path.join(folder, "w.bin"), "wb") as handle:
                handle.write(values)
            if name == "link":
                os.symlink(secret, os.path.join(folder, "link.bin"))
            weight.data_location = onnx.TensorProto.EXTERNAL
            del weight.external_data[:]
            weight.external_data.add(key="location", value=location)
            for key, value in entries.items():
                weight.external_data.add(key=key, value=value)
            weight.ClearField("raw_data")
            weight.ClearField("float_data")
            path = os.path.join(folder, "model.onnx")
            with open(path, "wb") as handle:
                handle.write(model.SerializeToString())
            done = self.pipeline("--onnx", path, out="hostile-run-" + name)
            self.assertEqual(done.returncode, 3, (name, done.stdout[-1500:], done.stderr[-1500:]))
            last = done.stderr.strip().splitlines()[-1]
            self.assertTrue(last.startswith("onnxproof: error:") and "refused" in last, (name, last))
            for root, _, files in os.walk(os.path.join(self.folder, "hostile-run-" + name)):
                for file in files:
                    with open(os.path.join(root, file), "rb") as handle:
                        self.assertNotIn(b"S3CRET", handle.read(), (name, file))

    def test_a_file_that_is_no_model_or_reaches_outside_its_folder_is_refused(self):
        corrupt = os.path.join(self.folder, "corrupt.onnx")
        with open(corrupt, "wb") as handle:
            handle.write(b"\x0a\xff\xff\xff\xff\x0fnot a model")
        outside = os.path.join(self.folder, "outside")
        os.makedirs(outside, exist_ok=True)
        model = onnx.load(self.file)
        weight = next(t for t in model.graph.initializer if t.name == "head.weight")
        weight.data_location = onnx.TensorProto.EXTERNAL
        del weight.external_data[:]
        weight.external_data.add(key="location", value="../secret.bin")
        weight.ClearField("raw_data")
        reaching = os.path.join(outside, "reaching.onnx")
        with open(reaching, "wb") as handle:
            handle.write(model.SerializeToString())
        with open(os.path.join(self.folder, "secret.bin"), "wb") as handle:
            handle.write(np.zeros(40, np.float32).tobytes())
        for path in (corrupt, reaching):
            done = self.pipeline("--onnx", path, out="refused")
            self.assertEqual(done.returncode, 3, done.stdout + done.stderr)
            last = done.stderr.strip().splitlines()[-1]
            self.assertTrue(last.startswith("onnxproof: error:"), last)
            self.assertIn(path, last)


if __name__ == "__main__":
    sys.exit(unittest.main())
