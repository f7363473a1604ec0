"""The pass pipeline: a literal, named list of passes and the manager that runs it.

Reading :data:`CPU_PIPELINE` top to bottom is reading what lowering does.  Every
entry is ``(name, function)``, the function taking ``(func, options)``; the
ordering constraints are the comments beside the entries.

Inspection belongs here, not in the passes: :func:`run_pipeline` prints the TIR
before or after any pass (``# after vectorize (unchanged)`` when a pass returned
its input), times each pass and, behind the ``verify`` debug switch, checks the
IR after every pass and names the pass that broke it.

Options come from a frozen :class:`PassOptions` (also a cache key), which users
set through a TVM-style context::

    with tecc.transform.PassContext(opt_level=3, config={"tir.print_after": ["flatten"]}):
        f = tecc.build(s, [A, B, C])
"""
from __future__ import annotations

import sys
import threading
import time
from dataclasses import dataclass

from ...errors import TargetError, TeccError, TeccTypeError
from ..printer import to_text
from ..stmt import PrimFunc
from .flatten import flatten
from .inject_double_buffer import inject_double_buffer
from .loop_partition import loop_partition
from .remove_no_op import remove_no_op
from .simplify import simplify
from .unroll import unroll
from ..analysis.verify import verify_well_formed
from .vectorize import vectorize

TARGET_KINDS = ("c", "cuda")


class PassConfigError(TeccError, ValueError):
    """A :class:`PassContext` was given an unknown option or a bad value."""


@dataclass(frozen=True)
class PassOptions:
    """Options of one pipeline run; hashable, so it also serves as a cache key.

    Attributes
    ----------
    target_kind : str
        ``"c"`` or ``"cuda"``: which pipeline runs.
    unroll_max_extent : int
        ``UNROLLED`` loops with a constant extent up to this are unrolled
        explicitly; longer ones stay loops with a ``pragma_unroll`` annotation.
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
    """

    target_kind: str = "c"
    unroll_max_extent: int = 16
    vectorize: bool = True
    max_vector_bytes: int = 64
    target_arch: str | None = None
    loop_partition: bool = True
    verify: bool = False
    print_after: tuple = ()
    print_before: tuple = ()
    timing: bool = False

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
# the passes, as the pipeline calls them: (func, options) -> func
# ----------------------------------------------------------------------------

def _flatten(func, options):
    return flatten(func)


def _simplify(func, options):
    return simplify(func)


def _loop_partition(func, options):
    return loop_partition(func) if options.loop_partition else func


def _unroll(func, options):
    return unroll(func, options.unroll_max_extent)


def _vectorize(func, options):
    return vectorize(func, options.max_vector_bytes) if options.vectorize else func


def _remove_no_op(func, options):
    return remove_no_op(func)


def _inject_double_buffer(func, options):
    return inject_double_buffer(func)


def _inject_virtual_thread(func, options):
    from .inject_virtual_thread import inject_virtual_thread
    return inject_virtual_thread(func)


CPU_PIPELINE = [
    ("flatten", _flatten),                 # first: every later pass sees 1-D accesses only
    ("simplify", _simplify),               # tidy the flat index sums before passes pattern-match them
    ("inject_double_buffer", _inject_double_buffer),  # before loop_partition and unroll, which copy loop
                                           # bodies; on a CPU it only keeps double_buffer() correct
    ("inject_virtual_thread", _inject_virtual_thread),  # vthread axes become interleaved serial code
    ("loop_partition", _loop_partition),   # before unroll/vectorize: removes the guards that block both
    ("unroll", _unroll),                   # before vectorize: an unrolled loop inside a vectorized one
                                           # leaves it straight-line code
    ("vectorize", _vectorize),             # after flatten: builds ramps on the 1-D indices
    ("simplify", _simplify),               # fold the constants unroll substituted, tidy ramp bases
    ("remove_no_op", _remove_no_op),       # last: clean up empty loops and ifs left by the others
]


