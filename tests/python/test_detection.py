"""Detection parity (docs/detection.md): a user's own small detector with NMS in forward()
(examples/detector/tiny_detector.py) proved through the command line, its outputs compared as a
set of detections; and the same detector with a bug planted in its export only, which the set
comparison must fail. Real exports, real ONNX Runtime, the engine this checkout built
($ONNXPROOF_ENGINE)."""
import json
import os
import shutil
import subprocess
import tempfile
import unittest

import torch

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DETECTOR = os.path.join(ROOT, "examples", "detector", "tiny_detector.py")
ENGINE = os.environ.get("ONNXPROOF_ENGINE", os.path.join(ROOT, "build", "bin", "onnxproof"))
SHAPE = ["--input", "image=1x3x64x80:float32", "--dynamic", "image:2=height", "--dynamic", "image:3=width",
         "--sweep", "height=48,64", "--sweep", "width=80,97", "--exporter", "torchscript", "--samples", "1",
         "--no-localize"]


def planted(bug):
    """A module file whose detector differs from PyTorch's only while torch.onnx exports it."""
    return f'''
import sys
import torch
sys.path.insert(0, {os.path.dirname(DETECTOR)!r})
import tiny_detector

class Planted(tiny_detector.TinyDetector):
    def forward(self, image):
        out = super().forward(image)
        if torch.onnx.is_in_onnx_export():
            {bug}
        return out

def model():
    torch.manual_seed(0)
    planted = Planted()
    planted.load_state_dict(tiny_detector.tiny_detector().state_dict())
    return planted.eval()
'''


class DetectionParity(unittest.TestCase):
    def setUp(self):
        self.folder = tempfile.mkdtemp(prefix="onnxproof-detection-")
        self.addCleanup(shutil.rmtree, self.folder, ignore_errors=True)

    def pipeline(self, spec, name):
        out = os.path.join(self.folder, name)
        done = subprocess.run([ENGINE, "pipeline", "--model", spec, *SHAPE, "--out", out], capture_output=True,
                              text=True, timeout=600)
        with open(os.path.join(out, "report.json"), encoding="utf-8") as handle:
            return done, json.load(handle)

    def test_tiny_detector_passes_as_matched_sets(self):
        done, report = self.pipeline(f"{DETECTOR}:tiny_detector", "tiny")
        self.assertEqual(done.returncode, 0, done.stdout + done.stderr)
        self.assertEqual(report["verdict"], "pass")
        rows = report["detections"]
        self.assertGreaterEqual(len({row["case"] for row in rows}), 3)
        self.assertTrue(all(row["status"] == "pass" for row in rows), rows)
        self.assertGreater(sum(row["matched"] for row in rows), 0)  # the proof is not of empty sets
        # The set's outputs are compared as a set, not element by element.
        self.assertFalse([row for row in report["parity"] if row["output"] in ("boxes", "scores", "labels")])
        self.assertIn("detections 'boxes' on cpu (all):", done.stdout)

    def test_moved_boxes_fail(self):
        path = os.path.join(self.folder, "moved.py")
        with open(path, "w", encoding="utf-8") as handle:
            handle.write(planted('out["boxes"] = out["boxes"] + 0.5'))
        done, report = self.pipeline(f"{path}:model", "moved")
        self.assertEqual(done.returncode, 1, done.stdout + done.stderr)
        mismatches = [f for f in report["findings"] if f["code"] == "PARITY_MISMATCH"]
        self.assertTrue(any("detections 'boxes'" in f["message"] for f in mismatches), mismatches)
        self.assertTrue(any(row["worst_box_error"] >= 0.4 for row in report["detections"] if "worst_box_error" in row))

    def test_detections_dropped_above_the_threshold_fail(self):
        path = os.path.join(self.folder, "dropped.py")
        with open(path, "w", encoding="utf-8") as handle:
            handle.write(planted('keep = out["scores"] < 0.38\n'
                                 '            out = {key: value[keep] for key, value in out.items()}'))
        done, report = self.pipeline(f"{path}:model", "dropped")
        self.assertEqual(done.returncode, 1, done.stdout + done.stderr)
        rows = [row for row in report["detections"] if "only_source" in row]
        self.assertTrue(any(row["only_source"] > row["at_threshold"] for row in rows), rows)


