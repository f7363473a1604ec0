"""``tecc.lower`` and ``tecc.build``: from a schedule to TIR, and to a runnable module."""
from __future__ import annotations

from .errors import LoweringError, TargetError
from .te.lower import lower_schedule
from .te.schedule import Schedule
from .tir import stmt as S
from .tir.transform import pipeline as _pipeline

_LOWERED = "tecc.lowered"


def _to_primfunc(inputs, args, name):
    if isinstance(inputs, Schedule):
        if args is None:
            raise LoweringError("lower/build of a schedule needs the argument tensors, e.g. [A, B, C]")
        return lower_schedule(inputs, list(args), name)
    if isinstance(inputs, S.PrimFunc):
        return inputs
    if isinstance(inputs, S.IRModule):
        funcs = list(inputs.functions.values())
        if len(funcs) != 1:
            raise LoweringError(f"expected a module with one function, got {len(funcs)}")
        return funcs[0]
    raise LoweringError(f"cannot lower {type(inputs).__name__}; pass a schedule (te.create_schedule), "
                        "a PrimFunc or the IRModule returned by tecc.lower")


def lower(inputs, args=None, name="main", binds=None, simple_mode=False):
    """Lower a schedule to TIR and run the target-independent pass pipeline.

    Parameters
    ----------
    inputs : Schedule or PrimFunc
        The schedule (``te.create_schedule``) to lower.
    args : list of Tensor
        The function's arguments in order: inputs and outputs.
    name : str
        The function name.
    simple_mode : bool
        Accepted for compatibility; printing the result always shows the loop nest.

    Returns
    -------
    IRModule
        Holds one PrimFunc called ``name``; ``print`` it to read the TIR.
    """
    if binds:
        raise LoweringError("binds= is not supported; buffers are derived from the argument tensors")
    if isinstance(inputs, S.IRModule) and len(inputs) > 1:
        return inputs  # already lowered for a GPU
    func = _to_primfunc(inputs, args, name)
    if func.attrs.get(_LOWERED):
        return S.IRModule({func.name: func})
    if _binds_gpu_axes(func):
        return _lower_cuda(func)
    func = _pipeline.run_pipeline(func, _pipeline.PassContext.current().pass_options(target_kind="c"))
    func = func.with_attr(_LOWERED, "c")
    return S.IRModule({func.name: func})


def _binds_gpu_axes(func):
    from .tir.functor import post_order_visit

    found = []

    def f(node):
        if (isinstance(node, S.For) and node.kind is S.ForKind.THREAD_BINDING
                and node.thread_binding.thread_tag.startswith(("blockIdx", "threadIdx"))):
            found.append(node)

    post_order_visit(func.body, f)
    return bool(found)


def _lower_cuda(func, arch=None):
    options = _pipeline.PassContext.current().pass_options(target_kind="cuda", max_vector_bytes=16,
                                                           target_arch=arch)
    mod = _pipeline.lower_cuda(func, options)
    for _, f in mod.items():
        mod[f.name] = f.with_attr(_LOWERED, "cuda")
    return mod


def build(inputs, args=None, target=None, name="default_function", target_host=None, binds=None):
    """Compile a schedule (or lowered function) for ``target`` into a runnable module.

    Parameters
    ----------
    inputs : Schedule, PrimFunc or IRModule
        What to compile; an IRModule from :func:`lower` is used as it is.
    args : list of Tensor
        Argument tensors in order (needed for a schedule).
    target : str or Target
        ``"llvm"``/``"c"`` (optionally ``-mcpu=native``) compile C with the system
        compiler; ``"cuda"`` is for GPU schedules.
    name : str
        The entry function's name (``module.entry_name``).

    Returns
    -------
    runtime.Module
        Callable with arrays (``tecc.nd.array`` or numpy) in argument order.
    """
    from .target import Target
    from .cpu_fallback import build_c

    tgt = Target.canon(target if target is not None else "llvm")
    if tgt.kind == "cuda":
        return _build_cuda(inputs, args, tgt, name)
    if isinstance(inputs, S.IRModule) and len(inputs) == 1:
        func = next(iter(inputs.functions.values()))
    else:
        func = _to_primfunc(inputs, args, name)
    if tgt.kind in ("llvm", "c"):
        if not func.attrs.get(_LOWERED):
            options = _pipeline.PassContext.current().pass_options(
                target_kind="c", max_vector_bytes=tgt.vector_bytes())
            func = _pipeline.run_pipeline(func, options)
            func = func.with_attr(_LOWERED, "c")
        _reject_thread_bindings(func, tgt)
        return build_c(func, tgt)
    raise TargetError(f"target {str(tgt)!r} is not supported; use 'llvm', 'c' or 'cuda'")


def _build_cuda(inputs, args, tgt, name):
    from .cuda_codegen import build_cuda

    if isinstance(inputs, S.IRModule) and len(inputs) > 1:
        mod = inputs
    else:
        func = _to_primfunc(inputs, args, name)
        if func.attrs.get(_LOWERED):
            raise LoweringError(f"function {func.name!r} was lowered for {func.attrs[_LOWERED]!r}; "
                                "pass the schedule to tecc.build for target 'cuda'")
        mod = _lower_cuda(func, _cuda_arch(tgt))
    return build_cuda(mod, tgt)


def _cuda_arch(tgt):
    """The arch a CUDA target compiles for (see ``cuda_codegen.build_cuda``)."""
    from .cuda_codegen import EMULATION_ARCH, resolve_arch
    from .runtime.device import cuda

    if tgt.cuda_arch is None and not cuda(0).exist:
        return EMULATION_ARCH
    return resolve_arch(tgt)


def _reject_thread_bindings(func, tgt):
    from .tir.functor import post_order_visit

    bound = []

    def f(node):
        if isinstance(node, S.For) and node.kind is S.ForKind.THREAD_BINDING and not bound:
            bound.append(node)

    post_order_visit(func.body, f)
    if bound:
        tag = bound[0].thread_binding.thread_tag
        raise LoweringError(f"loop {bound[0].loop_var.name!r} is bound to {tag}, a GPU index, but the target is "
                            f"{str(tgt)!r}; build this schedule for target 'cuda'")
