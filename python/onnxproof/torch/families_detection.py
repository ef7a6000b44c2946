"""torchvision's detection family (Faster/Mask/Keypoint R-CNN, RetinaNet, FCOS, SSD, SSDlite),
exported the way torchvision documents and tests it: the detector takes a list of 3xHxW images
(one here, with height and width dynamic) and returns one dict per image, whose tensors become
the outputs `boxes`, `labels`, `scores` (and `masks`, `keypoints`, `keypoints_scores`).

A detector's outputs are a set, not a tensor: near-equal scores may come out in another order,
and a detection whose score sits at the threshold may be kept on one side only. The wrapper says
so (DETECTION_SETS below), and the engine's parity step compares them as matched sets.

With random weights a detector detects nothing (scores sit below the threshold, or are all equal),
so a proof of its outputs would be a proof of empty tensors: `seed_detections` sets the
classification head, seeded, so that a few tens of detections with spread scores clear it.

torchvision's resize is not the same computation traced as in eager mode: eager PyTorch takes the
scale as a Python float (float64) and interpolate floors `size * scale`, the trace takes it as a
float32 tensor, so at heights like 193 (320/193 rounds down in float32) the traced model resizes to
319 rows where eager PyTorch resizes to 320, and every box after it differs. `ExactResize` replaces
the detector's transform with one that computes the output size in integer arithmetic, identical
eager, traced and in ONNX; PyTorch's reference runs the same adapted detector.
"""
import contextlib
import functools

import torch

from ..core.errors import UsageError

# The image the family is exported at and its dynamic range: small (proofs run every case
# through PyTorch twice and ONNX Runtime twice), inside the sizes the models' own resize accepts.
HEIGHT, WIDTH, SIZE_RANGE = 192, 256, (160, 320)
# How many detections the seeded head aims at on the example image.
TARGET_DETECTIONS = (8, 40)
# The outputs of one image's dict that are per-detection (their axis 0 counts detections).
PER_DETECTION = ("boxes", "labels", "scores", "masks", "keypoints", "keypoints_scores")
DETECTIONS_LABEL = "detections"


def is_detection(builder):
    return getattr(builder, "__module__", "").startswith("torchvision.models.detection")


class DetectorOnImages(torch.nn.Module):
    """A torchvision detector called with `images` image tensors as a list, as torchvision's own
    ONNX export does; one image returns its dict's tensors under their own names (boxes, ...),
    several return image_K_boxes, ..."""

    def __init__(self, detector, images=1):
        super().__init__()
        self.detector = detector
        self.images = images

    def forward(self, *images):
        with clipping_without_reshape():
            results = self.detector(list(images))
        if len(results) == 1:
            return dict(results[0])
        return {f"image_{index}": dict(result) for index, result in enumerate(results)}

    def score_threshold(self):
        """The score under which the detector drops a detection (its postprocessing's)."""
        for owner in (getattr(self.detector, "roi_heads", None), self.detector):
            for attribute in ("score_thresh", "box_score_thresh"):
                if owner is not None and isinstance(getattr(owner, attribute, None), float):
                    return getattr(owner, attribute)
        return 0.0

    def onnxproof_detections(self, output_names):
        """The export's detection metadata: one set per image, naming its outputs."""
        prefixes = [""] if self.images == 1 else [f"image_{index}_" for index in range(self.images)]
        sets = []
        for prefix in prefixes:
            names = {key: prefix + key for key in PER_DETECTION if prefix + key in output_names}
            if {"boxes", "scores"} <= names.keys():
                sets.append({"boxes": names["boxes"], "scores": names["scores"], "labels": names.get("labels", ""),
                             "extra": [names[key] for key in PER_DETECTION[3:] if key in names],
                             "score_threshold": self.score_threshold()})
        return sets

    def seed_detections(self, example, seed=0):
        """Sets the classification head so that TARGET_DETECTIONS detections clear the score
        threshold on `example` (a list of image tensors); returns words for the description."""
        return seed_classification_head(self.detector, example, seed)


