"""Issue 40's entries, with the code a correct proof shows (ISSUE40_EXPECT)."""
import torch

from .issue40_layers_a import (I40AddOwnLabels, I40BatchNorm1dChannels, I40BatchNorm2dChannels,
    I40CatOtherAxes, I40ChunkGLU, I40Conv1dChannels, I40ConvChannels, I40EinsumWeight, I40GRUFeatures,
    I40GroupNormNoAffine, I40LSTMStateHidden, I40LayerNormMLP, I40LearnedPositions, I40LearnedPositionsExpand,
    I40LinearIn, I40MatmulInner, I40OneHotTable, I40PixelShuffleChannels, I40PixelShufflePlusSkip, I40RPNHead,
    I40RepeatInterleaveOther, I40RepeatsBuffer, I40ReshapeNumelDouble, I40ReshapeOntoOther, I40ShapeAssert,
    I40SlicedPositions, I40SplitSizes, I40SplitSizesSeq, I40SumThreeOwnLabels, I40TiedOutputTable,
    I40UnflattenHeads, I40ViewAsHalf)
from .issue40_layers_b import (I40Bernoulli, I40DropoutTrainingTrue, I40ExpOverflow, I40FiniteAndInfOutputs,
    I40GumbelSoftmaxHard, I40InfMinusInf, I40LayerNormNoEps, I40LogCausalBias, I40LogZeros,
    I40ManualDropoutMask, I40MaskedMaxNegInf, I40MultinomialOnly, I40PartialZeroOverZero, I40RandLikeAdd,
    I40RandintLike, I40RandnBatchShape, I40RandnLikeNoise, I40ReciprocalPartial, I40ReciprocalSignedZero,
    I40Reparameterize, I40RsqrtZeros, I40ScoresAndSample, I40SoftmaxMaskedRow, I40SqrtNegative, I40TorchNormal,
    I40ZeroOverZero)
from .registry import BATCH, SEQ, _bn_eval, add, axes, family, r, ri, shapes


def _i40(seed, cls, *a, **k):
    """A seeded module in eval mode."""
    torch.manual_seed(seed)
    return _bn_eval(cls(*a, **k)) if cls in (I40BatchNorm2dChannels, I40BatchNorm1dChannels) else cls(*a, **k).eval()


ISSUE40_EXPECT = {}  # name -> the code a correct proof shows ("" for a plain pass)


def add40(name, expect, factory):
    add(name, factory)
    ISSUE40_EXPECT[name] = expect


_FIXED, _RANDOM, _NOTHING = "AXIS_FIXED_BY_MODEL", "RANDOM_OUTPUT", "REFERENCE_NOT_FINITE"

family("issue 40: axes the model fixes")
add40("i40_gru_features", _FIXED, lambda: (_i40(4001, I40GRUFeatures), (r(2, 4, 6),),
                                           axes(x={0: "batch", 2: "features"})))
add40("i40_lstm_state_hidden", _FIXED, lambda: (
    _i40(4002, I40LSTMStateHidden), (r(3, 5, 8), r(2, 3, 4), r(2, 3, 4)),
    axes(x={0: "batch", 1: "seq", 2: "features"}, h0={1: "batch", 2: "hidden"}, c0={1: "batch", 2: "hidden"})))
add40("i40_conv_channels", _FIXED, lambda: (_i40(4003, I40ConvChannels), (r(2, 3, 6, 6),),
                                            axes(x={0: "batch", 1: "channels", 2: "h", 3: "w"})))
add40("i40_conv1d_channels", _FIXED, lambda: (_i40(4004, I40Conv1dChannels), (r(2, 4, 9),),
                                              axes(x={1: "channels", 2: "len"})))
add40("i40_rpn_head_channels", _FIXED, lambda: (_i40(4005, I40RPNHead), (r(1, 16, 5, 6),),
                                                axes(feature={0: "batch", 1: "channels", 2: "h", 3: "w"})))
add40("i40_linear_in_features", _FIXED, lambda: (_i40(4006, I40LinearIn), (r(3, 10),),
                                                 axes(x={0: "batch", 1: "in_features"})))
add40("i40_layernorm_mlp_dmodel", _FIXED, lambda: (_i40(4007, I40LayerNormMLP), (r(2, 5, 12),),
                                                   axes(x={0: "batch", 1: "tokens", 2: "d_model"})))
add40("i40_einsum_weight_dim", _FIXED, lambda: (_i40(4008, I40EinsumWeight), (r(2, 3, 8),),
                                                shapes(x={0: "batch", 1: "t", 2: "d"})))
add40("i40_batchnorm2d_channels", _FIXED, lambda: (_i40(4009, I40BatchNorm2dChannels), (r(2, 6, 4, 4),),
                                                   axes(x={0: "batch", 1: "channels"})))
