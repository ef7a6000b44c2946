"""Unit tests of the export front end's pure parts (run by CTest with the pinned .venv interpreter)."""
import importlib.util
import json
import sys
import unittest

import torch

from onnxproof.core import cases, data, export_finish
from onnxproof.torch import dynamo, export_opset, spec, traps
from onnxproof.core.errors import UsageError

# The optional model families' packages (the lock has them; the oldest-torch lane does not).
needs_torchvision = unittest.skipUnless(importlib.util.find_spec("torchvision"), "torchvision is not installed")
needs_transformers = unittest.skipUnless(importlib.util.find_spec("transformers"), "transformers is not installed")


class DefaultSizes(unittest.TestCase):
    def test_one_the_example_and_two_others_one_of_them_odd(self):
        for example in (1, 2, 3, 4, 5, 8, 16, 224):
            sizes = cases.default_sizes(example)
            self.assertIn(1, sizes)
            self.assertIn(example, sizes)
            others = [s for s in sizes if s not in (1, example)]
            self.assertGreaterEqual(len(others), 2, sizes)
            self.assertTrue(any(s % 2 for s in others), sizes)
            self.assertEqual(len(sizes), len(set(sizes)), sizes)

    def test_shape_cases_vary_one_label_at_a_time(self):
        result = cases.shape_cases({"batch": 2, "seq": 5}, {"seq": [1, 9]})
        self.assertEqual(result[0], {"batch": 2, "seq": 5})
        self.assertIn({"batch": 2, "seq": 9}, result)
        self.assertIn({"batch": 3, "seq": 5}, result)
        self.assertNotIn({"batch": 3, "seq": 9}, result)

    def test_sweep_of_an_unknown_label_is_a_usage_error(self):
        with self.assertRaises(UsageError):
            cases.shape_cases({"batch": 2}, {"seq": [1, 2]})

    def test_a_shared_label_must_have_one_example_size(self):
        inputs = [{"name": "a", "dims": [2, 3], "dtype": "float32"}, {"name": "b", "dims": [4, 3], "dtype": "float32"}]
        dynamic = [{"input": "a", "axis": 0, "label": "batch"}, {"input": "b", "axis": 0, "label": "batch"}]
        with self.assertRaises(UsageError):
            cases.example_sizes(inputs, dynamic)

    def test_generated_integers_stay_inside_the_declared_range(self):
        import numpy as np
        values = cases.generate({"name": "ids", "dtype": "int64", "range": [5, 9]}, [1000], np.random.default_rng(0))
        self.assertEqual(values.dtype, np.int64)
        self.assertGreaterEqual(values.min(), 5)
        self.assertLess(values.max(), 9)


class FlattenOutputs(unittest.TestCase):
    def test_tuples_and_dicts_of_tensors_get_names(self):
        tensor = torch.zeros(2)
        named, problems = traps.flatten_outputs((tensor, {"a": tensor, "b": (tensor, tensor)}))
        self.assertEqual(problems, [])
        self.assertEqual([name for name, _ in named], ["output_0", "output_1_a", "output_1_b_0", "output_1_b_1"])

    def test_a_none_in_the_outputs_is_left_out_as_the_exporters_leave_it(self):
        named, problems = traps.flatten_outputs((torch.zeros(1), None, torch.ones(2)))
        self.assertEqual(problems, [])
        self.assertEqual([name for name, _ in named], ["output_0", "output_2"])

    def test_numbers_and_complex_values_are_outputs_as_exported_and_a_string_is_not(self):
        named, problems = traps.flatten_outputs((torch.zeros(2, 3, dtype=torch.complex64), 3, 0.5, True))
        self.assertEqual(problems, [])
        self.assertEqual([tuple(t.shape) for _, t in named], [(2, 3, 2), (), (), ()])
        self.assertEqual([t.dtype for _, t in named][1:], [torch.int64, torch.float32, torch.bool])
        _, problems = traps.flatten_outputs((torch.zeros(1), "label"))
        self.assertEqual([p["code"] for p in problems], ["NON_TENSOR_OUTPUT"])
        self.assertIn("str", problems[0]["message"])