def clip_boxes_traced(boxes, size):
    """torchvision's `clip_boxes_to_image` as the same element-wise max/min, without its final
    `reshape(boxes.shape)`: traced, that reshape reads the shape at run time, and ONNX Runtime's
    ReshapeFusion (default level all) folds it into {0, -1}, which an empty per-level tensor
    (RetinaNet's or FCOS's pyramid levels where no score clears the threshold) cannot take, so the
    session fails to run. Each coordinate column is clamped to [0, width] or [0, height] in place."""
    height, width = size
    limits = [torch.tensor(limit, dtype=boxes.dtype, device=boxes.device) for limit in (width, height)]
    limit = torch.stack([limits[0], limits[1], limits[0], limits[1]])
    return torch.min(torch.max(boxes, torch.zeros((), dtype=boxes.dtype, device=boxes.device)), limit)


@contextlib.contextmanager
def clipping_without_reshape():
    """Within the block, a trace clips boxes with `clip_boxes_traced`; eager mode and torch.export
    keep torchvision's own (the same max/min, so eager and traced agree bit for bit)."""
    from torchvision.ops import boxes as box_ops
    original = box_ops.clip_boxes_to_image

    def clip(boxes, size):
        if torch.jit.is_tracing():
            return clip_boxes_traced(boxes, size)
        return original(boxes, size)
    box_ops.clip_boxes_to_image = clip
    try:
        yield
    finally:
        box_ops.clip_boxes_to_image = original


def exact_resize_size(image, min_size, max_size):
    """(height, width) of `image` (C x H x W) resized as torchvision's GeneralizedRCNNTransform
    intends: the short side to `min_size` unless the long side would then exceed `max_size`, the
    long side to `max_size` then; each side floor(side * scale), in integer arithmetic
    (side * numerator // denominator), so eager mode, the TorchScript trace and ONNX Runtime get the
    same sizes: Python ints eagerly (symbolic ints under torch.export), 0-dim int64 tensors traced.
    torchvision's own eager float64 arithmetic floors a few sizes one pixel lower (303 x 320 to
    319 x 337, where the short side should be 320)."""
    if torch.jit.is_tracing():
        from torch.onnx import operators
        shape = operators.shape_as_tensor(image)[-2:]  # traced: the sizes stay dynamic
        short, long = torch.min(shape), torch.max(shape)
        by_short = min_size * long <= max_size * short  # min_size / short <= max_size / long
        numerator = torch.where(by_short, torch.tensor(min_size), torch.tensor(max_size))
        denominator = torch.where(by_short, short, long)
        return shape[0] * numerator // denominator, shape[1] * numerator // denominator
    height, width = image.shape[-2:]
    short, long = torch.sym_min(height, width), torch.sym_max(height, width)
    numerator, denominator = (min_size, short) if min_size * long <= max_size * short else (max_size, long)
    return height * numerator // denominator, width * numerator // denominator


@functools.cache
def exact_resize_type():
    """The ExactResize class, made on first use: torchvision (an optional extra) is imported only
    for a detection spec, never by the front end of every other model (a module-level import made
    the Debian-torch lane fail without torchvision, and left an inductor cache folder in $TMPDIR)."""
    from torchvision.models.detection.transform import GeneralizedRCNNTransform

    class ExactResize(GeneralizedRCNNTransform):
        """torchvision's detection transform whose inference resize computes its output size with
        `exact_resize_size`, the same number eager and traced (torchvision's own takes a float64
        scale eagerly and a float32 one traced: 193 rows become 320 eagerly, 319 traced).
        Training, targets and a fixed size (SSD) keep torchvision's own resize."""

        @classmethod
        def replacing(cls, transform):
            exact = cls(transform.min_size, transform.max_size, transform.image_mean, transform.image_std,
                        size_divisible=transform.size_divisible, fixed_size=transform.fixed_size,
                        _skip_resize=transform._skip_resize)
            exact.train(transform.training)
            return exact

        def resize(self, image, target=None):
            if self.training or target is not None or self.fixed_size is not None:
                return super().resize(image, target)
            height, width = exact_resize_size(image, self.min_size[-1], self.max_size)
            resized = torch.nn.functional.interpolate(image[None], size=[height, width], mode="bilinear",
                                                      align_corners=False)
            return resized[0], target

    return ExactResize


