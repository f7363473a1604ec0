"""An ``onnx.backend`` Backend for tecc: the interface ONNX's own conformance
runner (``onnx.backend.test``) drives, and a short way to run an ONNX model.

::

    from tecc.graph.frontend.onnx_backend import TeccBackend

    rep = TeccBackend.prepare(model, device="CPU")     # import, optimize, compile
    (y,) = rep.run([x])                                # numpy in, numpy out

``prepare`` imports the model with its own (static) input shapes through
:func:`tecc.graph.frontend.from_onnx`, builds it with :func:`tecc.graph.build.build`
under a :class:`tecc.transform.PassContext` of the given ``opt_level`` -- for
``"llvm"`` (tecc's C backend) on ``device="CPU"``, for ``"cuda"`` on
``device="CUDA"`` (a GPU when there is one, tecc's emulation of CUDA semantics on
the CPU otherwise) -- and wraps the result in a
:class:`tecc.contrib.graph_executor.GraphModule`.

Opsets
------
The backend reads a model at the opset the importer does
(:mod:`tecc.graph.frontend.onnx.opsets`): the default-domain opsets 9 to 21, and a
newer (or older) one as the nearest of them when every node reads the same there
(ONNX's opsets 22 to 28 mostly add element types -- bfloat16, 8-bit and 4-bit
floats -- which the importer refuses by dtype where tecc has none), with
RMSNormalization-23, RotaryEmbedding-23, Swish-24, TensorScatter-24, BitCast-26, CumProd-26 and SpaceToDepth-28
converted as such, and Cast and CastLike up to their versions 28 and 25 (round_mode).  Otherwise
:class:`OnnxBackendError` names the node, the operator's two versions and what
differs.  :func:`opset_for` gives the opset a model is read with.

Operands needed when compiling
------------------------------
tecc compiles static shapes, so a Reshape's shape, Pad's pads, a Reduce's axes or
Range's bounds must be known when compiling.  ONNX's node tests give them as graph
inputs; such a model is compiled at its first ``run``, with those inputs' values
compiled in (:attr:`TeccBackendRep.bound_inputs`; other values compile again).
:func:`import_model` is the import step alone.
"""
from __future__ import annotations

import re

import numpy as np

from ..ir import Call, TupleGetItem, post_order_visit
from .onnx import OnnxImportError, from_onnx
from .onnx.common import MAX_OPSET, NEWER_OPS, all_nodes, subgraphs
from .onnx.opsets import read_opset, upgraded

try:  # the backend interface comes with the onnx package, a dependency of tecc.graph
    from onnx.backend.base import Backend, BackendRep, Device, DeviceType, namedtupledict
except ImportError as _err:  # pragma: no cover - onnx is a dependency
    raise ImportError("tecc.graph.frontend.onnx_backend needs the onnx package: pip install onnx") from _err

#: the targets a device type builds for by default
_DEFAULT_TARGETS = {DeviceType.CPU: "llvm", DeviceType.CUDA: "cuda"}

__all__ = ["OnnxBackendError", "TeccBackend", "TeccBackendRep", "import_model", "opset_for", "prepare", "run_model",
           "run_node", "supports_device"]


class OnnxBackendError(OnnxImportError):
    """The backend cannot run a model: an unknown device, inputs that do not match
    the model's, or an opset whose operators tecc does not implement."""


# ---------------------------------------------------------------------------------------
# opsets
# ---------------------------------------------------------------------------------------
def opset_for(model) -> int:
    """The default-domain opset :class:`TeccBackend` reads ``model`` with: the
    importer's (:func:`tecc.graph.frontend.onnx.opsets.read_opset`) -- the model's
    own when the importer implements it (9 to 21), otherwise the nearest
    implemented one, provided that every node reads the same there (a model
    before opset 9 is first converted up by onnx's version converter where a
    node would not).

    Parameters
    ----------
    model : onnx.ModelProto

    Returns
    -------
    int

    Raises
    ------
    OnnxBackendError
        If the model imports no default opset, or a node would read differently
        at the nearest implemented opset (naming the node, the operator's two
        versions and what differs).
    """
    return read_opset(upgraded(model), who="TeccBackend", error=OnnxBackendError)