class DefaultOpset(unittest.TestCase):
    def test_an_explicit_opset_wins(self):
        self.assertEqual(export_opset.choose_opset({"opset": 13, "opset_ceiling": 26}, "torchscript"), (13, "--opset"))

    def test_the_engine_ceiling_and_the_exporter_limit_both_bound_the_default(self):
        newest = export_opset.exporter_newest_opset("torchscript")
        opset, why = export_opset.choose_opset({"opset": 0, "opset_ceiling": newest + 3, "opset_ceiling_reason": "r"},
                                         "torchscript")
        self.assertEqual(opset, newest)
        self.assertIn("torchscript exporter", why)
        opset, why = export_opset.choose_opset({"opset_ceiling": newest - 1, "opset_ceiling_reason": "tensorrt 9-24"},
                                         "torchscript")
        self.assertEqual(opset, newest - 1)
        self.assertIn("tensorrt", why)

    def test_the_dynamo_exporter_writes_newer_opsets_than_torchscript(self):
        self.assertGreaterEqual(export_opset.exporter_newest_opset("dynamo"), 18)
        self.assertGreater(export_opset.exporter_newest_opset("dynamo"), export_opset.exporter_newest_opset("torchscript"))


class DeclaredOpsets(unittest.TestCase):
    """export.json's opset is read from model.onnx's wire format with the graph (the weights) skipped."""

    def test_the_opsets_are_those_onnx_reads_and_the_weights_are_not_read(self):
        import os
        import tempfile
        import numpy as np
        import onnx
        from onnx import helper, numpy_helper
        weight = numpy_helper.from_array(np.ones((256, 256), np.float32), "w")
        graph = helper.make_graph([helper.make_node("MatMul", ["x", "w"], ["y"])], "g",
                                  [helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [1, 256])],
                                  [helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [1, 256])], [weight])
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17),
                                                        helper.make_opsetid("com.microsoft", 1)])
        with tempfile.TemporaryDirectory() as folder:
            path = os.path.join(folder, "model.onnx")
            onnx.save(model, path)
            self.assertEqual(export_finish.declared_opsets(path), {"": 17, "com.microsoft": 1})
            self.assertEqual(export_finish.file_digest(path)[0], os.path.getsize(path))
            with open(path, "rb") as handle:
                data = handle.read()
            with open(path, "wb") as handle:  # cut inside a number
                handle.write(data[:1] + bytes([0x80]))
            with self.assertRaises(ValueError):
                export_finish.declared_opsets(path)


class DataSpecs(unittest.TestCase):
    def test_an_endless_data_generator_is_a_usage_error_not_a_memory_blowup(self):
        import os
        import tempfile
        with tempfile.TemporaryDirectory() as folder:
            path = os.path.join(folder, "endless_data.py")
            with open(path, "w") as handle:
                handle.write("import numpy as np\n\ndef endless():\n    while True:\n"
                             "        yield (np.zeros((1, 2), dtype=np.float32),)\n")
            with self.assertRaises(UsageError) as raised:
                data.load_data(f"{path}:endless", ["x"])
            self.assertIn(f"more than {data.MAX_DATA_SAMPLES} samples", str(raised.exception))


class ModelSpecs(unittest.TestCase):
    def test_malformed_specs_are_usage_errors(self):
        for bad in ("resnet", "file.py:", ":build", "file.py:not-an-identifier"):
            with self.assertRaises(UsageError, msg=bad):
                spec.check_model_spec(bad)

    def test_accepted_forms(self):
        for good in ("torchvision:resnet18", "model.pt", "pkg.module:build", "path/to/file.py:build"):
            spec.check_model_spec(good)


if __name__ == "__main__":
    unittest.main()


