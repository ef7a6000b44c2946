"""Shape cases and generated inputs: every dynamic axis at size 1, the example's size and at
least two other sizes (one odd), unless --sweep sets them."""
import math

import numpy as np

from .errors import MAX_GENERATED_BYTES, UsageError

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


def with_derived(sizes, derived):
    """`sizes` with each derived label set to the sum of the labels it is made of (a cache
    decoder's attention mask covers past and new tokens: total_sequence = past_sequence +
    sequence) or to its affine function of one ({"label", "scale", "offset"}: d + 1); the others
    as they are."""
    if not derived:
        return sizes
    sizes = dict(sizes)
    for label, parts in derived.items():
        if isinstance(parts, dict):  # scale * root + offset (a derived Dim: config's "derived")
            if label in sizes and parts["label"] in sizes:
                sizes[label] = parts["scale"] * sizes[parts["label"]] + parts["offset"]
        elif label in sizes and all(part in sizes for part in parts):
            sizes[label] = sum(sizes[part] for part in parts)
    return sizes


def shape_for(spec, dynamic, sizes):
    dims = list(spec["dims"])
    for axis in dynamic:
        if axis["input"] == spec["name"]:
            dims[axis["axis"]] = sizes[axis["label"]]
    return dims


# Float types numpy has not, from ml_dtypes (onnx's numpy_helper writes them as their ONNX types).
NARROW_FLOATS = ("bfloat16", "float8_e4m3fn", "float8_e4m3fnuz", "float8_e5m2", "float8_e5m2fnuz")


def numpy_dtype(name):
    """The numpy dtype of an input's dtype name, ml_dtypes' for bfloat16 and float8; UsageError
    for a name that is neither."""
    if name in NARROW_FLOATS:
        import ml_dtypes
        return np.dtype(getattr(ml_dtypes, name))
    try:
        return np.dtype(name)
    except TypeError as error:
        raise UsageError(f"'{name}' is no dtype onnxproof can generate values of") from error


def is_narrow_float(dtype):
    return np.dtype(dtype).name in NARROW_FLOATS


def generate(spec, dims, rng):
    """Values for one input: float normal, integers inside the declared range, bools."""
    dtype = numpy_dtype(spec["dtype"])
    if is_narrow_float(dtype):
        return rng.standard_normal(dims).astype(np.float32).astype(dtype)
    if dtype.kind == "c":
        return (rng.standard_normal(dims) + 1j * rng.standard_normal(dims)).astype(dtype)
    if dtype.kind == "f":
        return rng.standard_normal(dims).astype(dtype)
    if dtype.kind in "iu":
        low, high = spec.get("range") or DEFAULT_INT_RANGE
        return rng.integers(low, high, size=dims, endpoint=False).astype(dtype)
    if dtype.kind == "b":
        return rng.random(dims) > 0.5
    raise UsageError(f"input '{spec['name']}': cannot generate values of dtype {spec['dtype']}")


def coupled_groups(inputs, dynamic):
    """Groups of labels that may be one size in disguise: different labels on different inputs
    with the same example size (an RNN input's batch and its h0's batch, spelled as two labels).
    Only candidates: the export checks with PyTorch whether the labels must move together."""
    sizes = example_sizes(inputs, dynamic)
    owners = {}
    for axis in dynamic:
        owners.setdefault(axis["label"], set()).add(axis["input"])
    by_size = {}
    for label, size in sizes.items():
        by_size.setdefault(size, []).append(label)
    groups = []
    for labels in by_size.values():
        if len(labels) > 1 and len(set().union(*(owners[label] for label in labels))) > 1:
            groups.append(sorted(labels))
    return groups


def coupled_cases(examples, sweep, ranges=None, couplings=()):
    """shape_cases, with every label of a coupled group scaled with the label its case varies
    (coupled_sizes); a case no partner size fits, or that takes a label outside its declared
    range (a partner scaled past its bounds), is left out; the example is always the first."""
    cases = []
    for case in shape_cases(examples, sweep, ranges):
        case = coupled_sizes(case, examples, couplings)
        if case is not None and case not in cases and (not cases or within_ranges(case, ranges)):
            cases.append(case)
    return cases


def within_ranges(case, ranges):
    """True when every label of `case` with a declared (min, max) lies inside it."""
    return all(low <= case[label] <= high for label, (low, high) in (ranges or {}).items() if label in case)


def coupled_sizes(case, examples, couplings, varied=None):
    """`case` ({label: size}) with every label coupled to a varied one scaled with it, in
    proportion to their example sizes (equal sizes stay equal; a channel count four times another
    stays four times it). None when a partner's size would not be a whole number: PyTorch could
    not take that case. `varied`: the label that was changed (default: every label off its
    example size)."""
    case = dict(case)
    moved = [varied] if varied else [label for label, size in case.items() if size != examples.get(label)]
    for label in moved:
        for group in couplings:
            if label not in group:
                continue
            for partner in group:
                if partner == label or partner in moved:
                    continue
                scaled, rest = divmod(case[label] * examples[partner], examples[label])
                if rest or scaled < 1:
                    return None
                case[partner] = scaled
    return case


