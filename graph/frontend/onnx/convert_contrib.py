"""Converters of onnxruntime's contrib operators (domain ``com.microsoft``): the fused
operators that onnxruntime's transformer optimizer writes into BERT- and GPT-style
models (``onnxruntime.transformers.optimizer``) -- Gelu, FastGelu, BiasGelu, QuickGelu,
SkipLayerNormalization, SkipSimplifiedLayerNormalization, EmbedLayerNormalization,
Attention and FusedMatMul -- and MatMulNBits, the weight-only quantized MatMul of its
int4 LLM exports, each lowered to graph operators with onnxruntime's
semantics (its contrib-operator documentation; the tests compare with its CPU
kernels)."""
from __future__ import annotations

import math

import numpy as np

from ...ir import Constant, numpy_dtype
from .common import _prod
from .convert_nn import _accumulator, _matmul, gelu_of, norm_statistics, rms_normalized

#: the domain of onnxruntime's contrib operators
CONTRIB_DOMAIN = "com.microsoft"


def _gelu(ctx, node, inputs):
    """Gelu: ``0.5 x (1 + erf(x / sqrt(2)))``."""
    return gelu_of(ctx, inputs[0])


def _bias_gelu(ctx, node, inputs):
    """BiasGelu: Gelu of ``A + bias`` (the bias along the last axis)."""
    return gelu_of(ctx, ctx.call("add", inputs[0], inputs[1]))


def _fast_gelu(ctx, node, inputs):
    """FastGelu: the tanh approximation of Gelu, of ``X + bias`` when a bias is given."""
    x = inputs[0]
    bias = ctx.optional_input(inputs, 1)
    return gelu_of(ctx, x if bias is None else ctx.call("add", x, bias), approximate=True)


def _quick_gelu(ctx, node, inputs):
    """QuickGelu: ``x * sigmoid(alpha * x)`` (alpha 1.702 by default)."""
    x = inputs[0]
    alpha = float(node.attr("alpha", 1.702))
    return ctx.call("multiply", x, ctx.call("sigmoid", ctx.call("multiply", x, ctx.scalar(alpha, x))))


def _normalized(ctx, x, gamma, beta, eps, simplified):
    """LayerNormalization (or, ``simplified``, RMS normalization) of ``x`` over its last
    axis, times ``gamma``, plus ``beta`` where given."""
    hidden = ctx.shape(x)[-1]
    if not simplified:
        if beta is None:
            beta = ctx.const(np.zeros(hidden), ctx.dtype_of(x))
        return ctx.call("nn.layer_norm", x, gamma, beta, axis=-1, epsilon=eps)
    out = rms_normalized(ctx, x, (len(ctx.shape(x)) - 1,), eps, gamma)
    return out if beta is None else ctx.call("add", out, beta)


def _skip_layer_norm(simplified):
    def convert(ctx, node, inputs):
        """SkipLayerNormalization (SkipSimplifiedLayerNormalization): the normalization of
        ``input + skip + bias`` over the hidden axis; outputs the result, the mean and
        the inverse standard deviation (as onnxruntime writes them, float32), and the
        sum itself."""
        x, skip, gamma = inputs[0], inputs[1], inputs[2]
        beta = None if simplified else ctx.optional_input(inputs, 3)
        bias = ctx.optional_input(inputs, 3 if simplified else 4)
        xs, ss = ctx.shape(x), ctx.shape(skip)
        if len(xs) != 3:
            node.fail(f"the input has shape {xs}; it must be 3-D (batch, sequence, hidden)")
        if tuple(ss) not in (tuple(xs), tuple(xs[1:]), (1,) + tuple(xs[1:])):
            node.fail(f"the skip has shape {ss}; it must be the input's {xs}, or (sequence, hidden) of it")
        eps = float(node.attr("epsilon", 1e-12))
        total = ctx.call("add", x, skip)
        if bias is not None:
            total = ctx.call("add", total, bias)
        out = _normalized(ctx, total, gamma, beta, eps, simplified)
        if not any(node.outputs[1:]):
            return out
        mean, inv = norm_statistics(ctx, total, (len(ctx.shape(total)) - 1,), eps, rms=simplified)
        return [out, mean, inv, total]

    return convert


