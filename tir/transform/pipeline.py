"""The pass pipelines, as literal lists, and the one engine that runs them.

Reading :data:`CPU_PIPELINE` or :data:`CUDA_PIPELINE` top to bottom is reading what
lowering does for that target, from the function ``te`` lowering produced to the
IR a printer receives; the ordering constraints are the comments beside the
entries.  Both begin with :data:`GENERIC_PIPELINE`, the target-independent part that
``tecc.lower`` runs when it is not told a target.

Every pass maps an :class:`~tecc.tir.IRModule` to an IRModule.  A
:class:`FunctionPass` rewrites each function it selects (all of them, or only the
kernels of a split GPU function), a :class:`ModulePass` the module as a whole
(``split_host_device`` replaces a function by a host function and its kernels).

Inspection belongs to the engine, :func:`run_pipeline`, not to the passes: it prints
the IR before or after any pass (``# after vectorize (unchanged)`` when a pass
returned its input), times each pass and, behind the ``verify`` debug switch, checks
the IR after every pass and names the pass that broke it.

Options come from a frozen :class:`PassOptions` (also a cache key), which users set
through a TVM-style context::

    with tecc.transform.PassContext(opt_level=3, config={"tir.print_after": ["flatten"]}):
        f = tecc.build(s, [A, B, C])
"""
from __future__ import annotations

import sys
import threading
import time
from dataclasses import dataclass, replace
from typing import Callable

from ...errors import TargetError, TeccError, TeccTypeError
from .. import keys
from ..analysis.verify import verify_well_formed
from ..analysis.verify_gpu import gpu_limits, verify_gpu
from ..stmt import IRModule, PrimFunc
from .flatten import flatten
from .inject_double_buffer import inject_double_buffer
from .inject_prefetch import inject_prefetch
from .infer_fragment import infer_fragment
from .inject_virtual_thread import inject_virtual_thread
from .instrument import TraceInstrument, check_instruments
from .loop_partition import loop_partition
from .lower_intrin import lower_intrin
from .lower_division import lower_division
from .lower_thread_allreduce import lower_thread_allreduce
from .promote_local_registers import promote_local_registers
from .remove_no_op import remove_no_op
from .simplify import simplify
from .split_host_device import split_host_device_module
from .thread_sync import insert_thread_sync
from .unroll import unroll
from .vectorize import vectorize

#: what ``PassOptions.target_kind`` may be: None lowers target-independently
TARGET_KINDS = (None, "c", "cuda")
#: the module attribute that records how far lowering went: "generic", "c" or "cuda"
LOWERED = "tecc.lowered"


class PassConfigError(TeccError, ValueError):
    """A :class:`PassContext` was given an unknown option or a bad value."""


@dataclass(frozen=True)
class PassOptions:
    """Options of one pipeline run; hashable, so it also serves as a cache key.

    Attributes
    ----------
    target_kind : str or None
        ``"c"`` or ``"cuda"``: which pipeline runs; None runs the target-independent
        :data:`GENERIC_PIPELINE` only.
    unroll_max_extent : int
        ``UNROLLED`` loops with a constant extent up to this are unrolled
        explicitly; longer ones stay loops with a ``pragma_unroll`` annotation.
    unroll_auto_max_step : int
        Every serial loop of constant extent whose body runs at most this many
        statements in all is unrolled, as inside ``pragma(axis,
        "auto_unroll_max_step", n)`` (TVM's ``tir.UnrollLoop`` ``auto_max_step``); 0: only
        where the pragma asks.
    vectorize : bool
        Rewrite ``VECTORIZED`` loops into vector code; when False they stay
        loops and the backend emits a SIMD pragma.
    max_vector_bytes : int
        The width of the target's vector registers; longer vectorized loops are cut
        into vectors of this size.
    target_arch : str or None
        The GPU architecture (``"sm_90"``) whose limits ``verify_gpu`` checks; None
        checks against the most generous current limits.
    loop_partition : bool
        Split loops to remove ``likely`` bounds guards.
    verify : bool
        Debug switch: check the IR after every pass.
    print_before, print_after : tuple of str
        Names of passes around which to print the TIR; ``("all",)`` for every pass.
    timing : bool
        Print a table of the time spent in each pass.
    lower_passes : tuple of (int, Pass)
        The user's passes and the phase each runs at (TVM's ``tir.add_lower_pass``):
        see :data:`PHASE_AFTER`.
    """

    target_kind: str | None = "c"
    unroll_max_extent: int = 16
    unroll_auto_max_step: int = 0
    vectorize: bool = True
    max_vector_bytes: int = 64
    target_arch: str | None = None
    loop_partition: bool = True
    verify: bool = False
    print_after: tuple = ()
    print_before: tuple = ()
    timing: bool = False
    lower_passes: tuple = ()

    def __post_init__(self):
        if self.target_kind not in TARGET_KINDS:
            raise TargetError(f"unknown target kind {self.target_kind!r}; expected one of {TARGET_KINDS}")
        for name in ("print_after", "print_before"):
            value = getattr(self, name)
            if isinstance(value, str):
                value = (value,)
            object.__setattr__(self, name, tuple(value))
        if not isinstance(self.unroll_max_extent, int) or self.unroll_max_extent < 0:
            raise PassConfigError(f"unroll_max_extent must be a non-negative int, got {self.unroll_max_extent!r}")


