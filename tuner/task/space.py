"""The knobs of a schedule template and the points of its search space (AutoTVM's
``autotvm.task.space``).

A template asks its config for knobs while it builds a schedule::

    cfg.define_split("tile_x", x, num_outputs=3)        # how to split axis x
    cfg.define_knob("unroll", [0, 512, 1500])             # one value of a list
    xo, xm, xi = cfg["tile_x"].apply(s, C, x)             # apply the chosen split

What ``cfg`` is decides what that code does:

* a :class:`ConfigSpace` (while a tuning task is created) *collects* the knobs: each
  ``define_*`` adds a dimension to the space, and ``cfg[name]`` is that dimension's
  first choice, so the template still builds a valid schedule;
* a :class:`ConfigEntity` is one point of the space (``space.get(index)``): the
  ``define_*`` calls change nothing and ``cfg[name]`` is the chosen entity;
* a :class:`FallbackConfigEntity` is what a template gets when no tuned config exists
  for its workload: knobs start at a neutral value (a split keeps everything in its
  outer loop) and the template sets good defaults itself (``cfg["tile_x"] =
  SplitEntity([-1, 4, 16])``) when ``cfg.is_fallback``.

Only the schedule-side objects live here; the search (tuners, cost model, measuring)
builds on them elsewhere in :mod:`tecc.tuner`.
"""
from __future__ import annotations

import itertools
import math
from collections import OrderedDict

from ...errors import TeccError


class InstantiationError(TeccError, ValueError):
    """A template cannot build a schedule for this point of its space (e.g. a tile
    larger than the hardware allows); the tuner skips the point."""


# ---------------------------------------------------------------------------------------
# axes
# ---------------------------------------------------------------------------------------
class VirtualAxis:
    """An axis of a template (``cfg.axis(x)``): a name and a length, standing for a
    loop of the schedule before it exists."""

    _count = 0

    def __init__(self, var, name=None):
        from ...tir.expr import IterVar  # noqa: PLC0415

        if isinstance(var, int):
            self.length = var
            self.name = name or f"axis_{VirtualAxis._count}"
        elif isinstance(var, VirtualAxis):
            self.length, self.name = var.length, name or var.name
        elif isinstance(var, IterVar):
            self.name = name or var.var.name
            ext = var.dom.extent if var.dom is not None else None
            value = getattr(ext, "value", ext)
            if not isinstance(value, int):
                raise InstantiationError(f"axis {self.name!r} has a symbolic extent ({ext}); a template needs "
                                         "constant extents to define knobs over it")
            self.length = value
        else:
            raise TypeError(f"an axis of a template is an IterVar, an int or a VirtualAxis, not {type(var).__name__}")
        VirtualAxis._count += 1

    def __repr__(self):
        return f"vaxis({self.name}, {self.length})"


def _axis_length(axis) -> int:
    if isinstance(axis, (list, tuple)):
        raise TypeError("a split takes one axis")
    return VirtualAxis(axis).length


