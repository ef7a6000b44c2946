"""Which module an ONNX node belongs to, read off the TorchScript exporter's scoped node names
(onnxproof.torch.localize.node_module): a block's child is named by its attribute under the block's
qualified name (/layer1/layer1.0/conv1/Conv), which a top-level module of the same attribute name
(ResNet's conv1, bn1, relu) must not claim; a repeated call (relu_1) is the module's."""
import unittest

from onnx import helper

from onnxproof.torch.localize import node_module

MODULES = {"", "conv1", "bn1", "relu", "maxpool", "layer1", "layer1.0", "layer1.0.conv1", "layer1.0.relu",
           "layer2", "layer2.0", "layer2.0.downsample", "layer2.0.downsample.0", "fc"}


def named(name):
    return helper.make_node("Relu", ["x"], ["y"], name=name)


class ScopedNames(unittest.TestCase):
    def test_a_blocks_child_is_not_the_top_level_module_of_the_same_name(self):
        self.assertEqual(node_module(named("/layer1/layer1.0/conv1/Conv"), MODULES), "layer1.0.conv1")
        self.assertEqual(node_module(named("/conv1/Conv"), MODULES), "conv1")
        self.assertEqual(node_module(named("/layer2/layer2.0/downsample/downsample.0/Conv"), MODULES),
                         "layer2.0.downsample.0")

    def test_a_repeated_call_is_the_modules_own(self):
        self.assertEqual(node_module(named("/layer1/layer1.0/relu_1/Relu"), MODULES), "layer1.0.relu")
        self.assertEqual(node_module(named("/relu/Relu"), MODULES), "relu")

    def test_a_scope_no_module_has_stops_at_the_last_one_that_resolves(self):
        self.assertEqual(node_module(named("/layer1/layer1.0/Add"), MODULES), "layer1.0")
        self.assertEqual(node_module(named("/layer1/layer1.0/unknown/Mul"), MODULES), "layer1.0")
        self.assertEqual(node_module(named("/Flatten"), MODULES), "")
        self.assertIsNone(node_module(named("Identity_2"), MODULES))


if __name__ == "__main__":
    unittest.main()
