"""``tecc.lower`` and ``tecc.build``: from a schedule to TIR, and to a runnable module.

The whole path, one call per step::

    te.create_schedule(C.op)                     # te/schedule.py: what and how
      -> te.lower.lower_schedule(s, args, name)  # te/lower.py: bound inference, loop nests -> PrimFunc
      -> tir.transform.run_pipeline(mod, opts)   # tir/transform/pipeline.py: the passes of the target
      -> cpu_fallback.build_c(mod, target)       # C source -> cc -> runtime.Module
       | cuda_codegen.build_cuda(mod, target)    # CUDA source -> NVRTC cubin + launch plans -> CUDAModule
"""
from __future__ import annotations

from ..errors import CompileError, LoweringError, TargetError
from ..target import Target
from ..te.lower import lower_schedule
from ..te.schedule import Schedule
from ..tir import keys
from ..tir import stmt as S
from ..tir.analysis import gpu_loops, imported_code, thread_extent_lists
from ..tir.transform import pipeline as _pipeline


def _as_module(inputs, args, name, binds=None, missing_output="warn") -> S.IRModule:
    if isinstance(inputs, Schedule):
        if args is None:
            raise LoweringError("lower/build of a schedule needs the argument tensors, e.g. [A, B, C]")
        return S.IRModule.from_expr(lower_schedule(inputs, list(args), name, binds, missing_output))
    if binds:
        raise LoweringError("binds= applies to a schedule (te.create_schedule); this is already TIR")
    if isinstance(inputs, S.PrimFunc):
        return S.IRModule.from_expr(inputs)
    if isinstance(inputs, S.IRModule):
        if not len(inputs):
            raise LoweringError("the IRModule has no functions to lower")
        return inputs
    raise LoweringError(f"cannot lower {type(inputs).__name__}; pass a schedule (te.create_schedule), "
                        "a PrimFunc or the IRModule returned by tecc.lower")


def _target_kind(tgt: Target) -> str:
    if tgt.kind in ("llvm", "c"):
        return "c"
    if tgt.kind == "cuda":
        return "cuda"
    raise TargetError(f"target {str(tgt)!r} is not supported; use 'llvm', 'c' or 'cuda'")


def _pass_options(tgt: Target):
    from ..cuda_codegen import cuda_arch

    ctx = _pipeline.PassContext.current()
    if _target_kind(tgt) == "cuda":
        return ctx.pass_options(target_kind="cuda", max_vector_bytes=16, target_arch=cuda_arch(tgt))
    return ctx.pass_options(target_kind="c", max_vector_bytes=tgt.vector_bytes())


def schedule_to_module(sch, args=None, name="main", binds=None) -> S.IRModule:
    """The schedule as TIR before any pass (TVM's ``schedule_to_module``): an
    IRModule holding the function ``name`` with multi-dimensional buffers."""
    return _as_module(sch, args, name, binds)


def lower(inputs, args=None, name="main", binds=None, simple_mode=False, target=None):
    """Lower a schedule to TIR.

    Parameters
    ----------
    inputs : Schedule, PrimFunc or IRModule
        The schedule (``te.create_schedule``) to lower, or IR to carry on lowering.
    args : list of Tensor
        The function's arguments in order: inputs and outputs.
    name : str
        The function name.
    binds : dict, optional
        Argument tensor -> the buffer (``tir.decl_buffer``) it is accessed through.
        tecc's arrays are compact: a variable element offset or stride of such a
        buffer is bound to the compact value.
    simple_mode : bool
        Accepted for compatibility; printing the result always shows the loop nest.
    target : str or Target, optional
        Run the whole pass pipeline of this target (``"llvm"``/``"c"`` or ``"cuda"``,
        which also splits host and device code).  Without one (and outside a
        ``with Target(...)`` block) only the target-independent passes run
        (:data:`~tecc.tir.transform.pipeline.GENERIC_PIPELINE`); :func:`build`
        finishes the rest for its target.

    Returns
    -------
    IRModule
        ``print`` it to read the TIR.
    """
    return _lower_module(_as_module(inputs, args, name, binds), target)


