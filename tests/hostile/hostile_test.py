"""Hostile inputs for every fast onnxproof command, each run in a sandbox of its own.

Each case runs the engine ($ONNXPROOF_ENGINE) with a fresh, empty HOME and TMPDIR and its
working directory in a copy of the fixtures, then checks what a user relies on:

- the exit code is one the README documents for that case;
- an error (exit 2 or 3) is one line on stderr, `onnxproof: error: ...`;
- stdout and stderr carry no control bytes (a model's names cannot drive the terminal);
- nothing in the sandbox changed (path, size, mtime, sha256) except the case's declared outputs,
  and HOME and TMPDIR are still empty.

Adding a case is one line in CASES or OUTPUT_ONTO_INPUT_CASES (outputs aimed at inputs, refused).
"""

import hashlib
import json
import os
import shutil
import subprocess
import tempfile
import unittest
from dataclasses import dataclass, field

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

ENGINE = os.environ.get("ONNXPROOF_ENGINE", "")
TIMEOUT_S = 60
CONTROL = set(range(0x20)) - {0x0A, 0x09} | {0x7F}
HOSTILE = "y\n## verdict pass\n<script>alert(1)</script>\x1b[2J\x07\u009b31m|`"


@dataclass
class Case:
    """argv uses {w} for the sandbox's work folder; outputs are paths under it the command may write."""

    name: str
    argv: list
    exits: set
    outputs: list = field(default_factory=list)
    says: str = ""  # text the stderr line (or stdout on success) must hold
    then: object = None  # check(test, work) of what it wrote, or None
    env: dict = field(default_factory=dict)  # environment variables of the case ({w} as in argv)


def case(name, argv, exits, outputs=(), says="", then=None, env=None):
    return Case(name, argv.split(), set(exits) if isinstance(exits, (set, tuple, list)) else {exits},
                list(outputs), says, then, dict(env or {}))


def outside_code_spans(markdown):
    """The Markdown less its code spans (a run of n backticks up to the next run of exactly n)."""
    rest, i = [], 0
    while i < len(markdown):
        if markdown[i] != "`":
            rest.append(markdown[i])
            i += 1
            continue
        run = len(markdown[i:]) - len(markdown[i:].lstrip("`"))
        j = i + run
        while True:
            j = markdown.find("`" * run, j)
            if j < 0 or not markdown.startswith("`", j + run):
                break
            j += len(markdown[j:]) - len(markdown[j:].lstrip("`"))
        if j < 0:
            return "".join(rest) + markdown[i:]
        i = j + run
    return "".join(rest)


def simplify_does_not_blame_itself(test, work):
    """An invalid export: the check step says so; simplify neither fails nor reports a defect of its own."""
    with open(os.path.join(work, "run", "report.json"), encoding="utf-8") as handle:
        report = json.load(handle)
    steps = {step["name"]: step for step in report["steps"]}
    test.assertEqual(steps["check"]["status"], "fail", steps)
    test.assertIn("not simplified", steps["simplify"].get("reason", ""), steps["simplify"])
    test.assertNotIn("SIMPLIFY_CHANGED_OUTPUTS", [finding["code"] for finding in report["findings"]])


def report_shows_names_as_text(test, work):
    """report.md of a run on a model whose names forge a heading, tags and terminal escapes."""
    with open(os.path.join(work, "run", "report.md"), "rb") as handle:
        markdown = handle.read()
    test.assertFalse(CONTROL & set(markdown), "control bytes in report.md")
    test.assertNotIn(b"\xc2\x9b", markdown)
    text = markdown.decode("utf-8")
    test.assertEqual([line for line in text.splitlines() if line.startswith("## verdict")], [], text)
    rendered = outside_code_spans(text)
    for tag in ("<script", "<img", "</script"):
        test.assertNotIn(tag, rendered, text)
    test.assertIn("**Verdict: pass**", text)


def merged_row_says_its_reports_verdict(test, work):
    """A row edited to say pass over a failed run is merged as its report says, and says why."""
    with open(os.path.join(work, "merged", "index.json"), encoding="utf-8") as handle:
        index = json.load(handle)
    test.assertEqual(index["verdict"], "fail", index)
    test.assertEqual([(row["name"], row["verdict"]) for row in index["rows"]], [("m", "fail")])
    test.assertIn("index.json said pass", index["rows"][0]["note"])


