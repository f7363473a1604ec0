"""The cost model's features, with AutoTVM's names (``autotvm.feature``).

Three kinds, as AutoTVM's ``feature_type``:

``"itervar"``
    What the lowered TIR of a candidate does (:mod:`tecc.tir.analysis.features` walks
    it): for the function, flops, bytes moved per memory level, arithmetic intensity,
    vector width, parallel extent and, on a GPU, threads per block, blocks, shared
    memory, local memory, estimated registers and occupancy; then for each of the first
    :data:`MAX_STMTS` statements (stores, in program order) its arithmetic, its innermost
    :data:`MAX_LOOPS` loops (extent, nest level, products of extents above and below,
    working set, kind) and its :data:`MAX_BUFFERS` buffers moving the most bytes (scope,
    accesses, bytes, distinct bytes, reuse, strides along the innermost loop, the vector
    lanes and ``threadIdx.x``, contiguity, affinity).
``"knob"``
    The config's knob values (``ConfigEntity.get_flatten_feature()``).
``"curve"``
    For the main statement (the most flops), the distinct bytes and the reuse of each
    of its buffers as functions of the log2 number of loop iterations enclosing them,
    sampled at ``sample_n`` points: independent of how many loops the schedule has.

Every vector of one task has the same length whatever the config: missing loops, buffers
and statements are zeros, extra ones are dropped (outer loops first, then the buffers
moving the fewest bytes, then later statements).  :func:`feature_names` names each
position, :func:`get_flatten_name` with the concrete loops and buffers of one config.

Features are read from the function ``te`` lowering makes (:func:`lower_for_features`,
``level="schedule"``): every scheduled loop is still a loop with its kind, and no pass
has run.  Flattening and the target's passes would cost several times as much and
would hide unrolled and vectorized loops inside straight-line code.

Lowering is Python: about 35 ms a valid config of the large GEMM template (2-core VM,
2026-11-28), and the simulated annealing of a model-based tuner asks for the features
of about 2,000 new configs at each refit (about a minute on that VM's two cores).
:func:`batch_features` therefore lowers a batch of :data:`PARALLEL_MIN` or more uncached
configs in forked worker processes, one per core (``TECC_FEATURE_WORKERS`` sets how
many; 1 lowers here).
"""
from __future__ import annotations

import math
import os
import re
from collections import OrderedDict
from functools import lru_cache

import numpy as np

from ..errors import TeccError
from ..target import Target
from ..tir import stmt as S
from ..tir.analysis.features import LOOP_KINDS, SCOPE_LEVELS, extract_features

#: statements, loops per statement and buffers per statement in an itervar vector
MAX_STMTS = 6
MAX_LOOPS = 8
MAX_BUFFERS = 4
#: sample points per curve in "curve" features (AutoTVM's default)
CURVE_SAMPLE_N = 30
FEATURE_TYPES = ("itervar", "knob", "curve")
#: how far :func:`lower_for_features` lowers
LOWER_LEVELS = ("schedule", "generic", "target")


class FeatureError(TeccError, ValueError):
    """Features asked for wrongly (an unknown feature type, a bad argument)."""


# ----------------------------------------------------------------------------
# the layout: one list of (name, takes log, value getter) per part
# ----------------------------------------------------------------------------
def _log(x: float) -> float:
    """log2(1 + x), sign kept: AutoTVM's transform of counts and strides."""
    if x < 0:
        return -math.log2(1.0 - x)
    return math.log2(1.0 + x)


def _global_fields():
    def occ(attr):
        return lambda f: float(getattr(f.occupancy, attr)) if f.occupancy is not None else 0.0

    def kern(attr):
        return lambda f: float(getattr(f.kernels[f.main_kernel], attr)) if f.main_kernel >= 0 else 0.0

    return [
        ("flops", True, lambda f: f.flops),
        ("bytes_global", True, lambda f: f.bytes_moved["global"]),
        ("bytes_shared", True, lambda f: f.bytes_moved["shared"]),
        ("bytes_local", True, lambda f: f.bytes_moved["local"]),
        ("arith_intensity", False, lambda f: f.arith_intensity),
        ("vector_width", True, lambda f: f.vector_width),
        ("parallel_extent", True, lambda f: f.parallel_extent),
        ("num_stmts", False, lambda f: len(f.stmts)),
        ("num_kernels", False, lambda f: len(f.kernels)),
        ("alloc_global", True, lambda f: f.alloc_bytes["global"]),
        ("alloc_local", True, lambda f: f.alloc_bytes["local"]),
        ("symbolic_loops", False, lambda f: f.symbolic_loops),
        ("threads_per_block", True, kern("threads_per_block")),
        ("blocks", True, kern("blocks")),
        ("shared_bytes", True, kern("shared_bytes")),
        ("local_bytes", True, kern("local_bytes")),
        ("registers_est", False, occ("registers_per_thread")),
        ("blocks_per_sm", False, occ("blocks_per_sm")),
        ("occupancy", False, occ("occupancy")),
    ]