# --- the example's value domain ---------------------------------------------------------------
# Generated values must be ones the model accepts: drawn from N(0, 1) they break probabilities,
# sorted boundaries, offsets, boxes and masks, and PyTorch itself then fails or takes paths the
# user never sends. The domain is read once from the example the user gave.

MASK_WORDS = ("mask",)


def looks_like_mask(name, dtype, values=None):
    """An input named like a mask (attention_mask, key_padding_mask) of an integer or bool dtype,
    with 0/1 values when values are known."""
    if not any(word in name.lower() for word in MASK_WORDS) or np.dtype(dtype).kind not in "biu":
        return False
    return values is None or values.size == 0 or bool(np.isin(values, (0, 1)).all())


def _sorted_last(array):
    """Non-decreasing along the last axis (and not constant along it): bucketize boundaries,
    cumulative offsets, sorted lengths."""
    if array.ndim == 0 or array.shape[-1] < 2:
        return False
    steps = np.diff(array.astype(np.float64), axis=-1)
    return bool((steps >= 0).all() and (steps > 0).any())


def _ordered_pairs(array):
    """Columns (j, j + 2) of a last axis of 4 or 5 where the example always has a[..., j] <= a[..., j + 2]
    and sometimes <: corners of boxes, (x1, y1, x2, y2), with an optional leading batch index."""
    if array.ndim < 1 or array.shape[-1] not in (4, 5) or array.dtype.kind not in "fiu":
        return []
    rows = array.reshape(-1, array.shape[-1]).astype(np.float64)
    start = array.shape[-1] - 4
    return [(j, j + 2) for j in (start, start + 1) if (rows[:, j] <= rows[:, j + 2]).all()
            and (rows[:, j] < rows[:, j + 2]).any()]


def domain_of(name, array):
    """What the example's values say about the values the model accepts, as a plain dict:
    kind (float, int, bool), low/high (the example's range), constant (every element one value),
    sorted (non-decreasing along the last axis), starts (its first element along the last axis),
    pairs (box corner columns), mask (0/1 padding mask: valid value and padding side)."""
    array = np.asarray(array)
    domain = {"dtype": str(array.dtype)}
    if is_narrow_float(array.dtype):  # bfloat16, float8: read as the float32 values they hold
        array = array.astype(np.float32)
    if array.dtype.kind == "c":  # complex: no domain beyond its dtype
        return domain
    kind = {"f": "float", "b": "bool"}.get(array.dtype.kind, "int")
    domain["kind"] = kind
    if array.size == 0 or array.dtype.kind not in "fbiu":
        return domain
    values = array.astype(np.float64)
    domain.update(low=float(values.min()), high=float(values.max()), mean=float(values.mean()),
                  std=float(values.std()), integral=bool(np.all(values == np.round(values))))
    if looks_like_mask(name, array.dtype, array):
        domain["mask"] = _mask_convention(array)
        return domain
    if array.size > 1 and domain["low"] == domain["high"]:
        domain["constant"] = array.reshape(-1)[0].item()
        return domain
    if kind != "bool" and _sorted_last(array):
        domain["sorted"] = True
        first = values[..., 0]
        if kind == "int" and (first == first.reshape(-1)[0]).all():  # offsets: start at 0
            domain["starts"] = float(first.reshape(-1)[0])
    pairs = _ordered_pairs(array)
    if pairs:
        domain["pairs"] = pairs
        rows = values.reshape(-1, array.shape[-1])
        domain["columns"] = [(float(rows[:, j].min()), float(rows[:, j].max()),
                              bool(np.all(rows[:, j] == np.round(rows[:, j])))) for j in range(array.shape[-1])]
    return domain


def _mask_convention(array):
    """(valid value, padding side): the value a row starts with under right padding is 'valid';
    an example that never pads says nothing else, so its one value is the valid one."""
    rows = array.reshape(-1, array.shape[-1]) if array.ndim else array.reshape(1, 1)
    first, last = rows[:, 0], rows[:, -1]
    if (first == last).all():
        return {"valid": rows.reshape(-1)[0].item(), "side": "right"}
    left = bool((last == last[0]).all() and (first != last).any())
    valid = last[0].item() if left else first[0].item()
    return {"valid": valid, "side": "left" if left else "right"}