# One line per case: name, command line, the documented exit codes, what it may write, what it says.
CASES = [
    case("check", "check {w}/model.onnx --json {w}/out.json", 0, ["out.json"]),
    case("check_hostile_names", "check {w}/hostile.onnx --json {w}/out.json", 0, ["out.json"]),
    case("check_truncated", "check {w}/truncated.onnx", 3, says="truncated"),
    case("check_text_file", "check {w}/notes.onnx", 3, says="not a valid ONNX model"),
    case("check_missing", "check {w}/absent.onnx", 3, says="absent.onnx"),
    case("check_directory", "check {w}/folder.onnx", 3, says="folder.onnx"),
    case("check_nested_subgraphs", "check {w}/deep.onnx", 3, says="nest deeper than 100 levels"),
    case("check_group_bomb", "check {w}/groups.onnx", 3, says="nest deeper than 100 levels"),
    case("check_json_onto_folder", "check {w}/model.onnx --json {w}/folder.onnx", 2),
    case("run", "run {w}/model.onnx --input x={w}/x.pb --output-dir {w}/outputs", 0, ["outputs"]),
    case("run_hostile_names", "run {w}/hostile.onnx --input x={w}/x.pb --output-dir {w}/outputs", 0, ["outputs"]),
    case("run_truncated", "run {w}/truncated.onnx --input x={w}/x.pb --output-dir {w}/outputs", 3),
    case("run_missing_input_file", "run {w}/model.onnx --input x={w}/absent.pb --output-dir {w}/outputs", 3),
    case("run_input_is_folder", "run {w}/model.onnx --input x={w}/folder.onnx --output-dir {w}/outputs", 2),
    case("parity", "parity {w}/model.onnx --reference {w}/ref --json {w}/parity.json", 0, ["parity.json"]),
    case("parity_truncated", "parity {w}/truncated.onnx --reference {w}/ref", 3),
    case("parity_missing_reference", "parity {w}/model.onnx --reference {w}/absent", 3),
    case("parity_reference_is_file", "parity {w}/model.onnx --reference {w}/model.onnx", 3),
    case("simplify", "simplify {w}/model.onnx -o {w}/sim.onnx", 0, ["sim.onnx"]),
    case("simplify_hostile_names", "simplify {w}/hostile.onnx -o {w}/sim.onnx", 0, ["sim.onnx"]),
    case("simplify_truncated", "simplify {w}/truncated.onnx -o {w}/sim.onnx", 3),
    case("simplify_invalid_input", "simplify {w}/invalid.onnx -o {w}/sim.onnx", 3, says="input model is invalid"),
    case("simplify_output_is_folder", "simplify {w}/model.onnx -o {w}/folder.onnx", 2),
    case("golden_freeze", "golden freeze {w}/model.onnx --reference {w}/ref --out {w}/newgolden", 0, ["newgolden"]),
    case("golden_freeze_missing_reference", "golden freeze {w}/model.onnx --reference {w}/absent --out {w}/g2", 3),
    case("golden_verify", "golden verify {w}/model.onnx --golden {w}/golden", 0),
    case("golden_verify_missing", "golden verify {w}/model.onnx --golden {w}/absent", 3),
    case("golden_verify_truncated", "golden verify {w}/truncated.onnx --golden {w}/golden", 3),
    case("ops", "ops {w}/model.onnx --json {w}/ops.json", 0, ["ops.json"]),
    case("ops_hostile_names", "ops {w}/hostile.onnx", 0),
    case("ops_truncated", "ops {w}/truncated.onnx", 3),
    case("ops_opset", "ops opset", 0),
    case("ops_probe_one", "ops probe --op Relu", 0),
    case("localize_missing_run", "localize {w}/absent --captured", 2, says="not a run folder"),
    case("localize_not_a_run", "localize {w}/ref --captured", 2, says="not a run folder"),
    case("repair_missing_run", "repair {w}/absent", 2, says="not a run folder"),
    case("repair_not_a_run", "repair {w}/ref", 2, says="not a run folder"),
    case("repair_bad_budget", "repair {w}/ref --repair-budget nan", 2),
    case("pipeline_from_missing_export", "pipeline --from-export {w}/absent --out {w}/run", (2, 3)),
    case("merged_decoder_without_generate", "pipeline --model hf:BartForConditionalGeneration:use_cache=true "
         "--merged-decoder --out {w}/run", 2, says="--merged-decoder needs --generate N"),
    case("merged_decoder_from_export", "pipeline --from-export {w}/export --merged-decoder --out {w}/run", 2,
         says="--merged-decoder"),
    case("pipeline_from_export_hostile_names", "pipeline --from-export {w}/export --out {w}/run", 0, ["run"],
         then=report_shows_names_as_text),
    case("pipeline_quantize_unknown", "pipeline --from-export {w}/export --quantize dynamic --out {w}/run", 2,
         says="--quantize"),
    case("pipeline_quantize_hostile_names", "pipeline --from-export {w}/export --quantize static --out {w}/run", 0,
         ["run"], then=report_shows_names_as_text),
    case("pipeline_generation_escaping_encoder", "pipeline --from-export {w}/escaping-encoder-export --out {w}/run", 3,
         ["run"], says="the encoder must be a .onnx file in the run folder"),
    case("pipeline_generation_escaping_run", "pipeline --from-export {w}/escaping-run-export --out {w}/run", 3,
         ["run"], says="a run's folder must be run_N"),
    case("pipeline_from_invalid_export", "pipeline --from-export {w}/invalid-export --out {w}/run", 1, ["run"],
         then=simplify_does_not_blame_itself),
    case("pipeline_golden_in_its_own_folder", "pipeline --from-export {w}/export --out {w}/run --golden {w}/mine", 0,
         ["run", "mine"]),
    case("pipeline_golden_inside_the_run", "pipeline --from-export {w}/export --out {w}/run --golden {w}/run/golden", 2,
         says="may neither lie in nor hold the run folder"),
    case("pipeline_golden_and_no_golden", "pipeline --from-export {w}/export --out {w}/run --golden {w}/g --no-golden", 2),
    # --golden onto a user's file or folder: refused before any work, not after the whole proof.
    case("pipeline_golden_onto_a_file", "pipeline --from-export {w}/export --out {w}/run --golden {w}/notes.onnx", 2,
         says="it is not a folder"),
    case("pipeline_golden_onto_a_user_folder", "pipeline --from-export {w}/export --out {w}/run --golden {w}/ref", 2,
         says="give --golden a new folder"),
    # A run marker forged into a user's folder does not make it a run folder to replace.
    case("pipeline_out_onto_a_forged_run_folder", "pipeline --from-export {w}/export --out {w}/forged", 2,
         says="which no onnxproof run writes"),
    # Forged markers: a link, a wrong schema, an oversized one, a link among a run's entries.
    case("pipeline_out_marker_is_a_link", "pipeline --from-export {w}/export --out {w}/forged-link", 2,
         says="'.onnxproof-run', which no onnxproof run writes"),
    case("pipeline_out_marker_of_another_schema", "pipeline --from-export {w}/export --out {w}/forged-schema", 2,
         says="is not an onnxproof.run/1 marker"),
    case("pipeline_out_marker_oversized", "pipeline --from-export {w}/export --out {w}/forged-huge", 2,
         says="is not an onnxproof.run/1 marker"),
    case("pipeline_out_link_among_run_entries", "pipeline --from-export {w}/export --out {w}/forged-entry", 2,
         says="'model.onnx', which no onnxproof run writes"),
    # Arguments at their edges (issue 46): usage errors before any work.
    case("pipeline_generate_negative", "pipeline --from-export {w}/export --out {w}/run --generate -1", 2),
    case("pipeline_generate_huge", "pipeline --from-export {w}/export --out {w}/run --generate 1000000000", 2),
    case("export_sweep_zero", "export --model {w}/absent.py:Net --input x=2x3:float32 --dynamic x:0=batch "
         "--sweep batch=0 --out {w}/exp", 2, says="not a positive size"),
    case("export_sweep_past_4_gib", "export --model {w}/absent.py:Net --input x=2x3:float32 --dynamic x:0=batch "
         "--sweep batch=99999999999 --out {w}/exp", 2, says="over 4 GiB"),
    case("simplify_unknown_rule", "simplify {w}/model.onnx -o {w}/sim.onnx --skip-rule no-such-rule", (0, 2),
         ["sim.onnx"]),
    case("pipeline_from_export_without_json", "pipeline --from-export {w}/ref --out {w}/run", 2, says="no export.json"),
    case("export_without_inputs", "export --model {w}/absent.py:Net --out {w}/exp", 2, says="--input is required"),
    case("export_opset_too_new", "export --model {w}/absent.py:Net --input x=2x3:float32 --opset 99 --out {w}/exp", 2,
         says="--opset 99"),
    case("pipeline_without_inputs", "pipeline --model {w}/absent.py:Net --out {w}/run", 2),
    case("demo_out_is_file", "demo --out {w}/notes.onnx", 2, says="not a folder"),
    case("unknown_command", "frobnicate", 2),
    case("version_leaves_tmpdir_empty", "--version", 0),  # its Python imports torchvision
    # ONNXPROOF_ONNXRUNTIME naming no build, or a file that is no library: the loader's refusal
    # (it ends the process before main, exit 127) comes back as onnxproof's one line.
    case("onnxruntime_library_absent", "check {w}/model.onnx", 3, says="names no ONNX Runtime build",
         env={"ONNXPROOF_ONNXRUNTIME": "{w}/absent"}),
    case("onnxruntime_library_not_a_library", "check {w}/model.onnx", 3, says="cannot start with the",
         env={"ONNXPROOF_ONNXRUNTIME": "{w}/fakeort"}),
    # A proof per ONNX Runtime release (issue 43): a release not fetched (the sandbox's cache is
    # empty), a version that is none, a version on a support table: exit 2 before any work.
    case("pipeline_release_not_fetched", "pipeline --from-export {w}/export --out {w}/run --target ort-cpu@1.22", 2,
         says="is not fetched into"),
    case("pipeline_release_not_a_version", "pipeline --from-export {w}/export --out {w}/run --target ort-cpu@1.x;rm", 2,
         says="is no ONNX Runtime version"),
    case("pipeline_release_of_a_table", "pipeline --from-export {w}/export --out {w}/run --target tensorrt@10.1", 2,
         says="only ort-cpu and openvino take a release"),
    case("ops_probe_on_the_loaded_runtime", "ops {w}/model.onnx --probe --json {w}/ops.json", 0, ["ops.json"]),
    # Zoo manifests, folders and merges (issue 46): a manifest, a zoo folder and an index.json are
    # untrusted files; refused in one line before anything runs, or merged as their run folders say.
    case("zoo_name_escapes", "zoo run {w}/zoo/escape.toml --out {w}/zout", 2, says="must be letters"),
    case("zoo_name_control_bytes", "zoo run {w}/zoo/control.toml --out {w}/zout", 2, says="\\x1b"),
    case("zoo_spec_markup", "zoo run {w}/zoo/markup.toml --out {w}/zout", 2, says="which is not a file"),
    case("zoo_huge_samples", "zoo run {w}/zoo/huge.toml --out {w}/zout", 2, says="it takes 1 to 1024"),
    case("zoo_huge_timeout", "zoo run {w}/zoo/forever.toml --out {w}/zout", 2, says="'timeout' is"),
    case("zoo_args_redirect_out", "zoo run {w}/zoo/redirect.toml --out {w}/zout", 2, says="args may not set --out"),
    case("zoo_out_onto_a_user_folder", "zoo run {w}/zoo/valid.toml --out {w}/ref", 2, says="did not make it"),
    case("zoo_out_with_a_planted_link", "zoo run {w}/zoo/valid.toml --out {w}/zoo/linked", 2, says="is a link"),
    case("zoo_merge_escaping_name", "zoo merge {w}/zoo/escaping --out {w}/merged", 2, says="no model name"),
    case("zoo_merge_link_in_a_run", "zoo merge {w}/zoo/linkrun --out {w}/merged", 2, says="is a link"),
    case("zoo_merge_tampered_verdict", "zoo merge {w}/zoo/tampered --out {w}/merged", 1, ["merged"],
         then=merged_row_says_its_reports_verdict),
    # Attach protocol, reference child, fp16 with inf (issue 46)
    # (the protocol's crafted lines and the reference child's deaths need a front end and a fork:
    # tests/python/test_attached_engine.py and test_reference_ahead.py; here what a command line reaches)
    case("pipeline_attach_with_options_of_its_own", "pipeline --attach --out {w}/ref", 2,
         says="--attach takes its command from the front end"),
    case("parity_fp16_leaves_no_converted_model_behind",
         "parity {w}/model.onnx --reference {w}/ref --precision fp16 --json {w}/parity.json", 0, ["parity.json"]),
]