# ----------------------------------------------------------------------------
# passes: IRModule -> IRModule
# ----------------------------------------------------------------------------
def _every_function(func):
    return True


def _kernels_only(func):
    return bool(func.attrs.get(keys.KERNEL))


class Pass:
    """Base of passes: ``p(mod)`` maps an IRModule to an IRModule (TVM's
    ``transform.Pass``)."""

    __slots__ = ()

    @property
    def info(self):
        from .passes import PassInfo
        return PassInfo(0, self.name)


def _module_of(pass_name, mod) -> IRModule:
    if isinstance(mod, IRModule):
        return mod
    hint = " wrap it: tecc.IRModule.from_expr(func)" if isinstance(mod, PrimFunc) else ""
    raise TeccTypeError(f"pass {pass_name!r} maps an IRModule to an IRModule, got a {type(mod).__name__};{hint}")


def _options_for(mod: IRModule) -> PassOptions:
    """The options of a pass run on its own (``tir.transform.Simplify()(mod)``): the
    current PassContext's, for the target kind the functions' ``"target"`` attribute
    names (C unless it is a CUDA target)."""
    ctx = PassContext.current()
    for func in mod.functions.values():
        target = func.attrs.get("target")
        kind = getattr(target, "kind", None) or (str(target).split()[0] if isinstance(target, str) else None)
        if kind is not None and str(kind) == "cuda":
            return ctx.pass_options(target_kind="cuda", max_vector_bytes=16)
    return ctx.pass_options()


def map_functions(pass_name, mod: IRModule, fn, selects=None) -> IRModule:
    """``mod`` with ``fn(func)`` in place of each function ``selects(func)`` picks
    (every one by default); ``mod`` itself when every result is its input."""
    funcs = {}
    changed = False
    for name, func in mod.items():
        new = fn(func) if selects is None or selects(func) else func
        if not isinstance(new, PrimFunc):
            raise TeccTypeError(f"pass {pass_name!r} turned function {name!r} into a {type(new).__name__}; "
                                "a function pass must return a tir.PrimFunc")
        changed = changed or new is not func
        funcs[name] = new
    return mod.with_functions(funcs) if changed else mod


@dataclass(frozen=True)
class FunctionPass(Pass):
    """A pass that rewrites each selected function on its own.

    ``fn(func, options) -> func`` returns ``func`` itself when it changes nothing;
    ``selects(func)`` picks the functions it visits (every one by default).  Call it
    on a module: ``p(mod)`` runs with the options of the current
    :class:`PassContext`.
    """

    name: str
    fn: Callable
    selects: Callable = _every_function

    def __call__(self, mod: IRModule, options: PassOptions | None = None) -> IRModule:
        mod = _module_of(self.name, mod)
        options = options if options is not None else _options_for(mod)
        return map_functions(self.name, mod, lambda func: self.fn(func, options), self.selects)