# ---------------------------------------------------------------------------------------
# inputs and outputs
# ---------------------------------------------------------------------------------------
def _as_numpy(value, what: str) -> np.ndarray:
    """A numpy array from an array, a tecc/TVM NDArray, a TensorProto or a scalar."""
    from onnx import TensorProto, numpy_helper  # noqa: PLC0415

    if isinstance(value, TensorProto):
        return np.asarray(numpy_helper.to_array(value))
    if hasattr(value, "numpy") and not isinstance(value, np.ndarray):
        return np.asarray(value.numpy())
    if value is None or isinstance(value, (list, tuple, dict)):
        raise OnnxBackendError(f"TeccBackend: {what} is a {type(value).__name__}; tecc runs tensor inputs only: give "
                               "a numpy array")
    return np.asarray(value)


def _model_inputs(model) -> list:
    """The names of the model's graph inputs that are not initializers, in order."""
    init = {t.name for t in model.graph.initializer}
    return [i.name for i in model.graph.input if i.name not in init]


def _input_types(model, names) -> dict:
    """Name -> (shape, dtype) of the model's inputs, as the model declares them."""
    from onnx import helper  # noqa: PLC0415

    by_name = {i.name: i for i in model.graph.input}
    out = {}
    for name in names:
        tt = by_name[name].type.tensor_type
        if not by_name[name].type.HasField("tensor_type") or not tt.HasField("shape"):
            continue  # the importer refuses it (not a tensor) or asks for its shape
        dims = tuple(d.dim_value if d.HasField("dim_value") else None for d in tt.shape.dim)
        try:
            dtype = str(np.dtype(helper.tensor_dtype_to_np_dtype(tt.elem_type)))
        except (KeyError, TypeError, ValueError):
            continue
        out[name] = (dims, dtype)
    return out


def _input_kinds(model, names) -> dict:
    """Name -> ``"tensor"``, ``"sequence"`` or ``"optional"`` (what ONNX types the
    input as; anything else the importer refuses, naming it)."""
    by_name = {i.name: i for i in model.graph.input}
    kinds = {}
    for name in names:
        kind = by_name[name].type.WhichOneof("value")
        kinds[name] = {"sequence_type": "sequence", "optional_type": "optional"}.get(kind, "tensor")
    return kinds


def _container_value(value, what: str):
    """A sequence input's value as a list of arrays; an optional's as None, a list
    or an array."""
    if value is None:
        return None
    if isinstance(value, (list, tuple)):
        return [_as_numpy(v, f"tensor {i} of {what}") for i, v in enumerate(value)]
    return _as_numpy(value, what)


def _shape_of(value):
    if value is None:
        return None
    if isinstance(value, list):
        return [tuple(v.shape) for v in value]
    return tuple(value.shape)


def _flat_feed(named: dict, kinds: dict) -> dict:
    """The executor's inputs: a sequence's tensors as ``name[i]``, an empty
    optional as nothing."""
    feed = {}
    for name, value in named.items():
        if kinds.get(name, "tensor") == "tensor":
            feed[name] = value
        elif isinstance(value, list):
            feed.update((f"{name}[{i}]", v) for i, v in enumerate(value))
        elif value is not None:
            feed[name] = value
    return feed


def _grouped(layouts, values: list) -> list:
    """The model's outputs from the executor's (``onnx_outputs`` layouts: a
    sequence's tensors back into a list, an empty optional as None)."""
    it = iter(values)

    def take(layout):
        if layout == "tensor":
            return next(it)
        kind, arg = layout
        if kind == "sequence":
            return [next(it) for _ in range(arg)]
        return None if arg is None else take(arg)

    return [take(layout) for layout in layouts]


def _trivial_outputs(main) -> bool:
    """True when the model's outputs compute nothing (each is an input or a
    constant): then there is no kernel to build."""
    calls = []

    def visit(node):
        if isinstance(node, (Call, TupleGetItem)):
            calls.append(node)

    post_order_visit(main.body, visit)
    return not calls


_RUN_TIME_OPERAND = re.compile(r"^(?P<op>\w+) node '(?P<name>.*?)': .* is computed by the model at run time")