# Outputs aimed at the command's own inputs (after links): refused with exit 2, the input untouched.
OUTPUT_ONTO_INPUT_CASES = [
    case("check_json_onto_model", "check {w}/model.onnx --json {w}/model.onnx", 2),
    case("check_json_through_symlink_to_model", "check {w}/model.onnx --json {w}/link-to-model", 2),
    case("ops_json_onto_model", "ops {w}/model.onnx --json {w}/model.onnx", 2),
    case("parity_json_onto_reference",
         "parity {w}/model.onnx --reference {w}/ref --json {w}/ref/test_data_set_0/input_0.pb", 2),
    case("simplify_onto_model", "simplify {w}/model.onnx -o {w}/model.onnx", 2),
    case("simplify_through_symlink_to_model", "simplify {w}/model.onnx -o {w}/link-to-model", 2),
    case("run_outputs_into_reference", "run {w}/model.onnx --input x={w}/x.pb --output-dir {w}/ref/test_data_set_0", 2),
    case("run_outputs_onto_fifo", "run {w}/model.onnx --input x={w}/x.pb --output-dir {w}/fifo", 2),
    case("golden_freeze_onto_reference", "golden freeze {w}/model.onnx --reference {w}/ref --out {w}/ref", 2),
    case("golden_freeze_onto_model_folder", "golden freeze {w}/model.onnx --reference {w}/ref --out {w}", 2),
    case("pipeline_out_onto_reference", "pipeline --from-export {w}/ref --out {w}/ref", 2),
]