@dataclass(frozen=True)
class ModulePass(Pass):
    """A pass over the whole module: ``fn(mod, options) -> mod`` (the same object
    when it changes nothing).  ``p(mod)`` runs it with the options of the current
    :class:`PassContext`."""

    name: str
    fn: Callable

    def __call__(self, mod: IRModule, options: PassOptions | None = None) -> IRModule:
        mod = _module_of(self.name, mod)
        options = options if options is not None else _options_for(mod)
        new = self.fn(mod, options)
        if not isinstance(new, IRModule):
            raise TeccTypeError(f"pass {self.name!r} returned a {type(new).__name__}; a module pass must return "
                                "an IRModule")
        return new


def _flatten(func, options):
    return flatten(func)


def _simplify(func, options):
    return simplify(func)


def _inject_double_buffer(func, options):
    return inject_double_buffer(func)


def _inject_virtual_thread(func, options):
    return inject_virtual_thread(func)


def _loop_partition(func, options):
    return loop_partition(func) if options.loop_partition else func


def _unroll(func, options):
    return unroll(func, options.unroll_max_extent, options.unroll_auto_max_step)


def _vectorize(func, options):
    return vectorize(func, options.max_vector_bytes) if options.vectorize else func


def _inject_prefetch(func, options):
    return inject_prefetch(func, emit=options.target_kind != "cuda")


def _remove_no_op(func, options):
    return remove_no_op(func)


def _lower_intrin(func, options):
    return lower_intrin(func, options.target_kind)


def _lower_division(func, options):
    return lower_division(func)


def _promote_local_registers(func, options):
    return promote_local_registers(func)


def _promote_local_registers_in_loops(func, options):
    return promote_local_registers(func, in_loops=True)


def _split_host_device(mod, options):
    return split_host_device_module(mod)


def _lower_thread_allreduce(kernel, options):
    return lower_thread_allreduce(kernel)


def _thread_sync(kernel, options):
    return insert_thread_sync(kernel)


def _infer_fragment(kernel, options):
    return infer_fragment(kernel, options.target_arch)


def _verify_gpu(kernel, options):
    limits = gpu_limits(options.target_arch).verify_kwargs() if options.target_arch else {}
    verify_gpu(kernel, **limits)
    return kernel


GENERIC_PIPELINE = [
    FunctionPass("flatten", _flatten),     # first: every later pass sees 1-D accesses only
    FunctionPass("simplify", _simplify),   # tidy the flat index sums before passes pattern-match them
    FunctionPass("inject_prefetch", _inject_prefetch),  # after flatten and simplify: regions of 1-D indices;
                                           # before unroll and vectorize, which dissolve the loops it relaxes
                                           # over; dropped on GPU targets
    FunctionPass("inject_double_buffer", _inject_double_buffer),    # after flatten: slots are offsets into
                                           # 1-D buffers; before loop_partition, inject_virtual_thread and
                                           # unroll, which copy loop bodies: each scope must still top its loop
    FunctionPass("inject_virtual_thread", _inject_virtual_thread),  # vthread axes become interleaved code;
                                           # before unroll, as it replicates vthread bodies
]


CPU_PIPELINE = [
    *GENERIC_PIPELINE,
    FunctionPass("loop_partition", _loop_partition),  # before unroll/vectorize: removes the guards that
                                           # block both
    FunctionPass("unroll", _unroll),       # before vectorize: an unrolled loop inside a vectorized one
                                           # leaves it straight-line code
    FunctionPass("vectorize", _vectorize),  # after flatten: builds ramps on the 1-D indices; max_vector_bytes
                                           # is the target's register width
    FunctionPass("simplify", _simplify),   # fold the constants unroll substituted, tidy ramp bases
    FunctionPass("remove_no_op", _remove_no_op),  # clean up empty loops and ifs left by the others
    FunctionPass("lower_intrin", _lower_intrin),  # the user's intrinsic rules (register_intrin_lowering), on
                                           # the final loops: a rule may see vector calls
    FunctionPass("lower_division", _lower_division),  # after the last simplify, which reasons about floor
                                           # division: non-negative indices get C's / and %
    FunctionPass("promote_local_registers", _promote_local_registers_in_loops),  # last: after unroll and
                                           # vectorize made local indices constant; the printer declares
                                           # each slot; within loops too (GCC's store motion is fragile)
]


