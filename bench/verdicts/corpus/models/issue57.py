"""Issue 57's entries: the export API users call (torch.onnx.export's names and axes, torch.export's
pytrees, dtypes and derived Dims), outputs as the exporters write them, RNNs and repeats."""
import torch
from torch.export import Dim

from . import issue57_layers as L
from .registry import BATCH, add, axes, family, r, ri


def _m(seed, cls):
    torch.manual_seed(seed)
    return cls().eval()


def _named(**options):
    return options


def _dims(**spec):
    """dynamic_shapes given as they are (Dims, derived Dims, Dim.STATIC/AUTO, pytrees, tuples)."""
    return {"dynamic_shapes": spec}


def _tuple_dims(*spec):
    return {"dynamic_shapes": tuple(spec)}


B = Dim("batch", min=1, max=64)
D = Dim("d", min=2, max=64)
T = Dim("seq", min=1, max=64)

family("issue 57: torch.onnx.export's own call")
add("i57_cnn_named_axes", lambda: (_m(5701, L.I57SmallCNN), (r(2, 3, 16, 16),), _named(
    input_names=["input_image"], output_names=["output_logits"], opset_version=18,
    dynamic_axes={"input_image": {0: "batch_size"}, "output_logits": {0: "batch_size"}})))
add("i57_two_heads_named", lambda: (_m(5702, L.I57TwoHeads), (r(3, 6), torch.ones(3)), _named(
    input_names=["feats", "valid"], output_names=["class_logits", "boxes"],
    dynamic_axes={"feats": {0: "n"}, "valid": {0: "n"}, "class_logits": {0: "n"}, "boxes": {0: "n"}})))
add("i57_fewer_output_names", lambda: (_m(5703, L.I57TwoHeads), (r(3, 6), torch.ones(3)), _named(
    output_names=["class_logits"], dynamic_axes={"features": {0: "n"}, "mask": {0: "n"}})))
add("i57_axes_as_lists", lambda: (_m(5704, L.I57SeqTagger), (ri(0, 50, 2, 7),), _named(
    input_names=["tokens"], output_names=["tags"], dynamic_axes={"tokens": [0, 1], "tags": [0, 1]})))
add("i57_output_axis_only_declared", lambda: (_m(5705, L.I57SmallCNN), (r(2, 3, 16, 16),), _named(
    output_names=["logits"], dynamic_axes={"x": {0: "batch"}, "logits": {0: "batch"}})))

family("issue 57: pytree inputs")
add("i57_dict_input", lambda: (_m(5710, L.I57DictInput), ({"image": r(3, 6), "meta": r(3, 3)},),
                               _dims(batch={"image": {0: B}, "meta": {0: B}})))
add("i57_list_input", lambda: (_m(5711, L.I57ListInput), ([r(2, 5), r(2, 5), r(2, 5)],),
                               _dims(parts=[{0: B}, {0: B}, {0: B}])))
add("i57_tuple_input", lambda: (L.I57TupleInput(), ((r(4, 3), r(4, 3)), r(4, 3)),
                                _dims(pair=({0: B}, {0: B}), scale={0: B})))
add("i57_nested_input", lambda: (_m(5712, L.I57NestedInput), ({"features": r(2, 6), "extras": [r(2, 4), r(2, 4)]},),
                                 _dims(batch={"features": {0: B}, "extras": [{0: B}, {0: B}]})))
add("i57_dict_with_flag", lambda: (L.I57DictWithFlag(), ({"x": r(3, 4), "activate": True},),
                                   _dims(batch={"x": {0: B}})))
add("i57_keyword_dict", lambda: (L.I57KeywordDict(), (r(3, 4),), dict(
    kwargs={"extras": {"bias": r(3, 4), "gain": r(3, 4)}}, dynamic_axes={"x": {0: "batch"}, "extras_bias": {0: "batch"},
                                                                         "extras_gain": {0: "batch"}})))

family("issue 57: input dtypes")
add("i57_bfloat16_input", lambda: (_m(5720, L.I57Bf16Linear), (r(3, 8).to(torch.bfloat16),), _dims(x={0: B})))
add("i57_float16_input", lambda: (_m(5721, L.I57HalfInput), (r(3, 8).half(),), _dims(x={0: B})))
add("i57_float8_input", lambda: (L.I57Float8Input(), (r(3, 4).to(torch.float8_e4m3fn),), _dims(x={0: B})))
add("i57_complex_input", lambda: (L.I57ComplexInput(), (torch.randn(3, 4, dtype=torch.complex64),), _dims(z={0: B})))
add("i57_int8_input", lambda: (_m(5722, L.I57Int8Input), (ri(-100, 100, 3, 6).to(torch.int8),), axes(q=BATCH)))
add("i57_uint8_image", lambda: (_m(5723, L.I57Uint8Image), (ri(0, 256, 2, 3, 9, 9).to(torch.uint8),),
                                axes(image={0: "batch", 2: "h", 3: "w"})))
