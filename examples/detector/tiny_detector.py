"""A user's own small detector with non-maximum suppression in forward(): a test model for the
detection parity (docs/detection.md). A convolution scores a grid of anchors and regresses their
boxes; forward keeps the anchors over the score threshold (boolean indexing: data-dependent
shapes), runs torchvision.ops.batched_nms and returns the kept boxes, scores and labels.

    onnxproof pipeline --model examples/detector/tiny_detector.py:tiny_detector \\
        --input image=1x3x64x80:float32 --dynamic image:2=height --dynamic image:3=width

`onnxproof_detections` tells onnxproof that the three outputs are one set of detections, compared
as a set (matched by label and IoU), not element by element.
"""
import torch
import torchvision


class TinyDetector(torch.nn.Module):
    onnxproof_detections = [{"boxes": "boxes", "scores": "scores", "labels": "labels", "score_threshold": 0.3}]

    def __init__(self, classes=3, stride=8, anchor=16.0, score_threshold=0.3, iou_threshold=0.5):
        super().__init__()
        self.features = torch.nn.Sequential(
            torch.nn.Conv2d(3, 16, 3, stride=2, padding=1), torch.nn.ReLU(),
            torch.nn.Conv2d(16, 32, 3, stride=2, padding=1), torch.nn.ReLU(),
            torch.nn.Conv2d(32, 32, 3, stride=2, padding=1), torch.nn.ReLU())
        self.classes = torch.nn.Conv2d(32, classes, 1)
        self.deltas = torch.nn.Conv2d(32, 4, 1)
        self.stride, self.anchor = stride, anchor
        self.score_threshold, self.iou_threshold = score_threshold, iou_threshold

    def forward(self, image):
        features = self.features(image)
        scores = torch.sigmoid(self.classes(features))[0]        # classes x h x w
        deltas = self.deltas(features)[0]                        # 4 x h x w
        h, w = scores.shape[1], scores.shape[2]
        ys = (torch.arange(h, dtype=image.dtype) + 0.5) * self.stride
        xs = (torch.arange(w, dtype=image.dtype) + 0.5) * self.stride
        cy, cx = torch.meshgrid(ys, xs, indexing="ij")
        cx = cx + deltas[0] * self.anchor
        cy = cy + deltas[1] * self.anchor
        half_w = 0.5 * self.anchor * torch.exp(deltas[2].clamp(max=2.0))
        half_h = 0.5 * self.anchor * torch.exp(deltas[3].clamp(max=2.0))
        boxes = torch.stack([cx - half_w, cy - half_h, cx + half_w, cy + half_h], dim=-1).reshape(-1, 4)
        best, labels = scores.reshape(scores.shape[0], -1).max(dim=0)
        keep = best > self.score_threshold
        boxes, best, labels = boxes[keep], best[keep], labels[keep]
        kept = torchvision.ops.batched_nms(boxes, best, labels, self.iou_threshold)
        return {"boxes": boxes[kept], "scores": best[kept], "labels": labels[kept]}


def tiny_detector():
    torch.manual_seed(0)
    model = TinyDetector()
    with torch.no_grad():  # a spread of scores around the threshold, so some anchors are kept
        model.classes.weight.mul_(12.0)
        model.classes.bias.fill_(-1.5)
    return model.eval()
