"""The generation proof of encoder-decoders (hf: T5/BART/Marian/Whisper with use_cache=true) against
the engine this checkout built ($ONNXPROOF_ENGINE): a real export of encoder.onnx and the decoder,
the runs proved through real ONNX Runtime, and export bugs planted in the exported graphs (as an
exporter would have written them) that must fail at the step they first change. The step each
plant first changes a token is found here independently, by running the planted graphs' greedy
loop in ONNX Runtime's Python API."""
import hashlib
import json
import os
import shutil
import subprocess
import tempfile
import unittest

import numpy as np
import onnx
import onnxruntime
from onnx import helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
ENGINE = os.environ.get("ONNXPROOF_ENGINE", os.path.join(HERE, "..", "..", "build", "bin", "onnxproof"))
STEPS = 8
# init_std=0.2: a random BART whose greedy tokens vary from step to step, so a planted bug changes
# tokens, not only logits.
BART = "hf:BartForConditionalGeneration:use_cache=true,init_std=0.2"


def engine(*arguments):
    done = subprocess.run([ENGINE, *arguments], capture_output=True, text=True, timeout=900)
    return done.returncode, done.stderr


def read_report(out):
    path = os.path.join(out, "report.json")
    if not os.path.exists(path):
        return None
    with open(path, encoding="utf-8") as handle:
        return json.load(handle)


def generate_rows(report):
    return next(step for step in report["steps"] if step["name"] == "generate")["providers"]


def sha256_of(path):
    with open(path, "rb") as handle:
        return hashlib.sha256(handle.read()).hexdigest()


def rewire(graph, old, new):
    """Every node reading `old` reads `new` instead."""
    for node in graph.node:
        node.input[:] = [new if name == old else name for name in node.input]


def cross_cache_from_layer_0(model):
    """Layer 1's cross-attention reads layer 0's keys and values (a wrong feed)."""
    for kind in ("key", "value"):
        rewire(model.graph, f"past_key_values.1.encoder.{kind}", f"past_key_values.0.encoder.{kind}")


def encoder_mask_dropped(model):
    """The decoder's cross-attention attends to the source's padding: its mask is all ones."""
    ones = helper.make_tensor("one", onnx.TensorProto.INT64, [1], [1])
    nodes = [helper.make_node("Shape", ["encoder_attention_mask"], ["planted_mask_shape"]),
             helper.make_node("ConstantOfShape", ["planted_mask_shape"], ["planted_ones"], value=ones)]
    rewire(model.graph, "encoder_attention_mask", "planted_ones")
    nodes[0].input[:] = ["encoder_attention_mask"]
    rest = list(model.graph.node)
    del model.graph.node[:]
    model.graph.node.extend(nodes + rest)


def self_cache_one_short(model):
    """The self-attention cache handed back loses its oldest position: every step after the first
    starts from a past length one short."""
    starts = numpy_helper.from_array(np.array([1], dtype=np.int64), "planted_start")
    ends = numpy_helper.from_array(np.array([2 ** 62], dtype=np.int64), "planted_end")
    axes = numpy_helper.from_array(np.array([2], dtype=np.int64), "planted_axis")
    model.graph.initializer.extend([starts, ends, axes])
    for output in model.graph.output:
        if ".decoder." not in output.name:
            continue
        full = output.name + "_full"
        for node in model.graph.node:
            node.output[:] = [full if name == output.name else name for name in node.output]
        rewire(model.graph, output.name, full)
        model.graph.node.append(helper.make_node("Slice", [full, "planted_start", "planted_end", "planted_axis"],
                                                 [output.name]))


def logits_one_row(model):
    """The logits output keeps the first batch row only: a shape the loop must fail, never read past."""
    starts = numpy_helper.from_array(np.array([0], dtype=np.int64), "planted_row_start")
    ends = numpy_helper.from_array(np.array([1], dtype=np.int64), "planted_row_end")
    axes = numpy_helper.from_array(np.array([0], dtype=np.int64), "planted_row_axis")
    model.graph.initializer.extend([starts, ends, axes])
    for node in model.graph.node:
        node.output[:] = ["logits_full" if name == "logits" else name for name in node.output]
    rewire(model.graph, "logits", "logits_full")
    model.graph.node.append(helper.make_node("Slice", ["logits_full", "planted_row_start", "planted_row_end",
                                                       "planted_row_axis"], ["logits"]))


