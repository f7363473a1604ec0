"""Converters of the recurrent layers (RNN, GRU, LSTM), unrolled over their
static sequence."""
from __future__ import annotations

import numpy as np

from .common import _axis_slice
from .convert_nn import elu_of, hard_sigmoid_of, softplus_of, softsign_of, thresholded_relu_of
from .convert_shape import _split_call


# --- recurrent layers (RNN, GRU, LSTM), unrolled over their static sequence ----------------
def _affine(ctx, x, a, b):
    return ctx.call("add", ctx.call("multiply", x, ctx.scalar(a, x)), ctx.scalar(b, x))


#: the activations a recurrent layer may name (ONNX's list; matched ignoring case, as
#: onnxruntime does): ``name -> (uses alpha, uses beta, default alpha, default beta,
#: build(ctx, x, alpha, beta))``, built as the operators of the same names are.  The
#: defaults of an alpha or beta the model's activation_alpha / activation_beta run out
#: of are onnxruntime's (0 where it has none).
_RNN_ACTIVATIONS = {
    "relu": (False, False, 0.0, 0.0, lambda ctx, x, a, b: ctx.call("nn.relu", x)),
    "tanh": (False, False, 0.0, 0.0, lambda ctx, x, a, b: ctx.call("tanh", x)),
    "sigmoid": (False, False, 0.0, 0.0, lambda ctx, x, a, b: ctx.call("sigmoid", x)),
    "affine": (True, True, 0.0, 0.0, _affine),
    "leakyrelu": (True, False, 0.01, 0.0, lambda ctx, x, a, b: ctx.call("nn.leaky_relu", x, alpha=a)),
    "thresholdedrelu": (True, False, 0.0, 0.0, lambda ctx, x, a, b: thresholded_relu_of(ctx, x, a)),
    "scaledtanh": (True, True, 0.0, 0.0, lambda ctx, x, a, b: ctx.call(
        "multiply", ctx.scalar(a, x), ctx.call("tanh", ctx.call("multiply", x, ctx.scalar(b, x))))),
    "hardsigmoid": (True, True, 0.2, 0.5, hard_sigmoid_of),
    "elu": (True, False, 1.0, 0.0, lambda ctx, x, a, b: elu_of(ctx, x, a)),
    "softsign": (False, False, 0.0, 0.0, lambda ctx, x, a, b: softsign_of(ctx, x)),
    "softplus": (False, False, 0.0, 0.0, lambda ctx, x, a, b: softplus_of(ctx, x)),
}


def _activations(node, names):
    """``[(build, alpha, beta)]`` for ``names``: activation_alpha and activation_beta are
    consumed in order by the activations that take them (onnxruntime's reading of
    "the values are consumed in the order of activation functions")."""
    alphas = [float(v) for v in (node.attr("activation_alpha") or [])]
    betas = [float(v) for v in (node.attr("activation_beta") or [])]
    unknown = [n for n in names if n.lower() not in _RNN_ACTIVATIONS]
    if unknown:
        node.fail(f"activations {unknown} are not ONNX's; use Relu, Tanh, Sigmoid, Affine, LeakyRelu, "
                  "ThresholdedRelu, ScaledTanh, HardSigmoid, Elu, Softsign or Softplus")
    out = []
    for name in names:
        uses_a, uses_b, a, b, build = _RNN_ACTIVATIONS[name.lower()]
        if uses_a and alphas:
            a = alphas.pop(0)
        if uses_b and betas:
            b = betas.pop(0)
        out.append((build, a, b))
    return out


#: gates per kind and the default activations (f, g[, h]) of one direction
_RNN_KINDS = {"RNN": (1, ["Tanh"]), "GRU": (3, ["Sigmoid", "Tanh"]), "LSTM": (4, ["Sigmoid", "Tanh", "Tanh"])}


def _check_operands(ctx, node, operands, layout, hidden, dirs):
    """Each given operand ``name: (input index, expr, shape)`` has its shape (the initial
    states as tecc holds them, directions first: named in the model's layout)."""
    for name, (index, expr, shape) in operands.items():
        if expr is None or tuple(ctx.shape(expr)) == tuple(shape):
            continue
        got, want = list(ctx.shape(expr)), list(shape)
        if layout == 1 and name.startswith("initial_") and len(got) == 3:
            got, want = [got[1], got[0], got[2]], [want[1], want[0], want[2]]
        node.fail(f"{name} (input {index}) has shape {got}; with hidden_size {hidden} and {dirs} direction(s) it "
                  f"must be {want}")