def _lower_module(mod, target):
    target = target if target is not None else Target.current()
    if target is None:
        ctx = _pipeline.PassContext.current()
        return _pipeline.run_pipeline(mod, ctx.pass_options(target_kind=None))
    tgt = Target.canon(target)
    if _target_kind(tgt) == "c":
        _reject_gpu_bindings(mod, tgt)
    else:
        _reject_imports(mod)
    return _pipeline.run_pipeline(mod, _pass_options(tgt))


def _reject_imports(mod) -> None:
    """A GPU build cannot link the code of ``import_c`` / ``import_llvm`` pragmas
    (checked before the pipeline, which folds bound loops into launch attributes)."""
    for func in (mod.functions.values() if isinstance(mod, S.IRModule) else [mod]):
        if imported_code(func.body):
            raise CompileError(f"{func.name}: an import_c / import_llvm pragma links C code into a CPU module; "
                               "CUDA device code cannot call it: build this schedule for 'llvm', or write the "
                               "function as CUDA (call_extern of a __device__ function the kernel can see)")


def build(inputs, args=None, target=None, target_host=None, name="default_function", binds=None):
    """Compile a schedule (or lowered IR) for ``target`` into a runnable module.

    Parameters
    ----------
    inputs : Schedule, PrimFunc or IRModule
        What to compile; an IRModule from :func:`lower` continues from where it
        stopped.  A module may hold several functions: they are compiled into one
        module (one C library, or one cubin with a launch plan per function).
    args : list of Tensor
        Argument tensors in order (needed for a schedule).
    target : str or Target
        ``"llvm"``/``"c"`` (optionally ``-mcpu=native``) compile C with the system
        compiler; ``"cuda"`` (optionally ``-arch=sm_90``) is for GPU schedules.
        Defaults to the target of the enclosing ``with Target(...)``, else ``"llvm"``.
    target_host : str or Target, optional
        The host of a CUDA target; tecc's host side is a launch plan run by the
        runtime, so only ``llvm``/``c`` hosts are accepted.
    name : str
        The entry function's name (``module.entry_name``) when ``inputs`` is a schedule.

    Returns
    -------
    runtime.Module
        Callable with arrays (``tecc.nd.array``, numpy, or cupy/DLPack on a GPU) in
        argument order; ``mod[name]`` is each function.
    """
    from ..cpu_fallback import build_c
    from ..cuda_codegen import build_cuda

    if target is None:
        target = Target.current() or "llvm"
    tgt = Target.canon(target)
    if target_host is not None and "cpu" not in Target.canon(target_host).keys:
        raise TargetError(f"target_host {str(Target.canon(target_host))!r} is not a CPU target; tecc runs the "
                          "host side of a module on the CPU ('llvm' or 'c')")
    mod = _lower_module(_as_module(inputs, args, name, binds, missing_output="error"), tgt)
    if _target_kind(tgt) == "cuda":
        return build_cuda(mod, tgt)
    return build_c(mod, tgt)


def _reject_gpu_bindings(mod: S.IRModule, tgt: Target) -> None:
    for func in mod.functions.values():
        loops = gpu_loops(func)
        if loops:
            loop = loops[0]
            raise LoweringError(
                f"loop {loop.loop_var.name!r} of function {func.name!r} is bound to "
                f"{loop.thread_binding.thread_tag}, a GPU index, but the target is {str(tgt)!r}; "
                "build this schedule for target 'cuda'")
        tags = {} if func.attrs.get(keys.KERNEL) or func.attrs.get(keys.HOST) else thread_extent_lists(func)
        if tags:
            raise LoweringError(
                f"function {func.name!r} runs on {sorted(tags)[0]} (a thread_extent scope: GPU code), but the "
                f"target is {str(tgt)!r}; build it for target 'cuda'")
