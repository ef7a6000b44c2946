"""The issue-22 entries, one operator family after another (registered in this order)."""
import torch
from torch import nn

from .layers_a import (AdaptiveAvgGlobal, AdaptiveMaxFixed, AdvancedIndex, AllAny, AmaxStdLogsumexp,
    ArgmaxArgmin, Argsort, AvgPool1d, AvgPoolNoPad, BoolMaskIndex, CausalMaskArange, EinsumAttention,
    EinsumBmm, EinsumDiagonal, EinsumOuterSum, EllipsisNone, FloatArange, GRUBidirectional, GRUCellStep,
    GatherDim1, GatherDynamicAxis, IfOnShape, IfOnStaticFlag, IfOnValue, IndexAdd, IndexPutOutOfPlace,
    IndexSelect, IntMean, Interp, InterpToOther, Kthvalue, LSTMCellLoop, LSTMNoState, LSTMWithState, Linspace,
    LoopDynamicLength, LoopOverSequence, LpPool, MaskedFillInput, MaskedSelect, MaxPool3d, MaxPoolCeil,
    MaxPoolUnpool, Median, NegativeIndexing, Nonzero, Norms, PositionalArange, ScatterAdd, ScatterOneHot,
    ScatterReduceAmax, ScriptedWhileLoop, SinusoidalTimestep, SliceSteps, SortDescending, StaticLoop,
    SumMeanProd, TakeAlongTopk, Topk, TopkDynamicK, TorchCond, UniqueCounts, UpsampleModule, WhereBranches,
    WhereOneArg)
from .layers_b import (BatchNorm1dSeq, BatchedNMS, Bitwise, BoolIntCasts, BoolMaskWhere, BoolTensorLogic,
    BoxAreaFilter, BoxConvertClip, BoxIoU, BucketizeBuffer, BucketizeInput, ChannelShuffle, ChunkUnbind,
    ClampUint8, Cummax, Cumprod, Cumsum, CumsumInt, DictOutput, EmbeddingBag2D, EmbeddingBagOffsets,
    EmbeddingBagWeights, EmbeddingPadding, EncoderLayerPadding, Flip, FlipLrRot90, FloatToIntTrunc,
    FloorDivideInt, GeneralizedIoU, HalfRoundTrip, HandAttention, HandRMSNorm, InplaceAddInput,
    InplaceClampInput, InplaceSliceAssignInput, IntClampAbs, IntMatmul, KeyPaddingMask, L2Normalize,
    ListOfHeads, Logcumsumexp, MHACausal, MHAKeyPadding, MaskedMeanPool, NMS, NormBlock, Pad, PixelShuffle,
    PixelUnshuffle, RMSNormBlock, ReflectPadConv, RemainderInt, RoIAlignBoxes, RoIAlignRois, RoIPool, Roll,
    SDPACausal, SDPAMask, ScalarBoolFlag, ScalarIntOffset, ScalarScale, ScalarTemperature, SearchSorted,
    SplitList, TrilMask, TrueDivideInt, TruncDivInt, TupleOfLists, TypeAsDouble)
from .layers_c import (Activations, AffineGrid, Atan2Hypot, Baddbmm, Cdist, Conv1dCausal, ConvTranspose,
    CrossEntropyLoss, DepthwiseDilated, Diff, Erfinv, ExpandRepeat, KwargsMask, MinMaxClamp, Sign,
    SoftmaxVariants, TensorUnfold, TriuIndices, UnfoldPatches, VarArgsConcat, VarArgsSum, ViewAsOther,
    WrappedVarArgs)
from .registry import (BATCH, SEQ, _affine, _bn_eval, _bool_padding, _boxes, _mask, _offsets, _rois, _seed,
    add, axes, family, r, ri, shapes)