def get_factors(n: int) -> list:
    """The divisors of ``n``, ascending."""
    small = [i for i in range(1, int(math.isqrt(n)) + 1) if n % i == 0]
    return sorted(set(small + [n // i for i in small]))


def get_pow2s(n: int) -> list:
    """The powers of two up to ``n`` (1 included)."""
    return [2 ** k for k in range(max(1, n).bit_length()) if 2 ** k <= max(1, n)]


# ---------------------------------------------------------------------------------------
# the four kinds of knob: split, reorder, annotate, other option
# ---------------------------------------------------------------------------------------
class TransformSpace:
    """One dimension of a config space: the list of its choices (``entities``)."""

    def __init__(self):
        self.entities = []
        self.num_output = 0

    def __len__(self):
        return len(self.entities)

    def __getitem__(self, index):
        return self.entities[index]

    @staticmethod
    def get_num_output(*args, **kwargs):
        return 0


class SplitEntity:
    """A split of one axis into ``len(size)`` loops, outermost first; ``-1`` (allowed
    in the first position) takes what the others leave."""

    def __init__(self, size):
        self.size = [int(x) for x in size]

    def apply(self, sch, op, axis):
        """Split ``axis`` of ``op``'s stage; returns the loops, outermost first."""
        out = []
        for factor in reversed(self.size[1:]):
            axis, inner = sch[op].split(axis, factor=factor)
            out.append(inner)
        out.append(axis)
        return out[::-1]

    def __eq__(self, other):
        return isinstance(other, SplitEntity) and self.size == other.size

    def __hash__(self):
        return hash(tuple(self.size))

    def __repr__(self):
        return f"sp{self.size}"


#: the most loops ``define_split`` splits an axis into (a 4-level GPU tile uses 4 or 5)
MAX_SPLIT_OUTPUTS = 8
#: the most entities one knob may enumerate (a space this large is a mistake, and
#: listing it would hang the template)
MAX_KNOB_ENTITIES = 1 << 18


class SplitSpace(TransformSpace):
    """The ways to split an axis of length ``n`` into ``num_outputs`` loops.

    ``policy``: ``"factors"`` (every loop a divisor: no tail), ``"power2"`` (powers
    of two, a tail allowed), ``"verbose"`` (both), ``"candidate"`` (the lists given
    as ``candidate``).  ``max_factor`` bounds the inner loops; ``filter`` drops
    entities it returns False for."""

    def __init__(self, axes, policy, **kwargs):
        super().__init__()
        self.policy = policy
        self.product = _axis_length(axes)
        self.num_output = kwargs.get("num_outputs", 2)
        max_factor = kwargs.get("max_factor", 1 << 31)
        filt = kwargs.get("filter")
        if policy == "candidate":
            entities = [SplitEntity(c) for c in kwargs["candidate"]]
        else:
            if policy == "factors":
                choices, tail = get_factors(self.product), False
            elif policy == "power2":
                choices, tail = get_pow2s(self.product), True
            elif policy == "verbose":
                choices, tail = sorted(set(get_factors(self.product)) | set(get_pow2s(self.product))), True
            else:
                raise InstantiationError(f"define_split: unknown policy {policy!r} (factors, power2, verbose, "
                                         "candidate)")
            choices = [c for c in choices if c <= max_factor]
            entities = []
            self._generate(choices, tail, [], entities)
        self.entities = [e for e in entities if filt is None or filt(e)]
        if not self.entities:
            raise InstantiationError(f"define_split: no split of length {self.product} into {self.num_output} "
                                     f"loops satisfies the policy {policy!r} and the filter")

    def _generate(self, choices, tail, inner, out):
        # ``inner`` holds the factors chosen so far for the innermost loops
        if len(inner) == self.num_output - 1:
            out.append(SplitEntity([-1] + inner[::-1]))
            return
        if len(out) > MAX_KNOB_ENTITIES:
            raise InstantiationError(
                f"define_split: splitting length {self.product} into {self.num_output} loops gives more than "
                f"{MAX_KNOB_ENTITIES} choices; use fewer num_outputs, a max_factor or policy='factors'")
        used = math.prod(inner)
        for c in choices:
            if tail:
                if used * c <= self.product:
                    self._generate(choices, tail, inner + [c], out)
            elif (self.product // used) % c == 0:
                self._generate(choices, tail, inner + [c], out)

    @staticmethod
    def get_num_output(axes, policy, **kwargs):
        return kwargs.get("num_outputs", 2)

    def __repr__(self):
        return f"Split(policy={self.policy}, product={self.product}, num_outputs={self.num_output}) len={len(self)}"


class ReorderEntity:
    """An order of the loops given to ``apply``: ``perm[i]`` is the index of the loop
    placed at position ``i``."""

    def __init__(self, perm):
        self.perm = [int(x) for x in perm]

    def apply(self, sch, op, axes):
        if len(axes) != len(self.perm):
            raise InstantiationError(f"reorder of {len(self.perm)} loops applied to {len(axes)}")
        ordered = [axes[i] for i in self.perm]
        sch[op].reorder(*ordered)
        return ordered

    def __eq__(self, other):
        return isinstance(other, ReorderEntity) and self.perm == other.perm

    def __hash__(self):
        return hash(tuple(self.perm))

    def __repr__(self):
        return f"re{self.perm}"


class ReorderSpace(TransformSpace):
    """Orders of some loops: ``"identity"``, ``"all"`` (every permutation) or
    ``"candidate"`` (``candidate``: lists of the axes in the wanted order)."""

    def __init__(self, axes, policy, **kwargs):
        super().__init__()
        self.ins = list(axes)
        self.num_output = len(self.ins)
        if policy == "identity":
            perms = [list(range(len(self.ins)))]
        elif policy == "all":
            perms = [list(p) for p in itertools.permutations(range(len(self.ins)))]
        elif policy == "candidate":
            index = {id(a): i for i, a in enumerate(self.ins)}
            perms = []
            for cand in kwargs["candidate"]:
                if sorted(index.get(id(a), -1) for a in cand) != list(range(len(self.ins))):
                    raise ValueError("define_reorder: each candidate must order exactly the given axes")
                perms.append([index[id(a)] for a in cand])
        else:
            raise ValueError(f"define_reorder: unknown policy {policy!r} (identity, all, candidate)")
        self.entities = [ReorderEntity(p) for p in perms]

    @staticmethod
    def get_num_output(axes, policy, **kwargs):
        return len(axes)

    def __repr__(self):
        return f"Reorder(policy, {len(self.ins)} axes) len={len(self)}"


_GPU_BIND = {1: ["threadIdx.x"], 2: ["blockIdx.x", "threadIdx.x"],
             3: ["blockIdx.x", "vthread", "threadIdx.x"],
             4: ["blockIdx.x", "vthread", "threadIdx.x", "none"]}


class AnnotateEntity:
    """One annotation per loop: ``"none"``, ``"unroll"``, ``"vec"``, ``"parallel"``,
    ``"vthread"`` or a thread tag (``"blockIdx.x"``, ``"threadIdx.y"``, ...)."""

    def __init__(self, anns):
        self.anns = list(anns)

    def apply(self, sch, op, axes, axis_lens=None, max_unroll=None, vec_size=None, cfg=None, source=None):
        from ... import te  # noqa: PLC0415

        if len(axes) != len(self.anns):
            raise InstantiationError(f"{len(self.anns)} annotations applied to {len(axes)} loops")
        for i, (ann, axis) in enumerate(zip(self.anns, axes)):
            if ann == "none":
                continue
            length = axis_lens[i] if axis_lens is not None else None
            if ann == "unroll":
                if max_unroll is not None and length is not None and length > max_unroll:
                    if cfg is not None:
                        cfg.raise_error(f"unrolling a loop of {length} > max_unroll={max_unroll}")
                    continue
                sch[op].unroll(axis)
            elif ann == "vec":
                if vec_size is not None and length is not None and length not in vec_size:
                    if cfg is not None:
                        cfg.raise_error(f"vectorizing a loop of {length}, not one of {vec_size}")
                    continue
                sch[op].vectorize(axis)
            elif ann == "parallel":
                sch[op].parallel(axis)
            elif ann == "vthread" or "." in ann:
                sch[op].bind(axis, te.thread_axis(ann))
            else:
                raise ValueError(f"unknown annotation {ann!r}")
        return list(axes)

    def __eq__(self, other):
        return isinstance(other, AnnotateEntity) and self.anns == other.anns

    def __hash__(self):
        return hash(tuple(self.anns))

    def __repr__(self):
        return f"an{self.anns}"


class AnnotateSpace(TransformSpace):
    """Annotations of some loops.  Policies: ``"try_unroll"`` (each loop unrolled or
    not), ``"try_vec"`` (the last loop vectorized or not), ``"try_unroll_vec"``
    (both), ``"bind_gpu"`` (bind the loops to blocks/threads, one choice),
    ``"locate_cache"`` is not supported; ``"candidate"``: lists of annotations."""

    def __init__(self, axes, policy, **kwargs):
        super().__init__()
        self.ins = list(axes)
        n = len(self.ins)
        self.num_output = n
        if policy == "try_unroll":
            choices = [list(c) for c in itertools.product(["none", "unroll"], repeat=n)]
        elif policy == "try_vec":
            choices = [["none"] * (n - 1) + [last] for last in ("none", "vec")]
        elif policy == "try_unroll_vec":
            choices = [list(c) + [last] for c in itertools.product(["none", "unroll"], repeat=n - 1)
                       for last in ("none", "vec")]
        elif policy == "bind_gpu":
            if n not in _GPU_BIND:
                raise ValueError(f"define_annotate: bind_gpu takes 1 to 4 axes, got {n}")
            choices = [list(_GPU_BIND[n])]
        elif policy == "candidate":
            choices = [list(c) for c in kwargs["candidate"]]
        else:
            raise ValueError(f"define_annotate: unknown policy {policy!r} "
                             "(try_unroll, try_vec, try_unroll_vec, bind_gpu, candidate)")
        self.entities = [AnnotateEntity(c) for c in choices]

    @staticmethod
    def get_num_output(axes, policy, **kwargs):
        return len(axes)

    def __repr__(self):
        return f"Annotate({len(self.ins)} axes) len={len(self)}"


class OtherOptionEntity:
    """One value of a knob (``cfg["unroll"].val``)."""

    def __init__(self, val):
        self.val = val

    def __eq__(self, other):
        return isinstance(other, OtherOptionEntity) and self.val == other.val

    def __hash__(self):
        return hash(repr(self.val))

    def __repr__(self):
        return f"ot{self.val!r}"


class OtherOptionSpace(TransformSpace):
    """A knob with a list of candidate values."""

    def __init__(self, axes, policy, **kwargs):
        super().__init__()
        candidate = list(kwargs["candidate"])
        if not candidate:
            raise ValueError("define_knob: the list of candidates is empty")
        self.entities = [OtherOptionEntity(v) for v in candidate]

    def __repr__(self):
        return f"OtherOption({[e.val for e in self.entities]}) len={len(self)}"


_KIND_OF = {SplitEntity: "sp", ReorderEntity: "re", AnnotateEntity: "an", OtherOptionEntity: "ot"}


def _entity_value(entity):
    return {"sp": lambda e: e.size, "re": lambda e: e.perm, "an": lambda e: e.anns,
            "ot": lambda e: e.val}[_KIND_OF[type(entity)]](entity)


def _entity_from(kind, value):
    return {"sp": SplitEntity, "re": ReorderEntity, "an": AnnotateEntity, "ot": OtherOptionEntity}[kind](value)


def _outputs(name, n) -> list:
    """The axes a knob's definition returns (for later knobs to name them)."""
    return [VirtualAxis(1, f"{name}.{i}") for i in range(n)]


# ---------------------------------------------------------------------------------------
# the space and its points
# ---------------------------------------------------------------------------------------
class _KnobView:
    """A point's entities by knob name, for a :meth:`ConfigSpace.multi_filter`
    (cheaper than a :class:`ConfigEntity`: the filters see every candidate)."""

    __slots__ = ("_spaces", "_knob")

    def __init__(self, spaces, knob):
        self._spaces, self._knob = spaces, knob

    def __getitem__(self, name):
        for (n, space), k in zip(self._spaces.items(), self._knob):
            if n == name:
                return space[k]
        raise KeyError(f"multi_filter: the template defines no knob {name!r} (knobs: {', '.join(self._spaces)})")

    def __contains__(self, name):
        return name in self._spaces


class ConfigSpace:
    """The knobs a template defines, each a dimension; its points are
    :class:`ConfigEntity` objects (``space.get(i)``, ``0 <= i < len(space)``)."""

    def __init__(self):
        self.space_map = OrderedDict()   # name -> TransformSpace
        self._entity_map = OrderedDict()  # name -> the entity in use
        self._collect = True
        self._length = None
        self._dims = None
        self._filters = []
        self._valid_cache = {}
        self._valid_indexes = None
        self.errors = []
        self.flop = 0
        self.code_hash = None
        self.is_fallback = False
        #: the mean measured seconds of this point, where a record says (TVM's
        #: ``cfg.cost``: implementations of one operator are picked by it)
        self.cost = None

    # the knobs ----------------------------------------------------------------------
    @staticmethod
    def axis(var):
        """An axis of the template for ``var`` (an IterVar or a length)."""
        return VirtualAxis(var)

    reduce_axis = axis

    def define_split(self, name, axis, policy="factors", **kwargs):
        """A knob splitting ``axis`` into ``num_outputs`` loops (see :class:`SplitSpace`)."""
        n = kwargs.get("num_outputs", 2)
        if not isinstance(n, int) or isinstance(n, bool) or not 1 <= n <= MAX_SPLIT_OUTPUTS:
            raise InstantiationError(f"define_split({name!r}): num_outputs must be an int from 1 to "
                                     f"{MAX_SPLIT_OUTPUTS} (the loops the axis is split into), got {n!r}")
        most = kwargs.get("max_factor", 1)
        if not isinstance(most, int) or isinstance(most, bool) or most < 1:
            raise InstantiationError(f"define_split({name!r}): max_factor must be a positive int, got {most!r}")
        return self._add_new_transform(SplitSpace, name, axis, policy, **kwargs)

    def define_reorder(self, name, axes, policy, **kwargs):
        """A knob ordering ``axes`` (see :class:`ReorderSpace`)."""
        return self._add_new_transform(ReorderSpace, name, axes, policy, **kwargs)

    def define_annotate(self, name, axes, policy, **kwargs):
        """A knob annotating ``axes`` (see :class:`AnnotateSpace`)."""
        return self._add_new_transform(AnnotateSpace, name, axes, policy, **kwargs)

    def define_knob(self, name, candidate):
        """A knob taking one of the values ``candidate``.

        A knob added to a template that already has records goes after the others
        (the records' indexes still name the same points) and lists first the value
        that does what the template did without it: a recorded config that lacks the
        knob takes that value."""
        return self._add_new_transform(OtherOptionSpace, name, [], "", candidate=candidate)

    def add_flop(self, flop):
        """Count ``flop`` floating-point operations for this template (the tuner
        reports GFLOPS from it)."""
        self.flop += float(flop)

    def multi_filter(self, filter, reason=None):  # noqa: A002 - AutoTVM's keyword
        """Keep only the points for which ``filter(entity)`` is true (AutoTVM's
        ``multi_filter``): a constraint across knobs that a template can tell from the
        knob values alone (threads per block, shared memory of a tile, a register
        tile), so that tuners never propose, build or measure a point it refuses.

        ``entity`` maps each knob's name to its entity (``entity["tile_x"].size``).
        ``len(space)`` still counts every point; :meth:`is_index_valid` says which
        pass, and the tuners draw from those.  When a config is applied (the template
        runs on one point), a point the filter refuses is marked invalid
        (:meth:`raise_error`), so a config from elsewhere is refused with ``reason``
        (what the filter checks; a tecc addition to AutoTVM's signature).  The
        filters stay in this process: a space sent to a worker goes without them.
        """
        if not callable(filter):
            raise InstantiationError(f"multi_filter: filter must be a function of the config entity, got "
                                     f"{type(filter).__name__}")
        if self._collect:
            self._filters.append(filter)
            self._valid_cache.clear()
            self._valid_indexes = None
        elif not filter(self):
            self.raise_error(f"config {self.index} fails the template's multi_filter"
                             + (f": {reason}" if reason else " (a constraint across its knobs)"))

    #: a filtered space up to this many points lists its valid points once; a larger
    #: one is sampled by rejection
    ENUMERATE_LIMIT = 1 << 16

    def is_index_valid(self, index: int) -> bool:
        """Whether point ``index`` passes every :meth:`multi_filter` (always True for a
        space without filters)."""
        if not self._filters:
            return True
        hit = self._valid_cache.get(index)
        if hit is None:
            view = _KnobView(self.space_map, self.point2knob(index))
            hit = all(f(view) for f in self._filters)
            if len(self._valid_cache) > 1 << 20:
                self._valid_cache.clear()
            self._valid_cache[index] = hit
        return hit

    def valid_indexes(self):
        """The points that pass the filters, in order (a space of at most
        :data:`ENUMERATE_LIMIT` points), else None."""
        if len(self) > self.ENUMERATE_LIMIT:
            return None
        if self._valid_indexes is None:
            self._valid_indexes = [i for i in range(len(self)) if self.is_index_valid(i)]
        return self._valid_indexes

    @property
    def filtered(self) -> bool:
        """Whether a :meth:`multi_filter` constrains the space."""
        return bool(self._filters)

    def num_valid(self) -> int:
        """How many points pass the filters (``len(space)`` for a space too large to
        count, whose tuners then stop when rejection sampling finds no new point)."""
        valid = self.valid_indexes() if self._filters else None
        return len(self) if valid is None else len(valid)

    def __getstate__(self):
        state = dict(self.__dict__)
        state["_filters"], state["_valid_cache"], state["_valid_indexes"] = [], {}, None
        return state

    def raise_error(self, msg):
        """Mark this point invalid (the tuner skips it)."""
        self.errors.append(msg)

    def valid(self) -> bool:
        return not self.errors

    def _add_new_transform(self, space_class, name, axes, policy, **kwargs):
        if self._collect:
            if name in self.space_map:  # the compute and the schedule may both define it
                return _outputs(name, self.space_map[name].num_output)
            space = space_class(axes, policy, **kwargs)
            self.space_map[name] = space
            self._entity_map[name] = space[0]
            self._length = None
            return _outputs(name, space.num_output)
        return _outputs(name, space_class.get_num_output(axes, policy, **kwargs))

    # the points ---------------------------------------------------------------------
    def __len__(self):
        if self._length is None:
            self._length = math.prod(len(s) for s in self.space_map.values())
        return self._length

    @property
    def dims(self) -> list:
        """The number of choices of each knob, in definition order."""
        if self._dims is None or len(self._dims) != len(self.space_map):
            self._dims = [len(s) for s in self.space_map.values()]
        return self._dims

    def point2knob(self, point: int) -> list:
        """The choice index of each knob for point ``point`` (mixed radix, first knob
        fastest)."""
        knob = []
        for d in self.dims:
            knob.append(point % d)
            point //= d
        return knob

    def knob2point(self, knob) -> int:
        point, scale = 0, 1
        for k, d in zip(knob, self.dims):
            point += k * scale
            scale *= d
        return point

    def get(self, index: int) -> "ConfigEntity":
        """The point ``index`` of the space."""
        if not 0 <= index < len(self):
            raise IndexError(f"config index {index} out of range: the space has {len(self)} points")
        entities = OrderedDict()
        for (name, space), k in zip(self.space_map.items(), self.point2knob(index)):
            entities[name] = space[k]
        return ConfigEntity(index, self.code_hash, entities)

    def __iter__(self):
        return iter(self.space_map)

    def __getitem__(self, name):
        return self._entity_map[name]

    def __contains__(self, name):
        return name in self._entity_map

    def __repr__(self):
        lines = [f"ConfigSpace (len={len(self)}, space_map="]
        if self._filters:
            valid = self.valid_indexes()
            told = f"{len(valid)} pass" if valid is not None else "sampled by rejection"
            lines[0] = f"ConfigSpace (len={len(self)}, {len(self._filters)} multi_filter(s): {told}, space_map="
        for i, (name, space) in enumerate(self.space_map.items()):
            lines.append(f"   {i:2d} {name}: {space!r}")
        return "\n".join(lines) + ")"


class ConfigEntity(ConfigSpace):
    """One point of a :class:`ConfigSpace`: a chosen entity per knob."""

    def __init__(self, index, code_hash, entity_map):
        super().__init__()
        self.index = index
        self._collect = False
        self._entity_map = OrderedDict(entity_map)
        self._space_map = None
        self.code_hash = code_hash
        self._matched = False  # a knob the template defined was found in the config

    def __len__(self):
        return 1

    def get_flatten_feature(self) -> list:
        """The knobs as numbers (the cost model's "knob" features)."""
        out = []
        for entity in self._entity_map.values():
            if isinstance(entity, SplitEntity):
                out.extend(entity.size)
            elif isinstance(entity, ReorderEntity):
                out.extend(entity.perm)
            elif isinstance(entity, AnnotateEntity):
                out.extend({"none": 0, "unroll": 1, "vec": 2, "parallel": 3}.get(a, 4) for a in entity.anns)
            elif isinstance(entity.val, (bool, int, float)):
                out.append(float(entity.val))
            else:
                out.append(0.0)
        return [float(x) for x in out]

    def get_other_option(self) -> dict:
        return {k: v.val for k, v in self._entity_map.items() if isinstance(v, OtherOptionEntity)}

    def _add_new_transform(self, space_class, name, axes, policy, **kwargs):
        if name in self._entity_map:
            self._matched = True
        elif space_class is OtherOptionSpace and self._matched:
            # a config recorded before the template had this knob (it has the knobs
            # defined before it): a knob added later, after the others so that older
            # indexes still hold, takes its first candidate -- what the template did
            # before it had the knob
            self._entity_map[name] = OtherOptionSpace(axes, policy, **kwargs)[0]
        else:
            raise InstantiationError(
                f"the config has no knob {name!r}: it is a config of another template, or was recorded before "
                "the template defined that knob; tune the workload again")
        return super()._add_new_transform(space_class, name, axes, policy, **kwargs)

    def to_json_dict(self) -> dict:
        return {"index": self.index, "code_hash": self.code_hash,
                "entity": [[name, _KIND_OF[type(e)], _entity_value(e)] for name, e in self._entity_map.items()]}

    @staticmethod
    def from_json_dict(json_dict) -> "ConfigEntity":
        """The config a record's ``"config"`` names: a point of the space, or the
        template's fallback (a baseline record: ``"fallback": true``)."""
        if json_dict.get("fallback"):
            return FallbackConfigEntity()
        entities = OrderedDict((name, _entity_from(kind, value)) for name, kind, value in json_dict["entity"])
        return ConfigEntity(json_dict["index"], json_dict.get("code_hash"), entities)

    def __repr__(self):
        return f"{', '.join(f'{k}={v!r}' for k, v in self._entity_map.items())},{self.code_hash},{self.index}"


class FallbackConfigEntity(ConfigSpace):
    """The config of a workload nobody tuned: each knob starts at a neutral choice (a
    split keeps everything in the outer loop; a reorder keeps the order; an option
    takes its first value), and the template may set better ones
    (``cfg[name] = SplitEntity(...)``, or :meth:`fallback_split`)."""

    #: not a point of any space (a baseline record names it by ``"fallback": true``)
    index = -1

    def __init__(self):
        super().__init__()
        self.is_fallback = True

    def to_json_dict(self) -> dict:
        """A record's ``"config"`` for the fallback (a baseline measurement: what the
        template does untuned, against which tuned configs are chosen)."""
        return {"index": -1, "code_hash": None, "entity": [], "fallback": True}

    def _add_new_transform(self, space_class, name, axes, policy, **kwargs):
        if name in self._entity_map:  # the template defines its knobs again: keep what was set
            return _outputs(name, space_class.get_num_output(axes, policy, **kwargs))
        axes_out = super()._add_new_transform(space_class, name, axes, policy, **kwargs)
        space = self.space_map[name]
        if isinstance(space, SplitSpace):
            self._entity_map[name] = SplitEntity([-1] + [1] * (space.num_output - 1))
        return axes_out

    def fallback_split(self, name, constraints):
        """Split knob ``name`` with each inner loop as large as possible but at most
        ``constraints[i]`` (a divisor of what is left), innermost first."""
        space = self.space_map[name]
        if len(constraints) != space.num_output:
            raise ValueError(f"fallback_split({name!r}): {len(constraints)} constraints for "
                             f"{space.num_output} loops")
        left = space.product
        size = []
        for limit in reversed(constraints[1:]):
            best = max(f for f in get_factors(left) if f <= max(1, limit))
            size.append(best)
            left //= best
        self._entity_map[name] = SplitEntity([-1] + size[::-1])

    def __setitem__(self, name, entity):
        self._entity_map[name] = entity

    def __repr__(self):
        return f"{', '.join(f'{k}={v!r}' for k, v in self._entity_map.items())},{self.code_hash}"