CUDA_PIPELINE = [
    *GENERIC_PIPELINE,                     # loop_partition is left out: it would split thread-bound loops
    FunctionPass("unroll", _unroll),
    FunctionPass("vectorize", _vectorize),  # max_vector_bytes is 16 for CUDA: float4 loads and stores
    FunctionPass("simplify", _simplify),
    FunctionPass("remove_no_op", _remove_no_op),
    FunctionPass("lower_intrin", _lower_intrin),
    ModulePass("split_host_device", _split_host_device),  # each GPU function -> host function + kernels;
                                           # the passes below visit the kernels only
    FunctionPass("lower_thread_allreduce", _lower_thread_allreduce, _kernels_only),  # needs the launch
                                           # extents; adds shared buffers and steps that need barriers
    FunctionPass("thread_sync", _thread_sync, _kernels_only),  # barriers where threads exchange data
                                           # through shared memory
    FunctionPass("simplify", _simplify, _kernels_only),
    FunctionPass("lower_division", _lower_division, _kernels_only),
    FunctionPass("promote_local_registers", _promote_local_registers, _kernels_only),
    FunctionPass("infer_fragment", _infer_fragment, _kernels_only),  # after every pass that moves code: the
                                           # shape and layout of each tensor-core fragment, for the printers
    FunctionPass("verify_gpu", _verify_gpu, _kernels_only),  # last: limits on threads and shared memory,
                                           # with stage names
]


#: where the user's passes of each phase (``tir.add_lower_pass``) run: before the
#: first pass (phase 0: the IR as ``te`` lowering made it, multi-dimensional
#: accesses), or after the named pass -- 1: every access flattened, loops as
#: scheduled; 2: loops unrolled and vectorized (vector code); 3: after the cleanup,
#: before the target's own lowering (the host/device split, division, registers).
#: A ``tecc.lower`` without a target runs the generic part only: phases 0 and 1.
PHASE_AFTER = {0: None, 1: "flatten", 2: "vectorize", 3: "remove_no_op"}


def pipeline_for(options: PassOptions) -> list:
    """The passes run for ``options.target_kind`` (None: the generic part only),
    with the user's ``lower_passes`` at their phases."""
    if options.target_kind is None:
        base = GENERIC_PIPELINE
    elif options.target_kind == "c":
        base = CPU_PIPELINE
    elif options.target_kind == "cuda":
        base = CUDA_PIPELINE
    else:
        raise TargetError(f"no pass pipeline for target kind {options.target_kind!r}; use 'c' or 'cuda'")
    if not options.lower_passes:
        return base
    out = list(base)
    for phase in sorted(PHASE_AFTER, reverse=True):
        users = [p for ph, p in options.lower_passes if ph == phase]
        anchor = PHASE_AFTER[phase]
        if not users or (anchor is not None and anchor not in (p.name for p in out)):
            continue
        at = 0 if anchor is None else max(i for i, p in enumerate(out) if p.name == anchor and p in base) + 1
        out[at:at] = users
    return out


def list_passes(options: PassOptions | None = None) -> list:
    """Names of the passes, in order, that :func:`run_pipeline` runs for ``options``."""
    options = options if options is not None else PassContext.current().pass_options()
    return [p.name for p in pipeline_for(options)]


# ----------------------------------------------------------------------------
# the engine
# ----------------------------------------------------------------------------
def _wants(names, name):
    return "all" in names or name in names


def _check(mod, label, require_flat):
    for name, func in mod.items():
        try:
            verify_well_formed(func, require_flat=require_flat)
        except AssertionError as err:
            raise AssertionError(f"TIR verification failed {label} (function {name!r}):\n{err}") from None