class DidYouMean(unittest.TestCase):
    """A near miss names what was meant: a model family's model, a callable's case, an input."""

    @needs_torchvision
    def test_a_misspelled_torchvision_model_names_the_real_one(self):
        from onnxproof.torch import families
        with self.assertRaisesRegex(UsageError, r"torchvision has no model 'resnet81' \(did you mean 'resnet18'\?\)"):
            families.load("torchvision:resnet81")

    def test_a_missing_torchvision_is_answered_with_the_install_that_keeps_this_torch(self):
        from unittest import mock
        import torch
        from onnxproof.core.errors import FrontEndError
        from onnxproof.torch import families
        release = torch.__version__.split("+")[0]
        with mock.patch.dict(sys.modules, {"torchvision": None}):  # import torchvision raises ImportError
            with self.assertRaises(FrontEndError) as raised:
                families.load("torchvision:resnet18")
        self.assertIn(f"pip install 'onnxproof[vision]' 'torch=={release}'", str(raised.exception))

    def test_a_callable_asked_in_the_wrong_case_names_the_real_one(self):
        import os
        import tempfile
        with tempfile.TemporaryDirectory() as folder:
            path = os.path.join(folder, "models.py")
            with open(path, "w", encoding="utf-8") as handle:
                handle.write("import torch\n\nclass Net(torch.nn.Module):\n    pass\n")
            with self.assertRaisesRegex(UsageError, r"has no 'net' \(did you mean 'Net'\?\)"):
                data.resolve_callable(f"{path}:net", "model")

    def test_an_input_name_close_to_a_forward_parameter_is_refused_another_is_said(self):
        from onnxproof.torch import export_load

        class Model(torch.nn.Module):
            def forward(self, image, mask=None):
                return image

        with self.assertRaisesRegex(UsageError, r"--input 'imgae' is not a parameter of forward\(image, mask\) "
                                                r"\(did you mean 'image'\?\)"):
            export_load.check_input_names(Model(), [{"name": "imgae"}])
        with self.assertRaisesRegex(UsageError, "3 inputs declared; forward\\(image, mask\\) takes 2"):
            export_load.check_input_names(Model(), [{"name": "image"}, {"name": "mask"}, {"name": "z"}])
        export_load.check_input_names(Model(), [{"name": "x"}])  # positional: said, not refused
        export_load.check_input_names(torch.nn.Sequential(torch.nn.ReLU()), [{"name": "input"}])


class SecondTraceGraphs(unittest.TestCase):
    """The differential trace compares graphs loaded without their weights (a model over 2 GiB has
    every initializer in files): its small integer constants are read in, the weights left out."""

    def test_small_integer_constants_are_read_from_external_files_and_weights_are_not(self):
        import os
        import tempfile
        import numpy as np
        import onnx
        from onnx import helper, numpy_helper
        shape = numpy_helper.from_array(np.array([3, -1], dtype=np.int64), "shape")
        weight = numpy_helper.from_array(np.ones((64, 64), dtype=np.float32), "weight")
        graph = helper.make_graph(
            [helper.make_node("MatMul", ["x", "weight"], ["h"]), helper.make_node("Reshape", ["h", "shape"], ["y"])],
            "g", [helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [3, 64])],
            [helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, None)], [shape, weight])
        with tempfile.TemporaryDirectory() as folder:
            path = os.path.join(folder, "model.onnx")
            onnx.save(helper.make_model(graph), path, save_as_external_data=True, all_tensors_to_one_file=False,
                      size_threshold=0)  # every initializer in a file of its own, as TorchScript's over 2 GiB
            model = onnx.load(path, load_external_data=False)
            self.assertEqual(traps._small_int_constants(model), {})  # nothing read from the files yet
            traps.load_small_external_tensors(model, folder)
        self.assertEqual(traps._small_int_constants(model), {"shape": [3, -1]})
        weights = {t.name: t for t in model.graph.initializer}
        self.assertEqual(weights["weight"].data_location, onnx.TensorProto.EXTERNAL)  # the weight stays out
        self.assertEqual(weights["weight"].raw_data, b"")