_STMT_FIELDS = [
    ("executions", True, lambda s: s.executions),
    ("float_ops", True, lambda s: s.float_ops),
    ("int_ops", True, lambda s: s.int_ops),
    ("flops", True, lambda s: s.flops),
    ("bytes", True, lambda s: s.bytes),
    ("vector_width", True, lambda s: s.vector_width),
    ("unroll_extent", True, lambda s: s.unroll_extent),
    ("auto_unroll_max_step", True, lambda s: s.auto_unroll_max_step),
    ("parallel_extent", True, lambda s: s.parallel_extent),
    ("guarded", False, lambda s: float(s.guarded)),
    ("depth", False, lambda s: len(s.loops)),
]

_LOOP_FIELDS = [
    ("extent", True, lambda lp: lp.extent),
    ("nest_level", False, lambda lp: lp.nest_level),
    ("topdown", True, lambda lp: lp.topdown),
    ("bottomup", True, lambda lp: lp.bottomup),
    ("working_set", True, lambda lp: lp.working_set),
] + [(f"kind_{k}", False, (lambda k: lambda lp: float(lp.kind == k))(k)) for k in LOOP_KINDS]

_BUFFER_FIELDS = [(f"scope_{sc}", False, (lambda sc: lambda a: float(a.scope == sc))(sc)) for sc in SCOPE_LEVELS] + [
    ("is_write", False, lambda a: float(a.is_write)),
    ("count", True, lambda a: a.count),
    ("lanes", True, lambda a: a.lanes),
    ("accesses", True, lambda a: a.accesses),
    ("bytes", True, lambda a: a.bytes),
    ("unique_bytes", True, lambda a: a.unique_bytes),
    ("reuse", True, lambda a: a.reuse),
    ("stride_inner", True, lambda a: a.stride_inner),
    ("stride_vector", True, lambda a: a.stride_vector),
    ("stride_threadx", True, lambda a: a.stride_threadx),
    ("contiguous", False, lambda a: float(a.contiguous)),
    ("affine", False, lambda a: float(a.affine)),
]
_GLOBAL_FIELDS = _global_fields()

_LOG = {"fn": {n for n, lg, _ in _GLOBAL_FIELDS if lg}, "stmt": {n for n, lg, _ in _STMT_FIELDS if lg},
        "loop": {n for n, lg, _ in _LOOP_FIELDS if lg}, "buf": {n for n, lg, _ in _BUFFER_FIELDS if lg}}
_STMT_WIDTH = len(_STMT_FIELDS) + MAX_LOOPS * len(_LOOP_FIELDS) + MAX_BUFFERS * len(_BUFFER_FIELDS)
#: length of every "itervar" vector
ITERVAR_LENGTH = len(_GLOBAL_FIELDS) + MAX_STMTS * _STMT_WIDTH


def _values(fields, record, take_log):
    if take_log:
        return [_log(float(get(record))) if lg else float(get(record)) for _, lg, get in fields]
    return [float(get(record)) for _, _, get in fields]


def _buffer_slots(byte_counts) -> list:
    """Positions of the buffers that get slots: the :data:`MAX_BUFFERS` moving the most
    bytes (the earlier on a tie), kept in the order the statement touches them."""
    ranked = sorted(range(len(byte_counts)), key=lambda i: (-byte_counts[i], i))[:MAX_BUFFERS]
    return sorted(ranked)


def _loop_slots(n_loops) -> range:
    """Positions of the loops that get slots: the innermost :data:`MAX_LOOPS`."""
    return range(max(0, n_loops - MAX_LOOPS), n_loops)