def transform_sizes(transform):
    """A module returning the image size the detection transform resized one image to."""
    class Sizes(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.transform = transform.eval()

        def forward(self, image):
            images, _ = self.transform([image])
            return torch.stack([torch.as_tensor(size) for size in images.image_sizes[0]]), images.tensors
    return Sizes()


class ExactResize(unittest.TestCase):
    """The family's resize (families_detection.ExactResize) gives the same size eagerly and in the
    TorchScript trace taken at the example's size; torchvision's own does not (193 rows: 320 eagerly,
    319 traced), which made the traced Faster R-CNN and RetinaNet disagree with eager PyTorch."""

    SIZES = [(193, 256), (193, 257), (303, 320), (266, 266), (161, 256), (160, 320), (320, 160), (192, 256)]

    def traced_and_eager(self, transform):
        from onnxproof.torch.families_detection import HEIGHT, WIDTH
        module = transform_sizes(transform)
        torch.manual_seed(0)
        with torch.no_grad():
            traced = torch.jit.trace(module, (torch.rand(3, HEIGHT, WIDTH),), check_trace=False)
            for height, width in self.SIZES:
                image = torch.rand(3, height, width)
                (eager_size, eager_images), (traced_size, traced_images) = module(image), traced(image)
                yield (height, width), eager_size.tolist(), traced_size.tolist(), eager_images, traced_images

    def transforms(self, kind):
        from torchvision.models.detection.transform import GeneralizedRCNNTransform
        from onnxproof.torch.families_detection import exact_resize_type
        Exact = exact_resize_type()
        for min_size, max_size in ((320, 640), (800, 1333)):  # Faster R-CNN mobilenet 320, RetinaNet
            stock = GeneralizedRCNNTransform(min_size, max_size, [0.485, 0.456, 0.406], [0.229, 0.224, 0.225])
            yield (min_size, max_size), stock if kind == "stock" else Exact.replacing(stock)

    def test_traced_resize_equals_eager(self):
        import warnings
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for limits, transform in self.transforms("exact"):
                for size, eager, traced, eager_images, traced_images in self.traced_and_eager(transform):
                    self.assertEqual(eager, traced, (limits, size))
                    self.assertTrue(torch.equal(eager_images, traced_images), (limits, size))
                    # The short side reaches min_size exactly unless the long side would pass max_size.
                    scale = min(limits[0] / min(size), limits[1] / max(size))
                    self.assertLessEqual(abs(eager[0] - size[0] * scale), 1, (limits, size, eager))

    def test_torchvisions_own_resize_differs_when_traced(self):
        """What the adapter works around (torchvision 0.29 transform.py _resize_image_and_masks):
        if torchvision ever computes it identically, ExactResize can go."""
        import warnings
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            differ = [(limits, size, eager, traced) for limits, transform in self.transforms("stock")
                      for size, eager, traced, _, _ in self.traced_and_eager(transform) if eager != traced]
        self.assertIn(((320, 640), (193, 256), [320, 424], [319, 424]), differ)

    def test_the_family_uses_it_and_says_so(self):
        from onnxproof.torch import families
        from onnxproof.torch.families_detection import exact_resize_type
        Exact = exact_resize_type()
        model, description, _ = families.load("torchvision:fasterrcnn_mobilenet_v3_large_320_fpn")
        self.assertIsInstance(model.detector.transform, Exact)
        self.assertIn("resized with the output size in integer arithmetic", description)
        # The adapted detector, traced at the example's size, detects what eager PyTorch does at 193.
        import warnings
        import numpy
        from onnxproof.core.cases import generate_in_domain
        from onnxproof.torch.families_detection import HEIGHT, WIDTH
        rng = numpy.random.default_rng(5)
        spec = {"name": "image", "dims": [3, HEIGHT, WIDTH], "dtype": "float32"}
        with torch.no_grad(), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            traced = torch.jit.trace(model, (torch.from_numpy(generate_in_domain(spec, spec["dims"], rng)),),
                                     check_trace=False, strict=False)
            image = torch.from_numpy(generate_in_domain(spec, [3, 193, WIDTH], rng))
            eager, traced = model(image), traced(image)
        traced = traced if isinstance(traced, dict) else dict(zip(eager, traced))
        self.assertGreater(eager["boxes"].shape[0], 0)
        self.assertEqual(eager["boxes"].shape, traced["boxes"].shape)
        self.assertTrue(torch.allclose(eager["boxes"], traced["boxes"], atol=1e-3), (eager["boxes"], traced["boxes"]))


class ClipWithoutReshape(unittest.TestCase):
    """torchvision's clip_boxes_to_image ends in `reshape(boxes.shape)`; traced, ONNX Runtime's
    ReshapeFusion folded that shape into {0, -1}, which RetinaNet's empty pyramid levels cannot
    take (every case failed to run at the default optimization level). The family clips traced
    boxes with max/min alone: bit for bit torchvision's eager clip, and no Reshape in the graph."""

    class Kept(torch.nn.Module):
        def forward(self, scores, boxes, image):
            from torchvision.ops import boxes as box_ops
            kept = boxes[torch.where(scores > 0.5)[0]]  # empty when no score clears 0.5
            return box_ops.clip_boxes_to_image(kept, image.shape[-2:])

    def test_traced_clip_equals_torchvisions_eager_clip_and_runs_empty(self):
        import io
        import warnings
        import numpy
        import onnx
        import onnxruntime
        from torchvision.ops.boxes import clip_boxes_to_image
        from onnxproof.torch.families_detection import clipping_without_reshape
        generator = torch.Generator().manual_seed(3)
        example = (torch.rand(40, generator=generator), torch.randn(40, 4, generator=generator) * 300,
                   torch.zeros(3, 120, 200))
        exported = io.BytesIO()
        with clipping_without_reshape(), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            torch.onnx.export(self.Kept(), example, exported, dynamo=False, input_names=["scores", "boxes", "image"],
                              dynamic_axes={"scores": {0: "n"}, "boxes": {0: "n"}, "image": {1: "h", 2: "w"}},
                              opset_version=17)
        self.assertNotIn("Reshape", {node.op_type for node in onnx.load_from_string(exported.getvalue()).graph.node})
        session = onnxruntime.InferenceSession(exported.getvalue(), providers=["CPUExecutionProvider"])
        for count, floor, (height, width) in ((60, 0.0, (150, 90)), (7, 1.0, (97, 333))):  # the second keeps none
            scores = torch.rand(count, generator=generator) * (1 - floor)
            boxes = torch.randn(count, 4, generator=generator) * 400
            got = session.run(None, {"scores": scores.numpy(), "boxes": boxes.numpy(),
                                     "image": numpy.zeros((3, height, width), numpy.float32)})[0]
            want = clip_boxes_to_image(boxes[scores > 0.5], (height, width)).numpy()
            self.assertEqual(got.shape, want.shape)
            self.assertTrue(numpy.array_equal(got, want), (got, want))


class DetectionDeclaration(unittest.TestCase):
    """onnxproof_detections is checked against the example's outputs before anything is written."""

    def outputs(self, count=3):
        return [("boxes", torch.zeros(count, 4)), ("scores", torch.zeros(count)), ("labels", torch.zeros(count))]

    def declare(self, sets, outputs):
        from onnxproof.torch.export_forward import detection_sets
        from onnxproof.torch.state import TorchState
        state = TorchState({"out": self.id(), "inputs": [], "dynamic": []})
        state.output_names = [name for name, _ in outputs]
        model = torch.nn.Module()
        model.onnxproof_detections = sets
        detection_sets(state, model, outputs)
        return state

    def test_a_declared_set_labels_the_detection_axis(self):
        state = self.declare([{"boxes": "boxes", "scores": "scores", "labels": "labels", "score_threshold": 0.5}],
                             self.outputs())
        self.assertEqual(state.detection_sets[0]["score_threshold"], 0.5)
        self.assertEqual(state.output_axes["scores"], {0: "detections"})

    def test_a_missing_output_is_a_usage_error(self):
        from onnxproof.core.errors import UsageError
        with self.assertRaisesRegex(UsageError, "'bbox'"):
            self.declare([{"boxes": "bbox", "scores": "scores"}], self.outputs())

    def test_rows_must_agree(self):
        from onnxproof.core.errors import UsageError
        outputs = self.outputs()
        outputs[1] = ("scores", torch.zeros(2))
        with self.assertRaisesRegex(UsageError, "one row per box"):
            self.declare([{"boxes": "boxes", "scores": "scores"}], outputs)


if __name__ == "__main__":
    unittest.main()
