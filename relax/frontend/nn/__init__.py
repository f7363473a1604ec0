"""Relax's ``nn`` frontend: models written as Python modules and exported to tecc's
graph IR.

A :class:`Module` holds :class:`Parameter` s and sub-modules as attributes; its
``forward`` computes with :class:`Tensor` s (graph values) through the operators of
:mod:`.op` (``x @ w``, ``x + y`` work too).  ``export_tvm(spec)`` traces each method
named in ``spec`` into a function of a :class:`tecc.graph.Module` whose parameters
are the method's inputs then every parameter of the model, and returns it with the
list of ``(name, Parameter)``.
"""
from __future__ import annotations

import numpy as np

from ....graph.ir import Function, GraphError, Module as GraphModule, TensorType, Tuple, Var
from ....graph.transform.infer_type import infer_type
from . import op, spec  # noqa: F401
from .op import Tensor, wrap


class Parameter(Tensor):
    """A weight of ``shape`` and ``dtype``; its graph value is a parameter of the
    exported function.  ``data`` may hold a numpy array (unused by ``export_tvm``,
    which leaves the weights to the caller)."""

    def __init__(self, shape, dtype="float32"):
        self.type = TensorType(shape, dtype)
        self.shape, self.dtype = self.type.shape, self.type.dtype
        self._expr = None
        self.data = None

    @property
    def expr(self):
        if self._expr is None:
            raise GraphError("a Parameter has a graph value only while export_tvm traces the model")
        return self._expr


class Module:
    """Base class of models (Relax's ``nn.Module``).  Calling a module calls its
    ``forward``."""

    def __call__(self, *args, **kwargs):
        return self.forward(*args, **kwargs)

    def forward(self, *args, **kwargs):
        raise NotImplementedError(f"{type(self).__name__} must define forward()")

    def named_parameters(self, prefix: str = ""):
        """``(name, Parameter)`` of this module and its sub-modules, in the order the
        attributes were set (``fc1.weight``, ``fc1.bias``, ...)."""
        for name, value in vars(self).items():
            full = f"{prefix}{name}"
            if isinstance(value, Parameter):
                yield full, value
            elif isinstance(value, Module):
                yield from value.named_parameters(full + ".")
            elif isinstance(value, (list, tuple)):
                for i, item in enumerate(value):
                    if isinstance(item, Module):
                        yield from item.named_parameters(f"{full}.{i}.")

    def parameters(self):
        return [p for _, p in self.named_parameters()]

    def export_tvm(self, spec, debug=False):
        """Trace the methods named in ``spec`` (``{"forward": {"x": nn.spec.Tensor(...)}}``)
        into a :class:`tecc.graph.Module`; returns ``(module, [(name, Parameter)])``."""
        if not isinstance(spec, dict) or not spec:
            raise GraphError("export_tvm: spec must be a dict {method name: {input name: nn.spec.Tensor}}")
        params = list(self.named_parameters())
        functions = {}
        for method_name, inputs in spec.items():
            method = getattr(self, method_name, None)
            if not callable(method):
                raise GraphError(f"export_tvm: {type(self).__name__} has no method {method_name!r}")
            if not isinstance(inputs, dict):
                raise GraphError(f"export_tvm: spec[{method_name!r}] must be a dict {{input name: nn.spec.Tensor}}")
            in_vars = []
            for name, s in inputs.items():
                if not isinstance(s, spec_module.Tensor):
                    raise GraphError(f"export_tvm: input {name!r} of {method_name!r} must be an nn.spec.Tensor, "
                                     f"got {type(s).__name__}")
                in_vars.append(Var(name, s.type))
            param_vars = [Var(name, p.type) for name, p in params]
            for (_, p), v in zip(params, param_vars):
                p._expr = v
            try:
                result = method(*[Tensor(v) for v in in_vars])
            finally:
                for _, p in params:
                    p._expr = None
            if isinstance(result, (tuple, list)):
                body = Tuple([wrap(r, method_name).expr for r in result])
            else:
                body = wrap(result, method_name).expr
            fn = Function(in_vars + param_vars, body)
            infer_type(fn)  # a shape that does not fit is reported here, naming the operator
            functions[method_name] = fn
        return GraphModule(functions), params


class Linear(Module):
    """``x @ weight.T + bias`` (Relax's ``nn.Linear``): weight ``(out_features,
    in_features)``, bias ``(out_features,)``."""

    def __init__(self, in_features: int, out_features: int, bias: bool = True, dtype: str = "float32"):
        for what, v in (("in_features", in_features), ("out_features", out_features)):
            if not isinstance(v, (int, np.integer)) or v <= 0:
                raise GraphError(f"nn.Linear: {what} must be a positive int, got {v!r}")
        self.in_features, self.out_features = int(in_features), int(out_features)
        self.weight = Parameter((out_features, in_features), dtype)
        self.bias = Parameter((out_features,), dtype) if bias else None

    def forward(self, x):
        y = op.linear(x, self.weight)
        return y + self.bias if self.bias is not None else y


class ReLU(Module):
    """``max(x, 0)``."""

    def forward(self, x):
        return op.relu(x)


class Sequential(Module):
    """Modules applied in order."""

    def __init__(self, *modules):
        self.layers = list(modules)

    def forward(self, x):
        for m in self.layers:
            x = m(x)
        return x


spec_module = spec
__all__ = ["Linear", "Module", "Parameter", "ReLU", "Sequential", "Tensor", "op", "spec"]