def _recurrent(ctx, node, inputs):
    """RNN, GRU and LSTM (ONNX's gate orders: GRU z, r, h; LSTM i, o, f, c), unrolled
    over the sequence, whose length is static: every step is a dense layer of the
    hidden state and element-wise gates; the input's projection is one dense layer
    over all steps.  With ``sequence_lens`` (constant or given at run time), a
    sequence's steps past its length leave its state as it was and output zeros, as
    onnxruntime computes them; a reverse direction so starts at each sequence's own
    last step; an empty sequence's final state is zeros."""
    kind = node.op_type
    gates, default_acts = _RNN_KINDS[kind]
    x, w, r = inputs[0], inputs[1], inputs[2]
    b = ctx.optional_input(inputs, 3)
    seq_lens = ctx.optional_input(inputs, 4)
    h0 = ctx.optional_input(inputs, 5)
    c0 = ctx.optional_input(inputs, 6) if kind == "LSTM" else None
    peep = ctx.optional_input(inputs, 7) if kind == "LSTM" else None
    hidden = int(node.required("hidden_size"))
    if hidden < 1:
        node.fail(f"hidden_size {hidden} must be at least 1")
    direction = node.attr("direction", "forward")
    direction = direction.decode() if isinstance(direction, bytes) else str(direction)
    if direction not in ("forward", "reverse", "bidirectional"):
        node.fail(f"direction {direction!r} must be 'forward', 'reverse' or 'bidirectional'")
    dirs = 2 if direction == "bidirectional" else 1
    layout = int(node.attr("layout", 0))
    if layout not in (0, 1):
        node.fail(f"layout {layout} must be 0 ([seq, batch, ...]) or 1 ([batch, seq, ...])")
    if ctx.rank(x) != 3:
        node.fail(f"X (input 0) has shape {list(ctx.shape(x))}; it must be [seq_length, batch_size, input_size]"
                  + (" (layout 1: [batch_size, seq_length, input_size])" if layout else ""))
    if layout == 1:
        # batch first: X [batch, seq, input] and the initial states [batch, directions, hidden]
        x = ctx.call("transpose", x, axes=(1, 0, 2))
        h0 = None if h0 is None else ctx.call("transpose", h0, axes=(1, 0, 2))
        c0 = None if c0 is None else ctx.call("transpose", c0, axes=(1, 0, 2))
    steps, batch, width = ctx.shape(x)
    _check_operands(ctx, node, dict(W=(1, w, (dirs, gates * hidden, width)), R=(2, r, (dirs, gates * hidden, hidden)),
                                    B=(3, b, (dirs, 2 * gates * hidden)), sequence_lens=(4, seq_lens, (batch,)),
                                    initial_h=(5, h0, (dirs, batch, hidden)), initial_c=(6, c0, (dirs, batch, hidden)),
                                    P=(7, peep, (dirs, 3 * hidden))), layout, hidden, dirs)
    lens = None  # (batch, 1): each sequence's length, where some may end before the last step
    if seq_lens is not None:
        if ctx.is_const(seq_lens):
            given = np.asarray(ctx.value(seq_lens, "sequence_lens (input 4)")).reshape(-1)
            if np.any(given < 0) or np.any(given > steps):
                node.fail(f"sequence_lens {given.tolist()} must lie in [0, {steps}] (the sequence's steps)")
            if np.any(given != steps):
                lens = ctx.const(given.reshape(-1, 1).astype("int32"), "int32")
        else:
            lens = ctx.reshape(ctx.cast(seq_lens, "int32"), (batch, 1))
    names = node.attr("activations")
    names = [a.decode() if isinstance(a, bytes) else str(a) for a in names] if names else default_acts * dirs
    if len(names) != len(default_acts) * dirs:
        node.fail(f"activations {names} should name {len(default_acts) * dirs} functions")
    functions = _activations(node, names)
    clip = node.attr("clip")
    linear_before_reset = node.flag("linear_before_reset", 0)
    input_forget = node.flag("input_forget", 0)
    ys, hs, cs = [], [], []
    for d in range(dirs):
        acts = functions[d * len(default_acts):(d + 1) * len(default_acts)]
        wd = ctx.reshape(_axis_slice(ctx, w, 0, d, d + 1), (gates * hidden, width))
        rd = ctx.reshape(_axis_slice(ctx, r, 0, d, d + 1), (gates * hidden, hidden))
        # the input's projection for every step at once, with both biases but the GRU's
        # recurrent bias of the h gate where it is applied after the reset
        xw = ctx.call("nn.dense", ctx.reshape(x, (steps * batch, width)), wd, units=gates * hidden)
        rb = None
        if b is not None:
            bd = ctx.reshape(_axis_slice(ctx, b, 0, d, d + 1), (2 * gates * hidden,))
            wb, rb = _axis_slice(ctx, bd, 0, 0, gates * hidden), _axis_slice(ctx, bd, 0, gates * hidden,
                                                                            2 * gates * hidden)
            if kind == "GRU":
                xw = ctx.call("add", xw, wb)
            else:
                xw = ctx.call("add", xw, ctx.call("add", wb, rb))
        xw = ctx.reshape(xw, (steps, batch, gates * hidden))
        zero = ctx.const(np.zeros((batch, hidden)), ctx.dtype_of(x))
        h = zero if h0 is None else ctx.reshape(_axis_slice(ctx, h0, 0, d, d + 1), (batch, hidden))
        c = None
        if kind == "LSTM":
            c = zero if c0 is None else ctx.reshape(_axis_slice(ctx, c0, 0, d, d + 1), (batch, hidden))
        p = None
        if peep is not None:
            pd = ctx.reshape(_axis_slice(ctx, peep, 0, d, d + 1), (3 * hidden,))
            p = [_axis_slice(ctx, pd, 0, k * hidden, (k + 1) * hidden) for k in range(3)]  # i, o, f

        def act(i, v, clipped=True):
            # clip bounds the gates' inputs (as onnxruntime does; not the cell state an
            # LSTM's h activation reads)
            if clip is not None and clipped:
                v = ctx.call("clip", v, a_min=-float(clip), a_max=float(clip))
            build, alpha, beta = acts[i]
            return build(ctx, v, alpha, beta)

        def gate(v, k):
            return _axis_slice(ctx, v, 1, k * hidden, (k + 1) * hidden)

        order = range(steps - 1, -1, -1) if (direction == "reverse" or d == 1) else range(steps)
        outs = [None] * steps
        # one split, not a slice per step: a step then reads a tensor of its own at no
        # offset, and every step is the same fused function, compiled once
        xsteps = _split_call(ctx, xw, steps, 0, [1] * steps) if steps > 1 else None
        for t in order:
            xt = ctx.reshape(xw if xsteps is None else ctx.item(xsteps, t), (batch, gates * hidden))
            h_prev, c_prev = h, c
            if kind == "RNN":
                h = act(0, ctx.call("add", xt, ctx.call("nn.dense", h, rd, units=hidden)))
            elif kind == "GRU":
                rz = ctx.call("add", _axis_slice(ctx, xt, 1, 0, 2 * hidden),
                              ctx.call("nn.dense", h, _axis_slice(ctx, rd, 0, 0, 2 * hidden), units=2 * hidden))
                if rb is not None:
                    rz = ctx.call("add", rz, _axis_slice(ctx, rb, 0, 0, 2 * hidden))
                z, rr = act(0, gate(rz, 0)), act(0, gate(rz, 1))
                rh = _axis_slice(ctx, rd, 0, 2 * hidden, 3 * hidden)
                rbh = _axis_slice(ctx, rb, 0, 2 * hidden, 3 * hidden) if rb is not None else None
                if linear_before_reset:
                    hr = ctx.call("nn.dense", h, rh, units=hidden)
                    if rbh is not None:
                        hr = ctx.call("add", hr, rbh)
                    hr = ctx.call("multiply", rr, hr)
                else:
                    hr = ctx.call("nn.dense", ctx.call("multiply", rr, h), rh, units=hidden)
                    if rbh is not None:
                        hr = ctx.call("add", hr, rbh)
                cand = act(1, ctx.call("add", gate(xt, 2), hr))
                one = ctx.scalar(1, z)
                h = ctx.call("add", ctx.call("multiply", ctx.call("subtract", one, z), cand),
                             ctx.call("multiply", z, h))
            else:
                pre = ctx.call("add", xt, ctx.call("nn.dense", h, rd, units=gates * hidden))
                pi, po, pf, pc = (gate(pre, k) for k in range(4))
                if p is not None:
                    pi = ctx.call("add", pi, ctx.call("multiply", p[0], c))
                    pf = ctx.call("add", pf, ctx.call("multiply", p[2], c))
                i = act(0, pi)
                f = ctx.call("subtract", ctx.scalar(1, i), i) if input_forget else act(0, pf)
                c = ctx.call("add", ctx.call("multiply", f, c), ctx.call("multiply", i, act(1, pc)))
                if p is not None:
                    po = ctx.call("add", po, ctx.call("multiply", p[1], c))
                h = ctx.call("multiply", act(0, po), act(2, c, clipped=False))
            out = h
            if lens is not None:  # a sequence that has ended keeps its state and outputs zeros
                valid = ctx.call("less", ctx.const(np.array(t, "int32"), "int32"), lens)
                out = ctx.call("where", valid, h, zero)
                h = ctx.call("where", valid, h, h_prev)
                if c is not None:
                    c = ctx.call("where", valid, c, c_prev)
            outs[t] = ctx.reshape(out, (1, 1, batch, hidden))
        if lens is not None:  # an empty sequence ends with zeros, not its initial state (onnxruntime's)
            nonempty = ctx.call("greater", lens, ctx.const(np.array(0, "int32"), "int32"))
            h = ctx.call("where", nonempty, h, zero)
            c = ctx.call("where", nonempty, c, zero) if c is not None else None
        ys.append(outs[0] if steps == 1 else ctx.call("concatenate", ctx.tuple(outs), axis=0))
        hs.append(ctx.reshape(h, (1, batch, hidden)))
        if c is not None:
            cs.append(ctx.reshape(c, (1, batch, hidden)))

    def join(parts, axis):
        return parts[0] if len(parts) == 1 else ctx.call("concatenate", ctx.tuple(parts), axis=axis)

    y, yh = join(ys, 1), join(hs, 0)
    yc = join(cs, 0) if cs else None
    if layout == 1:
        y = ctx.call("transpose", y, axes=(2, 0, 1, 3))
        yh = ctx.call("transpose", yh, axes=(1, 0, 2))
        yc = ctx.call("transpose", yc, axes=(1, 0, 2)) if yc is not None else None
    return [y, yh] + ([yc] if kind == "LSTM" else [])


#: ONNX op type -> converter
