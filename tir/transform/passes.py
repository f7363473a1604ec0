"""TVM's pass objects: ``tir.transform.Simplify()``, ``transform.Sequential([...])``...

Each constructor returns a pass of the one engine in :mod:`.pipeline` -- the very
:class:`~.pipeline.FunctionPass` or :class:`~.pipeline.ModulePass` the pipelines
list, under the same name -- so ``pass(mod)`` maps an :class:`~tecc.tir.IRModule`
to an IRModule, and ``PassContext(config={"tir.print_after": ["simplify"]})``
prints around it in a :class:`Sequential` as in a build.

=======================  ==========================  ===================================
TVM's constructor        tecc pass                   notes
=======================  ==========================  ===================================
``StorageFlatten``       ``flatten``                 ``cache_line_size`` is not used
``Simplify``             ``simplify``
``StorageRewrite``       ``storage_rewrite``         reuses the memory of a dead buffer
                                                     of the same scope, dtype and size
``VectorizeLoop``        ``vectorize``
``UnrollLoop``           ``unroll``                  ``tir.unroll_max_extent`` config
``RemoveNoOp``           ``remove_no_op``
``LoopPartition``        ``loop_partition``
``InjectVirtualThread``  ``inject_virtual_thread``
``InjectDoubleBuffer``   ``inject_double_buffer``
``InjectPrefetch``       ``inject_prefetch``         prefetches emitted (dropped in a
                                                     CUDA build's pipeline)
``SplitHostDevice``      ``split_host_device``
``LowerThreadAllreduce``  ``lower_thread_allreduce``  kernels (after SplitHostDevice)
``ThreadSync``           ``thread_sync``             kernels; scope "shared"
``Apply``                ``apply``                   ``f(func) -> func`` on every function
=======================  ==========================  ===================================
"""
from __future__ import annotations

import inspect

from ...errors import TeccTypeError
from .. import keys
from ..analysis.buffers import allocations
from ..analysis.threads import binds_gpu_threads
from . import pipeline as P
from .storage_rewrite import storage_rewrite

#: tecc pass name -> TVM's pass name (``PassContext(disabled_pass=[...])`` takes either)
TVM_NAMES = {
    "flatten": "tir.StorageFlatten",
    "simplify": "tir.Simplify",
    "storage_rewrite": "tir.StorageRewrite",
    "vectorize": "tir.VectorizeLoop",
    "unroll": "tir.UnrollLoop",
    "remove_no_op": "tir.RemoveNoOp",
    "loop_partition": "tir.LoopPartition",
    "inject_virtual_thread": "tir.InjectVirtualThread",
    "inject_double_buffer": "tir.InjectDoubleBuffer",
    "inject_prefetch": "tir.InjectPrefetch",
    "split_host_device": "tir.SplitHostDevice",
    "lower_thread_allreduce": "tir.LowerThreadAllreduce",
    "thread_sync": "tir.ThreadSync",
}


# ----------------------------------------------------------------------------
# the generic infrastructure (TVM's tvm.transform)
# ----------------------------------------------------------------------------
class PrintIR(P.Pass):
    """A pass that prints the module it is given and returns it unchanged (TVM's
    ``transform.PrintIR``): in a sequence of TIR passes or of graph passes alike.

    Parameters
    ----------
    header : str
        Printed first, as a comment line.
    show_meta_data : bool
        Accepted for TVM's signature (tecc prints constants inline).
    """

    name = "print_ir"
    #: neither kind: ``tecc.transform.Sequential`` takes it among TIR or graph passes
    graph_pass = None

    def __init__(self, header: str = "", show_meta_data: bool = False):
        del show_meta_data
        self.header = str(header)

    def __call__(self, mod, options=None):
        from .instrument import _text  # noqa: PLC0415

        if self.header:
            print(f"# {self.header}")
        print(_text(mod))
        return mod

    def __repr__(self):
        return f"PrintIR(header={self.header!r})"


class Sequential(P.Pass):
    """Passes run in order as one pass (TVM's ``transform.Sequential``).

    ``seq(mod)`` runs them through the engine of the pipelines, so the current
    :class:`~.pipeline.PassContext`'s ``tir.print_before``/``tir.print_after``,
    ``tir.timing`` and ``tir.verify`` apply to each; a pass named in the context's
    ``disabled_pass`` (by tecc's or TVM's name) is skipped.

    Parameters
    ----------
    passes : list of passes
    opt_level : int
        Accepted for compatibility.
    name : str
    required : list of str, optional
        Accepted for compatibility.
    """

    def __init__(self, passes=None, opt_level=0, name="sequential", required=None):
        passes = list(passes or ())
        for i, p in enumerate(passes):
            if not callable(p) or not hasattr(p, "name"):
                raise TeccTypeError(f"Sequential {name!r}: entry {i} is a {type(p).__name__}, not a pass; use "
                                    "tir.transform.Simplify() and the like, or module_pass/prim_func_pass")
        self.passes = passes
        self.opt_level = opt_level
        self.name = name
        self.required = tuple(required or ())

    def __call__(self, mod, options=None):
        mod = P._module_of(self.name, mod)
        if options is None:
            # called on its own: through the engine, so instruments see the sequence too
            return P.run_passes(mod, [self], P._options_for(mod))
        disabled = P.PassContext.current().disabled_pass
        passes = [p for p in self.passes if p.name not in disabled and TVM_NAMES.get(p.name) not in disabled]
        return P.run_passes(mod, passes, options)

    @property
    def info(self):
        return PassInfo(self.opt_level, self.name, self.required)

    def __repr__(self):
        return f"Sequential({self.name!r}, [{', '.join(p.name for p in self.passes)}])"


