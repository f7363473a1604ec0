"""Random ONNX models for fuzzing the model compiler: chains and small DAGs of the
operators the importer supports (150 of its 190 of the default domain; not BitShift,
which onnxruntime computes for unsigned integers only, the operators of opsets 23 to 26
where the models import opsets 9 to 21, Col2Im, the quantized ConvInteger, QLinearConv
and QLinearMatMul, and the control-flow, sequence, optional, signal, random-number,
text and data-dependent operators; nor the other domains'), with
shapes and attributes drawn at random (broadcasting operands, negative axes, strided
and reversed slices, grouped and strided convolutions, recurrent layers, shape
subgraphs as torch exports them, gathers and scatters, several outputs).

:func:`models` is a hypothesis strategy of :class:`FuzzModel`; every model it makes
is valid ONNX (onnxruntime runs it) and keeps its values in a tame range (no
division by numbers near 0, no logarithm of a non-positive number, no exponential
of a large one), so that tecc and onnxruntime can be compared with a tolerance.

Run many more examples than the test suite does with::

    TECC_FUZZ_EXAMPLES=500 python -m pytest tests/graph/test_fuzz_models.py -q
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
from hypothesis import strategies as st
from onnx import TensorProto, helper, numpy_helper

#: the opsets a model may import (the importer's range); operators and operands that
#: changed between them are written in the form of the model's opset
OPSETS = range(9, 22)

#: the most elements a value may have (keeps every run short)
MAX_ELEMENTS = 4096


@dataclass
class Value:
    """A tensor of the model being built: its name, static shape and dtype."""

    name: str
    shape: tuple
    dtype: str = "float32"

    @property
    def rank(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64))


@dataclass
class FuzzModel:
    """A model made by :func:`models`: the ONNX model, its inputs' values, and the
    operators it chains (for the failure report)."""

    model: object
    inputs: dict
    ops: list = field(default_factory=list)

    def __repr__(self) -> str:
        shapes = {k: v.shape for k, v in self.inputs.items()}
        return f"FuzzModel(inputs={shapes}, ops={self.ops})"


class _Builder:
    """The model under construction: nodes, initializers and the values so far."""

    def __init__(self, draw, opset, dtype="float32"):
        self.draw = draw
        self.opset = opset
        self.dtype = dtype  # the element type of the model's values
        self.nodes, self.inits, self.values, self.ops = [], [], [], []
        self._names = 0
        self.rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))

    def name(self, stem="v") -> str:
        self._names += 1
        return f"{stem}{self._names}"

    def const(self, array, stem="c") -> str:
        name = self.name(stem)
        self.inits.append(numpy_helper.from_array(np.asarray(array), name))
        return name

    def floats(self, shape, low=-1.0, high=1.0):
        return self.rng.uniform(low, high, shape).astype("float32")

    def data(self, shape):
        """Values of the model's element type: floats in [-1, 1], integers in [-20, 20]."""
        if self.dtype == "float32":
            return self.floats(shape)
        return self.rng.integers(-20, 21, shape).astype(self.dtype)

    def node(self, op, inputs, shape, dtype=None, n_out=1, shapes=None, **attrs) -> list:
        outs = [Value(self.name(), tuple(s), dtype or self.dtype) for s in (shapes or [shape] * n_out)]
        self.nodes.append(helper.make_node(op, list(inputs), [o.name for o in outs], name=self.name(op.lower()),
                                           **attrs))
        self.ops.append(op)
        return outs

    def ints(self, name, values, since, attrs):
        """The int64 list ``values`` as an input (the name of a constant) from opset
        ``since`` on, else as the attribute ``name`` added to ``attrs`` (None)."""
        if self.opset >= since:
            return self.const(np.array(values, "int64"))
        attrs[name] = list(values)
        return None

    def pick(self, want=lambda v: True):
        """A value of the model's element type that ``want`` accepts, or None."""
        options = [v for v in self.values if v.dtype == self.dtype and want(v)]
        return self.draw(st.sampled_from(options)) if options else None


# ---------------------------------------------------------------------------------------
# shapes
# ---------------------------------------------------------------------------------------
def _broadcast_partner(draw, shape):
    """A shape that broadcasts with ``shape`` to ``shape``: a suffix of it, some of
    its dimensions set to 1."""
    keep = draw(st.integers(0, len(shape)))
    suffix = list(shape[len(shape) - keep:])
    return tuple(1 if draw(st.booleans()) else d for d in suffix)


def _broadcasts_to(shape, target) -> bool:
    """Whether ``shape`` broadcasts to ``target`` (numpy's rules)."""
    if len(shape) > len(target):
        return False
    return all(d in (1, t) for d, t in zip(shape[::-1], target[::-1]))