def _embed_layer_norm(ctx, node, inputs):
    """EmbedLayerNormalization: the word, position and (when given) segment embeddings of
    each token summed and layer-normalized; the second output is the mask's index (the
    count of ones of each sequence's mask, zeros without a mask); the third, where the
    model reads it, the sum before normalization."""
    ids, segment_ids = inputs[0], ctx.optional_input(inputs, 1)
    word, position = inputs[2], inputs[3]
    segment = ctx.optional_input(inputs, 4)
    gamma, beta = inputs[5], ctx.optional_input(inputs, 6)
    mask, position_ids = ctx.optional_input(inputs, 7), ctx.optional_input(inputs, 8)
    batch, seq = ctx.shape(ids)
    eps = float(node.attr("epsilon", 1e-12))
    total = ctx.call("take", word, ctx.cast(ids, "int32"), axis=0)
    if position_ids is None:
        positions = ctx.call("take", position, ctx.const(np.arange(seq).reshape(1, seq), "int32"), axis=0)
    else:
        positions = ctx.call("take", position, ctx.cast(position_ids, "int32"), axis=0)
    total = ctx.call("add", total, positions)
    if segment is not None and segment_ids is not None:
        total = ctx.call("add", total, ctx.call("take", segment, ctx.cast(segment_ids, "int32"), axis=0))
    out = _normalized(ctx, total, gamma, beta, eps, False)
    if mask is None:
        mask_index = ctx.const(np.zeros(batch, "int32"), "int32")
    else:
        mask_index = ctx.call("sum", ctx.cast(mask, "int32"), axis=(1,), keepdims=False)
    return [out, mask_index, total]


