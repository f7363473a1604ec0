"""Element-wise, broadcast and injective operators on CUDA: the output's axes fused
into one loop spread over blocks of threads, every injective stage before it inlined."""
from __future__ import annotations

from ... import te
from .. import nn, tag
from ..generic.default import schedule_injective_outputs
from ..schedule_registry import register_schedule
from ..utils import fuse_all, get_const_tuple, prod
from .utils import bind_blocks_threads, max_threads


def schedule_injective_from_existing(sch, out, num_thread=None, vector=None):
    """Spread ``out``'s elements over blocks of ``num_thread`` threads in an existing
    schedule, ``vector`` consecutive elements per thread (vectorized, e.g. float4)
    when given or, by default, 4 when the shape is static and a multiple of 4.

    Returns
    -------
    Schedule
        ``sch``.
    """
    num_thread = num_thread or max_threads(256)
    fused = fuse_all(sch, out)
    if fused is None:  # a rank-0 output: one thread, on a loop of extent 1
        sch[out].bind(sch[out].fuse(), te.thread_axis("threadIdx.x"))
        return sch
    if vector is None:
        total = prod(get_const_tuple(out.shape))
        vector = 4 if isinstance(total, int) and total % 4 == 0 and total >= 4 * num_thread else 1
    if vector > 1:
        fused, v = sch[out].split(fused, factor=vector)
    bind_blocks_threads(sch[out], fused, num_thread)
    if vector > 1:
        sch[out].vectorize(v)
    return sch


def _inline_injective_inputs(s, out):
    """Inline every stage tagged injective that ``out`` reads, directly or not."""
    stack = list(out.op.input_tensors)
    while stack:
        t = stack.pop()
        if tag.INJECTIVE in getattr(t.op, "tag", ""):
            s[t].compute_inline()
            stack.extend(t.op.input_tensors)


@register_schedule(("elemwise", "broadcast", "injective"), "cuda")
def schedule_injective(outs, out=None, num_thread=256, vector=4):
    """The CUDA schedule of element-wise, broadcast and injective operators.

    Parameters
    ----------
    outs : Tensor or list of Tensor
        The operator's output(s) (TVM's form): a new schedule, every injective stage
        that is not an output inlined, each output's elements spread over threads
        (:func:`schedule_injective_from_existing`).  Or a :class:`~tecc.te.Schedule`
        with ``out`` its output (tecc's earlier form): the stages tagged injective
        before ``out`` inlined, ``vector`` elements per thread.
    num_thread, vector : int
        Threads per block and elements per thread, in the second form.

    Returns
    -------
    Schedule
    """
    if isinstance(outs, te.Schedule):
        _inline_injective_inputs(outs, out)
        return schedule_injective_from_existing(outs, out, num_thread, vector)
    return schedule_injective_outputs(outs, schedule_injective_from_existing)


schedule_elemwise = schedule_injective
schedule_broadcast = schedule_injective


def fused_elementwise(shape, num_thread=256, dtype="float32"):
    """``relu(A * scale[c] + bias[c]) + R`` over an NCHW-like tensor, one kernel
    (:func:`schedule_injective`)."""
    A = te.placeholder(shape, name="A", dtype=dtype)
    R = te.placeholder(shape, name="R", dtype=dtype)
    scale = te.placeholder((shape[1],), name="scale", dtype=dtype)
    bias = te.placeholder((shape[1],), name="bias", dtype=dtype)
    Out = nn.scale_bias_relu_add(A, scale, bias, R)
    s = te.create_schedule(Out.op)
    schedule_injective(s, Out, num_thread=num_thread)
    return s, [A, scale, bias, R, Out]