def _factorizations(n, parts):
    """Every way of writing ``n`` as an ordered product of ``parts`` factors."""
    if parts == 1:
        return [(n,)]
    out = []
    for d in range(1, n + 1):
        if n % d == 0:
            out.extend((d,) + rest for rest in _factorizations(n // d, parts - 1))
    return out


# ---------------------------------------------------------------------------------------
# operators: each adds its nodes to ``b`` reading some value(s), returns new values or
# None where no value fits
# ---------------------------------------------------------------------------------------
UNARY = ["Relu", "Sigmoid", "Tanh", "Abs", "Neg", "Erf", "Softsign", "Identity"]


def op_unary(b):
    x = b.pick()
    op = b.draw(st.sampled_from(UNARY + ["LeakyRelu", "Elu", "HardSigmoid", "HardSwish", "Softplus", "Exp",
                                         "Sqrt", "Log", "Clip", "Selu"]))
    if op == "LeakyRelu":
        return b.node(op, [x.name], x.shape, alpha=b.draw(st.sampled_from([0.01, 0.2])))
    if op == "Elu":
        return b.node(op, [x.name], x.shape, alpha=0.7)
    if op == "Exp":  # of a value in [-1, 1]
        (t,) = b.node("Tanh", [x.name], x.shape)
        return b.node(op, [t.name], x.shape)
    if op in ("Sqrt", "Log"):  # of a value >= 0.5
        (a,) = b.node("Abs", [x.name], x.shape)
        (p,) = b.node("Add", [a.name, b.const(np.float32(0.5))], x.shape)
        return b.node(op, [p.name], x.shape)
    if op == "Clip":
        lo = b.draw(st.sampled_from([-0.5, 0.0]))
        if b.opset < 11:
            return b.node(op, [x.name], x.shape, min=lo, max=0.6)
        return b.node(op, [x.name, b.const(np.float32(lo)), b.const(np.float32(0.6))], x.shape)
    if op == "HardSwish" and b.opset < 14:
        return None
    return b.node(op, [x.name], x.shape)


def op_binary(b):
    x = b.pick()
    op = b.draw(st.sampled_from(["Add", "Sub", "Mul", "Max", "Min", "Div", "Pow"]))
    if op == "Div":  # by a constant away from 0
        shape = _broadcast_partner(b.draw, x.shape)
        den = b.floats(shape, 0.5, 2.0) * b.rng.choice([-1, 1], shape).astype("float32")
        return b.node(op, [x.name, b.const(den)], x.shape)
    if op == "Pow":  # of a positive base, to a small power
        (a,) = b.node("Abs", [x.name], x.shape)
        (p,) = b.node("Add", [a.name, b.const(np.float32(0.5))], x.shape)
        return b.node(op, [p.name, b.const(np.float32(b.draw(st.sampled_from([0.5, 2.0, 3.0]))))], x.shape)
    return _with_partner(b, op, x)


def _with_partner(b, op, x):
    """``op`` of ``x`` and another operand, in either order: a value of the model that
    broadcasts to ``x``'s shape, or a constant of such a shape."""
    partners = [v for v in b.values if v.dtype == b.dtype and v is not x and _broadcasts_to(v.shape, x.shape)]
    if partners and b.draw(st.booleans()):
        y = b.draw(st.sampled_from(partners)).name
    else:
        y = b.const(b.data(_broadcast_partner(b.draw, x.shape)))
    return b.node(op, [x.name, y] if b.draw(st.booleans()) else [y, x.name], x.shape)


def op_where(b):
    x = b.pick()
    y = b.const(b.data(_broadcast_partner(b.draw, x.shape)))
    cmp = b.draw(st.sampled_from(["Greater", "Less"] + (["GreaterOrEqual"] if b.opset >= 12 else [])))
    (m,) = b.node(cmp, [x.name, y], x.shape, dtype="bool")
    other = b.const(b.data(_broadcast_partner(b.draw, x.shape)))
    return b.node("Where", [m.name, x.name, other], x.shape)


def op_reduce(b):
    x = b.pick(lambda v: v.rank >= 1)
    if x is None:
        return None
    op = b.draw(st.sampled_from(["ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceL2", "ReduceSumSquare"]
                                if b.dtype == "float32" else ["ReduceSum", "ReduceMax", "ReduceMin"]))
    axes = sorted(b.draw(st.sets(st.integers(0, x.rank - 1), min_size=1, max_size=x.rank)))
    keep = b.draw(st.booleans())
    shape = tuple((1 if keep else None) if i in axes else d for i, d in enumerate(x.shape))
    shape = tuple(d for d in shape if d is not None)
    written = [a - x.rank if b.opset >= 11 and b.draw(st.booleans()) else a for a in axes]
    attrs = {"keepdims": int(keep)}
    axes_in = b.ints("axes", written, 13 if op == "ReduceSum" else 18, attrs)
    return b.node(op, [x.name] + ([axes_in] if axes_in else []), shape, **attrs)


def op_softmax(b):
    x = b.pick(lambda v: v.rank >= 1)
    if x is None:
        return None
    axis = b.draw(st.integers(-x.rank if b.opset >= 11 else 0, x.rank - 1))
    return b.node(b.draw(st.sampled_from(["Softmax", "LogSoftmax"])), [x.name], x.shape, axis=axis)


def op_transpose(b):
    x = b.pick(lambda v: v.rank >= 2)
    if x is None:
        return None
    perm = b.draw(st.permutations(range(x.rank)))
    return b.node("Transpose", [x.name], tuple(x.shape[p] for p in perm), perm=list(perm))


def op_reshape(b):
    x = b.pick()
    rank = b.draw(st.integers(1, 4))
    new = list(b.draw(st.sampled_from(_factorizations(x.size, rank))))
    written = list(new)
    if b.draw(st.booleans()):
        written[b.draw(st.integers(0, rank - 1))] = -1
    elif rank <= x.rank and b.draw(st.booleans()):
        # 0 copies the input's dimension (ONNX's default allowzero=0)
        i = b.draw(st.integers(0, rank - 1))
        if x.shape[i] == new[i]:
            written[i] = 0
    return b.node("Reshape", [x.name, b.const(np.array(written, "int64"))], tuple(new))


def op_flatten(b):
    x = b.pick(lambda v: v.rank >= 1)
    if x is None:
        return None
    axis = b.draw(st.integers(-x.rank if b.opset >= 11 else 0, x.rank))
    k = axis + x.rank if axis < 0 else axis
    outer = int(np.prod(x.shape[:k], dtype=np.int64))
    return b.node("Flatten", [x.name], (outer, x.size // outer), axis=axis)


def op_unsqueeze_squeeze(b):
    x = b.pick(lambda v: v.rank < 4)
    if x is None:
        return None
    axis = b.draw(st.integers(-(x.rank + 1) if b.opset >= 11 else 0, x.rank))
    pos = axis % (x.rank + 1)
    shape = x.shape[:pos] + (1,) + x.shape[pos:]
    attrs = {}
    axes_in = b.ints("axes", [axis], 13, attrs)
    (u,) = b.node("Unsqueeze", [x.name] + ([axes_in] if axes_in else []), shape, **attrs)
    ones = [i for i, d in enumerate(shape) if d == 1]
    if b.draw(st.booleans()) and len(ones) > 1:
        drop = sorted(b.draw(st.sets(st.sampled_from(ones), min_size=1, max_size=len(ones) - 1)))
        out = tuple(d for i, d in enumerate(shape) if i not in drop)
        attrs = {}
        axes_in = b.ints("axes", drop, 13, attrs)
        return [u] + b.node("Squeeze", [u.name] + ([axes_in] if axes_in else []), out, **attrs)
    return [u]


def op_slice(b):
    x = b.pick(lambda v: v.rank >= 1 and max(v.shape) > 1)
    if x is None:
        return None
    axes = sorted(b.draw(st.sets(st.integers(0, x.rank - 1), min_size=1, max_size=x.rank)))
    starts, ends, steps, shape = [], [], [], list(x.shape)
    for a in axes:
        n = x.shape[a]
        step = b.draw(st.sampled_from([1, 1, 2, -1, -2])) if b.opset >= 10 else 1
        start = b.draw(st.integers(-n - 2, n + 2))
        end = b.draw(st.integers(-n - 2, n + 2))
        length = len(range(*slice(start, end, step).indices(n)))
        if length == 0:  # keep every value non-empty
            start, end, step, length = 0, n, 1, n
        starts.append(start)
        ends.append(end)
        steps.append(step)
        shape[a] = length
    written = [a - x.rank if b.opset >= 11 and b.draw(st.booleans()) else a for a in axes]
    if b.opset < 10:
        return b.node("Slice", [x.name], tuple(shape), starts=starts, ends=ends, axes=written)
    ins = [x.name, b.const(np.array(starts, "int64")), b.const(np.array(ends, "int64")),
           b.const(np.array(written, "int64")), b.const(np.array(steps, "int64"))]
    return b.node("Slice", ins, tuple(shape))


def op_concat(b):
    x = b.pick(lambda v: v.rank >= 1)
    if x is None:
        return None
    axis = b.draw(st.integers(0, x.rank - 1))
    same = [v for v in b.values if v.dtype == b.dtype and v.rank == x.rank
            and all(d == e for i, (d, e) in enumerate(zip(v.shape, x.shape)) if i != axis)]
    parts = [b.draw(st.sampled_from(same)) for _ in range(b.draw(st.integers(1, 2)))]
    # with a constant part, or of computed values only (which the memory planner may
    # write in place, the concatenation then running no kernel)
    extra = b.draw(st.integers(0, 3))
    const_shape = tuple(extra if i == axis else d for i, d in enumerate(x.shape))
    names = [x.name] + [p.name for p in parts] + ([b.const(b.data(const_shape))] if extra else [])
    shape = tuple(sum(v.shape[axis] for v in [x] + parts) + extra if i == axis else d
                  for i, d in enumerate(x.shape))
    return b.node("Concat", names, shape, axis=axis - x.rank if b.opset >= 11 and b.draw(st.booleans()) else axis)


def op_split(b):
    x = b.pick(lambda v: v.rank >= 1 and max(v.shape) >= 2)
    if x is None:
        return None
    axis = b.draw(st.sampled_from([i for i, d in enumerate(x.shape) if d >= 2]))
    n = x.shape[axis]
    cut = b.draw(st.integers(1, n - 1))
    sizes = [cut, n - cut]
    shapes = [tuple(s if i == axis else d for i, d in enumerate(x.shape)) for s in sizes]
    attrs = {"axis": axis}
    if b.opset >= 18 and cut * 2 in (n, n + 1) and b.draw(st.booleans()):
        attrs["num_outputs"] = 2  # the first part the larger when n is odd
        return b.node("Split", [x.name], None, shapes=shapes, **attrs)
    sizes_in = b.ints("split", sizes, 13, attrs)
    return b.node("Split", [x.name] + ([sizes_in] if sizes_in else []), None, shapes=shapes, **attrs)


def op_gather(b):
    x = b.pick(lambda v: v.rank >= 1)
    if x is None:
        return None
    axis = b.draw(st.integers(0, x.rank - 1))
    n = x.shape[axis]
    ind_shape = b.draw(st.sampled_from([(), (2,), (2, 2)]))
    indices = b.rng.integers(-n if b.opset >= 11 else 0, n, ind_shape).astype("int64")
    shape = x.shape[:axis] + ind_shape + x.shape[axis + 1:]
    if int(np.prod(shape, dtype=np.int64)) > MAX_ELEMENTS:
        return None
    return b.node("Gather", [x.name, b.const(indices)], shape, axis=axis)


def op_matmul(b):
    x = b.pick(lambda v: v.rank >= 1)
    if x is None:
        return None
    m = b.draw(st.integers(1, 6))
    if x.rank == 1:
        w = b.floats((x.shape[0], m))
        return b.node("MatMul", [x.name, b.const(w)], (m,))
    batch = x.shape[:-2] if b.draw(st.booleans()) else ()
    w = b.floats(batch + (x.shape[-1], m))
    return b.node("MatMul", [x.name, b.const(w)], x.shape[:-1] + (m,))


def op_gemm(b):
    x = b.pick(lambda v: v.rank == 2)
    if x is None:
        return None
    n = b.draw(st.integers(1, 6))
    trans_b = b.draw(st.booleans())
    w = b.floats((n, x.shape[1]) if trans_b else (x.shape[1], n))
    bias = b.floats(b.draw(st.sampled_from([(n,), (1, n), (x.shape[0], n)])))
    return b.node("Gemm", [x.name, b.const(w), b.const(bias)], (x.shape[0], n), transB=int(trans_b),
                  alpha=b.draw(st.sampled_from([1.0, 0.5])), beta=b.draw(st.sampled_from([1.0, 2.0])))


def _window(b, n, k_max):
    k = b.draw(st.integers(1, min(k_max, n + 2)))
    s = b.draw(st.integers(1, 2))
    pad = [b.draw(st.integers(0, k - 1)), b.draw(st.integers(0, k - 1))]
    out = (n + sum(pad) - k) // s + 1
    return k, s, pad, out


def _spatial(b, x, k_max):
    """Kernel, strides, pads and output size of a 2-D window over ``x`` (or None)."""
    ks, ss, pads, outs = [], [], [[], []], []
    for n in x.shape[2:]:
        k, s, pad, out = _window(b, n, k_max)
        if out < 1:
            return None
        ks.append(k)
        ss.append(s)
        pads[0].append(pad[0])
        pads[1].append(pad[1])
        outs.append(out)
    return ks, ss, pads[0] + pads[1], outs


def op_conv(b):
    x = b.pick(lambda v: v.rank == 4 and v.shape[1] <= 8)
    if x is None:
        return None
    win = _spatial(b, x, 3)
    if win is None:
        return None
    ks, ss, pads, outs = win
    c = x.shape[1]
    group = b.draw(st.sampled_from([g for g in (1, 2, c) if c % g == 0]))
    # 4 and 8 filters: whole channel blocks, so on the C backend AlterOpLayout runs the
    # convolution blocked (NCHW4c under "llvm") and keeps its consumers blocked
    f = group * b.draw(st.integers(1, 3)) if group > 1 else b.draw(st.sampled_from([1, 2, 3, 4, 8]))
    w = b.floats((f, c // group) + tuple(ks))
    ins = [x.name, b.const(w)]
    if b.draw(st.booleans()):
        ins.append(b.const(b.floats((f,))))
    return b.node("Conv", ins, (x.shape[0], f) + tuple(outs), kernel_shape=ks, strides=ss, pads=pads,
                  group=group)


def op_pool(b):
    x = b.pick(lambda v: v.rank == 4)
    if x is None:
        return None
    op = b.draw(st.sampled_from(["MaxPool", "AveragePool", "GlobalAveragePool", "GlobalMaxPool"]))
    if op.startswith("Global"):
        return b.node(op, [x.name], x.shape[:2] + (1, 1))
    win = _spatial(b, x, 3)
    if win is None:
        return None
    ks, ss, pads, outs = win
    if any(p >= k for p, k in zip(pads, ks + ks)):  # ONNX: a pad smaller than the window
        return None
    attrs = dict(kernel_shape=ks, strides=ss, pads=pads)
    if op == "AveragePool":
        attrs["count_include_pad"] = int(b.draw(st.booleans()))
    return b.node(op, [x.name], x.shape[:2] + tuple(outs), **attrs)


def op_norm(b):
    x = b.pick(lambda v: v.rank >= 2)
    if x is None:
        return None
    op = b.draw(st.sampled_from(["BatchNormalization", "InstanceNormalization"]
                                + (["LayerNormalization"] if b.opset >= 17 else [])))
    if op == "BatchNormalization":
        c = x.shape[1]
        ins = [x.name, b.const(b.floats((c,))), b.const(b.floats((c,))), b.const(b.floats((c,))),
               b.const(b.floats((c,), 0.5, 2.0))]
        return b.node(op, ins, x.shape, epsilon=1e-5)
    if op == "InstanceNormalization":
        if x.rank < 3:
            return None
        c = x.shape[1]
        return b.node(op, [x.name, b.const(b.floats((c,))), b.const(b.floats((c,)))], x.shape, epsilon=1e-3)
    axis = b.draw(st.integers(-x.rank, x.rank - 1))
    norm_shape = x.shape[axis % x.rank:]
    ins = [x.name, b.const(b.floats(norm_shape)), b.const(b.floats(norm_shape))]
    if b.draw(st.booleans()):  # the training outputs too: the mean and 1 / standard deviation
        stats = x.shape[:axis % x.rank] + (1,) * len(norm_shape)
        return b.node(op, ins, None, shapes=[x.shape, stats, stats], axis=axis, epsilon=1e-3)
    return b.node(op, ins, x.shape, axis=axis, epsilon=1e-3)


def op_expand_tile_pad(b):
    x = b.pick(lambda v: v.rank >= 1 and v.size * 4 <= MAX_ELEMENTS)
    if x is None:
        return None
    # Pad took floats only before opset 11
    op = b.draw(st.sampled_from(["Expand", "Tile"] + (["Pad"] if b.dtype == "float32" or b.opset >= 11 else [])))
    if op == "Expand":
        ones = [i for i, d in enumerate(x.shape) if d == 1]
        shape = [b.draw(st.integers(2, 3)) if i in ones and b.draw(st.booleans()) else d
                 for i, d in enumerate(x.shape)]
        lead = (2,) if b.draw(st.booleans()) and x.rank < 4 else ()
        written = [1 if d == s and b.draw(st.booleans()) else s for d, s in zip(x.shape, shape)]
        return b.node(op, [x.name, b.const(np.array(list(lead) + written, "int64"))], lead + tuple(shape))
    if op == "Tile":
        reps = [b.draw(st.integers(1, 2)) for _ in x.shape]
        return b.node(op, [x.name, b.const(np.array(reps, "int64"))], tuple(d * r for d, r in zip(x.shape, reps)))
    mode = b.draw(st.sampled_from(["constant", "reflect", "edge"] + (["wrap"] if b.opset >= 19 else [])))
    pads = []
    for d in x.shape:
        most = d - 1 if mode == "reflect" else 2
        # from opset 11 a negative pad crops (leaving at least one element)
        least = -((d - 1) // 2) if b.opset >= 11 and mode != "reflect" else 0
        pads.append((b.draw(st.integers(max(least, -1), min(2, most))),
                     b.draw(st.integers(max(least, -1), min(2, most)))))
    out = tuple(d + p + q for d, (p, q) in zip(x.shape, pads))
    written = [p[0] for p in pads] + [p[1] for p in pads]
    value = b.draw(st.sampled_from([0.0, 1.5] if b.dtype == "float32" else [0, 7]))
    if b.opset < 11:
        return b.node(op, [x.name], out, mode=mode, pads=written, **({"value": value} if mode == "constant" else {}))
    ins = [x.name, b.const(np.array(written, "int64"))]
    if mode == "constant":
        ins.append(b.const(np.array(value, b.dtype)))
    return b.node(op, ins, out, mode=mode)


def op_variadic(b):
    x = b.pick()
    if b.dtype != "float32" and b.opset < 12:  # integer Max and Min came with opset 12; Sum and Mean take floats
        return None
    op = b.draw(st.sampled_from(["Sum", "Mean", "Max", "Min"] if b.dtype == "float32" else ["Max", "Min"]))
    others = [v for v in b.values if v.dtype == b.dtype and _broadcasts_to(v.shape, x.shape)]
    ins = [x.name] + [b.draw(st.sampled_from(others)).name for _ in range(b.draw(st.integers(0, 2)))]
    ins.append(b.const(b.data(_broadcast_partner(b.draw, x.shape))))
    return b.node(op, ins, x.shape)


def op_prelu_lrn(b):
    x = b.pick(lambda v: v.rank >= 2)
    if x is None:
        return None
    if b.draw(st.booleans()):
        slope = b.floats(b.draw(st.sampled_from([(x.shape[1],) + (1,) * (x.rank - 2), (1,)])), 0.0, 0.5)
        return b.node("PRelu", [x.name, b.const(slope)], x.shape)
    if x.rank != 4:  # onnxruntime's LRN takes images only
        return None
    return b.node("LRN", [x.name], x.shape, size=b.draw(st.sampled_from([1, 3, 5])), alpha=1e-2, beta=0.75,
                  bias=1.0)


def op_conv_transpose(b):
    x = b.pick(lambda v: v.rank == 4 and v.shape[1] <= 8)
    if x is None:
        return None
    c = x.shape[1]
    group = b.draw(st.sampled_from([g for g in (1, c) if c % g == 0]))
    f = group * b.draw(st.integers(1, 2))
    ks = [b.draw(st.integers(1, 3)) for _ in range(2)]
    ss = [b.draw(st.integers(1, 2)) for _ in range(2)]
    pads = [b.draw(st.integers(0, k - 1)) for k in ks] * 2
    outs = [(n - 1) * s + k - 2 * p for n, s, k, p in zip(x.shape[2:], ss, ks, pads[:2])]
    if min(outs) < 1 or x.shape[0] * f * outs[0] * outs[1] > MAX_ELEMENTS:
        return None
    w = b.floats((c, f // group) + tuple(ks))
    return b.node("ConvTranspose", [x.name, b.const(w)], (x.shape[0], f) + tuple(outs), kernel_shape=ks,
                  strides=ss, pads=pads, group=group)


def op_resize(b):
    x = b.pick(lambda v: v.rank == 4 and v.size * 4 <= MAX_ELEMENTS)
    if x is None or b.opset < 13:  # sizes as an input, roi and scales left out
        return None
    mode = b.draw(st.sampled_from(["nearest", "linear"]))
    sizes = x.shape[:2] + tuple(b.draw(st.integers(1, 2 * n)) for n in x.shape[2:])
    if mode == "nearest" and not _nearest_agrees(x.shape[2:], sizes[2:]):
        mode = "linear"  # a deliberate divergence (below): not a finding
    attrs = {"mode": mode}
    if mode == "nearest":
        attrs["coordinate_transformation_mode"] = "asymmetric"
        attrs["nearest_mode"] = "floor"
    else:
        attrs["coordinate_transformation_mode"] = b.draw(st.sampled_from(["half_pixel", "align_corners",
                                                                          "asymmetric"]))
        if b.opset >= 18 and b.draw(st.booleans()):
            attrs["antialias"] = 1  # the filter widened where an axis shrinks
    return b.node("Resize", [x.name, "", "", b.const(np.array(sizes, "int64"))], sizes, **attrs)


def _nearest_agrees(in_sizes, out_sizes) -> bool:
    """Whether onnxruntime's nearest (asymmetric, floor) pixels are the exact ones for
    these sizes.  tecc maps output pixel ``x`` to input pixel ``floor(x * I / O)``
    exactly (``topi.image.resize``); onnxruntime divides ``x`` by the float32 scale
    ``O / I``, which lands just below a whole coordinate for some sizes (14 -> 2:
    ``1 / 0.14285715 = 6.9999996``, pixel 6 where the exact one is 7).  Such sizes are
    a known, deliberate divergence, not something for the fuzzer to find."""
    for n, m in zip(in_sizes, out_sizes):
        scale = np.float32(m) / np.float32(n)
        for x in range(m):
            if int(np.floor(np.float32(x) / scale)) != (x * n) // m:
                return False
    return True


def op_einsum(b):
    x = b.pick(lambda v: v.rank in (2, 3))
    if x is None or b.opset < 12:
        return None
    m = b.draw(st.integers(1, 5))
    if x.rank == 2:
        eq, w_shape, out = b.draw(st.sampled_from([("ij,jk->ik", (x.shape[1], m), (x.shape[0], m)),
                                                   ("ij,kj->ik", (m, x.shape[1]), (x.shape[0], m))]))
    else:
        eq, w_shape, out = b.draw(st.sampled_from([
            ("bij,bjk->bik", (x.shape[0], x.shape[2], m), (x.shape[0], x.shape[1], m)),
            ("bij,jk->bik", (x.shape[2], m), (x.shape[0], x.shape[1], m)),
            ("...ij,...jk->...ik", (1, x.shape[2], m), (x.shape[0], x.shape[1], m)),
            ("...j,jk", (x.shape[2], m), (x.shape[0], x.shape[1], m))]))
    return b.node("Einsum", [x.name, b.const(b.floats(w_shape))], out, equation=eq)


def op_cumsum_topk(b):
    x = b.pick(lambda v: v.rank >= 1)
    if x is None:
        return None
    axis = b.draw(st.integers(-x.rank, x.rank - 1))
    if b.opset < 11:  # neither existed (TopK without k as an input)
        return None
    if b.draw(st.booleans()):
        return b.node("CumSum", [x.name, b.const(np.array(axis, "int64"))], x.shape,
                      exclusive=int(b.draw(st.booleans())), reverse=int(b.draw(st.booleans())))
    n = x.shape[axis]
    k = b.draw(st.integers(1, n))
    shape = tuple(k if i == axis % x.rank else d for i, d in enumerate(x.shape))
    values, _ = b.node("TopK", [x.name, b.const(np.array([k], "int64"))], None, shapes=[shape, shape], axis=axis,
                       largest=int(b.draw(st.booleans())))
    return [values]  # not the indices: ties would make them ambiguous


def op_space_depth(b):
    x = b.pick(lambda v: v.rank == 4)
    if x is None:
        return None
    n, c, h, w = x.shape
    if h % 2 == 0 and w % 2 == 0 and b.draw(st.booleans()):
        return b.node("SpaceToDepth", [x.name], (n, c * 4, h // 2, w // 2), blocksize=2)
    if c % 4 == 0:
        # mode came with opset 11 (DCR before)
        attrs = {"mode": b.draw(st.sampled_from(["DCR", "CRD"]))} if b.opset >= 11 else {}
        return b.node("DepthToSpace", [x.name], (n, c // 4, h * 2, w * 2), blocksize=2, **attrs)
    return None


def op_cast_half(b):
    x = b.pick()
    (h,) = b.node("Cast", [x.name], x.shape, dtype="float16", to=TensorProto.FLOAT16)
    return b.node("Cast", [h.name], x.shape, to=TensorProto.FLOAT)


def op_int_arith(b):
    """Integer arithmetic as onnxruntime computes it: division truncated toward 0, Mod
    with the divisor's sign (``fmod=0``) or the dividend's (``fmod=1``); divisors and
    factors are small nonzero constants, so no value leaves int32."""
    x = b.pick()
    op = b.draw(st.sampled_from(["Add", "Sub", "Mul", "Div", "Mod", "Max", "Min", "Abs", "Neg", "Sign"]))
    if op in ("Abs", "Neg", "Sign"):
        return b.node(op, [x.name], x.shape)
    if (op in ("Max", "Min") and b.opset < 12) or (op == "Mod" and b.opset < 10):
        return None
    if op in ("Div", "Mod", "Mul"):
        shape = _broadcast_partner(b.draw, x.shape)
        magnitude = b.rng.integers(1, 4 if op == "Mul" else 8, shape)
        y = b.const((magnitude * b.rng.choice([-1, 1], shape)).astype(b.dtype))
        attrs = {"fmod": int(b.draw(st.booleans()))} if op == "Mod" else {}
        return b.node(op, [x.name, y], x.shape, **attrs)
    return _with_partner(b, op, x)


def op_int_cast(b):
    """A round trip through another type: float32 (exact for these magnitudes) or the
    other integer width."""
    x = b.pick()
    other = b.draw(st.sampled_from(["float32", "int32" if b.dtype == "int64" else "int64"]))
    proto = {"float32": TensorProto.FLOAT, "int32": TensorProto.INT32, "int64": TensorProto.INT64}
    (c,) = b.node("Cast", [x.name], x.shape, dtype=other, to=proto[other])
    return b.node("Cast", [c.name], x.shape, to=proto[b.dtype])


def _positive(b, x, low=0.5):
    """``|x| + low``: a value at least ``low`` (for logarithms, square roots, reciprocals)."""
    (a,) = b.node("Abs", [x.name], x.shape)
    (p,) = b.node("Add", [a.name, b.const(np.float32(low))], x.shape)
    return p


def _inside_unit(b, x):
    """``0.9 tanh(x)``: a value strictly inside (-1, 1) (for asin, acos, atanh)."""
    (t,) = b.node("Tanh", [x.name], x.shape)
    (m,) = b.node("Mul", [t.name, b.const(np.float32(0.9))], x.shape)
    return m


def op_unary_more(b):
    """Trigonometric and hyperbolic functions, rounding, reciprocals, and the
    activations of later opsets, each on operands where it is tame."""
    x = b.pick()
    op = b.draw(st.sampled_from(["Sin", "Cos", "Tan", "Atan", "Asinh", "Sinh", "Cosh", "Asin", "Acos", "Atanh",
                                 "Acosh", "Floor", "Ceil", "Round", "Reciprocal", "Gelu", "Mish", "Celu",
                                 "ThresholdedRelu", "Shrink", "IsNaN", "IsInf", "Dropout"]))
    since = {"Round": 11, "Gelu": 20, "Mish": 18, "Celu": 12, "ThresholdedRelu": 10, "IsInf": 10}
    if b.opset < since.get(op, 9):
        return None
    if op in ("Asin", "Acos", "Atanh"):
        x = _inside_unit(b, x)
    elif op in ("Acosh", "Reciprocal"):
        x = _positive(b, x, 1.0 if op == "Acosh" else 0.5)
    elif op in ("Floor", "Ceil", "Round"):
        # scaled, so that the result has several values; an operand this far from a
        # rounding boundary rounds the same in both runtimes
        (x,) = b.node("Mul", [x.name, b.const(np.float32(3.0))], x.shape)
    attrs = {}
    if op == "Gelu":
        attrs["approximate"] = b.draw(st.sampled_from(["none", "tanh"]))
    elif op == "Celu":
        attrs["alpha"] = b.draw(st.sampled_from([0.5, 1.0, 2.0]))
    elif op == "ThresholdedRelu":
        attrs["alpha"] = b.draw(st.sampled_from([0.1, 0.5]))
    elif op == "Shrink":
        attrs.update(bias=b.draw(st.sampled_from([0.0, 0.2])), lambd=b.draw(st.sampled_from([0.3, 0.5])))
    if op in ("IsNaN", "IsInf"):
        (m,) = b.node(op, [x.name], x.shape, dtype="bool")
        (c,) = b.node("Cast", [m.name], x.shape, to=TensorProto.FLOAT)
        return b.node("Add", [x.name, c.name], x.shape)
    if op == "Dropout":  # inference: the identity
        if b.opset < 12:
            return b.node(op, [x.name], x.shape, ratio=0.3)
        return b.node(op, [x.name, b.const(np.float32(0.3))], x.shape)
    return b.node(op, [x.name], x.shape, **attrs)


def op_logic(b):
    """Comparisons (Equal on a Sign, which is exact) combined by And, Or, Xor and Not,
    selecting with Where or cast to numbers."""
    x = b.pick()
    # Equal takes floats from opset 11; LessOrEqual and GreaterOrEqual came with 12
    cmps = ["Less", "Greater"] + (["Equal"] if b.opset >= 11 else []) + (["LessOrEqual", "GreaterOrEqual"]
                                                                          if b.opset >= 12 else [])

    def compare():
        op = b.draw(st.sampled_from(cmps))
        if op == "Equal":
            (sg,) = b.node("Sign", [x.name], x.shape)
            return b.node(op, [sg.name, b.const(np.float32(b.draw(st.sampled_from([-1.0, 0.0, 1.0]))))],
                          x.shape, dtype="bool")[0]
        return b.node(op, [x.name, b.const(b.data(_broadcast_partner(b.draw, x.shape)))], x.shape, dtype="bool")[0]

    m = compare()
    if b.draw(st.booleans()):
        m = b.node(b.draw(st.sampled_from(["And", "Or", "Xor"])), [m.name, compare().name], x.shape, dtype="bool")[0]
    if b.draw(st.booleans()):
        m = b.node("Not", [m.name], x.shape, dtype="bool")[0]
    if b.draw(st.booleans()):
        return b.node("Where", [m.name, x.name, b.const(b.data(_broadcast_partner(b.draw, x.shape)))], x.shape)
    return b.node("Cast", [m.name], x.shape, to=TensorProto.FLOAT)


def op_reduce_more(b):
    """ReduceL1, ReduceLogSum (of a positive value), ReduceLogSumExp, ReduceProd, and
    ArgMin (which picks the first or, from opset 12, the last of equal values)."""
    x = b.pick(lambda v: v.rank >= 1)
    if x is None:
        return None
    op = b.draw(st.sampled_from(["ReduceL1", "ReduceLogSum", "ReduceLogSumExp", "ReduceProd", "ArgMin"]))
    if op == "ArgMin":
        axis = b.draw(st.integers(-x.rank if b.opset >= 11 else 0, x.rank - 1))
        keep = b.draw(st.booleans())
        shape = tuple((1 if keep else None) if i == axis % x.rank else d for i, d in enumerate(x.shape))
        attrs = {"axis": axis, "keepdims": int(keep)}
        if b.opset >= 12:
            attrs["select_last_index"] = int(b.draw(st.booleans()))
        (i,) = b.node(op, [x.name], tuple(d for d in shape if d is not None), dtype="int64", **attrs)
        return b.node("Cast", [i.name], i.shape, to=TensorProto.FLOAT)
    if op == "ReduceLogSum":
        x = _positive(b, x)
    axes = sorted(b.draw(st.sets(st.integers(0, x.rank - 1), min_size=1, max_size=x.rank)))
    keep = b.draw(st.booleans())
    shape = tuple(d for i, d in enumerate(x.shape) if i not in axes or keep)
    shape = tuple(1 if i in axes else d for i, d in enumerate(x.shape)) if keep else shape
    attrs = {"keepdims": int(keep)}
    axes_in = b.ints("axes", axes, 18, attrs)
    return b.node(op, [x.name] + ([axes_in] if axes_in else []), shape, **attrs)


def op_shape_subgraph(b):
    """What torch exports around dynamic shapes, on static ones: Shape, Gather, Concat
    and Reshape (``x.view(x.size(0), -1)``), ConstantOfShape, Size, Range, CastLike."""
    x = b.pick(lambda v: v.rank >= 1)
    if x is None:
        return None
    kind = b.draw(st.sampled_from(["view", "constant_of_shape", "size", "range", "cast_like"]))
    (shp,) = b.node("Shape", [x.name], (x.rank,), dtype="int64")
    if kind == "view":
        (first,) = b.node("Gather", [shp.name, b.const(np.array([0], "int64"))], (1,), dtype="int64", axis=0)
        (new,) = b.node("Concat", [first.name, b.const(np.array([-1], "int64"))], (2,), dtype="int64", axis=0)
        return b.node("Reshape", [x.name, new.name], (x.shape[0], x.size // x.shape[0]))
    if kind == "constant_of_shape":
        value = helper.make_tensor("value", DTYPES[b.dtype], [1], [b.draw(st.sampled_from([2, 3]))])
        (c,) = b.node("ConstantOfShape", [shp.name], x.shape, value=value)
        return b.node("Mul", [x.name, c.name], x.shape)
    if kind == "size":
        (n,) = b.node("Size", [x.name], (), dtype="int64")
        (f,) = b.node("Cast", [n.name], (), to=DTYPES[b.dtype])
        return b.node("Div" if b.dtype == "float32" else "Add", [x.name, f.name], x.shape)
    if kind == "range":
        if b.opset < 11:
            return None
        (last,) = b.node("Gather", [shp.name, b.const(np.array(x.rank - 1, "int64"))], (), dtype="int64", axis=0)
        (r,) = b.node("Range", [b.const(np.array(0, "int64")), last.name, b.const(np.array(1, "int64"))],
                      (x.shape[-1],), dtype="int64")
        (f,) = b.node("Cast", [r.name], (x.shape[-1],), to=DTYPES[b.dtype])
        if b.dtype == "float32":
            (f,) = b.node("Mul", [f.name, b.const(np.float32(0.1))], (x.shape[-1],))
        return b.node("Add", [x.name, f.name], x.shape)
    if b.opset < 15:
        return None
    (i,) = b.node("Cast", [x.name], x.shape, dtype="int32", to=TensorProto.INT32)
    return b.node("CastLike", [i.name, x.name], x.shape)


def op_index(b):
    """GatherElements, GatherND, ScatterElements (Scatter before opset 11), ScatterND
    (with reductions from opset 16), OneHot of an ArgMax, Trilu, ReverseSequence and
    Hardmax."""
    x = b.pick(lambda v: v.rank >= 1)
    if x is None:
        return None
    if b.opset < 11:  # only Scatter (ScatterElements' name before opset 11), with indices from 0
        n = x.shape[-1]
        order = np.argsort(b.rng.random(x.shape), axis=-1)
        k = b.draw(st.integers(1, n))
        idx = order[..., :k].astype("int64")
        return b.node("Scatter", [x.name, b.const(idx), b.const(b.data(idx.shape))], x.shape, axis=x.rank - 1)
    # onnxruntime implements OneHot, Trilu and Hardmax for float values only (of these types)
    op = b.draw(st.sampled_from(["GatherElements", "GatherND", "ScatterElements", "ScatterND", "ReverseSequence"]
                                + (["OneHot", "Trilu", "Hardmax"] if b.dtype == "float32" else [])))
    axis = b.draw(st.integers(-x.rank, x.rank - 1))
    n = x.shape[axis]
    if op == "GatherElements":
        shape = tuple(b.draw(st.integers(1, d)) for d in x.shape)
        shape = tuple(b.draw(st.integers(1, 3)) if i == axis % x.rank else d for i, d in enumerate(shape))
        idx = b.rng.integers(-n, n, shape).astype("int64")
        return b.node(op, [x.name, b.const(idx)], shape, axis=axis)
    if op == "GatherND":
        depth = b.draw(st.integers(1, x.rank))
        rows = b.draw(st.integers(1, 3))
        idx = np.stack([b.rng.integers(-d, d, rows) for d in x.shape[:depth]], axis=-1).astype("int64")
        return b.node(op, [x.name, b.const(idx)], (rows,) + x.shape[depth:])
    if op == "ScatterElements":
        # distinct indices along the axis (a permutation), so the result has no ties
        # to break, unless a reduction combines them
        reduction = b.draw(st.sampled_from(["none"] + (["add", "mul"] if b.opset >= 16 else [])
                                           + (["max", "min"] if b.opset >= 18 else [])))
        k = b.draw(st.integers(1, n))
        shape = tuple(k if i == axis % x.rank else d for i, d in enumerate(x.shape))
        if reduction == "none":
            order = np.argsort(b.rng.random(shape[:axis % x.rank] + (n,) + shape[axis % x.rank + 1:]),
                               axis=axis % x.rank)
            idx = np.take(order, np.arange(k), axis=axis % x.rank).astype("int64")
        else:
            idx = b.rng.integers(0, n, shape).astype("int64")
        attrs = {"axis": axis}
        if b.opset >= 16:
            attrs["reduction"] = reduction
        return b.node(op, [x.name, b.const(idx), b.const(b.data(shape))], x.shape, **attrs)
    if op == "ScatterND":
        depth = b.draw(st.integers(1, x.rank))
        cells = list(np.ndindex(*x.shape[:depth]))
        rows = b.draw(st.integers(1, min(3, len(cells))))
        pick = b.rng.choice(len(cells), rows, replace=False)
        idx = np.array([cells[i] for i in pick], "int64").reshape(rows, depth)
        attrs = {}
        if b.opset >= 16:
            attrs["reduction"] = b.draw(st.sampled_from(["none", "add", "mul"]))
        return b.node(op, [x.name, b.const(idx), b.const(b.data((rows,) + x.shape[depth:]))], x.shape, **attrs)
    if op == "OneHot":
        keep = b.draw(st.booleans())
        am_shape = tuple((1 if keep else None) if i == axis % x.rank else d for i, d in enumerate(x.shape))
        am_shape = tuple(d for d in am_shape if d is not None)
        if not am_shape:  # OneHot's indices have rank 1 or more
            return None
        (am,) = b.node("ArgMax", [x.name], am_shape, dtype="int64", axis=axis, keepdims=int(keep))
        depth = n + b.draw(st.integers(0, 2))
        out_axis = b.draw(st.integers(-len(am_shape) - 1, len(am_shape)))
        pos = out_axis % (len(am_shape) + 1)
        shape = am_shape[:pos] + (depth,) + am_shape[pos:]
        if int(np.prod(shape)) > MAX_ELEMENTS:
            return None
        values = b.const(np.array([b.draw(st.sampled_from([0, -1])), 2], b.dtype))
        return b.node(op, [am.name, b.const(np.array(depth, "int64")), values], shape, axis=out_axis)
    if op == "Trilu":
        if x.rank < 2 or b.opset < 14:
            return None
        k = b.draw(st.integers(-2, 2))
        return b.node(op, [x.name, b.const(np.array(k, "int64"))], x.shape, upper=int(b.draw(st.booleans())))
    if op == "ReverseSequence":
        if x.rank < 2:
            return None
        time_axis = b.draw(st.integers(0, 1))
        batch_axis = 1 - time_axis
        lens = b.rng.integers(1, x.shape[time_axis] + 1, x.shape[batch_axis]).astype("int64")
        return b.node(op, [x.name, b.const(lens)], x.shape, time_axis=time_axis, batch_axis=batch_axis)
    if b.opset < 13:  # Hardmax's axis meant a 2-D coercion before
        return None
    return b.node(op, [x.name], x.shape, axis=axis)


def op_recurrent(b):
    """RNN, GRU or LSTM over a rank-3 value read as (sequence, batch, features), in
    one or both directions, with or without biases
    and initial states; the output is the sequence or the last hidden state."""
    x = b.pick(lambda v: v.rank == 3 and v.shape[2] <= 16)
    if x is None:
        return None
    kind = b.draw(st.sampled_from(["RNN", "GRU", "LSTM"]))
    gates = {"RNN": 1, "GRU": 3, "LSTM": 4}[kind]
    hidden = b.draw(st.integers(1, 5))
    direction = b.draw(st.sampled_from(["forward", "reverse", "bidirectional"]))
    dirs = 2 if direction == "bidirectional" else 1
    # (not batch first, layout=1: onnxruntime runs no such layer, there is nothing to compare with)
    steps, batch = x.shape[0], x.shape[1]
    w = b.const(b.floats((dirs, gates * hidden, x.shape[2]), -0.7, 0.7))
    r = b.const(b.floats((dirs, gates * hidden, hidden), -0.7, 0.7))
    ins = [x.name, w, r]
    attrs = {"hidden_size": hidden, "direction": direction}
    if kind == "GRU":
        attrs["linear_before_reset"] = int(b.draw(st.booleans()))
    state = (dirs, batch, hidden)
    if b.draw(st.booleans()):
        ins.append(b.const(b.floats((dirs, 2 * gates * hidden))))
        if b.draw(st.booleans()):
            ins += ["", b.const(b.floats(state))]
            if kind == "LSTM" and b.draw(st.booleans()):
                ins.append(b.const(b.floats(state)))
    shapes = [(steps, dirs, batch, hidden), state] + ([state] if kind == "LSTM" else [])
    outs = b.node(kind, ins, None, shapes=shapes, **attrs)
    return [outs[b.draw(st.integers(0, 1))]]


def op_norm_more(b):
    """GroupNormalization, LpNormalization, MeanVarianceNormalization, LpPool and
    Upsample (opset 9 only: it was deprecated after)."""
    x = b.pick(lambda v: v.rank == 4)
    if x is None:
        return None
    op = b.draw(st.sampled_from(["GroupNormalization", "LpNormalization", "MeanVarianceNormalization", "LpPool",
                                 "Upsample"]))
    if op == "GroupNormalization":
        c = x.shape[1]
        groups = b.draw(st.sampled_from([g for g in range(1, c + 1) if c % g == 0]))
        if b.opset < 21:  # the checker calls the opset-18 form deprecated
            return None
        per = c  # scale and bias per channel (opset 21's form)
        return b.node(op, [x.name, b.const(b.floats((per,))), b.const(b.floats((per,)))], x.shape,
                      num_groups=groups, epsilon=1e-3)
    if op == "LpNormalization":
        return b.node(op, [x.name], x.shape, axis=b.draw(st.integers(-1, 3)), p=b.draw(st.sampled_from([1, 2])))
    if op == "MeanVarianceNormalization":
        axes = sorted(b.draw(st.sets(st.integers(0, 3), min_size=1, max_size=3)))
        # onnxruntime computes the variance as E[x^2] - E[x]^2, which rounds below 0 (a
        # NaN) on a slice of equal values: slices of several values, offset by random ones
        if math.prod(x.shape[i] for i in axes) < 2:
            return None
        (y,) = b.node("Add", [x.name, b.const(b.floats(x.shape))], x.shape)
        return b.node(op, [y.name], x.shape, axes=axes)
    if op == "LpPool":
        if b.opset < 11:
            return None
        win = _spatial(b, x, 3)
        if win is None:
            return None
        ks, ss, pads, outs = win
        if any(p >= k for p, k in zip(pads, ks + ks)):
            return None
        return b.node(op, [x.name], x.shape[:2] + tuple(outs), kernel_shape=ks, strides=ss, pads=pads,
                      p=b.draw(st.sampled_from([1, 2, 3])))
    if b.opset != 9 or x.size * 4 > MAX_ELEMENTS:
        return None
    scales = [1.0, 1.0] + [float(b.draw(st.sampled_from([1, 2]))) for _ in range(2)]
    shape = tuple(int(d * s) for d, s in zip(x.shape, scales))
    return b.node(op, [x.name, b.const(np.array(scales, "float32"))], shape,
                  mode=b.draw(st.sampled_from(["nearest", "linear"])))


def op_int_more(b):
    """Integer models: comparisons of integers (Equal too) combined by logic, and
    gathers and scatters of integer values."""
    if b.draw(st.booleans()):
        x = b.pick()
        op = b.draw(st.sampled_from(["Equal", "Less", "Greater"]))
        (m,) = b.node(op, [x.name, b.const(b.data(_broadcast_partner(b.draw, x.shape)))], x.shape, dtype="bool")
        if b.draw(st.booleans()):
            (m,) = b.node("Not", [m.name], x.shape, dtype="bool")
        return b.node("Where", [m.name, x.name, b.const(b.data(_broadcast_partner(b.draw, x.shape)))], x.shape)
    return op_index(b)


def op_composite(b):
    """The rest of the float operators: EyeLike and Constant nodes, CenterCropPad,
    GridSample (of a grid computed from the model's values), a window function, DFT,
    a QuantizeLinear/DequantizeLinear round trip, a dynamically quantized MatMul
    (DynamicQuantizeLinear, MatMulInteger), MaxPool's indices fed to MaxUnpool,
    and the NegativeLogLikelihood and SoftmaxCrossEntropy losses."""
    x = b.pick()
    op = b.draw(st.sampled_from(["EyeLike", "Constant", "CenterCropPad", "GridSample", "Window", "DFT", "Quantize",
                                 "DynamicQuantize", "MaxUnpool", "NegativeLogLikelihoodLoss"]))
    if op == "EyeLike":
        if x.rank != 2:
            return None
        (e,) = b.node(op, [x.name], x.shape, k=b.draw(st.integers(-2, 2)))
        return b.node("Add", [x.name, e.name], x.shape)
    if op == "Constant":
        value = numpy_helper.from_array(b.data(_broadcast_partner(b.draw, x.shape)), "value")
        (c,) = b.node(op, [], tuple(value.dims), value=value)
        return b.node("Mul", [x.name, c.name], x.shape)
    if op == "CenterCropPad":
        if b.opset < 18 or x.rank < 1:
            return None
        axes = sorted(b.draw(st.sets(st.integers(0, x.rank - 1), min_size=1, max_size=x.rank)))
        sizes = [max(1, x.shape[a] + b.draw(st.integers(-2, 2))) for a in axes]
        shape = tuple(sizes[axes.index(i)] if i in axes else d for i, d in enumerate(x.shape))
        return b.node(op, [x.name, b.const(np.array(sizes, "int64"))], shape, axes=axes)
    if op == "GridSample":
        if x.rank != 4 or b.opset < 16:
            return None
        n, _, h, w = x.shape
        ho, wo = b.draw(st.integers(1, 4)), b.draw(st.integers(1, 4))
        # a grid that moves with the model's values: fixed points in [-1.1, 1.1] plus
        # a small multiple of a reduction of x
        (m,) = b.node("ReduceMean", [x.name], (n, 1, 1, 1), axes=[1, 2, 3], keepdims=1) if b.opset < 18 else \
            b.node("ReduceMean", [x.name, b.const(np.array([1, 2, 3], "int64"))], (n, 1, 1, 1), keepdims=1)
        if b.opset >= 20 and b.draw(st.booleans()):
            # AffineGrid of a transform that moves with x: fixed coefficients plus a
            # small multiple of its mean
            (m2,) = b.node("Reshape", [m.name, b.const(np.array([n, 1, 1], "int64"))], (n, 1, 1))
            (t,) = b.node("Mul", [m2.name, b.const(b.floats((1, 2, 3), -0.2, 0.2))], (n, 2, 3))
            (t,) = b.node("Add", [t.name, b.const(b.floats((1, 2, 3), -1.0, 1.0))], (n, 2, 3))
            (g,) = b.node("AffineGrid", [t.name, b.const(np.array([n, x.shape[1], ho, wo], "int64"))],
                          (n, ho, wo, 2), align_corners=int(b.draw(st.booleans())))
        else:
            (g,) = b.node("Mul", [m.name, b.const(b.floats((1, ho, wo, 2), -0.2, 0.2))], (n, ho, wo, 2))
            (g,) = b.node("Add", [g.name, b.const(b.floats((1, ho, wo, 2), -1.1, 1.1))], (n, ho, wo, 2))
        modes = ["bilinear", "nearest"] if b.opset < 20 else ["linear", "nearest"]
        return b.node(op, [x.name, g.name], x.shape[:2] + (ho, wo), mode=b.draw(st.sampled_from(modes)),
                      padding_mode=b.draw(st.sampled_from(["zeros", "border", "reflection"])),
                      align_corners=int(b.draw(st.booleans())))
    if op == "Window":
        if b.opset < 17 or x.rank < 1 or x.shape[-1] < 2:  # a symmetric window of 1 divides by 0
            return None
        kind = b.draw(st.sampled_from(["HannWindow", "HammingWindow", "BlackmanWindow"]))
        n = x.shape[-1]
        (win,) = b.node(kind, [b.const(np.array(n, "int64"))], (n,), periodic=int(b.draw(st.booleans())))
        return b.node("Mul", [x.name, win.name], x.shape)
    if op == "DFT":
        # a signal [batch, n, 1] (real) along axis 1, complex [batch, n, 2] out
        if b.opset < 17 or x.rank != 2 or x.shape[1] > 16:
            return None
        (sig,) = b.node("Unsqueeze", [x.name] + ([b.const(np.array([-1], "int64"))] if b.opset >= 13 else []),
                        x.shape + (1,), **({} if b.opset >= 13 else {"axes": [2]}))
        inverse = int(b.draw(st.booleans()))
        if b.opset >= 20:
            return b.node(op, [sig.name, "", b.const(np.array(1, "int64"))], x.shape + (2,), inverse=inverse)
        return b.node(op, [sig.name], x.shape + (2,), axis=1, inverse=inverse)
    if op == "Quantize":
        if b.opset < 13:
            return None
        scale = b.const(np.float32(b.draw(st.sampled_from([0.01, 0.05]))))
        zero = b.const(np.array(b.draw(st.sampled_from([0, 128])), "uint8"))
        (q,) = b.node("QuantizeLinear", [x.name, scale, zero], x.shape, dtype="uint8")
        return b.node("DequantizeLinear", [q.name, scale, zero], x.shape)
    if op == "DynamicQuantize":
        # what onnxruntime's quantize_dynamic writes around a MatMul (with uint8 weights:
        # its int8-weight kernels saturate, see test_onnx_import_more.check_exact)
        if b.opset < 11 or x.rank != 2:
            return None
        k, n = x.shape[1], b.draw(st.integers(1, 6))
        y, scale, zero = b.node("DynamicQuantizeLinear", [x.name], None, shapes=[x.shape, (), ()], dtype="uint8")
        w = b.rng.integers(0, 256, (k, n)).astype("uint8")
        (acc,) = b.node("MatMulInteger", [y.name, b.const(w), zero.name, b.const(np.array(128, "uint8"))],
                        (x.shape[0], n), dtype="int32")
        (f,) = b.node("Cast", [acc.name], acc.shape, to=TensorProto.FLOAT)
        (s,) = b.node("Mul", [scale.name, b.const(np.float32(0.004))], ())
        return b.node("Mul", [f.name, s.name], acc.shape)
    if op == "MaxUnpool":
        if x.rank != 4 or b.opset < 11 or min(x.shape[2:]) < 2:
            return None
        out = x.shape[:2] + tuple(d // 2 for d in x.shape[2:])
        # (the indices are not offered to later draws: they are int64, and ties of equal
        # values make them ambiguous; the unpooled values are the same either way)
        values, indices = b.node("MaxPool", [x.name], None, shapes=[out, out], kernel_shape=[2, 2], strides=[2, 2])
        # the output shape given: an odd input is not (out - 1) * stride + kernel wide
        return b.node(op, [values.name, indices.name, b.const(np.array(x.shape, "int64"))], x.shape,
                      kernel_shape=[2, 2], strides=[2, 2])
    # NegativeLogLikelihoodLoss of a LogSoftmax over axis 1, or SoftmaxCrossEntropyLoss,
    # against fixed classes
    if b.opset < 13 or x.rank < 2:
        return None
    target_shape = (x.shape[0],) + x.shape[2:]
    target = b.rng.integers(0, x.shape[1], target_shape).astype("int64")
    reduction = b.draw(st.sampled_from(["none", "sum", "mean"]))
    weight = [b.const(b.floats((x.shape[1],), 0.5, 1.5))] if b.draw(st.booleans()) else []
    out = target_shape if reduction == "none" else ()
    if b.draw(st.booleans()):  # the loss of the scores themselves, softmax included
        return b.node("SoftmaxCrossEntropyLoss", [x.name, b.const(target)] + weight, out, reduction=reduction)
    (lp,) = b.node("LogSoftmax", [x.name], x.shape, axis=1)
    return b.node(op, [lp.name, b.const(target)] + weight, out, reduction=reduction)


def op_bitwise(b):
    """Integer models from opset 18: BitwiseAnd, BitwiseOr, BitwiseXor, BitwiseNot."""
    x = b.pick()
    if b.opset < 18:
        return None
    op = b.draw(st.sampled_from(["BitwiseAnd", "BitwiseOr", "BitwiseXor", "BitwiseNot"]))
    if op == "BitwiseNot":
        return b.node(op, [x.name], x.shape)
    return _with_partner(b, op, x)


OPS = [op_unary, op_binary, op_where, op_reduce, op_softmax, op_transpose, op_reshape, op_flatten,
       op_unsqueeze_squeeze, op_slice, op_concat, op_split, op_gather, op_matmul, op_gemm, op_conv, op_pool,
       op_norm, op_expand_tile_pad, op_variadic, op_prelu_lrn, op_conv_transpose, op_resize, op_einsum,
       op_cumsum_topk, op_space_depth, op_cast_half, op_unary_more, op_logic, op_reduce_more, op_shape_subgraph,
       op_index, op_recurrent, op_norm_more, op_composite]


#: the builders of an integer model: arithmetic, comparisons and the data movements
#: onnxruntime implements for integers (not DepthToSpace and SpaceToDepth)
INT_OPS = [op_int_arith, op_int_cast, op_where, op_reduce, op_transpose, op_reshape, op_flatten,
           op_unsqueeze_squeeze, op_slice, op_concat, op_split, op_gather, op_expand_tile_pad, op_variadic,
           op_int_more, op_shape_subgraph, op_bitwise]

#: the element types a model may have, and the ONNX type of each
DTYPES = {"float32": TensorProto.FLOAT, "int32": TensorProto.INT32, "int64": TensorProto.INT64}


def _input_shape(draw):
    rank = draw(st.sampled_from([1, 2, 3, 4, 4, 4]))  # images (the most operators take) half the time
    dims = [draw(st.integers(1, 6)) for _ in range(rank)]
    if draw(st.booleans()):  # a long last axis: vector loops with a tail
        dims[-1] = draw(st.integers(7, 40))
    while math.prod(dims) > 1024:
        dims[dims.index(max(dims))] //= 2
    return tuple(dims)


@st.composite
def models(draw, max_ops=8):
    """A hypothesis strategy of :class:`FuzzModel`: an opset of :data:`OPSETS`, an
    element type (float32 three times in four, else int32 or int64 with the builders
    of :data:`INT_OPS`), one or two inputs, 2 to ``max_ops`` operator draws (a draw
    that fits no value adds nothing), 1 to 3 outputs (the last value and others
    drawn), some outputs ending in ArgMax (int64)."""
    opset = draw(st.sampled_from(OPSETS))
    dtype = draw(st.sampled_from(["float32", "float32", "float32", "int32", "int64"]))
    b = _Builder(draw, opset, dtype)
    inputs = {}
    first = _input_shape(draw)
    shapes = [first]
    if draw(st.booleans()):  # a second input that broadcasts with the first, or a 4-D image
        shapes.append(_broadcast_partner(draw, first) or (1,))
    for i, shape in enumerate(shapes):
        name = f"in{i}"
        inputs[name] = b.data(shape)
        b.values.append(Value(name, shape, dtype))
    for _ in range(draw(st.integers(2, max_ops))):
        builder = draw(st.sampled_from(OPS if dtype == "float32" else INT_OPS))
        made = builder(b)
        if made:
            b.values.extend(v for v in made if v.size <= MAX_ELEMENTS)
    made_values = [v for v in b.values if v.name not in inputs]
    if not made_values:
        (v,) = b.node("Identity", ["in0"], shapes[0])
        made_values = [v]
    outputs = [made_values[-1]]
    others = [v for v in made_values[:-1] if v.dtype == dtype]
    if others:
        outputs += draw(st.lists(st.sampled_from(others), max_size=2, unique_by=lambda v: v.name))
    last = outputs[-1]
    if last.dtype == dtype and last.rank >= 1 and draw(st.integers(0, 4)) == 0:
        axis = draw(st.integers(-last.rank if opset >= 11 else 0, last.rank - 1))
        keep = draw(st.booleans())
        shape = tuple((1 if keep else None) if i == axis % last.rank else d for i, d in enumerate(last.shape))
        outputs.append(b.node("ArgMax", [last.name], tuple(d for d in shape if d is not None), dtype="int64",
                              axis=axis, keepdims=int(keep))[0])
    graph = helper.make_graph(
        b.nodes, "fuzz",
        [helper.make_tensor_value_info(n, DTYPES[dtype], a.shape) for n, a in inputs.items()],
        [helper.make_tensor_value_info(v.name, DTYPES[v.dtype], v.shape) for v in outputs],
        initializer=b.inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8 if opset <= 18 else (9 if opset <= 20 else 10)
    return FuzzModel(model, inputs, b.ops)