def first_token_change(folder):
    """(first step whose token differs from the reference's, per run) with the run folder's graphs,
    fed the reference's tokens as the engine feeds them: the planted loop run on its own."""
    reference = os.path.join(folder, "reference", "generation")
    with open(os.path.join(reference, "generation.json"), encoding="utf-8") as handle:
        document = json.load(handle)
    encoder = onnxruntime.InferenceSession(os.path.join(folder, document["encoder"]["model"]))
    decoder = onnxruntime.InferenceSession(os.path.join(folder, "model.onnx"))

    def tensor(run, name):
        return numpy_helper.to_array(onnx.load_tensor(os.path.join(reference, run["folder"], name)))
    changes = []
    for run in document["runs"]:
        inputs = {name: tensor(run, f"encoder_input_{i}.pb") for i, name in enumerate(document["encoder"]["inputs"])}
        encoded = dict(zip(document["encoder"]["outputs"], encoder.run(document["encoder"]["outputs"], inputs)))
        fixed = {name: inputs.get(source, encoded.get(source)) for name, source in document["encoder"]["feeds"].items()}
        past = [tensor(run, f"past_{i}.pb") for i in range(len(document["past"]))]
        ids, tokens, change = tensor(run, "prompt.pb"), tensor(run, "tokens.pb"), None
        for step in range(document["steps"]):
            outputs = decoder.run(["logits", *document["present"]],
                                  {"input_ids": ids, **fixed, **dict(zip(document["past"], past))})
            if change is None and not np.array_equal(outputs[0][:, -1].argmax(-1), tokens[step]):
                change = step
            past, ids = outputs[1:], tokens[step].reshape(-1, 1)
        changes.append(change)
    return changes


def prove_planted(folder, export, name, plant, planted, digest):
    """(exit code, report, stderr, run folder) of the pipeline on a copy of `export`, `plant` applied
    first to its file `planted`, whose sha256 is updated where `digest` (a JSON file, the key of
    the object holding "sha256") records it, as the exporter would have written it."""
    source = os.path.join(folder, name + "-export")
    shutil.copytree(export, source)
    if plant:
        path = os.path.join(source, planted)
        model = onnx.load(path)
        plant(model)
        onnx.save(model, path)
        document_path = os.path.join(source, digest[0])
        with open(document_path, encoding="utf-8") as handle:
            document = json.load(handle)
        document[digest[1]]["sha256"] = sha256_of(path)
        with open(document_path, "w", encoding="utf-8") as handle:
            json.dump(document, handle)
    out = os.path.join(folder, name)
    code, stderr = engine("pipeline", "--from-export", source, "--out", out)
    return code, read_report(out), stderr, out