def padded_mask(dims, dtype, convention, rng):
    """A 0/1 mask whose rows (every axis but the last) each keep a random number of valid
    positions, at least one: at least one row full, at least one padded when there are two rows
    (one row: padded), so the padding code runs and the full rows still compare."""
    dims = list(dims)
    if not dims:
        return np.array(convention["valid"], dtype=dtype)
    length = dims[-1]
    rows = int(np.prod(dims[:-1])) if len(dims) > 1 else 1
    lengths = rng.integers(1, length + 1, size=rows)
    if length > 1:
        padded = int(rng.integers(rows))
        lengths[padded] = rng.integers(1, length)
        if rows > 1:
            lengths[(padded + 1 + int(rng.integers(rows - 1))) % rows] = length
    positions = np.arange(length)[None, :]
    valid = positions < lengths[:, None] if convention["side"] == "right" else positions >= length - lengths[:, None]
    on, off = convention["valid"], 1 - int(convention["valid"])
    return np.where(valid, on, off).astype(dtype).reshape(dims)


def _float_values(domain, dims, rng, dtype):
    """Floats inside the example's range: [0, 1] stays in it (probabilities), non-negative stays
    non-negative, anything else follows the example's mean and spread."""
    low, high = domain.get("low"), domain.get("high")
    if low is None:
        return rng.standard_normal(dims).astype(dtype)
    if low >= 0:
        top = high if high > low else max(1.0, 2 * high)
        return rng.uniform(low if high > low else 0.0, top, size=dims).astype(dtype)
    spread = domain["std"] if domain["std"] > 0 else 1.0
    return (domain["mean"] + spread * rng.standard_normal(dims)).astype(dtype)


def _int_values(spec, domain, dims, rng, dtype):
    low, high = spec.get("range") or DEFAULT_INT_RANGE
    if domain.get("low") is not None:
        low, high = int(domain["low"]), int(domain["high"]) + 1
    return rng.integers(low, high, size=dims, endpoint=False).astype(dtype)


def _apply_structure(values, domain, rng):
    """Sorted rows (with the example's first element), then box corners in order."""
    if domain.get("sorted") and not domain.get("pairs") and values.ndim and values.shape[-1] > 0:
        values = np.sort(values, axis=-1)
        if "starts" in domain:
            values[..., 0] = domain["starts"]
            values = np.maximum.accumulate(values, axis=-1)
    if domain.get("pairs") and values.ndim and values.shape[-1] == len(domain["columns"]):
        for j, (low, high, integral) in enumerate(domain["columns"]):
            column = rng.uniform(low, high, size=values.shape[:-1]) if high > low else np.full(values.shape[:-1], low)
            values[..., j] = np.round(column) if integral else column
        for a, b in domain["pairs"]:
            first, second = values[..., a].copy(), values[..., b].copy()
            values[..., a], values[..., b] = np.minimum(first, second), np.maximum(first, second)
    return values


def generate_in_domain(spec, dims, rng, domain=None):
    """Values for one input inside `domain` (domain_of the example; None: the spec's dtype and
    range alone, where a mask-named 0/1 input still gets per-row padding). UsageError for a size
    over MAX_GENERATED_BYTES (a --sweep size of a model family's own inputs, which the engine
    cannot check before Python starts)."""
    dtype = numpy_dtype(spec["dtype"])
    if math.prod(int(d) for d in dims) * dtype.itemsize > MAX_GENERATED_BYTES:
        raise UsageError(f"input '{spec['name']}' at {'x'.join(str(int(d)) for d in dims)} of {spec['dtype']} is "
                         "over 4 GiB; sweep smaller sizes")
    if is_narrow_float(dtype):  # drawn as float32 in the domain, then rounded to the input's type
        return generate_in_domain(dict(spec, dtype="float32"), dims, rng, domain).astype(dtype)
    if domain is None or not domain.get("kind"):
        if looks_like_mask(spec["name"], dtype) and set(spec.get("range") or (0, 2)) <= {0, 1, 2}:
            return padded_mask(dims, dtype, {"valid": 1, "side": "right"}, rng)
        return generate(spec, dims, rng)
    if "mask" in domain:
        return padded_mask(dims, dtype, domain["mask"], rng)
    if "constant" in domain:
        return np.full(dims, domain["constant"], dtype=dtype)
    if dtype.kind == "b":
        return rng.random(dims) > 0.5
    if dtype.kind == "f":
        values = _float_values(domain, dims, rng, dtype)
    elif dtype.kind in "iu":
        values = _int_values(spec, domain, dims, rng, dtype)
    else:
        return generate(spec, dims, rng)
    return _apply_structure(values, domain, rng).astype(dtype)


def cap_offsets(arrays, domains):
    """Offsets (a 1-D sorted integer input starting at 0) index into another 1-D input: each
    stays below the length of the shortest other 1-D integer input of the case."""
    lengths = [array.shape[0] for name, array in arrays.items()
               if array.ndim == 1 and array.dtype.kind in "iu" and not (domains.get(name) or {}).get("sorted")]
    if not lengths:
        return arrays
    limit = min(lengths)
    for name, domain in domains.items():
        array = arrays.get(name)
        if domain and domain.get("sorted") and domain.get("starts") == 0 and array is not None and array.ndim == 1 \
                and array.dtype.kind in "iu":
            arrays[name] = np.minimum(array, max(limit - 1, 0)).astype(array.dtype)
    return arrays