family("indexing")
add("index_select", lambda: (IndexSelect(), (r(2, 6, 3), torch.tensor([4, 0, 2])), axes(x=BATCH)))
add("advanced_index", lambda: (AdvancedIndex().eval(), (ri(0, 10, 5),), axes(idx={0: "n"})))
add("bool_mask_index", lambda: (BoolMaskIndex(), (r(3, 4),), axes(x=BATCH)))
add("slice_steps", lambda: (SliceSteps(), (r(2, 6, 5),), shapes(x=BATCH)))
add("ellipsis_none", lambda: (EllipsisNone(), (r(2, 3, 4),), axes(x=BATCH)))
add("index_put_clone", lambda: (IndexPutOutOfPlace(), (r(4, 3), torch.tensor([1, 3])), axes(x={1: "cols"})))
add("masked_fill_input", lambda: (MaskedFillInput(), (r(2, 5), torch.rand(2, 5) > 0.5), axes(x=BATCH, mask=BATCH)))
add("negative_indexing", lambda: (NegativeIndexing(), (r(2, 5, 3),), shapes(x={0: "batch", 1: "len"})))

family("scatter / gather")
add("gather_dim1", lambda: (GatherDim1(), (r(3, 5), ri(0, 5, 3, 2)), axes(x=BATCH, idx=BATCH)))
add("scatter_add", lambda: (ScatterAdd(), (r(3, 4), ri(0, 5, 3, 4)), axes(src=BATCH, idx=BATCH)))
add("scatter_reduce_amax", lambda: (ScatterReduceAmax(), (r(2, 6), ri(0, 4, 2, 6)), axes(src=BATCH, idx=BATCH)))
add("index_add", lambda: (IndexAdd(), (r(5, 3), r(4, 3), torch.tensor([0, 2, 2, 4])), {}))
add("gather_dynamic_axis", lambda: (GatherDynamicAxis(), (r(5, 3),), axes(x={0: "n"})))
add("take_along_topk", lambda: (TakeAlongTopk(), (r(3, 6),), axes(x=BATCH)))
add("scatter_one_hot", lambda: (ScatterOneHot(), (ri(0, 7, 4),), axes(labels=BATCH)))

family("loops")
add("static_loop", lambda: (_seed(1) or StaticLoop().eval(), (r(2, 8),), axes(x=BATCH)))
add("loop_over_sequence", lambda: (_seed(2) or LoopOverSequence().eval(), (r(2, 5, 4),), axes(x=BATCH)))
add("scripted_while_loop", lambda: (ScriptedWhileLoop(), (r(2, 3),), axes(x=BATCH)))
add("loop_dynamic_length", lambda: (LoopDynamicLength(), (r(2, 5, 3),), axes(x=SEQ)))

family("if")
add("if_static_flag", lambda: (_seed(3) or IfOnStaticFlag().eval(), (r(2, 6),), axes(x=BATCH)))
add("if_on_shape", lambda: (IfOnShape(), (r(2, 3, 4, 4),), axes(x=BATCH)))
add("torch_cond", lambda: (TorchCond(), (r(2, 3),), {}))
add("if_on_value", lambda: (IfOnValue(), (r(2, 3) + 1.0,), axes(x=BATCH)))
add("where_branches", lambda: (WhereBranches(), (r(3, 4),), axes(x=BATCH)))

family("RNNs")
add("lstm_h0_c0", lambda: (_seed(4) or LSTMWithState().eval(), (r(2, 5, 5), r(2, 2, 7), r(2, 2, 7)),
                           axes(x={0: "batch", 1: "seq"}, h0={1: "batch"}, c0={1: "batch"})))
add("gru_bidirectional_h0", lambda: (_seed(5) or GRUBidirectional().eval(), (r(6, 3, 4), r(2, 3, 6)),
                                     axes(x={0: "seq", 1: "batch"}, h0={1: "batch"})))