class TrainingMode(unittest.TestCase):
    """TRAINING_MODE is the user's to fix only when the user's own object was in train mode."""

    def state(self, given):
        from onnxproof.torch.state import TorchState
        return TorchState({"out": ".", "inputs": []}, given=given)

    def test_a_model_onnxproof_built_from_a_spec_is_info(self):
        from onnxproof.torch import export_load
        state = self.state(None)
        model = export_load.prepare(state, torch.nn.Sequential(torch.nn.Linear(2, 2), torch.nn.Dropout()))
        self.assertFalse(model.training)
        self.assertEqual([(f["code"], f["severity"], f["hint"]) for f in state.findings], [("TRAINING_MODE", "info", "")])

    def test_the_users_own_model_with_dropout_is_a_warning(self):
        from onnxproof.torch import export_load
        state = self.state(object())
        export_load.prepare(state, torch.nn.Sequential(torch.nn.Linear(2, 2), torch.nn.Dropout()))
        self.assertEqual([(f["code"], f["severity"]) for f in state.findings], [("TRAINING_MODE", "warning")])


class FindingRegistry(unittest.TestCase):
    """Python emits only codes from data/finding_codes.json, the registry the engine is built from."""

    def test_an_unregistered_code_is_refused(self):
        from onnxproof.core.findings import finding
        with self.assertRaises(ValueError):
            finding("MADE_UP_CODE", "error", "message")

    def test_every_code_the_front_end_names_is_registered(self):
        import pathlib
        import re
        from onnxproof.core.findings import registry
        package = pathlib.Path(export_opset.__file__).parent.parent  # onnxproof/: core/, torch/, zoo/
        used = set()
        for source in package.rglob("*.py"):
            used |= set(re.findall(r'finding\(\s*"([A-Z][A-Z0-9_]+)"', source.read_text()))
        self.assertTrue(used)
        self.assertEqual(used - set(registry()), set())


class ConfigContract(unittest.TestCase):
    """The engine's configuration is checked field by field (onnxproof.config/1)."""

    def valid(self):
        return {"contract": "onnxproof.config/1", "model": "m.py:build", "out": "/tmp/x",
                "inputs": [{"name": "x", "dims": [2, 3], "dtype": "float32"}],
                "dynamic": [{"input": "x", "axis": 0, "label": "batch"}], "opset": 0, "exporter": "auto",
                "sweep": {}, "samples": 3, "seed": 0}

    def test_a_valid_configuration_passes(self):
        from onnxproof.core import contract
        contract.check_config(self.valid())

    def test_a_mismatch_names_the_field(self):
        from onnxproof.core import contract
        for change, field in ((lambda c: c["inputs"][0].update(dims=["2"]), "config.inputs[0].dims"),
                              (lambda c: c.pop("samples"), "config.samples"),
                              (lambda c: c.update(extra=1), "config.extra"),
                              (lambda c: c.update(contract="onnxproof.config/0"), "config.contract"),
                              (lambda c: c["dynamic"][0].update(axis=-1), "config.dynamic[0].axis")):
            config = self.valid()
            change(config)
            with self.assertRaises(contract.ContractError) as raised:
                contract.check_config(config)
            self.assertTrue(str(raised.exception).startswith(field), str(raised.exception))