def _node_named(model, op_type: str, name: str):
    """The node the importer calls ``name`` (its name, or ``<op_type>_<index>``)."""
    for i, node in enumerate(model.graph.node):
        if node.op_type == op_type and (node.name or f"{node.op_type}_{i}") == name:
            return node
    return None


def _operands_to_bind(model, err: OnnxImportError, bound) -> list:
    """The graph inputs to bind so that the node ``err`` refuses for an operand
    computed at run time gets it at compile time: those the operand the error
    names (:attr:`OnnxImportError.operands`) is computed from
    (:func:`_inputs_behind`: a window's size through a Cast, a crop's shape through
    Max and Sub, a Loop's trip count); for an operand the error does not name,
    those its node's operands after the first are computed from (a Reshape's
    shape, Pad's pads...), else those of the first when those are bound already
    (ConstantOfShape's shape, Range's start)."""
    m = _RUN_TIME_OPERAND.match(str(err))
    if not m:
        return []
    named = _inputs_behind(model, getattr(err, "operands", ()), bound)
    if named:
        return named
    node = _node_named(model, m.group("op"), m.group("name"))
    if node is None:
        return []
    behind = _inputs_behind(model, [n for n in node.input[1:] if n], bound)
    return behind or _inputs_behind(model, node.input[:1], bound)


def _inputs_behind(model, values, bound) -> list:
    """The graph inputs, not in ``bound``, that the values named ``values`` are
    computed from, in the order found; the walk stops at a Shape or Size node,
    whose value depends only on shapes, which are static.  A node with subgraphs
    (If, Loop, Scan) is computed from its inputs and from every value its
    subgraphs' nodes read."""
    graph_inputs = set(_model_inputs(model))
    producer = {out: node for _, node in all_nodes(model.graph) for out in node.output}
    found, seen, stack = [], set(), list(reversed(list(values)))
    while stack:
        name = stack.pop()
        if name in seen:
            continue
        seen.add(name)
        if name in graph_inputs:
            if name not in bound:
                found.append(name)
            continue
        node = producer.get(name)
        if node is not None and node.op_type not in ("Shape", "Size"):
            reads = list(node.input) + [n for g in subgraphs(node) for _, inner in all_nodes(g) for n in inner.input]
            stack.extend(reversed([n for n in reads if n]))
    return found


def _with_initializers(model, values: dict):
    """A copy of ``model`` in which the graph inputs named in ``values`` are
    initializers of those values."""
    from onnx import numpy_helper  # noqa: PLC0415

    out = type(model)()
    out.CopyFrom(model)
    kept = [i for i in out.graph.input if i.name not in values]
    del out.graph.input[:]
    out.graph.input.extend(kept)
    out.graph.initializer.extend(numpy_helper.from_array(np.asarray(v), n) for n, v in values.items())
    return out


def import_model(model, values=None, shapes=None):
    """Import ``model`` as :class:`TeccBackend` does: at the opset
    :func:`opset_for` gives, binding graph inputs the importer needs as
    compile-time operands to their ``values``.

    Parameters
    ----------
    model : onnx.ModelProto
    values : dict of str to numpy.ndarray, optional
        Input values to bind when the importer needs them (a Reshape's shape,
        Pad's pads... given as graph inputs); without them such a model is refused.
    shapes : dict, optional
        ``from_onnx``'s ``shape`` for the inputs that are sequences or optionals
        (the shapes of a sequence's tensors; None for an empty optional).

    Returns
    -------
    mod : tecc.graph.Module
    params : dict of str to numpy.ndarray
    bound : list of str
        The inputs compiled in (in the order they were found needed).

    Raises
    ------
    OnnxBackendError
        For an opset tecc cannot read the model with.
    tecc.graph.frontend.OnnxImportError
        For what the importer does not support, or an operand it needs that
        ``values`` does not give.
    """
    model = upgraded(model)  # once: a model before opset 9 converted up here, not at every import below
    opset_for(model)  # an opset tecc cannot read is the backend's error, before anything else
    bound = []
    while True:
        try:
            given = {n: np.asarray(values[n]) for n in bound}
            mod, params = from_onnx(_with_initializers(model, given) if given else model,  # read as opset_for says
                                    shape=shapes or None)
            return mod, params, bound
        except OnnxImportError as err:
            more = _operands_to_bind(model, err, bound) if values is not None else []
            if not more or any(n not in values or not isinstance(values[n], np.ndarray) for n in more):
                raise
            bound.extend(more)


