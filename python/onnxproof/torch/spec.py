"""Model and data specs: where the model and the user's real inputs come from.

Model specs (DESIGN.md): `path/to/file.py:callable` or `package.module:callable` (the callable
returns an nn.Module), `path/to/model.pt` (a TorchScript archive), and the model families of
families.py: `torchvision:NAME`, `timm:NAME`, `hf:CLASS[:key=value,...]` (random weights).
"""
import os

from ..core.data import model_from_callable, split_callable
from ..core.errors import FrontEndError, UsageError
from . import ARCHIVE_SUFFIXES, families


def check_model_spec(spec):
    """Raises UsageError unless the spec has one of the accepted forms (nothing is loaded)."""
    if families.is_family(spec) or spec.endswith(ARCHIVE_SUFFIXES):
        return
    split_callable(spec)


def load_model(spec):
    """(nn.Module, description, default inputs or None); never returns no model. A model family
    (torchvision:, timm:, hf:) knows the inputs its models take; other specs need --input."""
    import torch
    check_model_spec(spec)
    if families.is_family(spec):
        return families.load(spec)
    if spec.endswith(ARCHIVE_SUFFIXES):
        if not os.path.isfile(spec):
            raise FrontEndError(f"no such file: {spec}")
        try:
            return torch.jit.load(spec, map_location="cpu"), f"TorchScript archive {spec}", None
        except Exception as error:
            raise FrontEndError(f"{spec} is not a TorchScript archive: {error}") from error
    model = model_from_callable(spec)
    if not isinstance(model, torch.nn.Module):
        raise UsageError(f"{spec} returned {type(model).__name__}, not a torch.nn.Module")
    return model, spec, None
