"""Which schedule to use for an operator's output on a target, and :func:`schedule`,
the one entry point that picks it.

A schedule is found by the *anchor* of the outputs -- the first operation, walking
back from the outputs, that is not element-wise, broadcast or injective (a
convolution, a reduction, a softmax...) -- and by the target:

* the anchor's tag (``"conv2d_nchw"``, ``"comm_reduce"``, ``"softmax_output"``...)
  is matched against the registered *tag prefixes*: a tag matches a prefix when one
  of its comma-separated parts starts with it (``"pool"`` matches ``"pool_max"``,
  ``"injective,pad"`` matches ``"pad"``); a prefix of a specific operation
  (``"pad"``) wins over the generic kinds (``"elemwise"``, ``"broadcast"``,
  ``"injective"``), then the longest matching prefix wins;
* the target's keys are tried in order (``("cuda", "gpu")`` for cuda,
  ``("cpu",)`` for llvm and c), then ``"generic"``.

Outputs with no anchor (a chain of element-wise and injective operators) use the
schedule of the first of those operators, from the outputs back, whose tag has a
specific part registered for the target (``"injective,resize"``: the ``"resize"``
schedule), else the one registered under ``"injective"``.

Registering a schedule
----------------------
A module that defines a schedule registers it where it is defined::

    from ..schedule_registry import register_schedule

    @register_schedule("conv2d_nchw", "cuda")
    def schedule_conv2d_nchw(outs):
        ...

The function is called as ``fn(outs)`` with the list of output tensors, inside the
target's scope (``Target.current()`` is the target), and returns a
:class:`~tecc.te.Schedule`.  Registering the same (prefix, key) twice with
different functions is an error unless ``override=True``.
"""
from __future__ import annotations

from .. import te
from ..errors import ScheduleError
from ..target import Target
from . import tag as _tag

#: (tag prefix, target key) -> schedule function ``fn(outs) -> Schedule``
SCHEDULES: dict = {}

#: the keys tried after the target's own
FALLBACK_KEY = "generic"


def register_schedule(tag_prefix, target_key, override=False):
    """A decorator registering ``fn(outs) -> Schedule`` as the schedule of the
    operations whose tag matches ``tag_prefix`` on targets with the key
    ``target_key`` (``"cuda"``, ``"gpu"``, ``"cpu"`` or ``"generic"``).

    Parameters
    ----------
    tag_prefix : str or tuple of str
        One prefix, or several registered to the same function.
    target_key : str
    override : bool
        Replace an existing entry instead of raising.

    Returns
    -------
    callable
        The decorator; it returns the function unchanged.
    """
    prefixes = (tag_prefix,) if isinstance(tag_prefix, str) else tuple(tag_prefix)
    if not prefixes or not all(isinstance(p, str) and p for p in prefixes):
        raise ScheduleError(f"register_schedule: tag_prefix must be a non-empty string (or several), "
                            f"got {tag_prefix!r}")
    if not isinstance(target_key, str) or not target_key:
        raise ScheduleError(f"register_schedule: target_key must be a string such as 'cuda' or 'cpu', "
                            f"got {target_key!r}")

    def decorate(fn):
        for prefix in prefixes:
            old = SCHEDULES.get((prefix, target_key))
            if old is not None and not override and not _same_function(old, fn):
                raise ScheduleError(
                    f"register_schedule: ({prefix!r}, {target_key!r}) already has "
                    f"{old.__module__}.{old.__qualname__}; pass override=True to replace it")
            SCHEDULES[(prefix, target_key)] = fn
        return fn

    return decorate


def _same_function(a, b) -> bool:
    """True for one function defined twice (a module imported again)."""
    return (getattr(a, "__module__", None), getattr(a, "__qualname__", None)) == \
        (getattr(b, "__module__", None), getattr(b, "__qualname__", None))


def _matches(tag: str, prefix: str) -> bool:
    return any(part.startswith(prefix) for part in _tag.parts(tag))


def find_anchor(outs):
    """The first operation, walking back from ``outs`` (breadth first), that is a
    compute with reduction axes or with a tag other than element-wise, broadcast
    and injective (an untagged compute without reductions counts as injective), or
    an extern stage with such a tag (sort, cumsum, scatter); None when there is none."""
    seen, todo = set(), [t.op for t in outs]
    while todo:
        op = todo.pop(0)
        if isinstance(op, te.ExternOp) and op.tag and not _tag.is_injective(op.tag):
            return op  # a tagged extern stage (sort, scan, scatter): its tag picks the schedule
        if op in seen or not isinstance(op, te.ComputeOp):
            continue
        seen.add(op)
        if op.reduce_axis or (op.tag and not _tag.is_injective(op.tag)):
            return op
        todo.extend(t.op for t in op.input_tensors)
    return None


