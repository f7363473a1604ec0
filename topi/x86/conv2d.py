"""Direct NCHW convolution on CPUs."""
from __future__ import annotations

from ... import te
from ...errors import ScheduleError
from .. import nn, tag
from ..generic.default import outputs_of
from ..utils import traverse_inline


def conv2d_nchw(data, kernel, strides, padding, dilation, out_dtype=None):
    """The convolution compute (:func:`tecc.topi.nn.conv2d_nchw`; TVM's x86 form)."""
    return nn.conv2d_nchw(data, kernel, strides, padding, dilation, out_dtype)


def schedule_conv2d_nchw(outs):
    """The CPU schedule of ``conv2d_nchw`` (and of element-wise ops after it): the
    padding inlined, (image, channel) pairs spread over the cores; an epilogue
    computes each output row right after the convolution's.

    Parameters
    ----------
    outs : Tensor or list of Tensor

    Returns
    -------
    Schedule
    """
    outs = outputs_of(outs)
    s = te.create_schedule([t.op for t in outs])
    out = outs[0]
    found = []

    def visit(op):
        if op.tag != tag.CONV2D_NCHW:
            return
        conv = op.output(0)
        for t in op.input_tensors:
            if tag.has(t.op.tag, tag.PAD):
                s[t].compute_inline()
        if op is out.op:
            n, f, _, _ = s[conv].op.axis
            s[conv].parallel(s[conv].fuse(n, f))
        else:
            n, f, y, _ = s[out].op.axis
            s[out].parallel(s[out].fuse(n, f))
            s[conv].compute_at(s[out], y)
        found.append(op)

    traverse_inline(s, out.op, visit)
    if not found:
        raise ScheduleError(f"schedule_conv2d_nchw: {out.op.name!r} (tag {out.op.tag!r}) is not a conv2d_nchw nor "
                            "an element-wise op after one")
    return s