class PassInfo:
    """A pass's name and level (TVM's ``transform.PassInfo``)."""

    def __init__(self, opt_level, name, required=None):
        self.opt_level = opt_level
        self.name = name
        self.required = tuple(required or ())

    def __repr__(self):
        return f"PassInfo(name={self.name!r}, opt_level={self.opt_level})"


def _decorator(kind, pass_func, name, make):
    """``make(func_or_instance, name)`` for ``@kind``, ``@kind(...)`` and ``kind(f)``;
    a decorated class gives a factory of passes, one per instance."""

    def wrap(fn):
        if inspect.isclass(fn):
            cls = fn

            def factory(*args, **kwargs):
                return make(cls(*args, **kwargs), name or cls.__name__)

            factory.__name__ = cls.__name__
            factory.__doc__ = cls.__doc__
            return factory
        if not callable(fn):
            raise TeccTypeError(f"{kind} decorates a function or a class, got {type(fn).__name__}")
        return make(fn, name or getattr(fn, "__name__", kind))

    return wrap(pass_func) if pass_func is not None else wrap


def module_pass(pass_func=None, opt_level=None, name=None, required=None):
    """Make a pass from ``pass_func(mod, ctx) -> mod`` (TVM's ``transform.module_pass``).

    Usable as ``module_pass(f)``, ``@module_pass`` or ``@module_pass(opt_level=1)``;
    on a class with a ``transform_module(self, mod, ctx)`` method it gives a class
    whose instances are passes.  ``ctx`` is the current PassContext.
    """

    def make(fn, pass_name):
        call = fn.transform_module if hasattr(fn, "transform_module") else fn
        return P.ModulePass(pass_name, lambda mod, options: call(mod, P.PassContext.current()))

    return _decorator("module_pass", pass_func, name, make)


def prim_func_pass(pass_func=None, opt_level=None, name=None, required=None):
    """Make a pass from ``pass_func(func, mod, ctx) -> func``, applied to every
    PrimFunc of a module (TVM's ``tir.transform.prim_func_pass``).

    Usable as a decorator like :func:`module_pass`; a class needs a
    ``transform_function(self, func, mod, ctx)`` method.
    """

    def make(fn, pass_name):
        call = fn.transform_function if hasattr(fn, "transform_function") else fn

        def run(mod, options):
            ctx = P.PassContext.current()
            return P.map_functions(pass_name, mod, lambda func: call(func, mod, ctx))

        return P.ModulePass(pass_name, run)

    return _decorator("prim_func_pass", pass_func, name, make)


# ----------------------------------------------------------------------------
# TVM's tir passes
# ----------------------------------------------------------------------------
def StorageFlatten(cache_line_size=64, create_bound_attribute=False):  # noqa: N802 - TVM's names
    """Make every buffer access one-dimensional (tecc's ``flatten``).

    ``cache_line_size`` is checked but not used: tecc aligns allocations by each
    buffer's ``data_alignment``.
    """
    if not isinstance(cache_line_size, int) or cache_line_size <= 0:
        raise P.PassConfigError(f"StorageFlatten: cache_line_size must be a positive int, got {cache_line_size!r}")
    return P.FunctionPass("flatten", P._flatten)


def Simplify():  # noqa: N802
    """Simplify expressions and remove dead branches (tecc's ``simplify``)."""
    return P.FunctionPass("simplify", P._simplify)


def _storage_rewrite(func, options):
    return storage_rewrite(func)


def StorageRewrite():  # noqa: N802
    """Let a buffer reuse the memory of one that is dead by then (same scope, dtype
    and constant size); see :mod:`.storage_rewrite`."""
    return P.FunctionPass("storage_rewrite", _storage_rewrite)


def VectorizeLoop(enable_vectorize=True):  # noqa: N802
    """Turn vectorized loops into vector code (tecc's ``vectorize``); with
    ``enable_vectorize=False`` they stay loops (the backend emits a SIMD pragma)."""
    if enable_vectorize:
        return P.FunctionPass("vectorize", P._vectorize)
    return P.FunctionPass("vectorize", lambda func, options: func)


