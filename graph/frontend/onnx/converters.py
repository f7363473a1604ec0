"""The table from ONNX op type to converter: every operator the importer takes,
in one place (:func:`.importer.supported_ops` lists it)."""
from __future__ import annotations

from .convert_basic import (
    _binary, _bitcast, _cast, _cast_like, _constant, _constant_of_shape, _div, _dropout, _identity, _mod, _pow, _range,
    _shape, _size, _unary, _variadic,
)
from .convert_control import _if, _loop, _scan
from .convert_deform import _deform_conv
from .convert_data import (
    _arg, _compress, _cumsum, _depth_to_space, _non_zero, _one_hot, _reduce, _reduce_log_sum_exp, _scatter_elements,
    _scatter_nd, _space_to_depth, _topk, _trilu, _unique,
)
from .convert_misc import (
    _affine_grid, _bit_shift, _center_crop_pad, _det, _dft, _eye_like, _gather_nd, _grid_sample,
    _group_norm, _hardmax, _is_inf, _lp_normalization, _lp_pool, _max_unpool, _mean_variance_normalization,
    _mel_weight_matrix, _nll_loss, _reverse_sequence, _shrink, _softmax_cross_entropy_loss, _stft, _window,
)
from .convert_nn import (
    _batch_norm, _celu, _clip, _col2im, _conv, _conv_transpose, _einsum, _elu, _gelu, _gemm, _global_pool,
    _hard_sigmoid, _hard_swish, _instance_norm, _layer_norm, _leaky_relu, _lrn, _matmul, _mish, _pool, _prelu,
    _rms_norm, _rotary_embedding, _selu, _softmax, _softplus, _softsign, _swish, _thresholded_relu,
)
from .convert_quant import (
    _conv_integer, _dequantize_linear, _dynamic_quantize_linear, _matmul_integer, _qlinear_conv, _qlinear_matmul,
    _quantize_linear,
)
from .convert_recurrent import _recurrent
from .convert_resize import _resize
from .convert_sequence import (
    _concat_from_sequence, _optional, _optional_get_element, _optional_has_element, _sequence_at, _sequence_construct,
    _sequence_empty, _sequence_erase, _sequence_insert, _sequence_length, _split_to_sequence,
)
from .convert_shape import (
    _concat, _expand, _flatten, _gather, _gather_elements, _pad, _reshape, _slice, _split, _squeeze, _tile,
    _tensor_scatter, _transpose, _unsqueeze, _where,
)
from .convert_random import RANDOM_CONVERTERS
from .convert_text import TEXT_CONVERTERS
from .convert_vision import _non_max_suppression, _roi_align