add("lstm_no_state", lambda: (_seed(6) or LSTMNoState().eval(), (r(3, 7, 6),), shapes(x=SEQ)))
add("rnn_list_axes", lambda: (_seed(7) or nn.RNN(5, 3, 1).eval(), (r(6, 4, 5), r(1, 4, 3)),
                              {"dynamic_axes": {"input": [0, 1], "hx": [1]}}))
add("lstm_cell_loop", lambda: (_seed(8) or LSTMCellLoop().eval(), (r(4, 2, 3),), axes(x={1: "batch"})))
add("gru_cell_step", lambda: (_seed(9) or GRUCellStep().eval(), (r(3, 4), r(3, 6)), axes(x=BATCH, h=BATCH)))

family("interpolate")
add("interp_nearest_x2", lambda: (Interp(scale_factor=2, mode="nearest"), (r(1, 2, 5, 5),), axes(x=BATCH)))
add("interp_bilinear_size", lambda: (Interp(size=(7, 9), mode="bilinear", align_corners=False), (r(2, 3, 4, 5),),
                                     axes(x={0: "batch", 2: "h", 3: "w"})))
add("interp_bilinear_align", lambda: (Interp(scale_factor=1.5, mode="bilinear", align_corners=True), (r(1, 2, 6, 6),),
                                      axes(x=BATCH)))
add("interp_bicubic", lambda: (Interp(scale_factor=2, mode="bicubic", align_corners=False), (r(1, 2, 4, 4),),
                               axes(x=BATCH)))
add("interp_to_other", lambda: (InterpToOther(), (r(2, 3, 4, 4), r(2, 3, 8, 6)),
                                axes(x={0: "batch"}, ref={0: "batch", 2: "h", 3: "w"})))
add("interp_trilinear", lambda: (Interp(scale_factor=2, mode="trilinear"), (r(1, 2, 3, 3, 3),), axes(x=BATCH)))
add("interp_nearest_exact", lambda: (Interp(size=(5, 7), mode="nearest-exact"), (r(1, 2, 3, 4),), axes(x=BATCH)))
add("interp_antialias_down", lambda: (Interp(size=(4, 4), mode="bilinear", antialias=True), (r(1, 2, 12, 12),),
                                      axes(x=BATCH)))
add("upsample_conv", lambda: (_seed(10) or UpsampleModule().eval(), (r(2, 3, 5, 5),),
                              axes(x={0: "batch", 2: "h", 3: "w"})))

family("pooling")
add("maxpool_ceil", lambda: (MaxPoolCeil(), (r(2, 3, 8, 8),), axes(x={0: "batch", 2: "h", 3: "w"})))
add("avgpool_no_pad_count", lambda: (AvgPoolNoPad(), (r(2, 3, 7, 7),), axes(x=BATCH)))
add("adaptive_avg_global", lambda: (AdaptiveAvgGlobal(), (r(2, 4, 6, 6),), axes(x={0: "batch", 2: "h", 3: "w"})))
add("adaptive_max_fixed", lambda: (AdaptiveMaxFixed(), (r(2, 3, 6, 6),), axes(x=BATCH)))
add("maxpool_unpool", lambda: (MaxPoolUnpool(), (r(1, 2, 6, 6),), axes(x=BATCH)))
add("avgpool1d", lambda: (AvgPool1d(), (r(2, 3, 12),), axes(x=BATCH)))
add("lp_pool2d", lambda: (LpPool(), (r(2, 3, 6, 6),), axes(x=BATCH)))
add("maxpool3d", lambda: (MaxPool3d(), (r(1, 2, 4, 4, 4),), axes(x=BATCH)))