# ----------------------------------------------------------------------------
# lowering
# ----------------------------------------------------------------------------
def lower_for_features(sch, args, level="schedule", target=None) -> S.IRModule:
    """Lower ``sch`` as far as features need.

    Parameters
    ----------
    sch : Schedule
    args : list of Tensor
    level : str
        ``"schedule"`` (the default): ``te`` lowering only (``schedule_to_module``),
        every loop kept with its kind; ``"generic"``: plus the target-independent passes
        (flatten, simplify, double buffering, virtual threads); ``"target"``: the whole
        pipeline of ``target`` (unrolled and vectorized code, host/device split), as
        ``tecc.build`` runs it before code generation.
    target : str or Target, optional
        For ``level="target"``; defaults to the current target.

    Raises
    ------
    FeatureError
        For an unknown ``level``, or ``"target"`` with no target.
    """
    from ..driver.build_module import lower, schedule_to_module  # noqa: PLC0415
    from ..tir.transform.pipeline import PassContext, run_pipeline  # noqa: PLC0415

    if level not in LOWER_LEVELS:
        raise FeatureError(f"lower_for_features: level must be one of {LOWER_LEVELS}, got {level!r}")
    mod = schedule_to_module(sch, args)
    if level == "schedule":
        return mod
    if level == "generic":
        return run_pipeline(mod, PassContext.current().pass_options(target_kind=None))
    target = target if target is not None else Target.current(allow_none=True)
    if target is None:
        raise FeatureError("lower_for_features(level='target') needs a target: pass target='llvm' or 'cuda', "
                           "or call it inside `with tecc.target.Target(...)`")
    return lower(mod, target=target)


@lru_cache(maxsize=32)
def _arch_of(target_text):
    tgt = Target.canon(target_text)
    if tgt.kind != "cuda":
        return None
    from ..cuda_codegen import cuda_arch  # noqa: PLC0415

    return cuda_arch(tgt)


def _current_arch(arch):
    if arch is not None:
        return arch
    tgt = Target.current(allow_none=True)
    return _arch_of(str(tgt)) if tgt is not None else None


def _extract(sch, args, arch):
    return extract_features(lower_for_features(sch, args), arch=_current_arch(arch))


# ----------------------------------------------------------------------------
# "itervar" features
# ----------------------------------------------------------------------------
def _fmt_rows(ff, take_log):
    rows = []
    for st in ff.stmts:
        row = [("stmt", st.label)]
        row += list(zip((n for n, _, _ in _STMT_FIELDS), _values(_STMT_FIELDS, st, take_log)))
        for lp in st.loops:
            prefix = f"loop{lp.nest_level}({lp.var})."
            row.append((prefix + "kind", lp.kind))
            row += [(prefix + n, v) for (n, _, _), v in zip(_LOOP_FIELDS, _values(_LOOP_FIELDS, lp, take_log))]
        for j, a in enumerate(st.accesses):
            prefix = f"buf{j}({a.buffer})."
            row.append((prefix + "scope", a.scope))
            row += [(prefix + n, v) for (n, _, _), v in zip(_BUFFER_FIELDS, _values(_BUFFER_FIELDS, a, take_log))]
        rows.append(row)
    rows.append([("function", ff.name)] + list(zip((n for n, _, _ in _GLOBAL_FIELDS),
                                                   _values(_GLOBAL_FIELDS, ff, take_log))))
    return rows


def itervar_rows(ff, take_log=False) -> list:
    """:func:`get_itervar_feature`'s rows for already extracted
    :class:`~tecc.tir.analysis.features.FunctionFeatures`."""
    return _fmt_rows(ff, take_log)


def get_itervar_feature(sch, args, take_log=False, arch=None) -> list:
    """The features of every statement of ``sch``, readable.

    Parameters
    ----------
    sch : Schedule
    args : list of Tensor
    take_log : bool
        Give counts, sizes and strides as ``log2(1 + x)`` (sign kept).
    arch : str, optional
        GPU architecture for the occupancy estimate (default: the current target's).

    Returns
    -------
    list of list of (str, value)
        One list per statement (store) in program order, starting ``("stmt", label)``,
        then its own fields, then per loop (outermost first) ``loopN(var).kind`` and
        ``loopN(var).<field>``, per buffer ``bufN(name).scope`` and
        ``bufN(name).<field>``; a last list ``("function", name)`` holds the function's
        fields.  Every loop and buffer is listed, not only those the flat vector keeps.
    """
    return _fmt_rows(_extract(sch, args, arch), take_log)