def UnrollLoop():  # noqa: N802
    """Unroll loops marked unrolled (tecc's ``unroll``; the largest extent unrolled
    is the PassContext config ``tir.unroll_max_extent``)."""
    return P.FunctionPass("unroll", P._unroll)


def RemoveNoOp():  # noqa: N802
    """Remove statements that do nothing (tecc's ``remove_no_op``)."""
    return P.FunctionPass("remove_no_op", P._remove_no_op)


def LoopPartition():  # noqa: N802
    """Split loops to remove ``likely`` bound guards (tecc's ``loop_partition``)."""
    return P.FunctionPass("loop_partition", P._loop_partition)


def InjectVirtualThread():  # noqa: N802
    """Interleave the iterations of virtual-thread axes (tecc's ``inject_virtual_thread``)."""
    return P.FunctionPass("inject_virtual_thread", P._inject_virtual_thread)


def InjectDoubleBuffer():  # noqa: N802
    """Double-buffer the stages marked ``double_buffer`` (tecc's ``inject_double_buffer``)."""
    return P.FunctionPass("inject_double_buffer", P._inject_double_buffer)


def InjectPrefetch():  # noqa: N802
    """Turn the ``prefetch`` scopes of ``Stage.prefetch`` into prefetches of cache
    lines (tecc's ``inject_prefetch``)."""
    return P.FunctionPass("inject_prefetch", P._inject_prefetch)


def SplitHostDevice():  # noqa: N802
    """Split each GPU function into a host function and kernels (tecc's ``split_host_device``)."""
    return P.ModulePass("split_host_device", P._split_host_device)


def _kernel_pass(pass_name, tvm_name, kernel_fn, needs_split):
    """A pass over the kernels of a split module; a GPU function that is not split
    yet (``needs_split(func)``) is an error naming the pass to run first."""

    def run(func, options):
        if P._kernels_only(func):
            return kernel_fn(func, options)
        if not func.attrs.get(keys.HOST) and needs_split(func):
            raise P.PassConfigError(
                f"{tvm_name}: function {func.name!r} is a GPU function that is not split into host and kernels "
                "yet; this pass runs on kernels: run tir.transform.SplitHostDevice() before it")
        return func

    return P.FunctionPass(pass_name, run)


def LowerThreadAllreduce():  # noqa: N802
    """Lower cross-thread reductions to warp shuffles or a shared-memory tree (tecc's
    ``lower_thread_allreduce``): in kernels, and in a GPU function not split yet
    (each nest of GPU-bound loops is lowered as the kernel it will be)."""
    from .lower_thread_allreduce import lower_thread_allreduce_unsplit

    def run(func, options):
        if P._kernels_only(func):
            return P._lower_thread_allreduce(func, options)
        if func.attrs.get(keys.HOST):
            return func
        return lower_thread_allreduce_unsplit(func)

    return P.FunctionPass("lower_thread_allreduce", run)


def ThreadSync(storage_scope="shared"):  # noqa: N802
    """Insert barriers where the threads of a block exchange data through memory of
    ``storage_scope`` (tecc's ``thread_sync``: scope "shared", in kernels)."""
    if storage_scope != keys.SHARED:
        raise P.PassConfigError(f"ThreadSync({storage_scope!r}): tecc inserts barriers for 'shared' memory only "
                                "(its warp reductions need none and it has no dynamic shared memory)")

    def needs_split(func):
        return binds_gpu_threads(func) and bool(allocations(func.body, (keys.SHARED,)))

    return _kernel_pass("thread_sync", "ThreadSync", P._thread_sync, needs_split)


def Apply(ftransform):  # noqa: N802
    """A pass applying ``ftransform(func) -> func`` to every function of a module."""
    if not callable(ftransform):
        raise TeccTypeError(f"Apply takes a function PrimFunc -> PrimFunc, got {type(ftransform).__name__}")
    return P.FunctionPass("apply", lambda func, options: ftransform(func))


#: every constructor above, by TVM's name
CONSTRUCTORS = {
    "StorageFlatten": StorageFlatten, "Simplify": Simplify, "StorageRewrite": StorageRewrite,
    "VectorizeLoop": VectorizeLoop, "UnrollLoop": UnrollLoop, "RemoveNoOp": RemoveNoOp,
    "LoopPartition": LoopPartition, "InjectVirtualThread": InjectVirtualThread,
    "InjectDoubleBuffer": InjectDoubleBuffer, "InjectPrefetch": InjectPrefetch, "SplitHostDevice": SplitHostDevice,
    "LowerThreadAllreduce": LowerThreadAllreduce, "ThreadSync": ThreadSync, "Apply": Apply,
}

__all__ = ["PassInfo", "Sequential", "TVM_NAMES", "module_pass", "prim_func_pass", *CONSTRUCTORS]