def _text(mod) -> str:
    # a TIR module prints as TIR script; a graph module (tecc.graph.Module) as its text form
    return mod.script() if isinstance(mod, IRModule) else mod.astext()


def _remaining(mod: IRModule, options: PassOptions) -> list:
    """The passes of the pipeline for ``options`` that ``mod`` has not been through."""
    passes = pipeline_for(options)
    done = mod.attrs.get(LOWERED)
    kind = options.target_kind
    if done is None:
        return passes
    if kind is None:
        return []  # lowered as far as a target-independent run goes, or further
    if done == "generic":
        generic = pipeline_for(replace(options, target_kind=None))
        return passes[len(generic):]
    if done == kind:
        return []
    raise TargetError(f"the module was lowered for target kind {done!r}; lower it again from the schedule "
                      f"for {kind or 'no particular target'!r}")


def run_pipeline(mod, options: PassOptions | None = None, stream=None) -> IRModule:
    """Run the pipeline for ``options`` on ``mod`` (the passes it has not been through).

    Parameters
    ----------
    mod : IRModule or PrimFunc
        The functions produced by lowering a schedule (a PrimFunc is wrapped in a
        module), or a module a previous run left at the generic stage.
    options : PassOptions, optional
        Defaults to the options of the current :class:`PassContext`.
    stream : file-like, optional
        Where the ``print_before``/``print_after`` dumps and the timing table go
        (default ``sys.stdout``).

    Returns
    -------
    IRModule
        With ``attrs["tecc.lowered"]`` set to the target kind (``"generic"`` for
        ``target_kind=None``).

    Raises
    ------
    AssertionError
        With ``options.verify``, when a pass leaves ill-formed IR; the message
        names the pass and prints the IR around the bad node.
    """
    if options is None:
        options = PassContext.current().pass_options()
    if isinstance(mod, PrimFunc):
        mod = IRModule.from_expr(mod)
    mod = run_passes(mod, _remaining(mod, options), options, stream)
    return mod.with_attr(LOWERED, options.target_kind or "generic")


def run_passes(mod: IRModule, passes, options: PassOptions, stream=None) -> IRModule:
    """Run ``passes`` in order on ``mod``: the engine behind :func:`run_pipeline` and
    ``tecc.transform.Sequential``, which prints, times and verifies around each pass
    as ``options`` ask."""
    out = stream if stream is not None else sys.stdout
    flat = mod.attrs.get(LOWERED) is not None
    if options.verify:
        _check(mod, "on the input of the pipeline", require_flat=flat)
    times = []
    instruments = PassContext.current().instruments
    for p in passes:
        info = p.info if instruments else None
        if instruments and not all(inst.should_run(mod, info) for inst in instruments):
            continue
        if _wants(options.print_before, p.name):
            print(f"# before {p.name}", file=out)
            print(_text(mod), file=out)
        for inst in instruments:
            inst.run_before_pass(mod, info)
        t0 = time.perf_counter()
        new = p(mod, options)
        times.append((p.name, time.perf_counter() - t0))
        for inst in instruments:
            inst.run_after_pass(new, info)
        flat = flat or p.name == "flatten"
        if _wants(options.print_after, p.name):
            mark = " (unchanged)" if new is mod else ""
            print(f"# after {p.name}{mark}", file=out)
            print(_text(new), file=out)
        if options.verify:
            _check(new, f"after pass {p.name!r}", require_flat=flat)
        mod = new
    if options.timing:
        _print_times(times, out)
    return mod


def _print_times(times, out):
    total = sum(t for _, t in times) or 1e-12
    width = max(len(n) for n, _ in times) if times else 4
    print(f"# pass timing ({len(times)} passes, {total * 1e3:.3f} ms)", file=out)
    print(f"{'pass'.ljust(width)}  {'ms':>9}  {'%':>6}", file=out)
    for name, t in times:
        print(f"{name.ljust(width)}  {t * 1e3:9.3f}  {100 * t / total:6.1f}", file=out)