add40("i40_batchnorm1d_channels", _FIXED, lambda: (_i40(4010, I40BatchNorm1dChannels), (r(3, 5, 7),),
                                                   axes(x={0: "batch", 1: "channels", 2: "len"})))
add40("i40_split_fixed_sizes", _FIXED, lambda: (I40SplitSizes(), (r(2, 5),), axes(x={0: "batch", 1: "features"})))
add40("i40_split_fixed_sizes_seq", _FIXED, lambda: (I40SplitSizesSeq(), (r(2, 4, 7),),
                                                    axes(x={0: "batch", 1: "seq", 2: "features"})))
add40("i40_unflatten_heads", _FIXED, lambda: (I40UnflattenHeads(), (r(2, 3, 32),),
                                              axes(x={0: "batch", 1: "seq", 2: "hidden"})))
add40("i40_repeat_interleave_buffer", _FIXED, lambda: (I40RepeatsBuffer(), (r(2, 3, 4),),
                                                       axes(x={0: "batch", 1: "n", 2: "d"})))
add40("i40_learned_positions_fixed", _FIXED, lambda: (_i40(4011, I40LearnedPositions), (r(2, 6, 8),),
                                                      axes(x=SEQ)))
add40("i40_learned_positions_expand", _FIXED, lambda: (_i40(4020, I40LearnedPositionsExpand), (r(2, 6, 8),),
                                                       axes(x=SEQ)))
add40("i40_tied_output_table", _FIXED, lambda: (_i40(4012, I40TiedOutputTable), (r(2, 3, 8), r(20, 8)),
                                                axes(hidden=SEQ, table={0: "vocab"})))
add40("i40_one_hot_table", _FIXED, lambda: (I40OneHotTable(), (ri(0, 10, 2, 5), r(10, 4)),
                                            axes(ids=SEQ, table={0: "vocab"})))
add40("i40_shape_assert", _FIXED, lambda: (_i40(4013, I40ShapeAssert), (r(4, 6),),
                                           axes(x={0: "batch", 1: "features"})))

family("issue 40: axes coupled to others")
add40("i40_reshape_onto_other", "", lambda: (I40ReshapeOntoOther(), (r(3, 4, 6), r(3, 24)),
                                             axes(x={0: "a"}, y={0: "b"})))
add40("i40_reshape_numel_double", "", lambda: (I40ReshapeNumelDouble(), (r(2, 6), r(12)),
                                               axes(x={1: "n"}, y={0: "m"})))
add40("i40_view_as_half", "", lambda: (I40ViewAsHalf(), (r(2, 3, 8), r(2, 6, 4)),
                                       axes(x={0: "batch", 1: "k"}, y={0: "batch", 1: "j"})))
add40("i40_add_own_labels", "", lambda: (I40AddOwnLabels(), (r(2, 5), r(2, 5)),
                                         axes(x={0: "batch", 1: "a"}, y={0: "batch", 1: "b"})))
add40("i40_sum_three_own_labels", "", lambda: (I40SumThreeOwnLabels(), (r(2, 5), r(2, 5), r(2, 5)),
                                               axes(x={0: "batch", 1: "a"}, y={0: "batch", 1: "b"},
                                                    z={0: "batch", 1: "c"})))
add40("i40_matmul_inner_own_labels", "", lambda: (I40MatmulInner(), (r(2, 3, 4), r(2, 4, 5)),
                                                  axes(a={0: "batch", 1: "n", 2: "k"}, b={0: "batch", 1: "k2", 2: "m"})))
add40("i40_cat_batch_own_labels", "", lambda: (I40CatOtherAxes(), (r(2, 3, 4), r(2, 5, 4)),
                                               axes(x={0: "bx", 1: "tx"}, y={0: "by", 1: "ty"})))
add40("i40_repeat_interleave_other", "", lambda: (I40RepeatInterleaveOther(), (r(4, 3), ri(0, 4, 4)),
                                                  axes(x={0: "n"}, repeats={0: "r"})))
add40("i40_pixel_shuffle_channels", "", lambda: (I40PixelShuffleChannels(), (r(2, 8, 3, 3),),
                                                 axes(x={0: "batch", 1: "channels", 2: "h", 3: "w"})))
add40("i40_pixel_shuffle_plus_skip", "", lambda: (I40PixelShufflePlusSkip(), (r(2, 8, 3, 4), r(2, 2, 6, 8)),
                                                  axes(x={0: "batch", 1: "cx", 2: "h", 3: "w"},
                                                       skip={0: "batch", 1: "cs", 2: "hs", 3: "ws"})))