add("i57_float64_input", lambda: (L.I57Float64Input(), (r(3, 5).double(),), axes(x={0: "batch", 1: "n"})))
add("i57_no_inputs", lambda: (_m(5724, L.I57NoInputs), (), {}))

family("issue 57: outputs as the exporter writes them")
add("i57_rfft", lambda: (L.I57Rfft(), (r(3, 16),), _dims(x={0: B})))
add("i57_stft", lambda: (L.I57Stft(), (r(2, 64),), _dims(x={0: B})))
add("i57_spectrum_and_size", lambda: (L.I57SpectrumAndSize(), (r(3, 16),), _dims(x={0: B})))
add("i57_symfloat_output", lambda: (L.I57SymFloat(), (r(4, 5),), _dims(x={0: B})))
add("i57_symbool_output", lambda: (L.I57SymBool(), (r(4, 5),), _dims(x={0: B})))
add("i57_none_outputs", lambda: (L.I57NoneOutputs(), (r(3, 5),), axes(x=BATCH)))
add("i57_dict_none_outputs", lambda: (L.I57DictNoneOutputs(), (r(3, 5),), axes(x=BATCH)))
add("i57_complex_mul", lambda: (L.I57ComplexMul(), (r(3, 4, 2),), _dims(x={0: B})))

family("issue 57: related axes")
add("i57_derived_plus_one", lambda: (L.I57PairOffset(), (r(5, 6), r(7, 4)), _dims(x={1: D}, y={0: D + 1})))
add("i57_derived_double", lambda: (L.I57PairDouble(), (r(3, 4), r(3, 8)), _dims(x={1: D}, y={1: 2 * D})))
add("i57_derived_minus_one", lambda: (L.I57PairMinusOne(), (r(2, 6), r(2, 5)), _dims(x={1: D}, y={1: D - 1})))
add("i57_tuple_shapes_kwargs", lambda: (L.I57Keywords(), (r(4, 3),), dict(
    kwargs={"shift": r(1, 3), "scale": r(4, 3)}, dynamic_shapes=({0: B}, {0: B, 1: Dim.STATIC}, None))))
add("i57_dim_static", lambda: (L.I57Keywords(), (r(4, 3), r(4, 3), r(4, 3)), _tuple_dims(
    {0: B, 1: Dim.STATIC}, {0: B, 1: Dim.STATIC}, {0: B, 1: Dim.STATIC})))
add("i57_dim_auto", lambda: (L.I57Keywords(), (r(4, 3), r(4, 3), r(4, 3)), _tuple_dims(
    {0: Dim.AUTO}, {0: Dim.AUTO}, {0: Dim.AUTO})))
add("i57_dim_min_two", lambda: (L.I57Bounded(), (r(4, 3),), _dims(x={0: Dim("rows", min=2, max=32)})))

family("issue 57: RNNs and repeats with dynamic sizes")
add("i57_gru_bidirectional_seq", lambda: (_m(5730, L.I57GRUBidirectional), (r(2, 11, 4),),
                                          axes(x={0: "batch", 1: "seq"})))
add("i57_lstm_state_seq", lambda: (_m(5731, L.I57LSTMState), (r(2, 9, 4),), axes(x={0: "batch", 1: "seq"})))
add("i57_elman_seq", lambda: (_m(5732, L.I57Elman), (r(2, 11, 4),), axes(x={0: "batch", 1: "seq"})))
add("i57_repeat_interleave_dim", lambda: (L.I57RepeatInterleaveDim(), (r(2, 5, 3),), _dims(x={0: B, 1: T})))
add("i57_repeat_interleave_tensor", lambda: (L.I57RepeatInterleaveTensor(), (r(4, 3), torch.tensor([1, 2, 1, 3])),
                                             axes(x={0: "n"}, repeats={0: "n"})))
add("i57_zero_size_view", lambda: (L.I57ZeroSizeView(), (r(3, 4),), _dims(x={0: B})))
