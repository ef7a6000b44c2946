"""The contract between the engine and the front end (schemas/): both sides read the same schema
files, and each refuses a document that breaks its schema, naming the field. The engine's side is
tests/contract/contract_tool (its generated readers), found through $ONNXPROOF_CONTRACT_TOOL."""
import copy
import json
import os
import subprocess
import tempfile
import unittest

from onnxproof.core import contract

TOOL = os.environ.get("ONNXPROOF_CONTRACT_TOOL")

EXPORT = {
    "schema": contract.EXPORT, "status": "exported", "model": "m.py:build", "description": "a model",
    "exporter": "torchscript", "exporter_options": {"call": "torch.onnx.export(dynamo=False)"},
    "opset": {"value": 17, "chosen_by": "default"},
    "options": {"contract": contract.CONFIG, "model": "m.py:build", "seed": 0, "sweep": {},
                "inputs": [{"name": "x", "dims": [2, 3], "dtype": "float32"}],
                "dynamic": [{"input": "x", "axis": 0, "label": "batch"}]},
    "versions": {"onnxproof": "0.1.0", "torch": "2.9"},
    "inputs": [{"name": "x", "dims": [2, 3], "dtype": "float32"}],
    "outputs": [{"name": "y", "dynamic_axes": {"0": "batch"}}],
    "timings_s": {"export": 0.5},
    "findings": [{"code": "EXPORTER_FALLBACK", "severity": "info", "step": "export", "message": "m", "where": "",
                  "hint": ""}],
    "onnx_model": {"path": "model.onnx", "bytes": 10, "sha256": "0" * 64},
}
CASES = {
    "schema": contract.CASES, "inputs": ["x"], "outputs": ["y"], "dynamic_axes": {"batch": 2},
    "cases": [{"data_set": "test_data_set_0", "sizes": {"batch": 2}, "sample": 0, "source": "generated",
               "exact_outputs": [0]}],
}
CONFIG = {"contract": contract.CONFIG, "model": "m.py:build", "out": "/tmp/x",
          "inputs": [{"name": "x", "dims": [2, 3], "dtype": "float32", "range": [0, 5]}],
          "dynamic": [{"input": "x", "axis": 0, "label": "batch", "min": 1, "max": 8}], "opset": 0,
          "exporter": "auto", "sweep": {"batch": [1, 3]}, "samples": 3, "seed": 0, "opset_op_limits": {"Gelu": 19}}
LOCALIZE = {"schema": contract.LOCALIZE, "case": "test_data_set_0", "model": "model.onnx",
            "modules": [{"module": "fc", "class": "Linear", "source": "m.py:3", "calls": 1, "nodes": ["/fc/Gemm"],
                         "matched": True, "reason": "", "inputs": [],
                         "outputs": [{"onnx": "/fc/Gemm_output_0", "pytorch": "pytorch/00000_output_0.pb"}]}]}
GENERATION = {"schema": contract.GENERATION, "steps": 16, "input_ids": "input_ids", "attention_mask": "attention_mask",
              "logits": "logits", "past": ["past_key_values.0.key", "past_key_values.0.value"],
              "present": ["present.0.key", "present.0.value"],
              "runs": [{"folder": "run_0", "label": "batch 2, prompt 4 tokens", "batch": 2, "prompt_length": 4,
                        "padded": False, "exact": True, "exact_missing_reason": ""}],
              "encoder": {"model": "encoder.onnx", "sha256": "0" * 64, "inputs": ["input_ids"], "outputs": ["present.0.encoder.key"],
                          "feeds": {"past_key_values.0.encoder.key": "present.0.encoder.key"}}}
DOCUMENTS = {"export": EXPORT, "cases": CASES, "config": CONFIG, "localize": LOCALIZE, "generation": GENERATION}

# (document, change, the field both sides must name)
BROKEN = [
    ("export", lambda d: d["inputs"][0].update(dims=["2"]), "inputs[0].dims[0]"),
    ("export", lambda d: d.pop("exporter"), "exporter"),
    ("export", lambda d: d.update(extra=1), "extra"),
    ("export", lambda d: d.update(schema="onnxproof.export/2"), "schema"),
    ("export", lambda d: d["options"]["dynamic"][0].update(axis="zero"), "options.dynamic[0].axis"),
    ("export", lambda d: d["onnx_model"].pop("sha256"), "onnx_model.sha256"),
    ("cases", lambda d: d["cases"][0].update(sample="0"), "cases[0].sample"),
    ("cases", lambda d: d["cases"][0].pop("data_set"), "cases[0].data_set"),
    ("cases", lambda d: d["cases"][0].update(labels=1), "cases[0].labels"),
    ("cases", lambda d: d.update(schema="onnxproof.cases/0"), "schema"),
    ("config", lambda d: d.update(exporter="onnx"), "exporter"),
    ("config", lambda d: d["inputs"][0].update(range=[1]), "inputs[0].range"),
    ("config", lambda d: d["dynamic"][0].update(axis=-1), "dynamic[0].axis"),
    ("config", lambda d: d.update(generate=-1), "generate"),
    ("generation", lambda d: d.update(steps=0), "steps"),
    ("generation", lambda d: d.pop("present"), "present"),
    ("generation", lambda d: d.update(schema="onnxproof.generation/1"), "schema"),
    ("generation", lambda d: d["runs"][0].pop("batch"), "runs[0].batch"),
    ("generation", lambda d: d["encoder"]["feeds"].update(x=1), "encoder.feeds.x"),
    ("localize", lambda d: d["modules"][0].update(calls=True), "modules[0].calls"),
    ("localize", lambda d: d.update(schema="onnxproof.localize/2"), "schema"),
]