CUDA_PIPELINE = [
    ("flatten", _flatten),                 # first, as on the CPU
    ("simplify", _simplify),
    ("inject_double_buffer", _inject_double_buffer),    # after flatten: slots are offsets into 1-D buffers;
                                                        # before inject_virtual_thread and unroll, which copy
                                                        # loop bodies: each scope must still top its loop
    ("inject_virtual_thread", _inject_virtual_thread),  # before unroll: it replicates vthread bodies
    ("unroll", _unroll),
    ("vectorize", _vectorize),             # max_vector_bytes is 16 for CUDA: float4 loads and stores
    ("simplify", _simplify),
    ("remove_no_op", _remove_no_op),
    # then split_host_device (function -> host plan + kernels) and, on every kernel,
    # KERNEL_PIPELINE; loop_partition is left out: it would split loops bound to threads
]


def _thread_sync(kernel, options):
    from .thread_sync import insert_thread_sync
    return insert_thread_sync(kernel)


def _verify_gpu(kernel, options):
    from ..analysis.verify_gpu import gpu_limits, verify_gpu
    limits = gpu_limits(options.target_arch).verify_kwargs() if options.target_arch else {}
    verify_gpu(kernel, **limits)
    return kernel


KERNEL_PIPELINE = [
    ("thread_sync", _thread_sync),         # barriers where threads exchange data through shared memory
    ("simplify", _simplify),
    ("verify_gpu", _verify_gpu),           # last: limits on threads and shared memory, with stage names
]


def pipeline_for(options: PassOptions) -> list:
    """The list of ``(name, function)`` passes run for ``options.target_kind``."""
    if options.target_kind == "c":
        return CPU_PIPELINE
    if options.target_kind == "cuda":
        return CUDA_PIPELINE
    raise TargetError(f"no pass pipeline for target kind {options.target_kind!r}; use 'c' or 'cuda'")


def list_passes(options: PassOptions | None = None) -> list:
    """Names of the passes, in order, that :func:`run_pipeline` runs for ``options``."""
    options = options if options is not None else PassContext.current().pass_options()
    return [name for name, _ in pipeline_for(options)]


# ----------------------------------------------------------------------------
# running
# ----------------------------------------------------------------------------

def _wants(names, name):
    return "all" in names or name in names


def _check(func, label, require_flat):
    try:
        verify_well_formed(func, require_flat=require_flat)
    except AssertionError as err:
        raise AssertionError(f"TIR verification failed {label}:\n{err}") from None


def lower_cuda(func: PrimFunc, options: PassOptions | None = None, stream=None):
    """The CUDA lowering: :data:`CUDA_PIPELINE`, then the host/device split, then
    :data:`KERNEL_PIPELINE` on every kernel.

    Returns
    -------
    IRModule
        The host launch plan (named like ``func``) and its kernels.
    """
    from .split_host_device import split_host_device

    if options is None:
        options = PassContext.current().pass_options(target_kind="cuda", max_vector_bytes=16)
    func = run_pipeline(func, options, stream)
    out = stream if stream is not None else sys.stdout
    t0 = time.perf_counter()
    mod = split_host_device(func)
    times = [("split_host_device", time.perf_counter() - t0)]
    if _wants(options.print_after, "split_host_device"):
        print("# after split_host_device", file=out)
        print(mod.script(), file=out)
    for kname, kernel in list(mod.items()):
        if not kernel.attrs.get("tecc.kernel"):
            continue
        for name, fn in KERNEL_PIPELINE:
            t0 = time.perf_counter()
            new = fn(kernel, options)
            times.append((f"{name}[{kname}]", time.perf_counter() - t0))
            if _wants(options.print_after, name):
                mark = " (unchanged)" if new is kernel else ""
                print(f"# after {name} [{kname}]{mark}", file=out)
                print(to_text(new), file=out)
            if options.verify:
                _check(new, f"after pass {name!r} on kernel {kname}", require_flat=True)
            kernel = new
        mod[kname] = kernel
    if options.timing:
        _print_times(times, out)
    return mod


