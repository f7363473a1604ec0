"""TVM's ``relay.build`` (:func:`tecc.graph.build.build` with Relay's signature),
``relay.create_executor`` and ``bind_params_by_name``."""
from ..graph.ir import GraphError
from ..runtime.graph_executor import RANDOM_COUNTER


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


#: the executor kinds of Relay's ``create_executor``; every one compiles the
#: expression into the graph executor (tecc interprets no graph)
EXECUTOR_KINDS = ("debug", "graph", "vm", "aot")


def create_executor(kind="debug", mod=None, device=None, target="llvm", params=None):
    """An executor of Relay expressions (TVM's ``relay.create_executor``)::

        f = relay.create_executor("graph", mod=mod, device=tecc.cpu(0), target="llvm").evaluate()
        out = f(x_array, **params)

    Parameters
    ----------
    kind : str
        ``"debug"``, ``"graph"``, ``"vm"`` or ``"aot"``: all compile with the
        current ``PassContext`` and run on tecc's graph executor.
    mod : tecc.graph.Module, optional
        The module whose ``main`` :meth:`~Executor.evaluate` runs by default.
    device : Device, optional
        Where it runs (default: the target's device 0).
    target : str or Target
    params : dict, optional
        Values bound to ``main``'s parameters by name before the build.
    """
    if kind not in EXECUTOR_KINDS:
        raise GraphError(f"create_executor: unknown kind {kind!r}; the kinds are {', '.join(EXECUTOR_KINDS)}")
    return Executor(mod, device, target, params)


class Executor:
    """What :func:`create_executor` returns: ``evaluate(expr)`` gives a function."""

    def __init__(self, mod, device, target, params):
        self.mod, self.device, self.target, self.params = mod, device, target, dict(params or {})

    def evaluate(self, expr=None, binds=None):
        """A Python function running ``expr`` (default: ``mod["main"]``).

        ``expr`` is a graph Function, or an expression whose free variables become
        its parameters.  The function takes the parameters not bound by ``params``
        or ``binds`` (``{name or Var: value}``) positionally, in order, or by name,
        and returns the output as a ``tecc.nd`` array (a list of them for several
        outputs, as Relay gives a tuple's fields).
        """
        from .. import runtime  # noqa: PLC0415
        from ..graph.ir import Expr, Function, Module, free_vars  # noqa: PLC0415
        from ..target import Target  # noqa: PLC0415

        if expr is None:
            if self.mod is None:
                raise GraphError("create_executor(...).evaluate(): give the expression, or the module (mod=) whose "
                                 "main to run")
            func = self.mod["main"]
        elif isinstance(expr, Function):
            func = expr
        elif isinstance(expr, Expr):
            func = Function(free_vars(expr), expr)
        else:
            raise GraphError(f"evaluate: expr must be a graph expression or Function, got {type(expr).__name__}")
        bound = dict(self.params)
        for key, value in (binds or {}).items():
            bound[getattr(key, "name_hint", key)] = value
        names = [p.name_hint for p in func.params]
        unknown = sorted(set(bound) - set(names))
        if unknown:
            raise GraphError(f"evaluate: {unknown} bind no parameter of the function; its parameters are {names}")
        lib = build(Module.from_expr(func), target=self.target, params=bound)
        kind = Target.canon(self.target).kind
        dev = self.device if self.device is not None else runtime.device("cuda" if kind == "cuda" else "cpu", 0)
        # a model's random run counter is no input to give: the executor counts the calls
        free = [n for n in names if n not in bound and n != RANDOM_COUNTER]
        ex = lib["default"](dev)  # one executor for every call: its buffers are allocated once

        def run(*args, **kwargs):
            if len(args) > len(free):
                raise GraphError(f"the function takes {len(free)} input(s) ({', '.join(free)}), got {len(args)}")
            inputs = dict(zip(free, args))
            for name, value in kwargs.items():
                if name in bound:
                    continue  # a bound parameter (TVM code passes **params again): already a constant
                if name == RANDOM_COUNTER and name in names:
                    inputs[name] = value  # given by name: used as given (from now on, as set_input does)
                    continue
                if name not in free or name in inputs:
                    raise GraphError(f"input {name!r}: not an input of the function, or given twice; its inputs "
                                     f"are {free}")
                inputs[name] = value
            missing = [n for n in free if n not in inputs]
            if missing:
                raise GraphError(f"the function needs the input(s) {missing}")
            ex.set_input(**inputs)
            ex.run()
            # copies: the next call reuses the executor's buffers
            outs = [ex.get_output(k).copyto(dev) for k in range(ex.get_num_outputs())]
            return outs[0] if len(outs) == 1 else outs  # several: a list, as Relay returns a tuple's fields

        return run