def load(name, builder):
    """(the detector on a list of one image, its description, its default inputs)."""
    import inspect
    options = {"weights": None}
    if "weights_backbone" in inspect.signature(builder).parameters:
        options["weights_backbone"] = None  # its default would download ImageNet weights
    try:
        detector = builder(**options)
    except Exception as error:  # noqa: BLE001 -- torchvision's own refusal, said in one line
        raise UsageError(f"torchvision could not build '{name}': {type(error).__name__}: {error}") from error
    from torchvision.models.detection.transform import GeneralizedRCNNTransform
    resize = ""
    if isinstance(getattr(detector, "transform", None), GeneralizedRCNNTransform) \
            and detector.transform.fixed_size is None:
        detector.transform = exact_resize_type().replacing(detector.transform)
        resize = ", resized with the output size in integer arithmetic (the same eager and traced)"
    low, high = SIZE_RANGE
    defaults = {"inputs": [{"name": "image", "dims": [3, HEIGHT, WIDTH], "dtype": "float32"}],
                "dynamic": [{"input": "image", "axis": 1, "label": "height", "min": low, "max": high},
                            {"input": "image", "axis": 2, "label": "width", "min": low, "max": high}],
                # BatchNorm statistics are estimated on four images at once (families.py).
                "calibration_inputs": [{"name": f"image_{k}", "dims": [3, HEIGHT, WIDTH], "dtype": "float32"}
                                       for k in range(4)]}
    return DetectorOnImages(detector), f"torchvision.models.{name} on a list of one image{resize}", defaults


def _classification_layers(detector):
    """(the last layers of the classification head, 'softmax' or 'sigmoid', the classes per anchor
    of a softmax head with the background as class 0): R-CNN's box
    predictor scores classes with a softmax over a background class, SSD's head too, RetinaNet's
    and FCOS's with a sigmoid per class."""
    heads = getattr(detector, "roi_heads", None)
    if heads is not None:
        return [heads.box_predictor.cls_score], "softmax", heads.box_predictor.cls_score.out_features
    head = getattr(getattr(detector, "head", None), "classification_head", None)
    if head is None:
        return [], "", 0
    if hasattr(head, "cls_logits"):
        return [head.cls_logits], "sigmoid", 0
    convs = []
    for branch in getattr(head, "module_list", []):
        layers = [m for m in branch.modules() if isinstance(m, torch.nn.Conv2d)]
        convs += layers[-1:]
    return convs, "softmax", getattr(head, "num_columns", 0)


def _count_detections(detector, example):
    with torch.no_grad():
        return sum(int(result["scores"].numel()) for result in detector(list(example)))


def seed_classification_head(detector, example, seed):
    """Redraws the classification layers' weights (seeded) so their logits spread, then moves
    the background (softmax) or every class's (sigmoid) bias by bisection until the example gives
    TARGET_DETECTIONS detections. '' when the detector has no head this knows."""
    layers, kind, classes = _classification_layers(detector)
    if not layers:
        return ""
    generator = torch.Generator().manual_seed(seed)
    inputs = {}

    def keep_input(module, args, output):
        inputs.setdefault(module, args[0])  # returns None: the output stays the layer's

    hooks = [layer.register_forward_hook(keep_input) for layer in layers]
    try:
        _count_detections(detector, example)
    finally:
        for hook in hooks:
            hook.remove()
    with torch.no_grad():
        for layer in layers:
            scale = float(inputs[layer].float().pow(2).mean().sqrt()) or 1.0
            fan_in = layer.weight[0].numel()
            # Logits with a standard deviation of about 2 across classes and positions.
            layer.weight.copy_(torch.randn(layer.weight.shape, generator=generator) * 2.0 / (scale * fan_in ** 0.5))
            layer.bias.copy_(0.5 * torch.randn(layer.bias.shape, generator=generator))
    base = [layer.bias.detach().clone() for layer in layers]
    low, high = -10.0, 20.0  # the shift: higher means fewer detections
    count = 0
    for _ in range(16):
        shift = (low + high) / 2
        _shift_bias(layers, base, kind, shift, classes)
        count = _count_detections(detector, example)
        if count < TARGET_DETECTIONS[0]:
            high = shift
        elif count > TARGET_DETECTIONS[1]:
            low = shift
        else:
            break
    return f", classification head seeded for {count} detections on the example"


def _shift_bias(layers, base, kind, shift, classes):
    with torch.no_grad():
        for layer, bias in zip(layers, base):
            if kind == "sigmoid":
                layer.bias.copy_(bias - shift)
                continue
            # Softmax: only the background rises; the background is class 0 of every anchor.
            shifted = bias.clone().view(-1, classes)
            shifted[:, 0] += shift
            layer.bias.copy_(shifted.view(-1))