family("reductions")
add("sum_mean_prod", lambda: (SumMeanProd(), (r(2, 3, 4),), axes(x=BATCH)))
add("amax_std_logsumexp", lambda: (AmaxStdLogsumexp(), (r(3, 5),), axes(x=BATCH)))
add("norms", lambda: (Norms(), (r(2, 3, 4),), axes(x=BATCH)))
add("all_any", lambda: (AllAny(), (r(3, 4),), axes(x=BATCH)))
add("argmax_argmin", lambda: (ArgmaxArgmin(), (r(3, 6),), axes(x=BATCH)))
add("median_dim", lambda: (Median(), (r(3, 5),), axes(x=BATCH)))
add("int_mean_sum", lambda: (IntMean(), (ri(0, 9, 3, 4),), axes(counts=BATCH)))

family("einsum")
add("einsum_bmm", lambda: (EinsumBmm(), (r(2, 3, 4), r(2, 4, 5)), axes(a=BATCH, b=BATCH)))
add("einsum_attention", lambda: (EinsumAttention(), (r(2, 2, 5, 4), r(2, 2, 6, 4)),
                                 axes(q={0: "batch", 2: "tq"}, k={0: "batch", 2: "tk"})))
add("einsum_diagonal", lambda: (EinsumDiagonal(), (r(2, 4, 4),), axes(x=BATCH)))
add("einsum_outer_sum", lambda: (EinsumOuterSum(), (r(2, 3), r(2, 4)), axes(u=BATCH, v=BATCH)))

family("topk / sort")
add("topk", lambda: (Topk(), (r(3, 8),), axes(x=BATCH)))
add("sort_descending", lambda: (SortDescending(), (r(2, 6),), axes(x=BATCH)))
add("argsort", lambda: (Argsort(), (r(3, 5),), axes(x=BATCH)))
add("topk_dynamic_k", lambda: (TopkDynamicK(), (r(2, 8),), axes(x={0: "batch", 1: "n"})))
add("kthvalue", lambda: (Kthvalue(), (r(3, 5),), axes(x=BATCH)))

family("nonzero")
add("nonzero", lambda: (Nonzero(), (r(3, 4),), axes(x=BATCH)))
add("where_one_arg", lambda: (WhereOneArg(), (r(3, 4),), axes(x=BATCH)))
add("masked_select", lambda: (MaskedSelect(), (r(3, 4),), axes(x=BATCH)))
add("unique_counts", lambda: (UniqueCounts(), (ri(0, 6, 10),), axes(ids={0: "n"})))

family("arange with dynamic sizes")
add("positional_arange", lambda: (_seed(11) or PositionalArange().eval(), (r(2, 6, 8),), axes(x=SEQ)))
add("float_arange", lambda: (FloatArange(), (r(2, 4),), axes(x={0: "batch", 1: "n"})))
add("causal_mask_arange", lambda: (CausalMaskArange(), (r(2, 5, 5),), axes(scores={0: "batch", 1: "t", 2: "t"})))
add("linspace_dynamic", lambda: (Linspace(), (r(2, 5),), axes(x={0: "batch", 1: "n"})))
add("sinusoidal_timestep", lambda: (SinusoidalTimestep(), (torch.tensor([3, 17, 250]),), axes(t=BATCH)))

family("casts")
add("float_to_int_trunc", lambda: (FloatToIntTrunc(), (r(3, 4),), axes(x=BATCH)))
add("half_round_trip", lambda: (HalfRoundTrip(), (r(3, 4),), axes(x=BATCH)))
add("bool_int_casts", lambda: (BoolIntCasts(), (r(3, 4), ri(0, 3, 3)), axes(x=BATCH, ids=BATCH)))
add("clamp_uint8", lambda: (ClampUint8(), (torch.rand(1, 3, 4, 4),), axes(img=BATCH)))
add("type_as_double", lambda: (TypeAsDouble(), (r(2, 5), r(2, 5)), axes(x=BATCH, y=BATCH)))