def _attention(ctx, node, inputs):
    """Attention (onnxruntime's, BERT's self-attention): ``input x weights + bias`` split
    into Q, K and V of ``num_heads`` heads, ``softmax(Q K^T * scale + mask) V`` with the
    heads joined again.  The mask: a 1-D index of each sequence's length (keys at and
    past it masked), or a 2-D raw mask (0 masks a key), masked scores offset by
    ``mask_filter_value``; ``unidirectional`` masks the keys after each query.  The
    input ``past`` (the keys and values of earlier steps, a decoder's cache) comes
    before this step's keys and values; the second output, where read, is
    ``present``: the past's and this step's.  Attention bias and rotary embeddings are
    refused."""
    x, weights = inputs[0], inputs[1]
    bias = ctx.optional_input(inputs, 2)
    mask_index = ctx.optional_input(inputs, 3)
    past = ctx.optional_input(inputs, 4)
    for k, what in ((5, "attention_bias (relative_position_bias)"), (6, "past_sequence_length")):
        if ctx.optional_input(inputs, k) is not None:
            node.fail(f"the input {what} is not supported; give the past state as the input past")
    if int(node.attr("do_rotary", 0)):
        node.fail("do_rotary=1 is not supported; apply RotaryEmbedding before the attention")
    heads = int(node.required("num_heads"))
    batch, seq, width = ctx.shape(x)
    sizes = node.attr("qkv_hidden_sizes")
    sizes = [int(v) for v in sizes] if sizes else [ctx.shape(weights)[1] // 3] * 3
    if len(sizes) != 3 or sizes[0] != sizes[1] or sum(sizes) != ctx.shape(weights)[1]:
        node.fail(f"qkv_hidden_sizes {sizes} must be three sizes, Q's equal to K's, summing to the weights' "
                  f"{ctx.shape(weights)[1]} columns")
    if any(s % heads for s in sizes):
        node.fail(f"qkv_hidden_sizes {sizes} must divide into num_heads = {heads} heads")
    hq, hv = sizes[0] // heads, sizes[2] // heads
    scale = float(node.attr("scale", 0.0)) or 1.0 / math.sqrt(hq)
    dtype = ctx.dtype_of(x)
    projected = ctx.call("nn.dense", ctx.reshape(x, (batch * seq, width)),
                         ctx.call("transpose", weights, axes=(1, 0)), units=sum(sizes), out_dtype=_accumulator(ctx, x))
    projected = ctx.cast(projected, dtype)
    if bias is not None:
        projected = ctx.call("add", projected, bias)

    def heads_of(start, size, head):
        part = ctx.call("strided_slice", projected, begin=(0, start), end=(batch * seq, start + size), strides=(1, 1))
        return ctx.call("transpose", ctx.reshape(part, (batch, seq, heads, head)), axes=(0, 2, 1, 3))

    q = heads_of(0, sizes[0], hq)
    k = heads_of(sizes[0], sizes[1], hq)
    v = heads_of(sizes[0] + sizes[1], sizes[2], hv)
    before = 0  # the past's steps: their keys and values come first
    if past is not None:
        ps = ctx.shape(past)
        if hq != hv or len(ps) != 5 or ps[0] != 2 or tuple(ps[1:3]) != (batch, heads) or ps[4] != hq:
            node.fail(f"past has shape {ps}; it must be (2, batch, num_heads, past steps, head) = (2, {batch}, "
                      f"{heads}, P, {hq}), with Q, K and V of one width")
        before = ps[3]
        k = ctx.call("concatenate", ctx.tuple([ctx.call("squeeze", _axis_item(ctx, past, 0), axis=(0,)), k]), axis=2)
        v = ctx.call("concatenate", ctx.tuple([ctx.call("squeeze", _axis_item(ctx, past, 1), axis=(0,)), v]), axis=2)
    total = before + seq
    flat = (batch * heads, seq)
    scores = ctx.call("nn.batch_matmul", ctx.reshape(q, flat + (hq,)), ctx.reshape(k, (batch * heads, total, hq)),
                      transpose_b=True, out_dtype=_accumulator(ctx, x))
    scores = ctx.reshape(ctx.cast(scores, "float32"), (batch, heads, seq, total))
    scores = ctx.call("multiply", scores, ctx.const(np.array(scale), "float32"))
    filler = float(node.attr("mask_filter_value", -10000.0))

    def masked(scores, keep):
        # onnxruntime's: mask_filter_value added where the mask drops a key (a query whose keys
        # the mask drops all still attends: the offsets cancel in the softmax)
        offset = ctx.call("where", keep, ctx.const(np.array(0.0), "float32"), ctx.const(np.array(filler), "float32"))
        return ctx.call("add", scores, offset)

    if mask_index is not None:
        ms = ctx.shape(mask_index)
        if len(ms) == 1 and ms[0] == batch:
            length = ctx.reshape(ctx.cast(mask_index, "int32"), (batch, 1, 1, 1))
            keep = ctx.call("less", ctx.const(np.arange(total).reshape(1, 1, 1, total), "int32"), length)
        elif tuple(ms) == (batch, total):
            keep = ctx.call("not_equal", ctx.reshape(mask_index, (batch, 1, 1, total)), ctx.scalar(0, mask_index))
        else:
            node.fail(f"mask_index of shape {ms} is not supported; tecc takes (batch,) lengths or a (batch, "
                      "past + sequence) raw mask")
        scores = masked(scores, keep)
    if int(node.attr("unidirectional", 0)):
        # query i sees the past and the keys up to its own step
        # (the later keys leave the softmax altogether, as in onnxruntime: the lowest float, not an offset)
        causal = ctx.const(np.tril(np.ones((seq, total), bool), k=before).reshape(1, 1, seq, total), "bool")
        scores = ctx.call("where", causal, scores, ctx.const(np.array(np.finfo(np.float32).min), "float32"))
    probs = ctx.cast(ctx.call("nn.softmax", scores, axis=-1), dtype)
    context = ctx.call("nn.batch_matmul", ctx.reshape(probs, flat + (total,)),
                       ctx.reshape(v, (batch * heads, total, hv)), transpose_b=False, out_dtype=_accumulator(ctx, x))
    context = ctx.cast(ctx.reshape(context, (batch, heads, seq, hv)), dtype)
    out = ctx.reshape(ctx.call("transpose", context, axes=(0, 2, 1, 3)), (batch, seq, heads * hv))
    if not any(node.outputs[1:]):
        return out
    if hq != hv:
        node.fail(f"the output present stacks K and V, whose heads differ in width ({hq} and {hv}); give "
                  "qkv_hidden_sizes of one size")
    # present: the past's keys and values, then this step's: [2, batch, heads, past + sequence, head]
    present = ctx.call("concatenate", ctx.tuple([ctx.reshape(k, (1, batch, heads, total, hq)),
                                                 ctx.reshape(v, (1, batch, heads, total, hv))]), axis=0)
    return [out, present]


def _axis_item(ctx, x, index):
    """``x[index:index + 1]`` along axis 0."""
    shape = ctx.shape(x)
    return ctx.call("strided_slice", x, begin=(index,) + (0,) * (len(shape) - 1),
                    end=(index + 1,) + tuple(shape[1:]), strides=(1,) * len(shape))


def _fused_matmul(ctx, node, inputs):
    """FusedMatMul: ``alpha * op(A) x op(B)``, ``op`` transposing the last two axes where
    transA / transB say (transBatchA / transBatchB, which move the batch axes, are
    refused)."""
    a, b = inputs
    if int(node.attr("transBatchA", 0)) or int(node.attr("transBatchB", 0)):
        node.fail("transBatchA / transBatchB are not supported; transpose the operand first")

    def last_two_swapped(t):
        rank = len(ctx.shape(t))
        if rank < 2:
            node.fail(f"an operand of shape {ctx.shape(t)} cannot be transposed (transA / transB need rank 2 or more)")
        return ctx.call("transpose", t, axes=tuple(range(rank - 2)) + (rank - 1, rank - 2))

    if node.flag("transA", 0):
        a = last_two_swapped(a)
    if node.flag("transB", 0):
        b = last_two_swapped(b)
    out = _matmul(ctx, node, [a, b])
    alpha = float(node.attr("alpha", 1.0))
    return out if alpha == 1.0 else ctx.call("multiply", out, ctx.scalar(alpha, out))


def _unpacked(packed: np.ndarray, bits: int, count: int) -> np.ndarray:
    """The ``bits``-bit unsigned values packed into the bytes of ``packed``'s last axis,
    the first in the lowest bits (onnxruntime's order), the first ``count`` of them."""
    per_byte = 8 // bits
    shifts = np.arange(per_byte, dtype=np.uint8) * bits
    values = (packed[..., None] >> shifts) & np.uint8((1 << bits) - 1)
    return values.reshape(*packed.shape[:-1], -1)[..., :count]


def _matmul_nbits(ctx, node, inputs):
    """MatMulNBits, onnxruntime's weight-only quantized MatMul (what its int4 exports of
    LLMs use): B holds the N x K weights, each row in blocks of ``block_size`` along K,
    ``bits``-bit unsigned values packed into bytes (the first in the lowest bits), each
    block with a scale and a zero point (packed the same way, or floats of the scales'
    type; 2^(bits-1) when absent).  ``Y = A @ ((B - zero) * scale)^T`` (+ bias).

    B is unpacked once, at import, into a uint4 (uint2, uint8) constant: one byte an
    element, the dequantization left to the build, which runs it inside the product's
    kernel on a GPU (the weights stay narrow in memory) and folds it on a CPU."""
    a, b, scales = inputs[0], inputs[1], inputs[2]
    zero_points, g_idx, bias = (ctx.optional_input(inputs, i) for i in (3, 4, 5))
    k, n = int(node.required("K")), int(node.required("N"))
    bits, block = int(node.attr("bits", 4)), int(node.required("block_size"))
    if g_idx is not None:
        node.fail("g_idx (act-order quantization, input 4) is not supported; export the model without it")
    if bits not in (2, 4, 8):
        node.fail(f"bits is {bits}; tecc unpacks 2-, 4- and 8-bit weights")
    if block < 16 or block & (block - 1):
        node.fail(f"block_size is {block}; it must be a power of two of at least 16")
    blocks, blob = -(-k // block), block * bits // 8
    if tuple(ctx.shape(b)) != (n, blocks, blob):
        node.fail(f"B (input 1) has shape {tuple(ctx.shape(b))}; K={k} and N={n} in blocks of {block} at {bits} bits "
                  f"need ({n}, {blocks}, {blob})")
    if ctx.shape(a)[-1] != k:
        node.fail(f"A (input 0) has shape {tuple(ctx.shape(a))}; its last axis must be K = {k}")
    q = _unpacked(np.asarray(ctx.value(b, "B (input 1)"), np.uint8).reshape(n, blocks * blob), bits, k)
    weights = Constant(np.ascontiguousarray(q).view(numpy_dtype({2: "uint2", 4: "uint4", 8: "uint8"}[bits])))
    if _prod(ctx.shape(scales)) != n * blocks:
        node.fail(f"scales (input 2) has {_prod(ctx.shape(scales))} values; N x blocks = {n * blocks}")
    scale = ctx.reshape(scales, (n, blocks))
    if zero_points is None:
        zero = ctx.const(np.full((n, blocks), 1 << (bits - 1), np.float32), "float32")
    elif ctx.dtype_of(zero_points) == "uint8":  # packed like B, each row to whole bytes
        per_row = -(-blocks * bits // 8)
        packed = np.asarray(ctx.value(zero_points, "zero_points (input 3)"), np.uint8)
        if packed.size != n * per_row:
            node.fail(f"zero_points (input 3) has {packed.size} bytes; {n} rows of {blocks} {bits}-bit values need "
                      f"{n * per_row}")
        zero = ctx.const(_unpacked(packed.reshape(n, per_row), bits, blocks).astype(np.float32), "float32")
    else:
        if _prod(ctx.shape(zero_points)) != n * blocks:
            node.fail(f"zero_points (input 3) has {_prod(ctx.shape(zero_points))} values; N x blocks = {n * blocks}")
        zero = ctx.reshape(zero_points, (n, blocks))
    # (q - zero) * scale, each block's values gathered along K (left to the build: see above)
    index = ctx.const(np.arange(k) // block, "int32")
    per_k = [ctx.cast(ctx.call_unfolded("take", t, index, axis=1), "float32") for t in (zero, scale)]
    w = ctx.call("multiply", ctx.call("subtract", ctx.cast(weights, "float32"), per_k[0]), per_k[1])
    dtype = ctx.dtype_of(a)
    w = ctx.cast(w, dtype)
    a_shape = ctx.shape(a)
    flat = ctx.reshape(a, (_prod(a_shape[:-1]), k))
    out = ctx.call("nn.dense", flat, w, units=n, out_dtype=_accumulator(ctx, a))
    out = ctx.cast(out, dtype)
    if bias is not None:
        out = ctx.call("add", out, bias)
    return ctx.reshape(out, tuple(a_shape[:-1]) + (n,))


#: onnxruntime's contrib op type -> converter (domain com.microsoft)
CONTRIB_CONVERTERS = {
    "Gelu": _gelu, "BiasGelu": _bias_gelu, "FastGelu": _fast_gelu, "QuickGelu": _quick_gelu,
    "SkipLayerNormalization": _skip_layer_norm(False), "SkipSimplifiedLayerNormalization": _skip_layer_norm(True),
    "EmbedLayerNormalization": _embed_layer_norm, "Attention": _attention, "FusedMatMul": _fused_matmul,
    "MatMulNBits": _matmul_nbits,
}

__all__ = ["CONTRIB_CONVERTERS", "CONTRIB_DOMAIN"]