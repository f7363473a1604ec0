"""Image resizing (and upsampling) on CUDA: one output element per thread,
consecutive threads along the innermost axis (coalesced stores; coalesced loads
too in NHWC, where that axis is the channels).

Each thread computes the interpolation tables' entries it reads -- its row's and
its column's coordinates, tap indices and weights -- once, into registers
(``compute_at`` the thread, local scope), then reads the taps: the weights are not
recomputed for each of the 4 (linear) or 16 (cubic) taps, and no table goes
through global memory.
"""
from __future__ import annotations

from ... import te
from ...te.schedule import AutoInlineInjective
from ..generic.default import new_schedule
from ..image.resize import TABLE
from ..schedule_registry import register_schedule
from ..tag import has, is_injective
from ..utils import fuse_all, get_const_tuple, prod
from .utils import bind_blocks_threads, max_threads, pow2_at_least


def _tables(s):
    return [st for st in s.stages if isinstance(st.op, te.ComputeOp) and has(st.op.tag, TABLE)
            and not st.is_output]


@register_schedule("resize", "cuda")
def schedule_resize(outs):
    """The CUDA schedule of ``topi.image.resize1d`` / ``resize2d`` and
    ``topi.nn.upsampling`` (and of injective ops after them, in the same kernel).

    Parameters
    ----------
    outs : Tensor or list of Tensor
        The operator's output(s).

    Returns
    -------
    Schedule
    """
    outs, s = new_schedule(outs)
    tables = _tables(s) if len(outs) == 1 else []
    # every other injective stage inlined (the resize into an epilogue after it)
    for st in s.stages:
        op = st.op
        if (isinstance(op, te.ComputeOp) and not st.is_output and not op.reduce_axis and st not in tables
                and (is_injective(op.tag) or not op.tag)):
            st.compute_inline()
    AutoInlineInjective(s)
    for out in outs:
        fused = fuse_all(s, out)
        if fused is None:
            s[out].bind(s[out].fuse(), te.thread_axis("threadIdx.x"))
            continue
        # a block of 256 threads; of fewer (32 at least) when the output is smaller
        total = prod(get_const_tuple(out.shape))
        threads = max_threads(256) if not isinstance(total, int) else min(max_threads(256), pow2_at_least(total, 256))
        _, tx = bind_blocks_threads(s[out], fused, max(threads, 32))
        for st in tables:
            st.set_scope("local")
            st.compute_at(s[out], tx)
    return s


schedule_upsampling = schedule_resize