family("integer ops")
add("floor_divide_int", lambda: (FloorDivideInt(), (ri(-20, 20, 3, 4), ri(1, 5, 3, 4)), axes(a=BATCH, b=BATCH)))
add("remainder_int", lambda: (RemainderInt(), (ri(-20, 20, 3, 4),), axes(a=BATCH)))
add("bitwise_int32", lambda: (Bitwise(), (ri(0, 64, 3, 4).int(), ri(0, 64, 3, 4).int()), axes(a=BATCH, b=BATCH)))
add("int_matmul", lambda: (IntMatmul(), (ri(-5, 5, 3, 4), ri(-5, 5, 4, 2)), axes(a=BATCH)))
add("int_clamp_abs", lambda: (IntClampAbs(), (ri(-9, 9, 3, 4), ri(-9, 9, 3, 4)), axes(a=BATCH, b=BATCH)))
add("true_divide_int", lambda: (TrueDivideInt(), (ri(-9, 9, 3, 4), ri(1, 6, 3, 4)), axes(a=BATCH, b=BATCH)))
add("trunc_divide_int", lambda: (TruncDivInt(), (ri(-20, 20, 3, 4), ri(1, 5, 3, 4)), axes(a=BATCH, b=BATCH)))

family("detection ops")
add("nms", lambda: (NMS(), (_boxes(8), torch.rand(8)), axes(boxes={0: "n"}, scores={0: "n"})))
add("batched_nms", lambda: (BatchedNMS(), (_boxes(8), torch.rand(8), ri(0, 3, 8)),
                            axes(boxes={0: "n"}, scores={0: "n"}, classes={0: "n"})))
add("roi_align_rois", lambda: (RoIAlignRois(), (r(2, 3, 8, 8), _rois(4, 2)), axes(rois={0: "k"})))
add("roi_align_boxes", lambda: (RoIAlignBoxes(), (r(1, 3, 10, 10), _boxes(3, 10.0, 10.0)), axes(boxes={0: "k"})))
add("roi_pool", lambda: (RoIPool(), (r(1, 2, 8, 8), _rois(3, 1)), axes(rois={0: "k"})))
add("box_iou", lambda: (BoxIoU(), (_boxes(4), _boxes(5)), axes(a={0: "n"}, b={0: "m"})))
add("box_convert_clip", lambda: (BoxConvertClip(), (torch.cat([torch.rand(5, 2) * 20, torch.rand(5, 2) * 8 + 1], 1),),
                                 axes(boxes={0: "n"})))
add("generalized_box_iou", lambda: (GeneralizedIoU(), (_boxes(3), _boxes(4)), axes(a={0: "n"}, b={0: "m"})))
add("box_area_filter", lambda: (BoxAreaFilter(), (_boxes(6),), axes(boxes={0: "n"})))

family("flips")
add("flip_hw", lambda: (Flip(), (r(2, 3, 4, 5),), axes(x=BATCH)))
add("fliplr_rot90", lambda: (FlipLrRot90(), (r(2, 3, 4),), axes(x=BATCH)))
add("roll", lambda: (Roll(), (r(2, 4, 5),), axes(x=BATCH)))

family("pads")
add("pad_constant_value", lambda: (Pad((1, 2, 0, 1), value=-0.5), (r(2, 3, 4),), axes(x=BATCH)))
add("pad_reflect_conv", lambda: (_seed(12) or ReflectPadConv().eval(), (r(1, 3, 8, 8),), axes(x={0: "batch", 2: "h", 3: "w"})))
add("pad_replicate", lambda: (Pad((1, 1, 2, 0), mode="replicate"), (r(2, 3, 4, 4),), axes(x=BATCH)))
add("pad_circular", lambda: (Pad((2, 1), mode="circular"), (r(2, 3, 6),), axes(x=BATCH)))
add("pad_negative_crop", lambda: (Pad((-1, -1, 0, 0)), (r(2, 3, 5, 6),), axes(x=BATCH)))