def flat_itervar(ff, take_log=True) -> np.ndarray:
    """The fixed-length "itervar" vector of extracted features (float32, length
    :data:`ITERVAR_LENGTH`)."""
    out = _values(_GLOBAL_FIELDS, ff, take_log)
    zeros_loop = [0.0] * len(_LOOP_FIELDS)
    zeros_buf = [0.0] * len(_BUFFER_FIELDS)
    for st in ff.stmts[:MAX_STMTS]:
        out += _values(_STMT_FIELDS, st, take_log)
        kept = _loop_slots(len(st.loops))
        out += zeros_loop * (MAX_LOOPS - len(kept))
        for i in kept:
            out += _values(_LOOP_FIELDS, st.loops[i], take_log)
        slots = _buffer_slots([a.bytes for a in st.accesses])
        for j in slots:
            out += _values(_BUFFER_FIELDS, st.accesses[j], take_log)
        out += zeros_buf * (MAX_BUFFERS - len(slots))
    out += [0.0] * (ITERVAR_LENGTH - len(out))
    return np.asarray(out, dtype=np.float32)


def get_itervar_feature_flatten(sch, args, take_log=True, arch=None) -> np.ndarray:
    """The "itervar" features of ``sch`` as one float32 vector of length
    :data:`ITERVAR_LENGTH`, the same for every config of a task (names:
    :func:`feature_names`, or :func:`get_flatten_name` for one config's)."""
    return flat_itervar(_extract(sch, args, arch), take_log)


_PART = re.compile(r"^(loop|buf)(\d+)\((.*)\)\.(\w+)$")


def _parse_rows(fea):
    """Split :func:`get_itervar_feature` rows into (label, stmt values, loops, buffers)
    per statement and the function's (name, values); loops and buffers are
    ``(name, {field: value})`` in order."""
    if not isinstance(fea, (list, tuple)) or not fea or not fea[-1] or fea[-1][0][0] != "function":
        raise FeatureError("expected the rows of get_itervar_feature(s, args): per statement lists of (name, value) "
                           "ending with the ('function', name) list")
    stmts = []
    for row in fea[:-1]:
        if not row or row[0][0] != "stmt":
            raise FeatureError(f"a statement row of get_itervar_feature starts with ('stmt', label), got {row[:1]!r}")
        own, parts = {}, OrderedDict()
        for name, value in row[1:]:
            m = _PART.match(name)
            if m is None:
                own[name] = value
            else:
                kind, idx, label, fld = m.groups()
                parts.setdefault((kind, int(idx)), (label, {}))[1][fld] = value
        loops = [v for (k, _), v in parts.items() if k == "loop"]
        bufs = [v for (k, _), v in parts.items() if k == "buf"]
        stmts.append((row[0][1], own, loops, bufs))
    return stmts, (fea[-1][0][1], dict(fea[-1][1:]))


def flatten_itervar_feature(fea) -> np.ndarray:
    """The flat vector of :func:`get_itervar_feature` rows (as
    :func:`get_itervar_feature_flatten` gives it directly, with the same ``take_log``)."""
    stmts, (_, fn) = _parse_rows(fea)
    out = [float(fn[n]) for n, _, _ in _GLOBAL_FIELDS]
    for _, own, loops, bufs in stmts[:MAX_STMTS]:
        out += [float(own[n]) for n, _, _ in _STMT_FIELDS]
        kept = _loop_slots(len(loops))
        out += [0.0] * (len(_LOOP_FIELDS) * (MAX_LOOPS - len(kept)))
        for i in kept:
            out += [float(loops[i][1][n]) for n, _, _ in _LOOP_FIELDS]
        slots = _buffer_slots([b[1]["bytes"] for b in bufs])
        for j in slots:
            out += [float(bufs[j][1][n]) for n, _, _ in _BUFFER_FIELDS]
        out += [0.0] * (len(_BUFFER_FIELDS) * (MAX_BUFFERS - len(slots)))
    out += [0.0] * (ITERVAR_LENGTH - len(out))
    return np.asarray(out, dtype=np.float32)


