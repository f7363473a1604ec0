"""``relax.get_pipeline``, ``tvm.compile`` of a model module, and
``relax.VirtualMachine``: each function of the module becomes a graph executor
(:mod:`tecc.graph.build`), called with its inputs in order and returning its output."""
from __future__ import annotations

from ..graph.ir import GraphError, Module

#: pipeline name -> the PassContext opt_level its build uses
_PIPELINES = {
    "zero": 3,      # Relax's default lowering pipeline: fusion, constant folding, everything tecc has
    "default": 3,
    "default_build": 3,
    "none": 0,      # no rewriting: every operator is its own kernel
}


class _Pipeline:
    """A pipeline returned by :func:`get_pipeline`: ``pipeline(mod)`` returns the
    module with the pipeline's optimization level recorded; :func:`compile` runs
    the graph passes of that level when it builds."""

    def __init__(self, name: str):
        self.name = name
        self.opt_level = _PIPELINES[name]

    def __call__(self, mod: Module) -> Module:
        if not isinstance(mod, Module):
            raise GraphError(f"relax pipeline {self.name!r} takes a model module (export_tvm's), got "
                             f"{type(mod).__name__}")
        return Module(mod.functions, {**mod.attrs, "opt_level": self.opt_level})

    def __repr__(self):
        return f"relax.get_pipeline({self.name!r})"


def get_pipeline(name: str = "zero") -> _Pipeline:
    """The named pipeline (Relax's ``"zero"``, ``"default"``; tecc's ``"none"``)."""
    if name not in _PIPELINES:
        raise GraphError(f"relax.get_pipeline: unknown pipeline {name!r}; tecc has {sorted(_PIPELINES)}")
    return _Pipeline(name)


class Executable:
    """What :func:`compile` returns: one built graph executor factory per function
    of the module (``ex.factories[name]``)."""

    def __init__(self, factories: dict, target):
        self.factories = dict(factories)
        self.target = target

    def function_names(self) -> list:
        return list(self.factories)

    def __repr__(self):
        return f"Executable({self.function_names()}, target={self.target})"


def compile(mod, target=None, params=None):  # noqa: A001 -- TVM's name
    """Build ``mod`` for ``target`` (TVM's ``tvm.compile``): a model module (from
    ``export_tvm`` or an importer) gives an :class:`Executable` for
    :class:`VirtualMachine`; anything else (a schedule's IRModule, a PrimFunc) goes
    to :func:`tecc.build`."""
    from .. import transform  # noqa: PLC0415
    from ..graph import build as graph_build  # noqa: PLC0415

    if not isinstance(mod, Module):
        from ..driver.build_module import build  # noqa: PLC0415

        return build(mod, target=target)
    target = target if target is not None else "llvm"
    opt_level = mod.attrs.get("opt_level", 3)
    factories = {}
    for name, fn in mod.functions.items():
        with transform.PassContext(opt_level=opt_level):
            factories[name] = graph_build.build(Module({"main": fn}), target=target, params=params)
    return Executable(factories, target)


class VirtualMachine:
    """Runs an :class:`Executable` on ``device`` (Relax's ``VirtualMachine``):
    ``vm["forward"](*args)`` sets the function's inputs in order, runs it and
    returns its output (a tuple of them when it has several)."""

    def __init__(self, exe: Executable, device):
        if not isinstance(exe, Executable):
            raise GraphError(f"relax.VirtualMachine takes what tecc.compile returns for a model module, got "
                             f"{type(exe).__name__}")
        from ..contrib.graph_executor import GraphModule  # noqa: PLC0415

        self.device = device
        self._modules = {name: GraphModule(f["default"](device)) for name, f in exe.factories.items()}

    def __getitem__(self, name):
        if name not in self._modules:
            raise GraphError(f"the executable has no function {name!r}; it has {sorted(self._modules)}")
        module = self._modules[name]

        def call(*args):
            n = module.get_num_inputs()
            if len(args) != n:
                raise GraphError(f"{name} takes {n} argument(s) (its inputs, then its parameters), got "
                                 f"{len(args)}")
            for i, a in enumerate(args):
                module.set_input(i, a)
            module.run()
            outs = [module.get_output(i) for i in range(module.get_num_outputs())]
            return outs[0] if len(outs) == 1 else tuple(outs)

        return call