class Seq2SeqGeneration(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.folder = tempfile.mkdtemp(prefix="onnxproof-seq2seq-")
        cls.export = os.path.join(cls.folder, "export")
        code, stderr = engine("export", "--model", BART, "--generate", str(STEPS), "--exporter", "torchscript",
                              "--samples", "1", "--out", cls.export)
        assert code == 0, stderr

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.folder, ignore_errors=True)

    def prove(self, name, plant=None):
        """(exit code, report, stderr, run folder): `plant` applied to the decoder, model.onnx."""
        return prove_planted(self.folder, self.export, name, plant, "model.onnx", ("export.json", "onnx_model"))

    def test_a_correct_export_gives_identical_tokens_in_every_run(self):
        code, report, stderr, out = self.prove("correct")
        self.assertEqual(code, 0, stderr)
        rows = generate_rows(report)
        self.assertEqual([row["run"] for row in rows], ["batch 2, source 16 tokens, last row padded",
                                                         "batch 1, source 64 tokens"])
        for row in rows:
            self.assertEqual(row["identical_steps"], STEPS)
            self.assertEqual(row["rule"], "calibrated")
            self.assertEqual(len(row["encoder"]), 5)  # the hidden states, then two layers' keys and values
            self.assertTrue(all(output["passed"] for output in row["encoder"]))
        self.assertTrue(os.path.exists(os.path.join(out, "encoder.onnx")))  # --from-export copies it
        with open(os.path.join(out, "report.md"), encoding="utf-8") as handle:
            self.assertIn("cpu, batch 1, source 64 tokens", handle.read())

    def assert_fails_where_it_changes(self, name, plant, failing_runs, first_failure):
        code, report, stderr, out = self.prove(name, plant)
        self.assertEqual(code, 1, stderr)
        rows = [row for row in generate_rows(report) if row["optimization"] != "disabled"]
        self.assertEqual([not row["passed"] for row in rows], failing_runs)
        token_changes = first_token_change(out)
        for row, change in zip(rows, token_changes):
            if row["passed"]:
                continue
            self.assertEqual(row["first_failure"], first_failure)
            self.assertEqual(row["first_token_difference"], change)
        located = [f for f in report["findings"] if f["code"] in ("GENERATION_DIVERGED", "GENERATION_LOGITS_OUTSIDE")]
        self.assertTrue(located, report["findings"])
        self.assertEqual(located[0]["where"], f"generation step {first_failure}")
        return rows, token_changes

    def test_a_cross_attention_cache_from_the_wrong_layer_fails_at_step_0(self):
        _, changes = self.assert_fails_where_it_changes("wrong-layer", cross_cache_from_layer_0, [True, True], 0)
        self.assertIsNotNone(changes[0])  # the tokens change too, not only the logits

    def test_a_dropped_encoder_mask_fails_in_the_padded_run_only(self):
        self.assert_fails_where_it_changes("mask-dropped", encoder_mask_dropped, [True, False], 0)

    def test_a_self_attention_past_one_short_fails_at_step_1(self):
        # Step 0 starts from the empty cache, which the plant cannot shorten: step 1 is the first
        # to read a cache the decoder handed back.
        self.assert_fails_where_it_changes("one-short", self_cache_one_short, [True, True], 1)

    def test_the_golden_set_freezes_the_generation_and_catches_a_drifted_decoder(self):
        code, report, stderr, out = self.prove("golden")
        self.assertEqual(code, 0, stderr)
        golden = os.path.join(out, "golden")
        with open(os.path.join(golden, "manifest.json"), encoding="utf-8") as handle:
            listed = json.load(handle)["files"]
        self.assertIn("generation/generation.json", listed)
        self.assertIn("generation/run_1/tokens.pb", listed)
        drifted = os.path.join(self.folder, "drifted")
        os.makedirs(drifted)
        shutil.copy(os.path.join(out, "encoder.onnx"), drifted)
        model = onnx.load(os.path.join(out, "model.onnx"))
        cross_cache_from_layer_0(model)
        onnx.save(model, os.path.join(drifted, "model.onnx"))
        done = subprocess.run([ENGINE, "golden", "verify", os.path.join(drifted, "model.onnx"), "--golden", golden],
                              capture_output=True, text=True, timeout=600)
        self.assertEqual(done.returncode, 1, done.stderr + done.stdout)
        self.assertIn("against the golden generation", done.stdout + done.stderr)
        # The correct decoder verifies against the same set.
        done = subprocess.run([ENGINE, "golden", "verify", os.path.join(out, "model.onnx"), "--golden", golden],
                              capture_output=True, text=True, timeout=600)
        self.assertEqual(done.returncode, 0, done.stderr + done.stdout)
        # A file slipped into the frozen generation is refused before anything is read.
        planted = os.path.join(self.folder, "planted-golden")
        shutil.copytree(golden, planted)
        with open(os.path.join(planted, "generation", "run_0", "extra.pb"), "wb") as handle:
            handle.write(b"\0")
        done = subprocess.run([ENGINE, "golden", "verify", os.path.join(out, "model.onnx"), "--golden", planted],
                              capture_output=True, text=True, timeout=600)
        self.assertEqual(done.returncode, 3, done.stderr + done.stdout)
        self.assertIn("generation/run_0/extra.pb is in the folder but not in the manifest", done.stderr)

    def test_logits_of_another_shape_fail_the_batched_run(self):
        code, report, stderr, _ = self.prove("one-row", logits_one_row)
        self.assertEqual(code, 1, stderr)
        rows = [row for row in generate_rows(report) if row["optimization"] != "disabled"]
        self.assertEqual([row["passed"] for row in rows], [False, True])  # batch 2 fails, batch 1 has one row
        self.assertEqual(rows[0]["first_failure"], 0)
        located = [f for f in report["findings"] if f["code"] == "GENERATION_DIVERGED"]
        self.assertIn("another shape", located[0]["message"])

    def test_an_encoder_changed_since_the_export_is_refused(self):
        source = os.path.join(self.folder, "changed-export")
        shutil.copytree(self.export, source)
        with open(os.path.join(source, "encoder.onnx"), "ab") as handle:
            handle.write(b"\0")
        code, stderr = engine("pipeline", "--from-export", source, "--out", os.path.join(self.folder, "changed"))
        self.assertEqual(code, 3, stderr)
        self.assertIn("encoder.onnx changed since it was exported", stderr)


