"""TVM's ``relay.build``: :func:`tecc.graph.build.build` with Relay's signature."""
from ..graph.ir import GraphError


def build(ir_mod, target=None, target_host=None, executor=None, runtime=None, workspace_memory_pools=None,
          constant_memory_pools=None, params=None, mod_name="default"):
    """Compile a model into a graph executor factory (TVM's ``relay.build``).

    Parameters
    ----------
    ir_mod : tecc.graph.Module or tecc.graph.Function
    target : str or tecc.target.Target
        ``"llvm"`` (optionally ``"llvm -mcpu=native"``) or ``"cuda"``; default ``"llvm"``.
    target_host, executor, runtime, workspace_memory_pools, constant_memory_pools
        Relay's deployment options: tecc has one host (the C backend), one executor
        (the graph executor) and one runtime, so these must be left as None.
    params : dict of str to numpy.ndarray or NDArray, optional
        Weights bound as constants before the passes.
    mod_name : str

    Returns
    -------
    tecc.runtime.graph_executor.GraphExecutorFactoryModule
        ``lib["default"](dev)`` makes a graph executor; ``lib.export_library(path)``
        writes the deployable artifact.
    """
    from ..graph.build import build as graph_build  # noqa: PLC0415 -- loads the compiler

    for name, value in (("executor", executor), ("runtime", runtime),
                        ("workspace_memory_pools", workspace_memory_pools),
                        ("constant_memory_pools", constant_memory_pools)):
        if value is not None:
            raise GraphError(f"relay.build: {name}= is not supported; tecc builds for its graph executor, leave "
                             f"{name} out")
    if isinstance(target, dict):
        raise GraphError("relay.build: heterogeneous targets (a dict) are not supported; give one target, "
                         "'llvm' or 'cuda'")
    del target_host  # the host side of every tecc target is its C backend
    return graph_build(ir_mod, target="llvm" if target is None else target, params=params, mod_name=mod_name)


def bind_params_by_name(func, params):
    """``func`` with each parameter named in ``params`` replaced by a constant of
    that value (TVM's ``relay.build_module.bind_params_by_name``).

    Parameters
    ----------
    func : tecc.graph.Function
    params : dict of str to numpy.ndarray or NDArray

    Returns
    -------
    tecc.graph.Function
    """
    from ..graph.build import bind_params  # noqa: PLC0415
    from ..graph.ir import Function, Module  # noqa: PLC0415

    if not isinstance(func, Function):
        raise GraphError(f"bind_params_by_name takes a graph Function (mod['main']), got {type(func).__name__}")
    return bind_params(Module.from_expr(func), params)["main"]
