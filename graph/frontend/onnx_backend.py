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
The importer implements the default-domain opsets 9 to 21.  A model that imports
a newer (or older) opset is read as the nearest one the importer implements
when every operator it uses is defined the same way there, or differs only in
the element types it accepts (the same attributes and inputs; ONNX's opsets 22
to 28 mostly add bfloat16, 8-bit and 4-bit float types).  A model using an
operator whose attributes or inputs changed in between is refused with
:class:`OnnxBackendError`, naming the operator and both versions.
:func:`opset_for` gives the opset a model is read with.
"""
from __future__ import annotations

import numpy as np

from ...errors import TeccError
from ..ir import Call, GraphError, TupleGetItem, post_order_visit
from .onnx import MAX_OPSET, MIN_OPSET, OnnxImportError, from_onnx

try:  # the backend interface comes with the onnx package, a dependency of tecc.graph
    from onnx.backend.base import Backend, BackendRep, Device, DeviceType, namedtupledict
except ImportError as _err:  # pragma: no cover - onnx is a dependency
    raise ImportError("tecc.graph.frontend.onnx_backend needs the onnx package: pip install onnx") from _err

#: the targets a device type builds for by default
_DEFAULT_TARGETS = {DeviceType.CPU: "llvm", DeviceType.CUDA: "cuda"}

__all__ = ["OnnxBackendError", "TeccBackend", "TeccBackendRep", "opset_for", "prepare", "run_model", "run_node",
           "supports_device"]


class OnnxBackendError(OnnxImportError):
    """The backend cannot run a model: an unknown device, inputs that do not match
    the model's, or an opset whose operators tecc does not implement."""


# ---------------------------------------------------------------------------------------
# opsets
# ---------------------------------------------------------------------------------------
def _default_opset(model) -> int:
    versions = [o.version for o in model.opset_import if o.domain in ("", "ai.onnx")]
    if not versions:
        raise OnnxBackendError("TeccBackend: the model imports no version of the default ONNX opset; add one "
                               "(onnx.helper.make_opsetid('', 21)) to model.opset_import")
    return max(versions)


def _signature(schema) -> tuple:
    """What a node of this operator version may say: its attributes (name, type,
    required, default) and its inputs and outputs (name, optional/variadic)."""
    attrs = tuple(sorted((a.name, int(a.type), bool(a.required), a.default_value.SerializeToString())
                         for a in schema.attributes.values()))
    inputs = tuple((i.name, int(i.option)) for i in schema.inputs)
    outputs = tuple((o.name, int(o.option)) for o in schema.outputs)
    return attrs, inputs, outputs


def opset_for(model) -> int:
    """The default-domain opset :class:`TeccBackend` reads ``model`` with.

    The model's own opset when the importer implements it (9 to 21); otherwise the
    nearest implemented one, provided that each operator the model uses has the
    same attributes and inputs at both versions (a later version that only adds
    element types reads the same).

    Parameters
    ----------
    model : onnx.ModelProto

    Returns
    -------
    int

    Raises
    ------
    OnnxBackendError
        If the model imports no default opset, or an operator it uses changed its
        attributes or inputs between the model's opset and the nearest implemented
        one (naming both versions).
    """
    import onnx.defs  # noqa: PLC0415 -- onnx is imported above already

    opset = _default_opset(model)
    if MIN_OPSET <= opset <= MAX_OPSET:
        return opset
    read_as = min(max(opset, MIN_OPSET), MAX_OPSET)
    changed = []
    for op_type in sorted({n.op_type for n in model.graph.node if n.domain in ("", "ai.onnx")}):
        try:
            theirs = onnx.defs.get_schema(op_type, opset)
        except onnx.defs.SchemaError:
            continue  # an unknown operator: the importer lists it among the unsupported ones
        try:
            ours = onnx.defs.get_schema(op_type, read_as)
        except onnx.defs.SchemaError:
            changed.append(f"{op_type} (version {theirs.since_version} has no definition at opset {read_as})")
            continue
        if theirs.since_version != ours.since_version and _signature(theirs) != _signature(ours):
            changed.append(f"{op_type} (version {theirs.since_version} differs from version {ours.since_version} "
                           "in its attributes or inputs)")
    if changed:
        raise OnnxBackendError(f"TeccBackend: the model uses ONNX opset {opset}; tecc implements opsets {MIN_OPSET} "
                               f"to {MAX_OPSET}, and reading it as opset {read_as} would change "
                               f"{', '.join(changed)}; convert the model with "
                               f"onnx.version_converter.convert_version(model, {read_as})")
    return read_as


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


def _trivial_outputs(main) -> bool:
    """True when the model's outputs compute nothing (each is an input or a
    constant): then there is no kernel to build."""
    calls = []

    def visit(node):
        if isinstance(node, (Call, TupleGetItem)):
            calls.append(node)

    post_order_visit(main.body, visit)
    return not calls