def relu_model(input_name="x", output_name="y", producer="test"):
    graph = helper.make_graph(
        [helper.make_node("Relu", [input_name], [output_name], name=HOSTILE if producer == HOSTILE else "relu")],
        "g", [helper.make_tensor_value_info(input_name, TensorProto.FLOAT, [1, 4])],
        [helper.make_tensor_value_info(output_name, TensorProto.FLOAT, [1, 4])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], producer_name=producer)
    model.ir_version = 8
    model.doc_string = producer
    return model


def varint(value):
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        out.append(byte | (0x80 if value else 0))
        if not value:
            return bytes(out)


def nested_subgraphs(levels):
    """A ModelProto whose graph holds an If whose then_branch holds an If... `levels` deep (three
    messages a level), built from the inside out without recursion."""
    inner = relu_model().graph.SerializeToString()
    prefixes, length = [], len(inner)
    for _ in range(levels):
        attribute = b"\x0a\x0bthen_branch\xa0\x01\x05\x32" + varint(length)  # name, type GRAPH, g
        attribute_length = len(attribute) + length
        node = b"\x22\x02If\x2a" + varint(attribute_length)  # op_type, attribute
        node_length = len(node) + attribute_length
        graph = b"\x0a" + varint(node_length)  # GraphProto.node
        length = len(graph) + node_length
        prefixes.append(graph + node + attribute)
    body = b"".join(reversed(prefixes)) + inner
    return b"\x08\x08\x3a" + varint(len(body)) + body + b"\x42\x02\x10\x11"  # ir_version 8, graph, opset 17