def _itervar_names(fea=None) -> list:
    names = [f"fn.{n}" for n, _, _ in _GLOBAL_FIELDS]
    stmts = _parse_rows(fea)[0] if fea is not None else []
    for s in range(MAX_STMTS):
        known = s < len(stmts)
        tag = f"s{s}({stmts[s][0]})" if known else f"s{s}"
        names += [f"{tag}.{n}" for n, _, _ in _STMT_FIELDS]
        loops = stmts[s][2] if known else []
        kept = list(_loop_slots(len(loops)))
        for k in range(MAX_LOOPS):
            pos = k - (MAX_LOOPS - len(kept))  # which kept loop fills slot k, negative: padding
            slot = f"loop[{k - MAX_LOOPS}]"
            label = f"{slot}({loops[kept[pos]][0]})" if pos >= 0 else slot
            names += [f"{tag}.{label}.{n}" for n, _, _ in _LOOP_FIELDS]
        bufs = stmts[s][3] if known else []
        slots = _buffer_slots([b[1]["bytes"] for b in bufs]) if bufs else []
        for j in range(MAX_BUFFERS):
            label = f"buf{j}({bufs[slots[j]][0]})" if j < len(slots) else f"buf{j}"
            names += [f"{tag}.{label}.{n}" for n, _, _ in _BUFFER_FIELDS]
    assert len(names) == ITERVAR_LENGTH
    return names


def get_flatten_name(fea=None) -> list:
    """The name of each position of the flat "itervar" vector.

    Parameters
    ----------
    fea : list or str, optional
        The rows of :func:`get_itervar_feature` for one config: the names then say
        which statement, loop and buffer fill each slot
        (``s3(C.local#1).loop[-1](k.inner).extent``); a tuning record line (the
        config is instantiated under its target); None: the generic names
        (``s3.loop[-1].extent``), as :func:`feature_names`.
    """
    if isinstance(fea, str):
        from .record import decode  # noqa: PLC0415

        inp, _ = decode(fea)
        with Target(inp.target):
            sch, args = inp.task.instantiate(inp.config)
            fea = get_itervar_feature(sch, args)
    return _itervar_names(fea)


# ----------------------------------------------------------------------------
# "curve" features
# ----------------------------------------------------------------------------
def _main_stmt(ff):
    if not ff.stmts:
        return None
    return max(range(len(ff.stmts)), key=lambda i: (ff.stmts[i].flops, ff.stmts[i].bytes, -i))


def flat_curve(ff, sample_n=CURVE_SAMPLE_N) -> np.ndarray:
    """The fixed-length "curve" vector of extracted features: per buffer slot of the
    main statement, its scope (one-hot) and two curves sampled at log2 iteration
    counts ``0..sample_n-1``: log2 distinct bytes touched and log2 reuse (accesses per
    distinct element) within the innermost loops that make that many iterations."""
    sample_n = _check_sample_n(sample_n)
    width = len(SCOPE_LEVELS) + 2 * sample_n
    out = []
    main = _main_stmt(ff)
    if main is not None:
        st = ff.stmts[main]
        for j in _buffer_slots([a.bytes for a in st.accesses]):
            a = st.accesses[j]
            out += [float(a.scope == sc) for sc in SCOPE_LEVELS]
            # points (log2 iterations, log2 distinct bytes, log2 reuse), innermost level first
            one = a.elem_bytes * (a.lanes if a.lanes > 1 and a.stride_vector != 0 else 1)
            xs, fps, reuses = [0.0], [math.log2(one)], [math.log2(max(a.count * a.lanes * a.elem_bytes / one, 1.0))]
            for lp, fp in zip(reversed(st.loops), reversed(a.footprint)):
                xs.append(math.log2(lp.bottomup))
                fps.append(math.log2(fp))
                reuses.append(math.log2(max(lp.bottomup * a.count * a.lanes * a.elem_bytes / fp, 1.0)))
            p = 0  # the last point at or left of the sample
            curve_fp, curve_reuse = [], []
            for i in range(sample_n):
                while p + 1 < len(xs) and xs[p + 1] <= i + 1e-9:
                    p += 1
                curve_fp.append(fps[p])
                curve_reuse.append(reuses[p])
            out += curve_fp + curve_reuse
    out += [0.0] * (MAX_BUFFERS * width - len(out))
    return np.asarray(out, dtype=np.float32)


def _check_sample_n(sample_n) -> int:
    if not isinstance(sample_n, int) or isinstance(sample_n, bool) or sample_n < 1:
        raise FeatureError(f"sample_n must be a positive int (points per curve), got {sample_n!r}")
    return sample_n