def run_pipeline(func: PrimFunc, options: PassOptions | None = None, stream=None) -> PrimFunc:
    """Run the pass pipeline on ``func``.

    Parameters
    ----------
    func : PrimFunc
        The function produced by lowering (multi-dimensional buffers).
    options : PassOptions, optional
        Defaults to the options of the current :class:`PassContext`.
    stream : file-like, optional
        Where the ``print_before``/``print_after`` dumps and the timing table go
        (default ``sys.stdout``).

    Returns
    -------
    PrimFunc
        The flattened, simplified, unrolled and vectorized function.

    Raises
    ------
    AssertionError
        With ``options.verify``, when a pass leaves ill-formed IR; the message
        names the pass and prints the IR around the bad node.
    """
    if options is None:
        options = PassContext.current().pass_options()
    out = stream if stream is not None else sys.stdout
    passes = pipeline_for(options)
    if options.verify:
        _check(func, "on the input of the pipeline", require_flat=False)
    times = []
    flat = False
    for name, fn in passes:
        if _wants(options.print_before, name):
            print(f"# before {name}", file=out)
            print(to_text(func), file=out)
        t0 = time.perf_counter()
        new = fn(func, options)
        times.append((name, time.perf_counter() - t0))
        assert isinstance(new, PrimFunc), f"pass {name} returned a {type(new).__name__}, not a PrimFunc"
        flat = flat or name == "flatten"
        if _wants(options.print_after, name):
            mark = " (unchanged)" if new is func else ""
            print(f"# after {name}{mark}", file=out)
            print(to_text(new), file=out)
        if options.verify:
            _check(new, f"after pass {name!r}", require_flat=flat)
        func = new
    if options.timing:
        _print_times(times, out)
    return func


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
            int.
    required_pass, disabled_pass : list of str, optional
        Pass names; ``disabled_pass`` may name ``"vectorize"`` or
        ``"loop_partition"``, ``required_pass`` forces them on.

    Examples
    --------
    >>> with PassContext(opt_level=3, config={"tir.print_after": ["flatten"]}):
    ...     mod = tecc.build(s, [A, B, C])
    """

    def __init__(self, opt_level: int = 2, required_pass=None, disabled_pass=None, config=None):
        if not isinstance(opt_level, int) or opt_level < 0:
            raise PassConfigError(f"opt_level must be a non-negative int, got {opt_level!r}")
        self.opt_level = opt_level
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
        return self

    def __exit__(self, *exc):
        stack = _stack()
        assert stack and stack[-1] is self, "PassContext exited out of order"
        stack.pop()
        return False

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
            vectorize=self._enabled("vectorize", vectorize_on),
            max_vector_bytes=max_vector_bytes,
            target_arch=target_arch,
            loop_partition=self._enabled("loop_partition", partition_on),
            verify=_as_bool(cfg, "tir.verify"),
            print_after=_as_names(cfg, "tir.print_after"),
            print_before=_as_names(cfg, "tir.print_before"),
            timing=_as_bool(cfg, "tir.timing"),
        )

    def __repr__(self):
        return f"PassContext(opt_level={self.opt_level}, config={self.config!r})"


def _stack():
    stack = getattr(_state, "stack", None)
    if stack is None:
        stack = _state.stack = []
    return stack


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
    known = {name for name, _ in CPU_PIPELINE + CUDA_PIPELINE + KERNEL_PIPELINE}
    known |= {"all", "split_host_device"}
    for v in value:
        if v not in known:
            raise PassConfigError(f"PassContext config {key!r} names the unknown pass {v!r}; "
                                  f"passes: {sorted(known)}")
    return tuple(value)


_DEFAULT = PassContext()

__all__ = [
    "CPU_PIPELINE", "PassConfigError", "PassContext", "PassOptions", "list_passes", "pipeline_for",
    "run_pipeline",
]