class _Compiled:
    """One compilation of a model: its executor, or (when its outputs compute
    nothing) what each output is: an input's name or a constant's value."""

    def __init__(self, factory, device, trivial=None, layouts=None):
        self.factory = factory
        self.trivial = trivial
        self.layouts = layouts  # the ONNX outputs as main's outputs make them (importer's onnx_outputs)
        self.module = None
        if factory is not None:
            from ...contrib.graph_executor import GraphModule  # noqa: PLC0415

            self.module = GraphModule(factory["default"](device))

    def run(self, named: dict) -> list:
        if self.module is None:
            values = [np.array(named[v]) if isinstance(v, str) else np.array(v) for v in self.trivial]
        else:
            for name, value in named.items():  # one at a time: an input may be called "key" or "value"
                self.module.set_input(name, value)
            self.module.run()
            values = [_numpy(self.module.get_output(i)) for i in range(self.module.get_num_outputs())]
        return _grouped(self.layouts, values) if self.layouts is not None else values


def _numpy(out) -> np.ndarray:
    """An output as ONNX's tests hold it: a type numpy lacks (bfloat16, float8_e4m3fn,
    int4...) as ml_dtypes' array (onnx's dependency) rather than the bits tecc keeps."""
    from ...runtime import dtypes  # noqa: PLC0415

    return dtypes.as_ml_dtypes(out.numpy(), out.dtype)


