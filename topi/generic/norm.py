"""The normalizations' generic (CPU) schedules, and what every target's norm
schedules share: finding the normalization (or the lrn's window sum) under the
element-wise ops after it, and splitting its output's loops into rows (one mean and
variance each) and the elements of a row."""
from __future__ import annotations

from ... import te
from ...errors import ScheduleError
from ..nn.layer_norm import NORM_TAGS, SUM_TAG
from ..nn.local_response_norm import SQR_SUM_TAG
from ..utils import find_anchors, get_const_int, get_const_tuple, inline_padding
from .default import named_default_schedule


def _default(name):
    return named_default_schedule(name, False, "The default schedule of the operator's output(s) ``outs`` (every "
                                               "stage at the root; correct on any CPU, fast nowhere: "
                                               ":mod:`tecc.topi.x86` has the tuned one).")


schedule_layer_norm = _default("schedule_layer_norm")
schedule_instance_norm = _default("schedule_instance_norm")
schedule_group_norm = _default("schedule_group_norm")
schedule_batch_norm = _default("schedule_batch_norm")
schedule_lrn = _default("schedule_lrn")


def norm_parts(norm_op):
    """``(axes, channel_axis, group_size, sums)`` of a normalization output: the
    normalized axes, the grouped channel axis (-1 when none) and its channels per
    group, and the sum stages it reads."""
    attrs = norm_op.attrs or {}
    axes = [get_const_int(a) for a in attrs.get("axis", [])]
    channel = get_const_int(attrs.get("channel_axis", -1))
    group = get_const_int(attrs.get("group_size", 1))
    sums = [t for t in norm_op.input_tensors if t.op.tag == SUM_TAG]
    if len(sums) != 2:
        raise ScheduleError(f"{norm_op.name!r} reads {len(sums)} stages tagged {SUM_TAG!r}, not 2; it is not a "
                            "normalization of tecc.topi.nn")
    return axes, channel, group, sums


def rows_and_elements(s, out, norm_op):
    """Reorder ``out``'s loops as ``(rows..., serial..., elements...)`` and return
    the three lists: the axes that index a mean (``rows``), then the normalized
    axes (``elements``), each in its own order.

    A grouped channel axis (group_norm) is split into its group (a row axis) and
    its channel in the group, which becomes the one ``serial`` axis: it is never
    fused with the other elements, so that a split of the elements that is not
    exact overflows into a whole axis (with its own bound check) and not into a
    channel of the next group.  With no other normalized axis the channel axis
    stays whole among the elements (a row then holds every group, each group's
    statistics a loop of their own).
    """
    axes, channel, group, _ = norm_parts(norm_op)
    rows, serial, elements = [], [], []
    for d, iv in enumerate(s[out].op.axis):
        if d == channel and group > 1:
            if axes:
                g, c = s[out].split(iv, factor=group)
                rows.append(g)
                serial.append(c)
            else:
                elements.append(iv)
        elif d == channel or d not in axes:
            rows.append(iv)
        else:
            elements.append(iv)
    s[out].reorder(*rows, *serial, *elements)
    return rows, serial, elements


def find_norm(s, outs, what):
    """``(norm_op, out)``: the normalization that ``outs[0]`` is or ends (through
    element-wise ops of its shape); the normalization is inlined into ``out`` when
    it is not an output itself."""
    out = outs[0]
    norm = find_anchors(s, out, NORM_TAGS, what, f"a normalization ({', '.join(NORM_TAGS)})")[0]
    if norm is not out.op:
        if get_const_tuple(norm.output(0).shape) != get_const_tuple(out.shape):
            raise ScheduleError(f"{what}: the output {out.op.name!r} {get_const_tuple(out.shape)} is not an "
                                f"element-wise op of {norm.name!r} {get_const_tuple(norm.output(0).shape)}; "
                                "schedule the normalization as its own output")
        if norm not in s.outputs:
            s[norm].compute_inline()
    return norm, out


def find_lrn(s, outs):
    """``(sqr_sum, out)``: the window sum (the stage tagged ``sqr_sum``) of the lrn
    that ``outs[0]`` is or ends (through element-wise ops), its padding inlined."""
    out = outs[0]
    sqr_op = find_anchors(s, out, (SQR_SUM_TAG,), "schedule_lrn", "an lrn")[0]
    inline_padding(s, sqr_op)
    return sqr_op.output(0), out


def is_schedule(x) -> bool:
    return isinstance(x, te.Schedule)