def lookup(op_tag: str, target):
    """The registered schedule for an anchor tagged ``op_tag`` on ``target``, or
    None: the longest registered prefix matching the tag, under the first of the
    target's keys (then ``"generic"``) that has one."""
    target = Target.canon(target)
    for key in tuple(target.keys) + (FALLBACK_KEY,):
        prefixes = [p for (p, k) in SCHEDULES if k == key and _matches(op_tag, p)]
        if prefixes:
            return SCHEDULES[(max(prefixes, key=lambda p: (p not in _GENERIC_KINDS, len(p))), key)]
    return None


#: the tag prefixes of the generic kinds, which a specific prefix beats in :func:`lookup`
_GENERIC_KINDS = (_tag.ELEMWISE, _tag.BROADCAST, _tag.INJECTIVE)


def _injective_chain_tag(outs, target) -> str:
    """The tag that picks the schedule of a chain of injective operators: the tag of
    the first of them (breadth first from ``outs``) with a part other than the
    generic kinds that a prefix registered for ``target`` matches, else
    ``"injective"``."""
    keys = tuple(target.keys) + (FALLBACK_KEY,)
    specific = [p for (p, k) in SCHEDULES if k in keys and p not in _GENERIC_KINDS]
    seen, todo = set(), [t.op for t in outs]
    while todo:
        op = todo.pop(0)
        if op in seen or not isinstance(op, te.ComputeOp):
            continue
        seen.add(op)
        if op.tag and any(_matches(op.tag, p) for p in specific):
            return op.tag
        todo.extend(t.op for t in op.input_tensors)
    return _tag.INJECTIVE


def schedule(outs, target=None):
    """The default schedule of an operator's output(s) for a target.

    Parameters
    ----------
    outs : Tensor or list of Tensor
        The outputs: an operator's output, or the last of a chain of operators (an
        element-wise op after a reduction or a convolution is scheduled with it).
    target : str or Target, optional
        By default the current target (``with tecc.target.Target("cuda"):``).

    Returns
    -------
    Schedule

    Raises
    ------
    ScheduleError
        When no target is given nor current, or no schedule is registered for the
        anchor's tag on the target.

    Examples
    --------
    >>> A = te.placeholder((4, 100), name="A")
    >>> B = topi.sum(topi.exp(A), axis=1)
    >>> s = topi.schedule(B, "cuda")     # the CUDA reduction schedule, exp inlined
    """
    outs = [outs] if isinstance(outs, te.Tensor) else list(outs)
    if not outs or not all(isinstance(t, te.Tensor) for t in outs):
        raise ScheduleError(f"topi.schedule expects the output tensor(s) of an operator, got {outs!r}")
    if target is None:
        target = Target.current(allow_none=True)
        if target is None:
            raise ScheduleError("topi.schedule: no target given and none is current; pass target='llvm' or "
                                "'cuda', or call it inside `with tecc.target.Target(...)`")
    target = Target.canon(target)
    anchor = find_anchor(outs)
    op_tag = _injective_chain_tag(outs, target) if anchor is None else anchor.tag
    fn = lookup(op_tag, target)
    if fn is None:
        what = "a chain of injective operators" if anchor is None else f"{anchor.name!r}"
        registered = sorted({p for (p, k) in SCHEDULES if k in tuple(target.keys) + (FALLBACK_KEY,)})
        raise ScheduleError(
            f"topi.schedule: no schedule is registered for {what} (tag {op_tag!r}) on target {target}; "
            f"registered tag prefixes there: {registered}; register one with "
            "topi.schedule_registry.register_schedule(tag_prefix, target_key)")
    current = Target.current(allow_none=True)
    if current is not None and current == target:
        sch = fn(outs)
    else:
        with target:
            sch = fn(outs)
    if "gpu" in target.keys:
        _inline_loose_conversions(sch)
    return sch


def _inline_loose_conversions(sch) -> None:
    """Inline the element-wise stages a GPU schedule left at the root, unbound and
    not outputs: the conversions the graph puts before an operator it computes in
    float32 (a float16 or bfloat16 layer norm, softmax, pooling reads its input cast
    to float32), which an operator's schedule does not know of.  Left there they
    would run outside any kernel; inlined, each thread converts what it reads."""
    for stage in sch.stages:
        op = stage.op
        if (stage.attach_type != te.AttachType.ROOT or stage.is_output or not isinstance(op, te.ComputeOp)
                or op.reduce_axis or _tag.ELEMWISE not in op.tag.split(",")):
            continue
        if any(a.bind_thread is not None for a in stage.iter_var_attrs.values()):
            continue
        stage.compute_inline()