class TeccBackendRep(BackendRep):
    """A model prepared by :meth:`TeccBackend.prepare`; :meth:`run` runs it.

    Attributes
    ----------
    input_names : list of str
        The model's inputs (initializers excluded), in the order ``run`` takes them.
    output_names : list of str
        The model's outputs, in the order ``run`` returns them.
    target : str
        What the model is built for (``"llvm"`` or ``"cuda"``...).
    bound_inputs : list of str
        Inputs the model uses as compile-time operands (a Reshape's shape, Pad's
        pads given as graph inputs): their values given to :meth:`run` are
        compiled in, once per distinct set of values.  Empty for most models,
        which are compiled by ``prepare``.
    """

    def __init__(self, model, opset, input_names, input_types, output_names, target, device, opt_level):
        self.model = model
        self.opset = opset
        self.input_names = list(input_names)
        self.input_types = dict(input_types)
        self.output_names = list(output_names)
        self.target = target
        self.device = device
        self.opt_level = opt_level
        self.bound_inputs = []
        self._compiled = {}
        self.input_kinds = _input_kinds(model, self.input_names)
        # the inputs whose shapes are compiled in, known at a run (compiled once per distinct set): a
        # sequence's length and shapes, an optional's presence, a tensor's symbolic dimensions
        self._shaped_at_run = [n for n, kind in self.input_kinds.items()
                               if kind != "tensor" or n not in self.input_types or None in self.input_types[n][0]]
        self._compile_at_run = bool(self._shaped_at_run)

    @property
    def factory(self):
        """The built model of the latest compilation (``export_library`` saves it);
        None when its outputs compute nothing or nothing is compiled yet."""
        if not self._compiled:
            return None
        return list(self._compiled.values())[-1].factory

    def _build(self, mod, params) -> _Compiled:
        """Build an imported model (nothing to build when its outputs compute nothing)."""
        from ...tir.transform.pipeline import PassContext  # noqa: PLC0415
        from ..build import build  # noqa: PLC0415

        main = mod["main"]
        layouts = main.attrs.get("onnx_outputs")
        if _trivial_outputs(main):
            body = main.body
            fields = list(body.fields) if hasattr(body, "fields") else [body]
            trivial = [f.name_hint if hasattr(f, "name_hint") else f.data for f in fields]
            return _Compiled(None, self.device, trivial, layouts)
        with PassContext(opt_level=self.opt_level):
            factory = build(mod, target=self.target, params=params)
        return _Compiled(factory, self.device, layouts=layouts)

    def _run_shapes(self, named: dict) -> dict:
        """``from_onnx``'s shapes of the inputs shaped at a run: those of this run's values."""
        return {n: _shape_of(named[n]) for n in self._shaped_at_run}

    def _key(self, named: dict) -> tuple:
        bound = tuple((n, str(named[n].dtype), named[n].shape, named[n].tobytes()) for n in self.bound_inputs)
        shapes = self._run_shapes(named)
        return bound + ((("shapes", repr(sorted(shapes.items()))),) if shapes else ())

    def _compiled_for(self, named: dict) -> _Compiled:
        """The compilation for these inputs' values of :attr:`bound_inputs`
        (found, on the first run, by :func:`import_model`)."""
        if self.bound_inputs or not self._compiled or self._compile_at_run:
            key = self._key(named)
            if key not in self._compiled:
                mod, params, bound = import_model(self.model, named, self._run_shapes(named))
                self.bound_inputs = list(bound)
                self._compiled[self._key(named)] = self._build(mod, params)
            return self._compiled[self._key(named)]
        return self._compiled[()]

    def _bind(self, inputs) -> dict:
        """Name -> numpy array from a list (the model's input order), a dict, or
        one array (a one-input model)."""
        if isinstance(inputs, dict):
            unknown = sorted(set(inputs) - set(self.input_names))
            if unknown:
                raise OnnxBackendError(f"TeccBackendRep.run: inputs {unknown} are not inputs of the model; its inputs "
                                       f"are {self.input_names}")
            named = dict(inputs)
        else:
            if isinstance(inputs, (np.ndarray, np.generic)) or hasattr(inputs, "numpy"):
                inputs = [inputs]
            inputs = list(inputs)
            if len(inputs) != len(self.input_names):
                raise OnnxBackendError(f"TeccBackendRep.run: the model takes {len(self.input_names)} input(s) "
                                       f"{self.input_names}, got {len(inputs)}; give one array per input, in this "
                                       "order")
            named = dict(zip(self.input_names, inputs))
        missing = [n for n in self.input_names if n not in named]
        if missing:
            raise OnnxBackendError(f"TeccBackendRep.run: no value for input(s) {missing}; give every input of "
                                   f"{self.input_names}")
        out = {}
        for name in self.input_names:
            if self.input_kinds[name] != "tensor":
                out[name] = _container_value(named[name], f"input {name!r}")
                continue
            arr = _as_numpy(named[name], f"input {name!r}")
            shape, dtype = self.input_types.get(name, (tuple(arr.shape), str(arr.dtype)))
            same_shape = len(shape) == arr.ndim and all(d is None or d == a for d, a in zip(shape, arr.shape))
            if not same_shape or str(arr.dtype) != dtype:
                raise OnnxBackendError(f"TeccBackendRep.run: input {name!r} has shape {tuple(arr.shape)} and dtype "
                                       f"{arr.dtype}, but the model takes shape {tuple(shape)} and dtype {dtype}; give "
                                       "an array of that shape and dtype (prepare the model again for other shapes)")
            out[name] = arr
        return out

    def run(self, inputs, **kwargs):
        """Run the model.

        Parameters
        ----------
        inputs : list of numpy.ndarray, dict of str to numpy.ndarray, or numpy.ndarray
            One array per model input, in :attr:`input_names` order (or by name);
            a list of arrays for a sequence input, None for an empty optional.
        **kwargs
            Accepted for the interface; unused.

        Returns
        -------
        tuple of numpy.ndarray
            The outputs in the model's order; also readable by output name
            (``outputs["y"]``), as onnx's backends return them.  A sequence output
            is a list of arrays; an empty optional, None.

        Raises
        ------
        OnnxBackendError
            If an input is missing, unknown, or of another shape or dtype than the
            model was compiled for.
        tecc.graph.frontend.OnnxImportError
            If the model needs a compile-time operand tecc cannot take from the
            inputs given (see :attr:`bound_inputs`).
        """
        named = self._bind(inputs)
        compiled = self._compiled_for(named)
        feed = {n: v for n, v in named.items() if n not in self.bound_inputs}
        values = compiled.run(_flat_feed(feed if compiled.module is not None else named, self.input_kinds))
        return namedtupledict("Outputs", self.output_names)(*values)


