"""Shape cases and generated inputs: every dynamic axis at size 1, the example's size and at
least two other sizes (one odd), unless --sweep sets them."""
import numpy as np

from .errors import UsageError

# Integer inputs without a declared range get values in [0, 10): small enough to index most
# embeddings; a token-id input should declare its vocabulary (ids=1x16:int64:0..30522).
DEFAULT_INT_RANGE = (0, 10)


def example_sizes(inputs, dynamic):
    """{label: size in the example input}; a label shared by inputs must have one size."""
    sizes = {}
    by_name = {spec["name"]: spec for spec in inputs}
    for axis in dynamic:
        spec = by_name.get(axis["input"])
        if spec is None:
            raise UsageError(f"--dynamic names input '{axis['input']}', which no --input declares")
        if axis["axis"] >= len(spec["dims"]):
            raise UsageError(f"--dynamic {axis['input']}:{axis['axis']}: input '{axis['input']}' has rank {len(spec['dims'])}")
        size = spec["dims"][axis["axis"]]
        if sizes.setdefault(axis["label"], size) != size:
            raise UsageError(f"dynamic axis '{axis['label']}' has size {sizes[axis['label']]} in one input and {size} in another")
    return sizes


def default_sizes(example):
    """1, the example's size, and two more, at least one of them odd (e.g. 4 -> [1, 4, 5, 2])."""
    sizes = [1, example] if example != 1 else [1]
    for candidate in (example + 1, example // 2, example + 2, 2 * example + 1):
        others = [s for s in sizes if s not in (1, example)]
        if len(others) >= 2 and any(s % 2 for s in others):
            break
        if candidate >= 1 and candidate not in sizes:
            sizes.append(candidate)
    return sizes


def size_ranges(dynamic):
    """{label: (min, max)} for the labels --dynamic gave a range."""
    return {axis["label"]: (axis["min"], axis["max"]) for axis in dynamic if "min" in axis and "max" in axis}


def shape_cases(examples, sweep, ranges=None):
    """Cases as {label: size}: first every axis at its example size, then each label through its
    sizes with the other labels at their example sizes. The default sizes of a label with a range
    stay inside it (the range's ends stand in for sizes outside)."""
    for label in sweep:
        if label not in examples:
            raise UsageError(f"--sweep names '{label}', which no --dynamic axis declares")
    cases = [dict(examples)]
    for label, example in examples.items():
        sizes = sweep.get(label)
        if not sizes:
            low, high = (ranges or {}).get(label, (1, None))
            sizes = [min(max(size, low), high or size) for size in default_sizes(example)]
        for size in sizes:
            case = dict(examples, **{label: size})
            if case not in cases:
                cases.append(case)
    return cases


def shape_for(spec, dynamic, sizes):
    dims = list(spec["dims"])
    for axis in dynamic:
        if axis["input"] == spec["name"]:
            dims[axis["axis"]] = sizes[axis["label"]]
    return dims


def generate(spec, dims, rng):
    """Values for one input: float normal, integers inside the declared range, bools."""
    dtype = np.dtype(spec["dtype"]) if spec["dtype"] != "bfloat16" else None
    if dtype is None:
        raise UsageError(f"input '{spec['name']}': bfloat16 inputs are not supported by the export front end yet")
    if dtype.kind == "f":
        return rng.standard_normal(dims).astype(dtype)
    if dtype.kind in "iu":
        low, high = spec.get("range") or DEFAULT_INT_RANGE
        return rng.integers(low, high, size=dims, endpoint=False).astype(dtype)
    if dtype.kind == "b":
        return rng.random(dims) > 0.5
    raise UsageError(f"input '{spec['name']}': cannot generate values of dtype {spec['dtype']}")
