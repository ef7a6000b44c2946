"""The binding of a given file's inputs and outputs to the model's (core/given_file.py,
core/given_binding.py), without an engine: which pairs bind, how, and the one error for what does
not."""
import unittest

import numpy as np

from onnxproof.core import given_binding, given_file
from onnxproof.core.errors import UsageError


def spec(name, dims, dtype="float32"):
    return {"name": name, "dims": dims, "dtype": dtype}


class InputBinding(unittest.TestCase):
    def bound(self, file_names, model_names, **options):
        pairs = given_file.bind_inputs([spec(n, ["b", 4]) for n in file_names], model_names, **options)
        return [(s["name"], model, how) for s, model, how in pairs]

    def test_by_name_in_the_files_order_then_one_left_by_position(self):
        self.assertEqual(self.bound(["mask", "ids"], ["ids", "mask"]), [("mask", "mask", "name"), ("ids", "ids", "name")])
        self.assertEqual(self.bound(["image"], ["x"]), [("image", "x", "position")])

    def test_exporter_made_names_bind_by_position_and_chosen_ones_do_not(self):
        self.assertEqual(self.bound(["input.1", "onnx::Gemm_1"], ["a", "b"]),
                         [("input.1", "a", "position"), ("onnx::Gemm_1", "b", "position")])
        with self.assertRaises(UsageError) as raised:
            self.bound(["tokens", "mask"], ["input_ids", "attention_mask"])
        self.assertIn("--bind", str(raised.exception))

    def test_bind_wins_and_a_bad_bind_names_both_sides(self):
        self.assertEqual(self.bound(["a", "b"], ["x", "y"], bind={"a": "y", "b": "x"}),
                         [("a", "y", "--bind"), ("b", "x", "--bind")])
        with self.assertRaises(UsageError):
            self.bound(["a"], ["x"], bind={"a": "z"})

    def test_a_forward_parameter_the_call_does_not_give_is_asked_for_not_taken_from_another(self):
        with self.assertRaises(UsageError) as raised:
            self.bound(["input_ids", "position_ids"], ["input_ids", "attention_mask"],
                       parameters=["input_ids", "attention_mask", "position_ids"])
        self.assertIn("position_ids", str(raised.exception))
        self.assertIn("kwargs", str(raised.exception))


class OutputBinding(unittest.TestCase):
    def test_by_name_then_order_then_shape(self):
        model = [("logits", (2, 5)), ("hidden", (2, 7, 16))]
        self.assertEqual(given_file.bind_outputs([spec("logits", ["b", 5])], model), [("logits", 0, "name")])
        self.assertEqual(given_file.bind_outputs([spec("out", ["b", 5])], model), [("out", 0, "order")])
        self.assertEqual(given_file.bind_outputs([spec("h", ["b", "s", 16])], model), [("h", 1, "shape")])

    def test_more_file_outputs_than_the_model_has_is_one_error(self):
        with self.assertRaises(UsageError) as raised:
            given_file.bind_outputs([spec("a", ["b", 5]), spec("b", ["b", 5])], [("logits", (2, 5))])
        self.assertIn("matches no output of the model", str(raised.exception))


class Layouts(unittest.TestCase):
    def test_an_nchw_file_of_an_nhwc_model_is_bound_with_the_transpose(self):
        perm = given_binding.layout_of(["n", 3, 16, 16], [2, 16, 16, 3])
        self.assertEqual(perm, (0, 3, 1, 2))
        bound = given_binding.Bound("image", "image", "float32", "float32", perm)
        nhwc = np.arange(2 * 16 * 16 * 3, dtype=np.float32).reshape(2, 16, 16, 3)
        self.assertEqual(bound.to_file(nhwc).shape, (2, 3, 16, 16))
        np.testing.assert_array_equal(bound.to_model(bound.to_file(nhwc)), nhwc)
        self.assertIsNone(given_binding.layout_of(["n", 16, 16, 3], [2, 16, 16, 3]))


if __name__ == "__main__":
    unittest.main()