class DynamoErrors(unittest.TestCase):
    """torch.export's failures become findings at the user's own line, not tracebacks."""

    def raise_chain(self, inner):
        def users_forward():
            raise inner  # the user's line
        try:
            try:
                users_forward()
            except Exception as cause:
                raise RuntimeError("\x1b[96mFailed to export the model with torch.export.\x1b[0m") from cause
        except RuntimeError as error:
            return error

    def test_a_data_dependent_guard_is_control_flow_at_the_users_line(self):
        class GuardOnDataDependentSymNode(RuntimeError):
            pass
        error = self.raise_chain(GuardOnDataDependentSymNode("Could not guard on data-dependent expression Eq(u0, 1)"))
        found = dynamo.classify_export_error(error, dynamo.GuardLog([], [], []))
        self.assertEqual(found["code"], "DATA_DEPENDENT_CONTROL_FLOW")
        self.assertIn("Eq(u0, 1)", found["message"])
        self.assertIn("test_front_end.py:", found["where"])
        self.assertIn("raise inner", found["where"])

    def test_anything_else_is_export_failed_without_terminal_codes(self):
        found = dynamo.classify_export_error(self.raise_chain(ValueError("shapes do not line up")),
                                             dynamo.GuardLog([], [], []))
        self.assertEqual(found["code"], "EXPORT_FAILED")
        self.assertEqual(found["message"], "torch.export failed: ValueError: shapes do not line up")
        self.assertIn("test_front_end.py:", found["where"])
        self.assertNotIn("\x1b", json.dumps(found))


class TorchlibListing(unittest.TestCase):
    """dynamo.torchlib_listed_without_parsing gives torch.onnx the list onnxscript's own
    get_torchlib_ops gives, entry for entry, without parsing each function's source."""

    def test_the_same_entries_as_onnxscripts_own(self):
        from torch.onnx._internal.exporter import _registration
        def entries(listing):
            return [(meta.qualified_name, id(meta.function), meta.domain, meta.name, meta.is_complex) for meta in listing]
        before = _registration.onnxscript_apis.get_torchlib_ops
        own = entries(before())
        with dynamo.torchlib_listed_without_parsing():
            fast = entries(_registration.onnxscript_apis.get_torchlib_ops())
        self.assertGreater(len(own), 400)
        self.assertEqual(own, fast)
        self.assertIs(_registration.onnxscript_apis.get_torchlib_ops, before)  # restored after the block


class DynamoShapes(unittest.TestCase):
    INPUTS = [{"name": "ids", "dims": [2, 7], "dtype": "int64"}, {"name": "mask", "dims": [2, 7], "dtype": "int64"}]
    DYNAMIC = [{"input": "ids", "axis": 0, "label": "batch"}, {"input": "ids", "axis": 1, "label": "seq-len"},
               {"input": "mask", "axis": 0, "label": "batch"}, {"input": "mask", "axis": 1, "label": "seq-len",
                                                                  "min": 2, "max": 64}]

    def test_one_dim_per_label_shared_across_inputs_keyed_by_forward_parameters(self):
        class Model(torch.nn.Module):
            def forward(self, input_ids, attention_mask):
                return input_ids * attention_mask
        shapes = dynamo.dynamic_shapes(Model(), self.INPUTS, self.DYNAMIC)
        self.assertEqual(list(shapes), ["input_ids", "attention_mask"])
        self.assertIs(shapes["input_ids"][0], shapes["attention_mask"][0])
        self.assertIs(shapes["input_ids"][1], shapes["attention_mask"][1])
        self.assertEqual(shapes["input_ids"][1].__name__, "seq_len")  # a label that is no identifier
        self.assertEqual((shapes["attention_mask"][1].min, shapes["attention_mask"][1].max), (2, 64))

    def test_the_guard_log_ties_a_specialized_symbol_to_its_label_and_guard(self):
        guards = dynamo.GuardLog(["input_ids", "attention_mask"], self.INPUTS, self.DYNAMIC)
        import logging
        for text in ("create_symbol s12 = 7 for L['attention_mask'].size()[1] [2, 64] (fakify)",
                     "eval Eq(s12, 7) [guard added] (model.py:3 in forward)",
                     "set_replacement s12 = 7 (range_refined_to_singleton) VR[7, 7]"):
            guards.emit(logging.LogRecord("torch", logging.INFO, "", 0, text, None, None))
        self.assertEqual(guards.symbols, {"s12": "seq-len"})
        self.assertEqual(guards.specialized["seq-len"][:2], (7, "Eq(s12, 7)"))

    def test_default_sizes_stay_inside_a_range(self):
        result = cases.shape_cases({"seq": 7}, {}, {"seq": (4, 8)})
        self.assertTrue(all(4 <= case["seq"] <= 8 for case in result), result)
        self.assertIn({"seq": 4}, result)