# ----------------------------------------------------------------------------
# the user-facing context
# ----------------------------------------------------------------------------
_CONFIG_KEYS = {
    "tir.print_after": "pass names (or 'all') after which to print the TIR",
    "tir.print_before": "pass names (or 'all') before which to print the TIR",
    "tir.timing": "bool: print the time spent in each pass",
    "tir.verify": "bool: check the IR after every pass (debug)",
    "tir.disable_vectorize": "bool: keep vectorized loops as loops with a SIMD pragma",
    "tir.disable_loop_partition": "bool: keep bounds guards inside loops",
    "tir.unroll_max_extent": "int: largest extent unrolled explicitly (default 16)",
    "tir.UnrollLoop": "dict (TVM's): 'auto_max_step' (int: unroll every serial loop of at most that many "
                      "statements in all, as the auto_unroll_max_step pragma does), 'auto_max_extent', "
                      "'auto_max_depth', 'explicit_unroll', 'unroll_local_access' (accepted for TVM's code; tecc's "
                      "unroller judges by statement count alone)",
    "te.keep_schedule_record": "bool: schedules keep a copy of themselves after each primitive "
                               "(Schedule.schedule_record / primitive_record)",
    "graph.print_after": "graph pass names (or 'all') after which to print the model graph",
    "graph.print_before": "graph pass names (or 'all') before which to print the model graph",
    "graph.disable_winograd": "bool: AlterOpLayout keeps every 3x3 convolution direct on CPUs (no Winograd)",
    "graph.timing": "bool: print the time spent in each graph pass",
    "relay.frontend.fill_span": "bool (TVM's; default True): the model importers record on each call the name of "
                                "the model node it came from (its span, named in build errors); False leaves "
                                "spans empty",
    "relay.ToMixedPrecision.keep_orig_output_dtype": "bool (TVM's): ToMixedPrecision casts a model's outputs back to "
                                                     "float32",
    "tir.add_lower_pass": "list of (phase, pass): the user's TIR passes, run during lowering at phase 0, 1, 2 "
                          "or 3 (tecc.tir.transform.pipeline.PHASE_AFTER says where)",
}

_state = threading.local()


