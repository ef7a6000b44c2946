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
        rows = [row for row in report["detections"] if "only_pytorch" in row]
        self.assertTrue(any(row["only_pytorch"] > row["at_threshold"] for row in rows), rows)


class DetectionDeclaration(unittest.TestCase):
    """onnxproof_detections is checked against the example's outputs before anything is written."""

    def outputs(self, count=3):
        return [("boxes", torch.zeros(count, 4)), ("scores", torch.zeros(count)), ("labels", torch.zeros(count))]

    def declare(self, sets, outputs):
        from onnxproof.export_forward import detection_sets
        from onnxproof.export_state import ExportState
        state = ExportState({"out": self.id(), "inputs": [], "dynamic": []})
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
        from onnxproof.errors import UsageError
        with self.assertRaisesRegex(UsageError, "'bbox'"):
            self.declare([{"boxes": "bbox", "scores": "scores"}], self.outputs())

    def test_rows_must_agree(self):
        from onnxproof.errors import UsageError
        outputs = self.outputs()
        outputs[1] = ("scores", torch.zeros(2))
        with self.assertRaisesRegex(UsageError, "one row per box"):
            self.declare([{"boxes": "boxes", "scores": "scores"}], outputs)


if __name__ == "__main__":
    unittest.main()