def stale_cross_cache_handed_back(model):
    """The merged decoder's no-cache branch hands back the cross-attention cache it was fed (a stale
    one) instead of the one it computed: its own step is right, every step after reads stale keys."""
    branch = next(attribute.g for attribute in model.graph.node[0].attribute if attribute.name == "else_branch")
    for node in branch.node:
        for output in node.output:
            if ".encoder." in output and output.startswith("no_cache/output/present."):
                node.input[0] = output.removeprefix("no_cache/output/").replace("present.", "past_key_values.", 1)


class MergedDecoder(unittest.TestCase):
    """--merged-decoder: decoder_merged.onnx, one file with a use_cache_branch input; step 0 runs its
    no-cache branch fed a stale cross-attention cache, every later step its cache branch."""

    @classmethod
    def setUpClass(cls):
        cls.folder = tempfile.mkdtemp(prefix="onnxproof-merged-")
        cls.export = os.path.join(cls.folder, "export")
        code, stderr = engine("export", "--model", BART, "--generate", str(STEPS), "--exporter", "torchscript",
                              "--merged-decoder", "--samples", "1", "--out", cls.export)
        assert code == 0, stderr

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.folder, ignore_errors=True)

    def prove(self, name, plant=None):
        """(exit code, report, stderr, run folder): `plant` applied to decoder_merged.onnx."""
        return prove_planted(self.folder, self.export, name, plant, "decoder_merged.onnx",
                             (os.path.join("reference", "generation", "generation.json"), "merged"))

    def test_both_branches_pass_with_identical_tokens(self):
        code, report, stderr, _ = self.prove("correct")
        self.assertEqual(code, 0, stderr)
        merged = [row for row in generate_rows(report) if row["run"].endswith("decoder_merged.onnx")]
        self.assertEqual(len(merged), 2)
        self.assertTrue(all(row["identical_steps"] == STEPS for row in merged), merged)
        model = onnx.load(os.path.join(self.export, "decoder_merged.onnx"))
        self.assertEqual([node.op_type for node in model.graph.node], ["If"])
        self.assertIn("use_cache_branch", [value.name for value in model.graph.input])
        # Weights both branches read are stored once: the merged file is about one decoder's size.
        self.assertLess(os.path.getsize(os.path.join(self.export, "decoder_merged.onnx")),
                        1.3 * os.path.getsize(os.path.join(self.export, "model.onnx")))

    def test_a_no_cache_branch_handing_back_a_stale_cache_fails_at_step_1(self):
        code, report, stderr, _ = self.prove("stale", stale_cross_cache_handed_back)
        self.assertEqual(code, 1, stderr)
        rows = [row for row in generate_rows(report) if row["optimization"] != "disabled"]
        self.assertTrue(all(row["passed"] for row in rows if not row["run"].endswith("decoder_merged.onnx")))
        merged = [row for row in rows if row["run"].endswith("decoder_merged.onnx")]
        self.assertEqual([row["first_failure"] for row in merged], [1, 1])