class PassContext:
    """Options for the passes that run inside a ``with`` block (as TVM's).

    Parameters
    ----------
    opt_level : int
        0 keeps loops as scheduled (no vectorization into vector code, no loop
        partitioning); 1 adds vectorization; 2 (the default) and above add loop
        partitioning.
    config : dict, optional
        Keys (all optional):

        ``"tir.print_after"`` / ``"tir.print_before"``
            list of pass names, or ``"all"``;
        ``"tir.timing"``, ``"tir.verify"``
            bool;
        ``"tir.disable_vectorize"``, ``"tir.disable_loop_partition"``
            bool;
        ``"tir.unroll_max_extent"``
            int;
        ``"tir.add_lower_pass"``
            list of ``(phase, pass)``: a pass (``tir.transform.prim_func_pass``...)
            run at phase 0-3 of every lowering in the block (:data:`PHASE_AFTER`).
    required_pass, disabled_pass : list of str, optional
        Pass names; ``disabled_pass`` may name ``"vectorize"`` or
        ``"loop_partition"``, ``required_pass`` forces them on.
    instruments : list of PassInstrument, optional
        Called around every pass run in the block (:mod:`.instrument`).
    trace : callable, optional
        TVM's before v0.8: ``trace(mod, info, is_before)`` before and after every
        pass (an instrument).

    Examples
    --------
    >>> with PassContext(opt_level=3, config={"tir.print_after": ["flatten"]}):
    ...     mod = tecc.build(s, [A, B, C])
    """

    def __init__(self, opt_level: int = 2, required_pass=None, disabled_pass=None, instruments=None, config=None,
                 *, trace=None):
        if not isinstance(opt_level, int) or opt_level < 0:
            raise PassConfigError(f"opt_level must be a non-negative int, got {opt_level!r}")
        self.opt_level = opt_level
        self.instruments = check_instruments(instruments)
        if trace is not None:  # TVM before v0.8: trace(mod, info, is_before) around every pass
            self.instruments += (TraceInstrument(trace),)
        self.required_pass = tuple(required_pass or ())
        self.disabled_pass = tuple(disabled_pass or ())
        self.config = dict(config or {})
        for key in self.config:
            if key not in _CONFIG_KEYS:
                known = "\n".join(f"  {k}: {v}" for k, v in _CONFIG_KEYS.items())
                raise PassConfigError(f"unknown PassContext config key {key!r}; known keys:\n{known}")
        self.pass_options()  # validate the values now rather than at build time

    def __enter__(self):
        stack = _stack()
        stack.append(self)
        try:
            self._enter_instruments()
        except BaseException:
            stack.pop()  # __exit__ will not run
            raise
        return self

    def __exit__(self, *exc):
        stack = _stack()
        assert stack and stack[-1] is self, "PassContext exited out of order"
        stack.pop()
        self._exit_instruments()
        return False

    def _enter_instruments(self):
        """``enter_pass_ctx`` of each instrument in order; when one raises, those
        entered before it are exited, the instruments are dropped, and the error
        propagates (TVM's behaviour)."""
        for k, inst in enumerate(self.instruments):
            try:
                inst.enter_pass_ctx()
            except BaseException:
                entered, self.instruments = self.instruments[:k], ()
                for done in entered:
                    done.exit_pass_ctx()
                raise

    def _exit_instruments(self):
        """``exit_pass_ctx`` of each instrument in order; when one raises, the
        instruments are dropped (those after it are not exited) and the error
        propagates."""
        for inst in self.instruments:
            try:
                inst.exit_pass_ctx()
            except BaseException:
                self.instruments = ()
                raise

    def with_opt_level(self, opt_level: int) -> "PassContext":
        """A copy of this context (passes, instruments, config) at ``opt_level``."""
        return PassContext(opt_level, self.required_pass, self.disabled_pass, self.instruments, self.config)

    def override_instruments(self, instruments):
        """Replace the instruments (TVM's ``PassContext.override_instruments``): the
        old ones get ``exit_pass_ctx``, the new ones ``enter_pass_ctx`` -- also on the
        context outside every ``with`` (``PassContext.current()``), whose passes the
        new instruments then see."""
        new = check_instruments(instruments)
        self._exit_instruments()
        self.instruments = new
        self._enter_instruments()

    @staticmethod
    def current() -> "PassContext":
        """The innermost active context (a default one outside any ``with``)."""
        stack = _stack()
        return stack[-1] if stack else _DEFAULT

    def _enabled(self, name, default):
        if name in self.required_pass:
            return True
        if name in self.disabled_pass:
            return False
        return default

    def pass_options(self, target_kind: str = "c", max_vector_bytes: int = 64,
                     target_arch: str | None = None) -> PassOptions:
        """The :class:`PassOptions` this context stands for, for ``target_kind`` and a
        target whose vector registers hold ``max_vector_bytes``."""
        cfg = self.config
        vectorize_on = self.opt_level >= 1 and not _as_bool(cfg, "tir.disable_vectorize")
        partition_on = self.opt_level >= 2 and not _as_bool(cfg, "tir.disable_loop_partition")
        max_extent = cfg.get("tir.unroll_max_extent", 16)
        if not isinstance(max_extent, int) or isinstance(max_extent, bool):
            raise PassConfigError(f"tir.unroll_max_extent must be an int, got {max_extent!r}")
        return PassOptions(
            target_kind=target_kind,
            unroll_max_extent=max_extent,
            unroll_auto_max_step=_unroll_loop_config(cfg),
            vectorize=self._enabled("vectorize", vectorize_on),
            max_vector_bytes=max_vector_bytes,
            target_arch=target_arch,
            loop_partition=self._enabled("loop_partition", partition_on),
            verify=_as_bool(cfg, "tir.verify"),
            print_after=_as_names(cfg, "tir.print_after"),
            print_before=_as_names(cfg, "tir.print_before"),
            timing=_as_bool(cfg, "tir.timing"),
            lower_passes=_as_lower_passes(cfg),
        )

    def __repr__(self):
        return f"PassContext(opt_level={self.opt_level}, config={self.config!r})"


