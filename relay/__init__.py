"""TVM's Relay names for tecc's model layer (:mod:`tecc.graph`).

Code written for classic TVM runs with only the import changed::

    import tecc as tvm
    from tecc import relay
    from tecc.contrib import graph_executor

    mod, params = relay.frontend.from_onnx(onnx_model, {"input": (1, 3, 224, 224)})
    print(mod["main"])
    with tvm.transform.PassContext(opt_level=3):
        lib = relay.build(mod, target="llvm", params=params)
    m = graph_executor.GraphModule(lib["default"](tvm.cpu(0)))

A thin facade: every name here is tecc's graph layer under its Relay name, plus the
argument adaptation Relay's signatures need; no logic of its own.

==========================================  ==============================================
Relay                                       tecc
==========================================  ==============================================
``relay.frontend.from_onnx``                :func:`tecc.graph.frontend.from_onnx`
``relay.build``                             :func:`tecc.graph.build.build`
``relay.transform.InferType()`` ...         :mod:`tecc.graph.transform` pass objects
``relay.analysis.post_order_visit``         :func:`tecc.graph.post_order_visit`
``relay.Call``, ``relay.Var`` ...           the node classes of :mod:`tecc.graph.ir`
``relay.var``, ``relay.const``              :class:`tecc.graph.Var`, :func:`tecc.graph.const`
``relay.op.get(name)``                      :func:`tecc.graph.get_op`
``relay.nn.conv2d(...)``, ``relay.add``     :func:`tecc.graph.call` of the registered op
``relay.image.grid_sample(...)``            the same, for the ``image.*`` operators
``relay.Module.from_expr(f)``               :meth:`tecc.graph.Module.from_expr`
==========================================  ==============================================

``tvm.IRModule`` is TIR's module in tecc: wrap a Relay function with
``relay.Module.from_expr(f)`` (or ``tecc.graph.Module.from_expr``) instead of
``tvm.IRModule.from_expr(f)``.
"""
from ..graph.ir import (  # noqa: F401
    Call, Constant, Expr, ExprMutator, ExprVisitor, Function, Module, TensorType, Tuple, TupleGetItem, TupleType,
    Type, Var, const,
)
from ..graph.printer import astext  # noqa: F401
from . import analysis, expr, frontend, image, nn, op, transform  # noqa: F401
from . import testing  # noqa: F401 -- after nn and op, which its networks are built with
from .build_module import build, create_executor  # noqa: F401
from .op import _builder, _builder_names

#: TVM's name of the module of graph functions
IRModule = Module


def var(name_hint, type_annotation=None, shape=None, dtype="float32"):
    """A graph input (TVM's ``relay.var``).

    Parameters
    ----------
    name_hint : str
    type_annotation : TensorType, TupleType or str, optional
        The type; a str is the dtype (with ``shape``).
    shape : tuple of int, optional
    dtype : str

    Returns
    -------
    Var
    """
    if isinstance(type_annotation, str):
        dtype, type_annotation = type_annotation, None
    if type_annotation is None and shape is not None:
        type_annotation = TensorType(tuple(shape), dtype)
    return Var(name_hint, type_annotation)


def __getattr__(name):
    # relay.add, relay.reshape ...: builders of the registered operators outside "nn."
    if name in _builder_names(prefix=""):
        fn = _builder(name)
        globals()[name] = fn
        return fn
    raise AttributeError(f"module 'tecc.relay' has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(_builder_names(prefix="")))