family("pixel shuffle")
add("pixel_shuffle", lambda: (_seed(13) or PixelShuffle().eval(), (r(2, 3, 4, 4),), axes(x={0: "batch", 2: "h", 3: "w"})))
add("pixel_unshuffle", lambda: (PixelUnshuffle(), (r(2, 3, 4, 6),), axes(x=BATCH)))
add("channel_shuffle", lambda: (ChannelShuffle(), (r(2, 6, 3, 3),), axes(x=BATCH)))

family("embedding bags")
add("embedding_bag_offsets", lambda: (_seed(14) or EmbeddingBagOffsets().eval(), (ri(0, 20, 9), _offsets(9, 3)),
                                      axes(ids={0: "n_ids"}, offsets={0: "bags"})))
add("embedding_bag_2d", lambda: (_seed(15) or EmbeddingBag2D().eval(), (ri(0, 20, 3, 4),), axes(ids=BATCH)))
add("embedding_bag_weights", lambda: (_seed(16) or EmbeddingBagWeights().eval(), (ri(0, 15, 7), _offsets(7, 2), torch.rand(7)),
                                      axes(ids={0: "n_ids"}, weights={0: "n_ids"})))
add("embedding_padding_idx", lambda: (_seed(17) or EmbeddingPadding().eval(), (ri(0, 12, 2, 5),), axes(ids=SEQ)))

family("bucketize")
add("bucketize_buffer", lambda: (BucketizeBuffer(), (r(3, 4),), axes(x=BATCH)))
add("bucketize_input", lambda: (BucketizeInput(), (r(3, 4), torch.tensor([-1.0, 0.0, 0.3, 1.0])), axes(x=BATCH)))
add("searchsorted", lambda: (SearchSorted(), (torch.sort(r(2, 6)).values, r(2, 3)),
                             axes(sorted_seq=BATCH, values=BATCH)))

family("masks")
add("key_padding_softmax", lambda: (KeyPaddingMask(), (r(2, 5, 5), _mask(2, 5)),
                                    axes(scores={0: "batch", 1: "t", 2: "t"}, attention_mask={0: "batch", 1: "t"})))
add("bool_mask_where", lambda: (BoolMaskWhere(), (r(2, 5), torch.rand(2, 5) > 0.3), axes(x=BATCH, keep=BATCH)))
add("masked_mean_pool", lambda: (MaskedMeanPool(), (r(2, 6, 4), _mask(2, 6)),
                                 axes(hidden=SEQ, attention_mask=SEQ)))
add("tril_triu", lambda: (TrilMask(), (r(2, 4, 4),), axes(x=BATCH)))

family("cumsum")
add("cumsum_reverse", lambda: (Cumsum(), (r(2, 5),), axes(x=SEQ)))
add("cumprod", lambda: (Cumprod(), (torch.rand(2, 5) + 0.5,), axes(x=BATCH)))
add("cummax", lambda: (Cummax(), (r(2, 5),), axes(x=BATCH)))
add("logcumsumexp", lambda: (Logcumsumexp(), (r(2, 5),), axes(x=BATCH)))
add("cumsum_int_positions", lambda: (CumsumInt(), (_mask(2, 6),), axes(attention_mask=SEQ)))

family("normalization")
add("batchnorm2d", lambda: (_seed(18) or _bn_eval(NormBlock(nn.BatchNorm2d(8))), (r(2, 3, 5, 5),), axes(x=BATCH)))
add("layernorm", lambda: (_seed(19) or _affine(nn.LayerNorm(6)), (r(2, 4, 6),), axes(input=SEQ)))
add("groupnorm", lambda: (_seed(20) or _affine(NormBlock(nn.GroupNorm(2, 8))), (r(2, 3, 5, 5),), axes(x=BATCH)))
add("instancenorm2d", lambda: (_seed(21) or _affine(NormBlock(nn.InstanceNorm2d(8, affine=True))), (r(2, 3, 5, 5),),
                               axes(x={0: "batch", 2: "h", 3: "w"})))