add40("i40_chunk_glu_even", "", lambda: (I40ChunkGLU(), (r(2, 3, 8),), axes(x={0: "batch", 1: "seq", 2: "hidden"})))
add40("i40_groupnorm_no_affine", "", lambda: (_i40(4014, I40GroupNormNoAffine), (r(2, 8, 4, 4),),
                                              axes(x={0: "batch", 1: "channels"})))
add40("i40_sliced_positions", "", lambda: (_i40(4015, I40SlicedPositions), (r(2, 5, 8),), axes(x=SEQ)))

family("issue 40: outputs ending in inf / NaN")
add40("i40_rsqrt_sum_zeros", _NOTHING, lambda: (I40RsqrtZeros(), (r(3, 4),), axes(x=BATCH)))
add40("i40_log_zeros", _NOTHING, lambda: (I40LogZeros(), (r(2, 5),), axes(x=BATCH)))
add40("i40_zero_over_zero", _NOTHING, lambda: (I40ZeroOverZero(), (r(2, 4),), axes(x=BATCH)))
add40("i40_sqrt_negative", _NOTHING, lambda: (I40SqrtNegative(), (r(3, 3),), axes(x=BATCH)))
add40("i40_reciprocal_partial_inf", "", lambda: (I40ReciprocalPartial(), (r(2, 6),), axes(x={0: "batch", 1: "n"})))
add40("i40_reciprocal_signed_zero", "", lambda: (I40ReciprocalSignedZero(), (r(3, 6),), axes(x=BATCH)))
add40("i40_partial_zero_over_zero", "", lambda: (I40PartialZeroOverZero(), (r(2, 6),), axes(x={0: "batch", 1: "n"})))
add40("i40_masked_max_neginf", "", lambda: (I40MaskedMaxNegInf(), (r(2, 4, 6),), axes(scores={0: "batch", 2: "t"})))
add40("i40_softmax_masked_row_nan", "", lambda: (I40SoftmaxMaskedRow(), (r(2, 4, 8), r(2, 5, 8)),
                                                 axes(q={0: "batch", 1: "tq"}, k={0: "batch", 1: "tk"})))
add40("i40_exp_overflow_partial", "", lambda: (I40ExpOverflow(), (r(3, 5),), axes(x=BATCH)))
add40("i40_inf_minus_inf", "", lambda: (I40InfMinusInf(), (r(2, 4),), axes(x=BATCH)))
add40("i40_layernorm_no_eps_rows", "", lambda: (I40LayerNormNoEps(), (r(6, 5),), axes(x={0: "rows"})))
add40("i40_log_causal_bias", "", lambda: (I40LogCausalBias(), (r(2, 5, 5),),
                                          axes(scores={0: "batch", 1: "t", 2: "t"})))
add40("i40_finite_and_all_inf", "", lambda: (I40FiniteAndInfOutputs(), (r(2, 5),), axes(x=BATCH)))

family("issue 40: random operators")
add40("i40_multinomial_only", _RANDOM, lambda: (I40MultinomialOnly(), (r(3, 6),), axes(x=BATCH)))
add40("i40_bernoulli", _RANDOM, lambda: (I40Bernoulli(), (r(3, 5),), axes(x=BATCH)))
add40("i40_randn_like_noise", _RANDOM, lambda: (I40RandnLikeNoise(), (r(2, 6),), axes(x=BATCH)))
add40("i40_rand_like_add", _RANDOM, lambda: (_i40(4016, I40RandLikeAdd), (r(3, 6),), axes(x=BATCH)))
add40("i40_torch_normal", _RANDOM, lambda: (I40TorchNormal(), (r(2, 5),), axes(x=BATCH)))
add40("i40_randint_like", _RANDOM, lambda: (I40RandintLike(), (r(2, 5),), axes(x=BATCH)))
add40("i40_scores_and_sample", _RANDOM, lambda: (_i40(4017, I40ScoresAndSample), (r(4, 6),), axes(x=BATCH)))
add40("i40_dropout_training_true", _RANDOM, lambda: (_i40(4018, I40DropoutTrainingTrue), (r(3, 6),), axes(x=BATCH)))
add40("i40_manual_dropout_mask", _RANDOM, lambda: (I40ManualDropoutMask(), (r(3, 5),), axes(x=BATCH)))
add40("i40_randn_batch_shape", _RANDOM, lambda: (I40RandnBatchShape(), (r(3, 5),), axes(x=BATCH)))
add40("i40_reparameterize", _RANDOM, lambda: (_i40(4019, I40Reparameterize), (r(3, 8),), axes(x=BATCH)))
add40("i40_gumbel_softmax_hard", _RANDOM, lambda: (I40GumbelSoftmaxHard(), (r(3, 5),), axes(x=BATCH)))
