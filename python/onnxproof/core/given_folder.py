"""A folder of ONNX files the user made for generation (`--onnx FOLDER`): which file runs each
decoder step (it becomes the run's model.onnx), which runs step 0 without a cache, and which
encodes the request. The layouts exporters write:

- transformers' `OnnxExporter.export_for_generation(...).save_pretrained(DIR)`: export.json names
  its components; `prefill` runs step 0, `decode` every later step;
- Optimum's: `decoder_model.onnx` (step 0, no cache) and `decoder_with_past_model.onnx`, or one
  `model.onnx` / `decoder_model.onnx` with the cache; an encoder-decoder's `encoder_model.onnx` beside them;
- onnxproof's own encoder-decoder: `encoder.onnx` beside `model.onnx`;
- a folder holding one .onnx file: that file.

Anything else is a UsageError naming the files found and the layouts known."""
import json
import os

from .errors import UsageError

COMPONENTS = "components"  # the run's folder for the files beside model.onnx: components/NAME.onnx


class Layout:
    """The files of a generation folder, as absolute paths: `step` (every step, or every step after
    the first), `first` (step 0, no cache; None where `step` runs it on an empty cache) and
    `encoder` (None for a decoder alone); `origin` says which layout it was read as."""

    def __init__(self, origin, step, first=None, encoder=None):
        self.origin, self.step, self.first, self.encoder = origin, step, first, encoder
        self.token_inputs = ()  # the step file's inputs of the new tokens: one token a step by design
        self.folder = ""  # the folder given (--onnx FOLDER), "" for one file

    def components(self):
        """[(role, path)] of the files beside the step file."""
        return [(role, path) for role, path in (("first", self.first), ("encoder", self.encoder)) if path]


def read_layout(folder):
    """The Layout of `folder`; UsageError where no known layout fits."""
    folder = os.path.abspath(folder)
    files = sorted(name for name in os.listdir(folder) if name.endswith(".onnx")
                   and os.path.isfile(os.path.join(folder, name)))
    layout = _transformers_components(folder) or _file_layout(folder, files)
    layout.folder = folder
    for _, path in [("step", layout.step), *layout.components()]:
        if os.path.islink(path):  # found in the folder, not named by the user: never followed out of it
            raise UsageError(f"--onnx {folder}: {os.path.basename(path)} is a link: refused; put the file itself there")
    return layout


def _file_layout(folder, files):
    """The Layout Optimum's and onnxproof's file names say; UsageError where none fits."""
    def path(name):
        return os.path.join(folder, name) if name in files else None
    encoder = path("encoder_model.onnx")
    if path("decoder_with_past_model.onnx"):
        return Layout("Optimum", path("decoder_with_past_model.onnx"), path("decoder_model.onnx"), encoder)
    for name in ("decoder_model.onnx", "model.onnx"):
        if path(name) and (encoder or path("encoder.onnx") or len(files) == 1):
            return Layout("onnxproof" if path("encoder.onnx") else "Optimum", path(name), None,
                          encoder or path("encoder.onnx"))
    if len(files) == 1:
        return Layout("one file", path(files[0]))
    raise UsageError(
        f"--onnx {folder}: no generation layout fits its files ({', '.join(files) or 'no .onnx file'}); onnxproof reads "
        "transformers' export_for_generation folder (export.json with prefill and decode), Optimum's "
        "(decoder_model.onnx with decoder_with_past_model.onnx, and encoder_model.onnx) and its own "
        "(encoder.onnx beside model.onnx); give one .onnx file otherwise")


def _transformers_components(folder):
    """The Layout transformers' export.json describes (components with a file each: prefill and
    decode, or one component), or None where there is no such export.json."""
    try:
        with open(os.path.join(folder, "export.json"), encoding="utf-8") as handle:
            components = json.load(handle).get("components")
    except (OSError, ValueError, AttributeError):
        return None
    if not isinstance(components, dict):
        return None
    files = {}
    for role, entry in components.items():
        name = entry.get("file") if isinstance(entry, dict) else None
        if not isinstance(name, str) or os.path.basename(name) != name or not name.endswith(".onnx"):
            raise UsageError(f"--onnx {folder}: export.json's component {role!r} names {name!r}, no .onnx file in "
                             "the folder")
        if not os.path.isfile(os.path.join(folder, name)):
            raise UsageError(f"--onnx {folder}: export.json names {name}, which is not in the folder")
        files[role] = os.path.join(folder, name)
    if "decode" in files:
        return Layout("transformers", files["decode"], files.get("prefill"), files.get("encoder"))
    if len(files) == 1:
        return Layout("transformers", next(iter(files.values())))
    raise UsageError(f"--onnx {folder}: export.json's components ({', '.join(files)}) hold no decode step; "
                     "give one .onnx file")


def copy_components(layout, out):
    """{role: {"model": "components/NAME.onnx", "sha256"}}: each file beside the step file copied
    byte for byte into OUT/components/ with its data files under the names it gives them."""
    from . import given_file
    copied = {}
    for role, path in layout.components():
        target = os.path.join(out, COMPONENTS, os.path.basename(path))
        os.makedirs(os.path.dirname(target), exist_ok=True)
        record = given_file.copy_into(given_file.read_interface(path), target)
        copied[role] = {"model": f"{COMPONENTS}/{os.path.basename(path)}", "sha256": record["sha256"]}
    return copied