class TeccBackend(Backend):
    """ONNX's backend interface over tecc (``onnx.backend.base.Backend``).

    Every method is a classmethod, as onnx's test runner calls them:
    ``TeccBackend.prepare(model, "CPU").run(inputs)``,
    ``TeccBackend.run_model(model, inputs)``, ``TeccBackend.run_node(node, inputs)``.
    """

    #: the opt_level :meth:`prepare` builds with when none is given
    DEFAULT_OPT_LEVEL = 3

    @classmethod
    def supports_device(cls, device: str) -> bool:
        """True for ``"CPU"`` (tecc's C backend) and ``"CUDA"`` (a GPU, or the
        emulation of CUDA semantics on the CPU where there is none)."""
        try:
            return Device(device).type in _DEFAULT_TARGETS
        except (AttributeError, ValueError):
            return False

    @classmethod
    def _device(cls, device: str):
        import tecc  # noqa: PLC0415 -- the package's device constructors

        if not isinstance(device, str) or not cls.supports_device(device):
            raise OnnxBackendError(f"TeccBackend: device {device!r} is not supported; use 'CPU' or 'CUDA' (or "
                                   "'CUDA:<id>')")
        dev = Device(device)
        if dev.type == DeviceType.CUDA:
            return dev.type, tecc.cuda(dev.device_id)
        return dev.type, tecc.cpu(dev.device_id)

    @classmethod
    def prepare(cls, model, device: str = "CPU", target=None, opt_level=None, **kwargs) -> TeccBackendRep:
        """Import and compile ``model`` for ``device``.

        A model that uses one of its graph inputs as a compile-time operand (a
        Reshape's shape, Pad's pads, a Reduce's axes, Range's bounds -- as ONNX's
        node tests do) is compiled at its first ``run``, with those inputs' values
        compiled in (:attr:`TeccBackendRep.bound_inputs`); every other model is
        compiled here.

        Parameters
        ----------
        model : onnx.ModelProto
            A model whose inputs have static shapes.
        device : str
            ``"CPU"`` or ``"CUDA"`` (``"CUDA:1"``: the GPU of that id).
        target : str, optional
            What to build for; by default ``"llvm"`` on CPU and ``"cuda"`` on CUDA
            (``"llvm -mcpu=native"``, for instance, on CPU).
        opt_level : int, optional
            The :class:`tecc.transform.PassContext` opt_level (0 to 3; default 3).
        **kwargs
            Accepted for onnx's interface; unused.

        Returns
        -------
        TeccBackendRep

        Raises
        ------
        OnnxBackendError
            For an unsupported device, or an opset tecc cannot read the model with.
        tecc.graph.frontend.OnnxImportError
            For operators, attributes or dtypes the importer does not support.
        tecc.graph.GraphError
            If the model cannot be compiled.
        """
        from onnx import ModelProto  # noqa: PLC0415

        if not isinstance(model, ModelProto):
            raise OnnxBackendError(f"TeccBackend.prepare takes an onnx.ModelProto, got {type(model).__name__}; "
                                   "load a file with onnx.load(path)")
        dev_type, dev = cls._device(device)
        target = target or _DEFAULT_TARGETS[dev_type]
        if opt_level is None:
            opt_level = cls.DEFAULT_OPT_LEVEL
        if isinstance(opt_level, bool) or not isinstance(opt_level, int) or not 0 <= opt_level <= 3:
            raise OnnxBackendError(f"TeccBackend.prepare: opt_level must be an int from 0 to 3, got {opt_level!r}")
        model = upgraded(model)  # once: the representation imports this model again at runs with new operands
        opset = opset_for(model)  # refuses an opset tecc cannot read before anything else
        input_names = _model_inputs(model)
        input_types = _input_types(model, input_names)
        output_names = [o.name for o in model.graph.output]
        rep = TeccBackendRep(model, opset, input_names, input_types, output_names, target, dev, opt_level)
        if rep._compile_at_run:
            return rep  # compiled at the first run, with the sequences' lengths and shapes
        try:
            mod, params, _ = import_model(model)
        except OnnxImportError as err:
            if not _operands_to_bind(model, err, []):
                raise
            return rep  # compiled at the first run, with the operands' values
        rep._compiled[()] = rep._build(mod, params)
        return rep

    @classmethod
    def run_model(cls, model, inputs, device: str = "CPU", **kwargs):
        """``prepare(model, device, **kwargs).run(inputs)``."""
        return cls.prepare(model, device, **kwargs).run(inputs)

    @classmethod
    def run_node(cls, node, inputs, device: str = "CPU", outputs_info=None, **kwargs):
        """Run one ONNX node on ``inputs`` (onnx's ``Backend.run_node``).

        Parameters
        ----------
        node : onnx.NodeProto
        inputs : list of numpy.ndarray or dict of str to numpy.ndarray
            The values of the node's inputs (by position, or by input name).
        device : str
            ``"CPU"`` or ``"CUDA"``.
        outputs_info : list of (dtype, shape), optional
            The node's outputs' element types and shapes (left to inference when
            not given).
        **kwargs
            ``opset_version`` (default: the newest opset tecc implements), and
            :meth:`prepare`'s ``target`` and ``opt_level``.

        Returns
        -------
        tuple of numpy.ndarray
            The node's outputs.

        Raises
        ------
        OnnxBackendError
            If the inputs do not match the node's.
        """
        from onnx import NodeProto, helper  # noqa: PLC0415

        if not isinstance(node, NodeProto):
            raise OnnxBackendError(f"TeccBackend.run_node takes an onnx.NodeProto, got {type(node).__name__}")
        names = [n for n in node.input if n]
        if isinstance(inputs, dict):
            values = [inputs.get(n) for n in names]
        else:
            values = list(inputs)
        if len(values) != len(names) or any(v is None for v in values):
            raise OnnxBackendError(f"TeccBackend.run_node: node {node.name or node.op_type!r} takes inputs {names}, "
                                   f"got {len(values)} value(s); give one array per named input")
        arrays = [_as_numpy(v, f"input {n!r}") for n, v in zip(names, values)]
        graph_inputs = [helper.make_tensor_value_info(n, helper.np_dtype_to_tensor_dtype(a.dtype), a.shape)
                        for n, a in zip(names, arrays)]
        out_names = [n for n in node.output if n]
        opset = int(kwargs.pop("opset_version", max(MAX_OPSET, NEWER_OPS.get(node.op_type, 0))))
        if outputs_info is not None:
            outs = [helper.make_tensor_value_info(n, helper.np_dtype_to_tensor_dtype(np.dtype(dt)), shape)
                    for n, (dt, shape) in zip(out_names, outputs_info)]
        else:
            outs = [helper.make_empty_tensor_value_info(n) for n in out_names]
        graph = helper.make_graph([node], f"run_node_{node.op_type}", graph_inputs, outs)
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
        if outputs_info is None:
            model = _typed_outputs(model, node)
        return cls.prepare(model, device, **kwargs).run(arrays)