def write_fixtures(work, engine):
    """The inputs every case finds in its work folder."""
    onnx.save(relu_model(), os.path.join(work, "model.onnx"))
    onnx.save(relu_model("x", HOSTILE, producer=HOSTILE), os.path.join(work, "hostile.onnx"))
    data = relu_model().SerializeToString()
    with open(os.path.join(work, "truncated.onnx"), "wb") as handle:
        handle.write(data[: len(data) // 2])
    with open(os.path.join(work, "notes.onnx"), "w") as handle:
        handle.write("these are my notes, not a model\n")
    os.makedirs(os.path.join(work, "forged"))  # a user's folder with a run marker dropped in
    with open(os.path.join(work, "forged", ".onnxproof-run"), "w") as handle:
        json.dump({"schema": "onnxproof.run/1", "command": "onnxproof pipeline", "model": "m.py:build"}, handle)
    with open(os.path.join(work, "forged", "README.md"), "w") as handle:
        handle.write("my project\n")
    marker = {"schema": "onnxproof.run/1", "command": "onnxproof pipeline", "model": "m.py:build", "extra": [1, 2]}
    for name, text in (("forged-schema", json.dumps({**marker, "schema": "onnxproof.run/999"})),
                       ("forged-huge", json.dumps({**marker, "pad": "x" * (2 << 20)})),
                       ("forged-entry", json.dumps(marker))):
        os.makedirs(os.path.join(work, name))
        with open(os.path.join(work, name, ".onnxproof-run"), "w") as handle:
            handle.write(text)
        with open(os.path.join(work, name, "report.json"), "w") as handle:
            handle.write("{}")
    os.symlink("../model.onnx", os.path.join(work, "forged-entry", "model.onnx"))  # a run writes no link
    os.makedirs(os.path.join(work, "forged-link"))
    os.symlink("../forged-entry/.onnxproof-run", os.path.join(work, "forged-link", ".onnxproof-run"))
    os.makedirs(os.path.join(work, "fakeort"))
    with open(os.path.join(work, "fakeort", "libonnxruntime.so.1"), "w") as handle:
        handle.write("not a shared library\n")
    with open(os.path.join(work, "deep.onnx"), "wb") as handle:
        handle.write(nested_subgraphs(7000))
    with open(os.path.join(work, "groups.onnx"), "wb") as handle:
        handle.write(b"\x0b" * 100000)  # field 1 as start-group, 100,000 deep
    invalid = relu_model()
    invalid.graph.node[0].input[0] = "nowhere"  # read but never defined: the checker refuses it
    onnx.save(invalid, os.path.join(work, "invalid.onnx"))
    os.mkdir(os.path.join(work, "folder.onnx"))
    x = np.array([[-1.0, 0.5, 2.0, -3.0]], dtype=np.float32)
    with open(os.path.join(work, "x.pb"), "wb") as handle:
        handle.write(numpy_helper.from_array(x, "x").SerializeToString())
    case_dir = os.path.join(work, "ref", "test_data_set_0")
    os.makedirs(case_dir)
    for name, array in (("input_0.pb", x), ("output_0.pb", np.maximum(x, 0))):
        with open(os.path.join(case_dir, name), "wb") as handle:
            handle.write(numpy_helper.from_array(array, "x" if name.startswith("input") else "y").SerializeToString())
    os.symlink("model.onnx", os.path.join(work, "link-to-model"))
    write_zoo_fixtures(os.path.join(work, "zoo"))
    write_export(os.path.join(work, "export"), x, relu_model("x", HOSTILE, producer=HOSTILE))
    invalid = relu_model("x", HOSTILE)
    invalid.graph.node[0].input[0] = "nowhere"
    write_export(os.path.join(work, "invalid-export"), x, invalid)
    # Exports whose recorded generation names an encoder or a run folder outside the run folder.
    generation = {"schema": "onnxproof.generation/2", "steps": 2, "input_ids": "x", "attention_mask": "",
                  "logits": HOSTILE, "past": ["p"], "present": ["q"],
                  "runs": [{"folder": "run_0", "label": "r", "batch": 1, "prompt_length": 1, "padded": False,
                            "exact": False, "exact_missing_reason": ""}],
                  "encoder": {"model": "../../model.onnx", "sha256": "0" * 64, "inputs": ["x"], "outputs": ["y"],
                              "feeds": {}}}
    for name, change in (("escaping-encoder-export", {}),
                         ("escaping-run-export", {"runs": [{**generation["runs"][0], "folder": "../../ref"}]})):
        write_export(os.path.join(work, name), x, relu_model("x", HOSTILE))
        os.makedirs(os.path.join(work, name, "reference", "generation"))
        with open(os.path.join(work, name, "reference", "generation", "generation.json"), "w") as handle:
            json.dump({**generation, **change}, handle)
    subprocess.run([engine, "golden", "freeze", os.path.join(work, "model.onnx"), "--reference",
                    os.path.join(work, "ref"), "--out", os.path.join(work, "golden")],
                   check=True, capture_output=True, timeout=TIMEOUT_S, env=clean_env(work, work))


def write_zoo_fixtures(zoo):
    """Manifests and zoo folders for the zoo cases: hostile names, huge numbers, a planted link,
    index.json files that escape or lie."""
    os.makedirs(zoo)
    manifests = {
        "valid": 'spec = "torchvision:resnet18"',
        "escape": 'name = "../../escape"\nspec = "torchvision:resnet18"',
        "control": 'name = "a\\u001b[2Jb"\nspec = "torchvision:resnet18"',
        "markup": 'spec = "<script>alert(1)</script>.py:build"',
        "huge": 'spec = "torchvision:resnet18"\nsamples = 1000000000',
        "forever": 'spec = "torchvision:resnet18"\ntimeout = 1e308',
        "redirect": 'spec = "torchvision:resnet18"\nargs = ["--out", "/tmp/elsewhere"]',
    }
    for name, body in manifests.items():
        with open(os.path.join(zoo, name + ".toml"), "w", encoding="utf-8") as handle:
            handle.write("[[model]]\n" + body + "\n")
    linked = os.path.join(zoo, "linked")  # a zoo folder whose runs/ points at a user's folder
    os.makedirs(linked)
    open(os.path.join(linked, ".onnxproof-zoo"), "w").close()
    os.symlink("../../ref", os.path.join(linked, "runs"))
    for name, rows, report_verdict in (("escaping", [{"name": "../../escape", "verdict": "pass"}], None),
                                       ("linkrun", [{"name": "m", "verdict": "pass"}], "pass"),
                                       ("tampered", [{"name": "m", "verdict": "pass", "position": 0}], "fail")):
        folder = os.path.join(zoo, name)
        os.makedirs(os.path.join(folder, "runs", "m"))
        open(os.path.join(folder, ".onnxproof-zoo"), "w").close()
        with open(os.path.join(folder, "index.json"), "w", encoding="utf-8") as handle:
            json.dump({"schema": "onnxproof.zoo/1", "verdict": "pass", "rows": rows}, handle)
        if report_verdict:
            with open(os.path.join(folder, "runs", "m", "report.json"), "w", encoding="utf-8") as handle:
                # A report as the engine writes one (schemas/report.schema.json), its verdict the truth.
                json.dump({"schema": "onnxproof.report/1", "verdict": report_verdict, "model": "m", "onnx_model": "",
                           "versions": {}, "headline": [], "steps": [], "findings": [], "summary": {}, "parity": [],
                           "exporter_report": "", "exporters": None, "localization": None}, handle)
    os.symlink("../../../../model.onnx", os.path.join(zoo, "linkrun", "runs", "m", "model.onnx"))


def write_export(folder, x, model):
    """An export folder as `onnxproof export` leaves it, for `model` (output HOSTILE) named HOSTILE."""
    case_dir = os.path.join(folder, "reference", "test_data_set_0")
    os.makedirs(case_dir)
    onnx.save(model, os.path.join(folder, "model.onnx"))
    with open(os.path.join(folder, "model.onnx"), "rb") as handle:
        sha256 = hashlib.sha256(handle.read()).hexdigest()
    for name, array, value in (("input_0.pb", x, "x"), ("output_0.pb", np.maximum(x, 0), HOSTILE)):
        with open(os.path.join(case_dir, name), "wb") as handle:
            handle.write(numpy_helper.from_array(array, value).SerializeToString())
    manifest = {"schema": "onnxproof.export/1", "status": "exported", "model": HOSTILE, "exporter": "torchscript",
                "findings": [], "onnx_model": {"path": "model.onnx", "sha256": sha256}}
    with open(os.path.join(folder, "export.json"), "w", encoding="utf-8") as handle:
        json.dump(manifest, handle)


def clean_env(home, tmp):
    env = {key: os.environ[key] for key in ("PATH", "LD_LIBRARY_PATH") if key in os.environ}
    env.update(HOME=home, TMPDIR=tmp, LANG="C.UTF-8")
    return env


def snapshot(root, skip):
    """{relative path: (kind, size, mtime_ns, sha256)} of everything under root but `skip` and below."""
    state = {}
    for folder, dirs, files in os.walk(root):
        for name in dirs + files:
            path = os.path.join(folder, name)
            rel = os.path.relpath(path, root)
            if any(rel == s or rel.startswith(s + os.sep) for s in skip):
                continue
            info = os.lstat(path)
            digest = ""
            if os.path.isfile(path) and not os.path.islink(path):
                with open(path, "rb") as handle:
                    digest = hashlib.sha256(handle.read()).hexdigest()
            kind = "link" if os.path.islink(path) else "dir" if os.path.isdir(path) else "file"
            state[rel] = (kind, info.st_size if kind == "file" else 0, info.st_mtime_ns, digest)
    return state


@unittest.skipUnless(ENGINE and os.access(ENGINE, os.X_OK), "set ONNXPROOF_ENGINE to the onnxproof binary")
class HostileInputs(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.template = tempfile.mkdtemp(prefix="onnxproof-hostile-")
        write_fixtures(cls.template, ENGINE)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.template, ignore_errors=True)

    def run_case(self, c):
        sandbox = tempfile.mkdtemp(prefix="onnxproof-hostile-case-")
        try:
            work, home, tmp = (os.path.join(sandbox, name) for name in ("work", "home", "tmp"))
            shutil.copytree(self.template, work, symlinks=True)
            os.mkfifo(os.path.join(work, "fifo"))  # copytree cannot copy one
            os.mkdir(home)
            os.mkdir(tmp)
            before = snapshot(work, c.outputs)
            argv = [ENGINE] + [arg.replace("{w}", work) for arg in c.argv]
            env = dict(clean_env(home, tmp), **{key: value.replace("{w}", work) for key, value in c.env.items()})
            done = subprocess.run(argv, cwd=work, capture_output=True, timeout=TIMEOUT_S, env=env)
            self.check_result(c, done, before, work, home, tmp)
        finally:
            shutil.rmtree(sandbox, ignore_errors=True)

    def check_result(self, c, done, before, work, home, tmp):
        out, err = done.stdout.decode("utf-8", "replace"), done.stderr.decode("utf-8", "replace")
        said = f"\nexit {done.returncode}\nstdout: {out[-2000:]}\nstderr: {err[-2000:]}"
        self.assertIn(done.returncode, c.exits, said)
        if done.returncode in (2, 3):
            lines = err.splitlines()
            self.assertEqual(len(lines), 1, "an error is one line" + said)
            self.assertTrue(lines[0].startswith("onnxproof: error: "), said)
        if c.says:
            self.assertIn(c.says, err if done.returncode in (2, 3) else out, said)
        for stream, text in (("stdout", done.stdout), ("stderr", done.stderr)):
            self.assertFalse(CONTROL & set(text), f"control bytes on {stream}" + said)
            self.assertNotIn(b"\xc2\x9b", text, f"a C1 control on {stream}" + said)
        self.assertEqual(snapshot(work, c.outputs), before, "only the declared outputs may change" + said)
        self.assertEqual(os.listdir(home), [], "HOME stays empty" + said)
        self.assertEqual(os.listdir(tmp), [], "TMPDIR stays empty" + said)
        if c.then:
            c.then(self, work)

    def test_cases(self):
        for c in CASES:
            with self.subTest(c.name):
                self.run_case(c)

    def test_outputs_onto_inputs(self):
        for c in OUTPUT_ONTO_INPUT_CASES:
            with self.subTest(c.name):
                self.run_case(c)


if __name__ == "__main__":
    unittest.main()