add("l2_normalize", lambda: (L2Normalize(), (r(3, 8),), axes(x=BATCH)))
add("rmsnorm", lambda: (_seed(22) or RMSNormBlock().eval(), (r(2, 3, 16),), axes(x=SEQ)))
add("hand_rmsnorm", lambda: (_seed(23) or HandRMSNorm().eval(), (r(2, 3, 16),), axes(x=SEQ)))
add("local_response_norm", lambda: (nn.LocalResponseNorm(3).eval(), (r(2, 6, 4, 4),), axes(input=BATCH)))
add("batchnorm1d_seq", lambda: (_seed(24) or _bn_eval(BatchNorm1dSeq()), (r(3, 6, 5),), axes(x={0: "batch", 2: "len"})))

family("attention")
add("mha_key_padding", lambda: (_seed(25) or MHAKeyPadding().eval(), (r(2, 5, 16), _bool_padding(2, 5)),
                                axes(x=SEQ, key_padding_mask=SEQ)))
add("sdpa_bool_mask", lambda: (SDPAMask(), (r(2, 2, 4, 8), r(2, 2, 6, 8), r(2, 2, 6, 8), torch.rand(2, 1, 4, 6) > 0.2),
                               axes(q=BATCH, k=BATCH, v=BATCH, attn_mask=BATCH)))
add("sdpa_causal", lambda: (SDPACausal(), (r(2, 2, 5, 8), r(2, 2, 5, 8), r(2, 2, 5, 8)),
                            axes(q={0: "batch", 2: "t"}, k={0: "batch", 2: "t"}, v={0: "batch", 2: "t"})))
add("encoder_layer_padding", lambda: (_seed(26) or EncoderLayerPadding().eval(), (r(2, 5, 16), _bool_padding(2, 5)),
                                      axes(x=SEQ, src_key_padding_mask=SEQ)))
add("hand_attention_mask", lambda: (_seed(27) or HandAttention().eval(), (r(2, 6, 16), _mask(2, 6)),
                                    axes(x=SEQ, attention_mask=SEQ)))
add("mha_causal_weights", lambda: (_seed(28) or MHACausal().eval(), (r(2, 5, 8),), axes(x=SEQ)))

family("List[Tensor] outputs")
add("split_list_output", lambda: (SplitList(), (r(2, 6, 3),), axes(x=BATCH)))
add("chunk_unbind_tuple", lambda: (ChunkUnbind(), (r(2, 3, 4),), axes(x=BATCH)))
add("list_of_heads", lambda: (_seed(29) or ListOfHeads().eval(), (r(3, 8),), axes(x=BATCH)))
add("tuple_of_lists", lambda: (TupleOfLists(), (r(2, 6),), axes(x=BATCH)))
add("dict_output", lambda: (DictOutput(), (r(2, 5),), axes(x=BATCH)))

family("in-place ops on inputs")
add("inplace_add_input", lambda: (InplaceAddInput(), (r(2, 3),), axes(x=BATCH)))
add("inplace_slice_assign_input", lambda: (InplaceSliceAssignInput(), (r(3, 4),), axes(x=BATCH)))
add("inplace_clamp_two_inputs", lambda: (InplaceClampInput(), (r(2, 4), r(2, 4)), axes(x=BATCH, y=BATCH)))

family("0-d and bool inputs")
add("scalar_scale", lambda: (ScalarScale(), (r(2, 3), torch.tensor(1.5)), axes(x=BATCH)))
add("scalar_bool_flag", lambda: (ScalarBoolFlag(), (r(2, 3), torch.tensor(True)), axes(x=BATCH)))
add("scalar_int_offset", lambda: (ScalarIntOffset(), (ri(0, 10, 2, 4), torch.tensor(3)), axes(ids=BATCH)))
add("bool_tensor_logic", lambda: (BoolTensorLogic(), (torch.rand(3, 4) > 0.5, torch.rand(3, 4) > 0.5), axes(a=BATCH, b=BATCH)))
add("scalar_temperature", lambda: (ScalarTemperature(), (r(2, 5), torch.tensor(0.7)), axes(logits=BATCH)))