class ProveAnEncoderDecoder(unittest.TestCase):
    """prove(model, args, generate=N) on a transformers encoder-decoder object (a fine-tuned one in
    practice): the request in args is proved first, padded row and all."""

    def test_the_users_request_is_the_first_run(self):
        import torch
        import transformers
        import onnxproof
        torch.manual_seed(0)
        config = transformers.MarianConfig(vocab_size=500, d_model=64, encoder_layers=2, decoder_layers=2,
                                           encoder_attention_heads=4, decoder_attention_heads=4, encoder_ffn_dim=128,
                                           decoder_ffn_dim=128, max_position_embeddings=128, pad_token_id=499,
                                           decoder_start_token_id=499)
        model = transformers.MarianMTModel(config).eval()
        ids = torch.randint(0, 499, (3, 12), generator=torch.Generator().manual_seed(1))
        mask = torch.ones_like(ids)
        mask[2, 8:], ids[2, 8:] = 0, 499
        folder = tempfile.mkdtemp(prefix="onnxproof-prove-seq2seq-")
        self.addCleanup(shutil.rmtree, folder, True)
        report = onnxproof.prove(model, (ids, mask), generate=STEPS, exporter="torchscript",
                                 out=os.path.join(folder, "run"), quiet=True, samples=1)
        self.assertTrue(report.passed, str(report))
        rows = report.generation["providers"]
        self.assertEqual(rows[0]["run"], "your request: batch 3, source 12 tokens")
        self.assertTrue(rows[0]["padded"])
        self.assertTrue(all(row["identical_steps"] == STEPS for row in rows))
        recorded = numpy_helper.to_array(onnx.load_tensor(report.path("reference/generation/run_0/encoder_input_0.pb")))
        self.assertEqual(recorded.tolist(), ids.tolist())


class Seq2SeqFamilies(unittest.TestCase):
    """Whisper: audio features in, no source mask; proved by generation like the text models. The
    sizes declared with --sweep are the runs'."""

    def test_without_generate_the_encoder_ships_and_the_report_says_it_is_not_proved(self):
        folder = tempfile.mkdtemp(prefix="onnxproof-marian-")
        self.addCleanup(shutil.rmtree, folder, True)
        out = os.path.join(folder, "export")
        code, stderr = engine("export", "--model", "hf:MarianMTModel:use_cache=true", "--exporter", "torchscript",
                              "--samples", "1", "--out", out)
        self.assertEqual(code, 0, stderr)
        self.assertTrue(os.path.exists(os.path.join(out, "encoder.onnx")))
        with open(os.path.join(out, "export.json"), encoding="utf-8") as handle:
            codes = [entry["code"] for entry in json.load(handle)["findings"]]
        self.assertIn("ENCODER_NOT_PROVED", codes)

    def test_merged_decoder_on_a_decoder_only_model_is_a_usage_error(self):
        folder = tempfile.mkdtemp(prefix="onnxproof-gpt2-")
        self.addCleanup(shutil.rmtree, folder, True)
        code, stderr = engine("export", "--model", "hf:GPT2LMHeadModel:use_cache=true", "--generate", "2",
                              "--merged-decoder", "--out", os.path.join(folder, "export"))
        self.assertEqual(code, 2, stderr)
        self.assertIn("--merged-decoder merges an encoder-decoder's decoder steps", stderr)

    def test_swept_batches_and_source_lengths_are_the_runs(self):
        folder = tempfile.mkdtemp(prefix="onnxproof-t5-")
        self.addCleanup(shutil.rmtree, folder, True)
        out = os.path.join(folder, "run")
        code, stderr = engine("pipeline", "--model", "hf:T5ForConditionalGeneration:use_cache=true", "--generate", "4",
                              "--exporter", "torchscript", "--samples", "1", "--sweep", "batch=1,3",
                              "--sweep", "encoder_sequence=5,20", "--out", out)
        self.assertEqual(code, 0, stderr)
        self.assertEqual([row["run"] for row in generate_rows(read_report(out))],
                         ["batch 1, source 5 tokens", "batch 1, source 20 tokens",
                          "batch 3, source 5 tokens, last row padded", "batch 3, source 20 tokens, last row padded"])

    def test_whisper_passes_with_identical_tokens(self):
        folder = tempfile.mkdtemp(prefix="onnxproof-whisper-")
        self.addCleanup(shutil.rmtree, folder, True)
        out = os.path.join(folder, "run")
        code, stderr = engine("pipeline", "--model", "hf:WhisperForConditionalGeneration:use_cache=true",
                              "--generate", str(STEPS), "--exporter", "torchscript", "--samples", "1", "--out", out)
        self.assertEqual(code, 0, stderr)
        rows = generate_rows(read_report(out))
        self.assertEqual([row["run"] for row in rows], ["batch 2, 128 audio frames", "batch 1, 128 audio frames"])
        self.assertTrue(all(row["identical_steps"] == STEPS for row in rows))
        decoder = onnx.load(os.path.join(out, "model.onnx"))
        self.assertNotIn("encoder_attention_mask", [value.name for value in decoder.graph.input])


if __name__ == "__main__":
    unittest.main()