def run_tool(*args):
    return subprocess.run([TOOL, *args], capture_output=True, text=True, timeout=60)


class PythonSide(unittest.TestCase):
    def test_the_written_documents_hold_to_their_schemas(self):
        for name, document in DOCUMENTS.items():
            contract.validate(document, name)

    def test_a_broken_document_is_refused_naming_the_field(self):
        for name, change, field in BROKEN:
            document = copy.deepcopy(DOCUMENTS[name])
            change(document)
            with self.assertRaises(contract.ContractError, msg=(name, field)) as raised:
                contract.validate(document, name)
            self.assertTrue(str(raised.exception).startswith(f"{name}.{field}:"), str(raised.exception))

    def test_a_wrong_version_names_both_versions(self):
        document = dict(EXPORT, schema="onnxproof.export/2")
        with self.assertRaises(contract.ContractError) as raised:
            contract.validate(document, "export")
        self.assertIn("onnxproof.export/1", str(raised.exception))
        self.assertIn("onnxproof.export/2", str(raised.exception))
        self.assertEqual(len(str(raised.exception).splitlines()), 1)

    def test_cases_from_before_the_schema_field_are_read(self):
        contract.validate({"cases": [{"data_set": "test_data_set_0"}]}, "cases")

    def test_a_version_one_report_is_read_with_the_neutral_names(self):
        from onnxproof.core.report import read_report
        source = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "fixtures", "report-v1.json")
        with tempfile.TemporaryDirectory() as folder:
            with open(source, encoding="utf-8") as handle, open(os.path.join(folder, "report.json"), "w") as out:
                out.write(handle.read())
            report = read_report(folder)
        self.assertEqual(report.raw["schema"], contract.REPORT)
        self.assertIn("source_error", report.parity[0].extra)
        self.assertNotIn("pytorch_error", report.parity[0].extra)
        self.assertIn("source", report.accuracy[0]["accuracy"])
        self.assertEqual((report.detections[0]["source"], report.detections[0]["only_source"]), (3, 0))
        self.assertEqual(report.generation["providers"][0]["table"][0]["source_tokens"], [7])
        with open(source, encoding="utf-8") as handle:
            self.assertEqual(json.load(handle)["schema"], "onnxproof.report/1")  # the file is read, not changed


@unittest.skipUnless(TOOL, "set ONNXPROOF_CONTRACT_TOOL to tests/contract's contract_tool (ctest -R contract)")
class BothSides(unittest.TestCase):
    def write(self, folder, name, document):
        path = os.path.join(folder, f"{name}.json")
        with open(path, "w", encoding="utf-8") as handle:
            handle.write(contract.dumps(document, name, indent=2) if name != "broken" else json.dumps(document))
        return path

    def test_the_engine_was_generated_from_the_schemas_this_package_loads(self):
        lines = run_tool("digests").stdout.split("\n")
        engine = {name: (version, digest) for name, version, digest in (line.split() for line in lines if line)}
        self.assertEqual(engine, contract.digests())
        self.assertEqual(set(engine), {"cases", "command", "config", "export", "generation", "localize", "report"})

    def test_what_python_writes_the_engine_reads(self):
        with tempfile.TemporaryDirectory() as folder:
            for name, document in DOCUMENTS.items():
                read = run_tool("read", name, self.write(folder, name, document))
                self.assertEqual((read.returncode, read.stdout.strip()), (0, "ok"), name)

    def test_the_engine_refuses_what_python_refuses_naming_the_same_field(self):
        with tempfile.TemporaryDirectory() as folder:
            for name, change, field in BROKEN:
                document = copy.deepcopy(DOCUMENTS[name])
                change(document)
                read = run_tool("read", name, self.write(folder, "broken", document))
                self.assertEqual(read.returncode, 1, (name, field))
                self.assertIn(f"broken.json: {field}", read.stdout, (name, field))

    def test_the_engines_report_holds_to_its_schema(self):
        with tempfile.TemporaryDirectory() as folder:
            path = os.path.join(folder, "report.json")
            self.assertEqual(run_tool("report", path).returncode, 0)
            with open(path, encoding="utf-8") as handle:
                report = json.load(handle)
            contract.validate(report, "report")
            self.assertEqual(run_tool("read", "report", path).stdout.strip(), "ok")
            report["verdict"] = "maybe"
            with self.assertRaises(contract.ContractError) as raised:
                contract.validate(report, "report")
            self.assertTrue(str(raised.exception).startswith("report.verdict:"), str(raised.exception))


if __name__ == "__main__":
    unittest.main()