def _typed_outputs(model, node):
    """``model`` with its outputs typed by ONNX shape inference (the checker wants
    a type on every graph output)."""
    import onnx  # noqa: PLC0415

    try:
        inferred = onnx.shape_inference.infer_shapes(model, strict_mode=True)
    except (onnx.shape_inference.InferenceError, onnx.checker.ValidationError) as err:
        first = str(err).strip().splitlines()[0] if str(err).strip() else "inference failed"
        raise OnnxBackendError(f"TeccBackend.run_node: ONNX cannot infer the outputs of node "
                               f"{node.name or node.op_type!r} ({first}); check its inputs and attributes, or give "
                               "outputs_info=[(dtype, shape), ...]") from None
    known = {v.name: v for v in list(inferred.graph.value_info) + list(inferred.graph.output)
             if v.type.tensor_type.elem_type}
    missing = [o.name for o in model.graph.output if o.name not in known]
    if missing:
        raise OnnxBackendError(f"TeccBackend.run_node: ONNX infers no type for output(s) {missing} of node "
                               f"{node.name or node.op_type!r}; give outputs_info=[(dtype, shape), ...]")
    outputs = [known[o.name] for o in model.graph.output]
    del model.graph.output[:]
    model.graph.output.extend(outputs)
    return model


# onnx's backend modules expose these names at module level
prepare = TeccBackend.prepare
run_model = TeccBackend.run_model
run_node = TeccBackend.run_node
supports_device = TeccBackend.supports_device