def get_buffer_curve_sample_flatten(sch, args, sample_n=CURVE_SAMPLE_N, arch=None) -> np.ndarray:
    """The "curve" features of ``sch``: float32, length ``MAX_BUFFERS * (3 + 2 *
    sample_n)`` whatever the schedule (see :func:`flat_curve`)."""
    _check_sample_n(sample_n)
    return flat_curve(_extract(sch, args, arch), sample_n)


def _curve_names(sample_n) -> list:
    names = []
    for j in range(MAX_BUFFERS):
        names += [f"c{j}.scope_{sc}" for sc in SCOPE_LEVELS]
        names += [f"c{j}.bytes@2^{i}" for i in range(sample_n)]
        names += [f"c{j}.reuse@2^{i}" for i in range(sample_n)]
    return names


# ----------------------------------------------------------------------------
# what the tuner calls
# ----------------------------------------------------------------------------
def _knob_names(task) -> list:
    from .task.space import AnnotateEntity, ReorderEntity, SplitEntity  # noqa: PLC0415

    cfg = task.config_space.get(0)
    names = []
    for name in task.config_space.space_map:
        e = cfg[name]
        if isinstance(e, SplitEntity):
            names += [f"{name}.{i}" for i in range(len(e.size))]
        elif isinstance(e, ReorderEntity):
            names += [f"{name}.{i}" for i in range(len(e.perm))]
        elif isinstance(e, AnnotateEntity):
            names += [f"{name}.{i}" for i in range(len(e.anns))]
        else:
            names.append(name)
    return names


def _check_type(feature_type):
    if feature_type not in FEATURE_TYPES:
        raise FeatureError(f"unknown feature_type {feature_type!r}; use one of {FEATURE_TYPES} "
                           "('itervar': the lowered TIR, 'knob': the config's values, 'curve': reuse curves)")


def feature_names(task=None, feature_type="itervar", width=None) -> list:
    """The name of each position of the feature vectors of ``feature_type``.

    Parameters
    ----------
    task : Task, optional
        Needed for ``"knob"`` (the names of its knobs).
    feature_type : str
        ``"itervar"``, ``"knob"`` or ``"curve"`` (with :data:`CURVE_SAMPLE_N` points).
    width : int, optional
        The width the caller's matrix has: names are cut to it, or padded with
        ``f<i>``.

    Raises
    ------
    FeatureError
        For an unknown ``feature_type``, or ``"knob"`` without a task.
    """
    _check_type(feature_type)
    if feature_type == "itervar":
        names = _itervar_names()
    elif feature_type == "curve":
        names = _curve_names(CURVE_SAMPLE_N)
    else:
        if task is None or task.config_space is None:
            raise FeatureError("feature_names(feature_type='knob') needs the task (its knobs name the features)")
        names = _knob_names(task)
    if width:
        names = names[:width] + [f"f{i}" for i in range(len(names), width)]
    return names


def task_feature(task, config, feature_type="itervar"):
    """The features of one config of ``task``.

    Parameters
    ----------
    task : Task
    config : ConfigEntity or int
        A point of ``task.config_space`` or its index.
    feature_type : str
        ``"itervar"``, ``"knob"`` or ``"curve"``.

    Returns
    -------
    numpy.ndarray or None
        float32; None when the config cannot be instantiated (the template rejects
        it) or lowered -- such a candidate has no features, and the tuner skips it.

    Raises
    ------
    FeatureError
        For an unknown ``feature_type``.
    """
    _check_type(feature_type)
    if isinstance(config, (int, np.integer)) and not isinstance(config, bool):
        config = task.config_space.get(int(config))
    if feature_type == "knob":
        return np.asarray(config.get_flatten_feature(), dtype=np.float32)
    arch = _arch_of(str(task.target)) if task.target is not None else None
    try:
        sch, args = task.instantiate(config)  # under the task's target
        ff = extract_features(lower_for_features(sch, args), arch=arch)
    except Exception:  # noqa: BLE001 -- a candidate that does not lower has no features
        return None
    if feature_type == "itervar":
        return flat_itervar(ff, take_log=True)
    return flat_curve(ff, CURVE_SAMPLE_N)