_CONVERTERS = {
    # element-wise
    "Add": _binary("add"), "Sub": _binary("subtract"), "Mul": _binary("multiply"), "Div": _div, "Pow": _pow,
    "Mod": _mod, "Neg": _unary("negative"), "Abs": _unary("abs"), "Exp": _unary("exp"), "Log": _unary("log"),
    "Sqrt": _unary("sqrt"), "Reciprocal": _unary("reciprocal"), "Floor": _unary("floor"), "Ceil": _unary("ceil"),
    "Round": _unary("round"), "Sign": _unary("sign"), "Sin": _unary("sin"), "Cos": _unary("cos"),
    "Tan": _unary("tan"), "Asin": _unary("asin"), "Acos": _unary("acos"), "Atan": _unary("atan"),
    "Sinh": _unary("sinh"), "Cosh": _unary("cosh"), "Asinh": _unary("asinh"), "Acosh": _unary("acosh"),
    "Atanh": _unary("atanh"),
    "Erf": _unary("erf"), "Sigmoid": _unary("sigmoid"), "Tanh": _unary("tanh"), "Relu": _unary("nn.relu"),
    "Equal": _binary("equal"), "Less": _binary("less"), "LessOrEqual": _binary("less_equal"),
    "Greater": _binary("greater"), "GreaterOrEqual": _binary("greater_equal"), "And": _binary("logical_and"),
    "Or": _binary("logical_or"), "Xor": _binary("logical_xor"), "Not": _unary("logical_not"),
    "Sum": _variadic("add"), "Mean": _variadic("add", mean=True), "Max": _variadic("maximum"),
    "Min": _variadic("minimum"),
    # activations
    "LeakyRelu": _leaky_relu, "PRelu": _prelu, "Gelu": _gelu, "HardSigmoid": _hard_sigmoid, "HardSwish": _hard_swish,
    "Elu": _elu, "Selu": _selu, "Celu": _celu, "ThresholdedRelu": _thresholded_relu, "Mish": _mish,
    "Softplus": _softplus, "Softsign": _softsign, "Clip": _clip, "Swish": _swish,
    "Softmax": _softmax("nn.softmax"), "LogSoftmax": _softmax("nn.log_softmax"),
    # neural network
    "Conv": _conv, "ConvTranspose": _conv_transpose, "BatchNormalization": _batch_norm,
    "InstanceNormalization": _instance_norm, "LayerNormalization": _layer_norm, "LRN": _lrn,
    "RMSNormalization": _rms_norm, "RotaryEmbedding": _rotary_embedding,
    "MaxPool": _pool("max"), "AveragePool": _pool("avg"), "GlobalAveragePool": _global_pool("avg"),
    "GlobalMaxPool": _global_pool("max"), "MatMul": _matmul, "Gemm": _gemm, "Einsum": _einsum, "Dropout": _dropout,
    "Col2Im": _col2im,
    # shapes and layout
    "Flatten": _flatten, "Reshape": _reshape, "Transpose": _transpose, "Concat": _concat, "Split": _split,
    "Slice": _slice, "Gather": _gather, "GatherElements": _gather_elements, "Unsqueeze": _unsqueeze,
    "TensorScatter": _tensor_scatter, "Squeeze": _squeeze, "Expand": _expand, "Tile": _tile, "Where": _where,
    "Pad": _pad,
    "Identity": _identity, "Cast": _cast, "BitCast": _bitcast, "CastLike": _cast_like, "DepthToSpace": _depth_to_space,
    "SpaceToDepth": _space_to_depth, "Resize": _resize, "Upsample": _resize, "Trilu": _trilu, "OneHot": _one_hot,
    "ScatterElements": _scatter_elements, "Scatter": _scatter_elements, "ScatterND": _scatter_nd,
    "CumSum": _cumsum, "CumProd": _cumsum, "TopK": _topk, "NonZero": _non_zero,
    "Compress": _compress, "Unique": _unique,
    "Constant": _constant, "ConstantOfShape": _constant_of_shape, "Shape": _shape, "Size": _size, "Range": _range,
    # reductions
    "ReduceMean": _reduce("mean"), "ReduceSum": _reduce("sum"), "ReduceMax": _reduce("max"),
    "ReduceMin": _reduce("min"), "ReduceProd": _reduce("prod"), "ReduceSumSquare": _reduce("sum", pre="square"),
    "ReduceL1": _reduce("sum", pre="abs"), "ReduceL2": _reduce("sum", pre="square", post="sqrt"),
    "ReduceLogSum": _reduce("sum", post="log"), "ReduceLogSumExp": _reduce_log_sum_exp,
    "ArgMax": _arg("argmax"), "ArgMin": _arg("argmin"),
    # element tests, bitwise, small compositions
    "IsNaN": _unary("isnan"), "IsInf": _is_inf, "BitwiseAnd": _binary("bitwise_and"),
    "BitwiseOr": _binary("bitwise_or"), "BitwiseXor": _binary("bitwise_xor"), "BitwiseNot": _unary("bitwise_not"),
    "BitShift": _bit_shift, "Shrink": _shrink, "Hardmax": _hardmax, "EyeLike": _eye_like, "GatherND": _gather_nd,
    "LpNormalization": _lp_normalization, "MeanVarianceNormalization": _mean_variance_normalization,
    "GroupNormalization": _group_norm, "LpPool": _lp_pool,
    # losses
    "NegativeLogLikelihoodLoss": _nll_loss, "SoftmaxCrossEntropyLoss": _softmax_cross_entropy_loss,
    # windows, quantization, cropping
    "HannWindow": _window("hann"), "HammingWindow": _window("hamming"), "BlackmanWindow": _window("blackman"),
    "DequantizeLinear": _dequantize_linear, "QuantizeLinear": _quantize_linear,
    "DynamicQuantizeLinear": _dynamic_quantize_linear, "MatMulInteger": _matmul_integer,
    "ConvInteger": _conv_integer, "QLinearMatMul": _qlinear_matmul, "QLinearConv": _qlinear_conv, "CenterCropPad": _center_crop_pad,
    # recurrent layers
    "RNN": _recurrent, "GRU": _recurrent, "LSTM": _recurrent,
    "ReverseSequence": _reverse_sequence, "MaxUnpool": _max_unpool, "AffineGrid": _affine_grid,
    "GridSample": _grid_sample, "DFT": _dft, "STFT": _stft, "MelWeightMatrix": _mel_weight_matrix, "Det": _det,
    # detection and deformable convolution (2-D)
    "RoiAlign": _roi_align, "DeformConv": _deform_conv, "NonMaxSuppression": _non_max_suppression,
    # control flow, resolved when importing (unrolled, or a branch chosen)
    "If": _if, "Loop": _loop, "Scan": _scan,
    # sequences and optionals, held by the importer (their lengths are static)
    "SequenceEmpty": _sequence_empty, "SequenceConstruct": _sequence_construct, "SequenceInsert": _sequence_insert,
    "SequenceAt": _sequence_at, "SequenceErase": _sequence_erase, "SequenceLength": _sequence_length,
    "SplitToSequence": _split_to_sequence, "ConcatFromSequence": _concat_from_sequence, "Optional": _optional,
    "OptionalHasElement": _optional_has_element, "OptionalGetElement": _optional_get_element,
    # random numbers (counter-based: every run draws anew)
    **RANDOM_CONVERTERS,
    # text features: n-gram counts of token ids
    **TEXT_CONVERTERS,
}