class TeccBackendRep(BackendRep):
    """A model compiled by :meth:`TeccBackend.prepare`; :meth:`run` runs it.

    Attributes
    ----------
    input_names : list of str
        The model's inputs (initializers excluded), in the order ``run`` takes them.
    output_names : list of str
        The model's outputs, in the order ``run`` returns them.
    target : str
        What the model was built for (``"llvm"`` or ``"cuda"``...).
    factory : GraphExecutorFactoryModule or None
        The built model (``export_library`` saves it); None for a model whose
        outputs are its inputs or constants, which needs no kernel.
    """

    def __init__(self, input_names, input_types, output_names, target, factory, device, trivial=None):
        self.input_names = list(input_names)
        self.input_types = dict(input_types)
        self.output_names = list(output_names)
        self.target = target
        self.factory = factory
        self._trivial = trivial
        self._module = None
        if factory is not None:
            from ...contrib.graph_executor import GraphModule  # noqa: PLC0415

            self._module = GraphModule(factory["default"](device))

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
            arr = _as_numpy(named[name], f"input {name!r}")
            shape, dtype = self.input_types[name]
            if tuple(arr.shape) != tuple(shape) or str(arr.dtype) != dtype:
                raise OnnxBackendError(f"TeccBackendRep.run: input {name!r} has shape {tuple(arr.shape)} and dtype "
                                       f"{arr.dtype}, but the model was compiled for shape {tuple(shape)} and dtype "
                                       f"{dtype}; prepare the model again for other shapes")
            out[name] = arr
        return out

    def run(self, inputs, **kwargs):
        """Run the model.

        Parameters
        ----------
        inputs : list of numpy.ndarray, dict of str to numpy.ndarray, or numpy.ndarray
            One array per model input, in :attr:`input_names` order (or by name).
        **kwargs
            Accepted for the interface; unused.

        Returns
        -------
        tuple of numpy.ndarray
            The outputs in the model's order; also readable by output name
            (``outputs["y"]``), as onnx's backends return them.

        Raises
        ------
        OnnxBackendError
            If an input is missing, unknown, or of another shape or dtype than the
            model was compiled for.
        """
        named = self._bind(inputs)
        if self._module is None:
            values = [np.array(named[v]) if isinstance(v, str) else np.array(v) for v in self._trivial]
        else:
            if named:
                self._module.set_input(**named)
            self._module.run()
            values = [self._module.get_output(i).numpy() for i in range(self._module.get_num_outputs())]
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

        from ...tir.transform.pipeline import PassContext  # noqa: PLC0415
        from ..build import build  # noqa: PLC0415

        if not isinstance(model, ModelProto):
            raise OnnxBackendError(f"TeccBackend.prepare takes an onnx.ModelProto, got {type(model).__name__}; "
                                   "load a file with onnx.load(path)")
        dev_type, dev = cls._device(device)
        target = target or _DEFAULT_TARGETS[dev_type]
        if opt_level is None:
            opt_level = cls.DEFAULT_OPT_LEVEL
        if isinstance(opt_level, bool) or not isinstance(opt_level, int) or not 0 <= opt_level <= 3:
            raise OnnxBackendError(f"TeccBackend.prepare: opt_level must be an int from 0 to 3, got {opt_level!r}")
        mod, params = from_onnx(model, opset=opset_for(model))
        main = mod["main"]
        input_names = _model_inputs(model)
        input_types = {p.name_hint: (tuple(p.type_annotation.shape), p.type_annotation.dtype)
                       for p in main.params if p.name_hint in input_names}
        output_names = [o.name for o in model.graph.output]
        if _trivial_outputs(main):
            # nothing to compile: each output is an input (by name) or a constant's value
            body = main.body
            fields = list(body.fields) if hasattr(body, "fields") else [body]
            trivial = [f.name_hint if hasattr(f, "name_hint") else f.data for f in fields]
            return TeccBackendRep(input_names, input_types, output_names, target, None, dev, trivial)
        with PassContext(opt_level=opt_level):
            factory = build(mod, target=target, params=params)
        return TeccBackendRep(input_names, input_types, output_names, target, factory, dev)

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
        if outputs_info is not None:
            outs = [helper.make_tensor_value_info(n, helper.np_dtype_to_tensor_dtype(np.dtype(dt)), shape)
                    for n, (dt, shape) in zip(node.output, outputs_info)]
        else:
            outs = [helper.make_empty_tensor_value_info(n) for n in node.output if n]
        opset = int(kwargs.pop("opset_version", MAX_OPSET))
        graph = helper.make_graph([node], f"run_node_{node.op_type}", graph_inputs, outs)
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
        return cls.prepare(model, device, **kwargs).run(arrays)


# onnx's backend modules expose these names at module level
prepare = TeccBackend.prepare
run_model = TeccBackend.run_model
run_node = TeccBackend.run_node
supports_device = TeccBackend.supports_device

#: errors a model may raise that mean "tecc does not support this": the importer's
#: refusals (unknown operators, attributes, dtypes, opsets)
UNSUPPORTED_ERRORS = (OnnxImportError,)

# re-exported for callers that classify failures
_ = (GraphError, TeccError)