class ModelFamilies(unittest.TestCase):
    @needs_transformers
    def test_a_transformers_model_is_small_keyword_called_and_brings_its_inputs(self):
        from onnxproof.torch import families
        model, description, defaults = families.load("hf:BertModel:num_hidden_layers=1")
        self.assertIn("num_hidden_layers=1", description)
        self.assertEqual(model.model.config.hidden_size, 64)
        self.assertEqual([spec["name"] for spec in defaults["inputs"]], ["input_ids", "attention_mask"])
        self.assertEqual(defaults["inputs"][0]["range"], [0, 1000])
        sequence = [axis for axis in defaults["dynamic"] if axis["label"] == "sequence"]
        self.assertEqual([(axis["min"], axis["max"]) for axis in sequence], [(1, 128)] * 2)  # HF_SMALL's positions
        ids = torch.randint(0, 1000, (2, 16))
        outputs, problems = traps.flatten_outputs(model(ids, torch.ones_like(ids)))
        self.assertEqual(problems, [])
        self.assertEqual([name for name, _ in outputs], ["last_hidden_state", "pooler_output"])

    @needs_transformers
    def test_an_encoder_decoder_takes_decoder_ids(self):
        from onnxproof.torch import families
        _, _, defaults = families.load("hf:T5ForConditionalGeneration")
        self.assertEqual([spec["name"] for spec in defaults["inputs"]],
                         ["input_ids", "attention_mask", "decoder_input_ids"])

    @needs_transformers
    def test_a_raw_audio_model_takes_samples_from_its_receptive_field(self):
        from onnxproof.torch import families
        model, description, defaults = families.load("hf:Wav2Vec2Model")
        self.assertIn("conv_dim=[32, 32, 32, 32, 32, 32, 32]", description)
        (values,) = defaults["inputs"]
        self.assertEqual((values["name"], values["dtype"], values["dims"]), ("input_values", "float32", [2, 8000]))
        samples = next(axis for axis in defaults["dynamic"] if axis["label"] == "samples")
        # wav2vec 2.0's 25 ms window (400 samples) and 20 ms stride (320): two frames from 720
        self.assertEqual((samples["min"], samples["max"]), (720, 30 * 16000))
        with torch.no_grad():
            frames = [model(torch.randn(1, size)).last_hidden_state.shape[1] for size in (719, 720)]
        self.assertEqual(frames, [1, 2])

    @needs_transformers
    def test_per_stage_configuration_lists_keep_their_defaults(self):
        from onnxproof.torch import families
        model, _, defaults = families.load("hf:SegformerForSemanticSegmentation")
        self.assertEqual(list(model.model.config.num_attention_heads), [1, 2, 5, 8])
        self.assertEqual(defaults["inputs"][0]["name"], "pixel_values")

    @needs_transformers
    def test_unknown_names_and_bad_overrides_are_usage_errors(self):
        from onnxproof.torch import families
        for bad in ("hf:NoSuchModel", "hf:BertModel:layers", "timm:no_such_net", "torchvision:no_such_net", "hf:"):
            with self.assertRaises(UsageError, msg=bad):
                families.load(bad)

    def test_a_range_guard_becomes_the_range_to_declare(self):
        self.assertEqual(dynamo._range_from_guard("2 <= sequence and sequence <= 128", "sequence"), (1, 128))
        self.assertEqual(dynamo._range_from_guard("8 <= seq and seq <= 64", "seq"), (8, 64))
        self.assertIsNone(dynamo._range_from_guard("Eq(batch, 2)", "batch"))