class FeatureCache:
    """Features by ``(task workload, target, feature type, config index)``, in memory,
    the least recently used dropped beyond ``max_entries``."""

    def __init__(self, max_entries=50000):
        self.max_entries = int(max_entries)
        self._rows = OrderedDict()

    def get(self, key, default=None):
        row = self._rows.get(key, default)
        if key in self._rows:
            self._rows.move_to_end(key)
        return row

    def put(self, key, row):
        self._rows[key] = row
        self._rows.move_to_end(key)
        while len(self._rows) > self.max_entries:
            self._rows.popitem(last=False)

    def __contains__(self, key):
        return key in self._rows

    def __len__(self):
        return len(self._rows)

    def clear(self):
        self._rows.clear()


#: the cache :func:`batch_features` uses unless given one
FEATURE_CACHE = FeatureCache()


#: the fewest uncached configs :func:`batch_features` lowers in worker processes
PARALLEL_MIN = 8


def feature_workers() -> int:
    """How many processes lower configs for features: ``TECC_FEATURE_WORKERS``, else
    one per core the process may run on."""
    env = os.environ.get("TECC_FEATURE_WORKERS", "").strip()
    if env:
        try:
            n = int(env)
        except ValueError:
            raise FeatureError(f"TECC_FEATURE_WORKERS must be a whole number of processes, got {env!r}") from None
        if n < 1:
            raise FeatureError(f"TECC_FEATURE_WORKERS must be at least 1, got {n}")
        return n
    from ..runtime.peaks import usable_cpus  # noqa: PLC0415

    return max(1, len(usable_cpus()))


#: the task a forked feature worker lowers (set before the fork, inherited)
_FORKED_TASK = None


def _forked_feature(job):
    index, feature_type = job
    return task_feature(_FORKED_TASK, index, feature_type)


def _parallel_features(task, indexes, feature_type, workers):
    """:func:`task_feature` of each index in ``workers`` forked processes, or None
    where forking is not possible or a worker died (the caller lowers here then)."""
    import multiprocessing as mp  # noqa: PLC0415
    from concurrent.futures import ProcessPoolExecutor  # noqa: PLC0415
    from concurrent.futures.process import BrokenProcessPool  # noqa: PLC0415

    global _FORKED_TASK  # noqa: PLW0603 -- handed to the forked workers by inheritance
    if "fork" not in mp.get_all_start_methods():
        return None
    _FORKED_TASK = task
    try:
        with ProcessPoolExecutor(max_workers=workers, mp_context=mp.get_context("fork")) as pool:
            chunk = -(-len(indexes) // workers)
            return list(pool.map(_forked_feature, [(i, feature_type) for i in indexes], chunksize=chunk))
    except (BrokenProcessPool, OSError):
        return None
    finally:
        _FORKED_TASK = None


def batch_features(task, indexes, feature_type="itervar", cache=None, workers=None) -> list:
    """:func:`task_feature` of each config index, cached (in ``cache``, default
    :data:`FEATURE_CACHE`) per task workload, target, feature type and index.
    :data:`PARALLEL_MIN` or more uncached configs are lowered in ``workers`` forked
    processes (default :func:`feature_workers`); the rows are the same either way.

    Returns
    -------
    list of numpy.ndarray or None
        One per index, None where the config does not lower.
    """
    _check_type(feature_type)
    cache = FEATURE_CACHE if cache is None else cache
    base = (task.workload, str(task.target), feature_type)
    missing = list(dict.fromkeys(int(i) for i in indexes if base + (int(i),) not in cache))
    if missing:
        workers = feature_workers() if workers is None else int(workers)
        rows = None
        if feature_type != "knob" and workers > 1 and len(missing) >= PARALLEL_MIN:
            rows = _parallel_features(task, missing, feature_type, min(workers, len(missing)))
        if rows is None:
            rows = [task_feature(task, index, feature_type) for index in missing]
        for index, row in zip(missing, rows):
            cache.put(base + (index,), row)
    return [cache.get(base + (int(index),)) for index in indexes]


__all__ = [
    "CURVE_SAMPLE_N", "FEATURE_CACHE", "FEATURE_TYPES", "FeatureCache", "FeatureError", "ITERVAR_LENGTH",
    "LOWER_LEVELS", "MAX_BUFFERS", "MAX_LOOPS", "MAX_STMTS", "PARALLEL_MIN", "batch_features", "feature_names",
    "feature_workers", "flat_curve", "flat_itervar", "flatten_itervar_feature", "get_buffer_curve_sample_flatten", "get_flatten_name",
    "get_itervar_feature", "get_itervar_feature_flatten", "itervar_rows", "lower_for_features", "task_feature",
]