family("forward(*args) and kwargs")
add("varargs_sum", lambda: (_seed(30) or VarArgsSum().eval(), (r(2, 4), r(2, 4), r(2, 4)), {}))
add("varargs_concat_dynamic", lambda: (VarArgsConcat(), (r(2, 3), r(2, 2)),
                                       axes(input_0=BATCH, input_1=BATCH)))
add("kwargs_mask", lambda: (_seed(31) or KwargsMask().eval(), (r(2, 4, 6),),
                            {"kwargs": {"mask": _mask(2, 4), "scale": 0.5}, **axes(x=SEQ, mask=SEQ)}))
add("wrapped_varargs_dict", lambda: (_seed(32) or WrappedVarArgs().eval(), (ri(0, 30, 2, 5), _mask(2, 5)),
                                     axes(input_0=SEQ, input_1=SEQ)))

family("misc layers users hit")
add("conv_transpose", lambda: (_seed(33) or ConvTranspose().eval(), (r(2, 4, 5, 5),), axes(x={0: "batch", 2: "h", 3: "w"})))
add("depthwise_dilated", lambda: (_seed(34) or DepthwiseDilated().eval(), (r(2, 6, 7, 7),), axes(x=BATCH)))
add("conv1d_causal", lambda: (_seed(35) or Conv1dCausal().eval(), (r(2, 4, 9),), axes(x={0: "batch", 2: "len"})))
add("activations", lambda: (Activations(), (r(3, 6),), axes(x=BATCH)))
add("softmax_variants", lambda: (SoftmaxVariants(), (r(3, 6),), axes(x=BATCH)))
add("expand_repeat_tile", lambda: (ExpandRepeat(), (r(2, 4),), axes(x=BATCH)))
add("unfold_patches", lambda: (UnfoldPatches(), (r(2, 3, 4, 4),), axes(x=BATCH)))
add("tensor_unfold", lambda: (TensorUnfold(), (r(2, 9),), axes(x=BATCH)))
add("cross_entropy", lambda: (CrossEntropyLoss(), (r(4, 5), ri(0, 5, 4)), axes(logits=BATCH, target=BATCH)))
add("affine_grid_sample", lambda: (AffineGrid(), (r(2, 3, 6, 6), torch.eye(2, 3)[None].repeat(2, 1, 1) + 0.1 * r(2, 2, 3)),
                                   {}))
add("tensor_clamp_bounds", lambda: (MinMaxClamp(), (r(2, 5), torch.full((2, 5), -0.5), torch.full((2, 5), 0.7)),
                                    axes(x=BATCH, lo=BATCH, hi=BATCH)))
add("view_as_other_shape", lambda: (ViewAsOther(), (r(2, 12), r(2, 3, 4)), axes(x=BATCH, y=BATCH)))
add("erfinv_ndtri", lambda: (Erfinv(), (torch.rand(3, 4),), axes(p=BATCH)))
add("atan2_hypot", lambda: (Atan2Hypot(), (r(3, 4), r(3, 4)), axes(y=BATCH, x=BATCH)))
add("triu_indices_gather", lambda: (TriuIndices(), (r(2, 4, 4),), axes(x=BATCH)))
add("diff", lambda: (Diff(), (r(2, 6),), axes(x=SEQ)))
add("cdist", lambda: (Cdist(), (r(2, 4, 3), r(2, 5, 3)), axes(a={0: "batch", 1: "n"}, b={0: "batch", 1: "m"})))
add("baddbmm", lambda: (Baddbmm(), (r(2, 3, 5), r(2, 3, 4), r(2, 4, 5)), axes(c=BATCH, a=BATCH, b=BATCH)))
add("sign_floor_round_frac", lambda: (Sign(), (r(3, 4) * 3,), axes(x=BATCH)))