def _stack():
    stack = getattr(_state, "stack", None)
    if stack is None:
        stack = _state.stack = []
    return stack


#: TVM's tir.UnrollLoop fields and their types
_UNROLL_LOOP_FIELDS = {"auto_max_step": int, "auto_max_depth": int, "auto_max_extent": int, "explicit_unroll": bool,
                       "unroll_local_access": bool}


def _unroll_loop_config(cfg) -> int:
    """The ``auto_max_step`` of TVM's ``tir.UnrollLoop`` config (0 without one); its
    other fields are checked and have no effect (see ``_CONFIG_KEYS``)."""
    value = cfg.get("tir.UnrollLoop", {})
    if hasattr(value, "items") and not isinstance(value, dict):
        value = dict(value.items())
    if not isinstance(value, dict):
        raise TeccTypeError(f"PassContext config 'tir.UnrollLoop' must be a dict such as {{'auto_max_step': 16}}, got "
                            f"{value!r}")
    for key, v in value.items():
        want = _UNROLL_LOOP_FIELDS.get(key)
        if want is None:
            raise PassConfigError(f"PassContext config 'tir.UnrollLoop' has no field {key!r}; its fields: "
                                  f"{', '.join(_UNROLL_LOOP_FIELDS)}")
        if not isinstance(v, want) or (want is int and (isinstance(v, bool) or v < 0)):
            raise TeccTypeError(f"PassContext config 'tir.UnrollLoop' field {key!r} must be a "
                                f"{'non-negative int' if want is int else 'bool'}, got {v!r}")
    return value.get("auto_max_step", 0)


def _as_bool(cfg, key):
    value = cfg.get(key, False)
    if not isinstance(value, bool):
        raise TeccTypeError(f"PassContext config {key!r} must be a bool, got {value!r}")
    return value


def _as_names(cfg, key):
    value = cfg.get(key, ())
    if isinstance(value, str):
        value = (value,)
    if not all(isinstance(v, str) for v in value):
        raise TeccTypeError(f"PassContext config {key!r} must be pass names, got {value!r}")
    known = {p.name for p in CPU_PIPELINE + CUDA_PIPELINE} | {"all"}
    for v in value:
        if v not in known:
            raise PassConfigError(f"PassContext config {key!r} names the unknown pass {v!r}; "
                                  f"passes: {sorted(known)}")
    return tuple(value)


def _as_lower_passes(cfg):
    value = cfg.get("tir.add_lower_pass", ())
    if not isinstance(value, (list, tuple)):
        raise TeccTypeError(f"PassContext config 'tir.add_lower_pass' must be a list of (phase, pass), got {value!r}")
    out = []
    for entry in value:
        if not (isinstance(entry, (list, tuple)) and len(entry) == 2):
            raise TeccTypeError(f"PassContext config 'tir.add_lower_pass': each entry is (phase, pass), got {entry!r}")
        phase, p = entry
        if phase not in PHASE_AFTER or isinstance(phase, bool):
            raise PassConfigError(f"PassContext config 'tir.add_lower_pass': phase {phase!r} of {p!r} must be 0, 1, "
                                  "2 or 3")
        if not isinstance(p, Pass):
            raise TeccTypeError(f"PassContext config 'tir.add_lower_pass': {p!r} (phase {phase}) is not a pass; make "
                                "one with tecc.tir.transform.prim_func_pass (a decorator)")
        out.append((phase, p))
    return tuple(out)


_DEFAULT = PassContext()

__all__ = [
    "CPU_PIPELINE", "CUDA_PIPELINE", "GENERIC_PIPELINE", "FunctionPass", "LOWERED", "ModulePass", "Pass",
    "PHASE_AFTER", "PassConfigError", "PassContext", "PassOptions", "list_passes", "map_functions", "pipeline_for",
    "run_passes", "run_pipeline",
]
