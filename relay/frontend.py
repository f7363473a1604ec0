"""TVM's ``relay.frontend``: model importers (ONNX; PyTorch through torch's ONNX
exporter)."""


def from_onnx(model, shape=None, dtype="float32", opset=None, freeze_params=True, convert_config=None):
    """Import an ONNX model: :func:`tecc.graph.frontend.from_onnx` under Relay's name.

    Parameters
    ----------
    model : onnx.ModelProto or path
    shape : dict of str to tuple of int, optional
        Input name -> shape (Relay's ``shape_dict``).
    dtype : str or dict
    opset : int, optional
    freeze_params : bool
        True (tecc's default): weights become constants and ``params`` is empty;
        False: weights become parameters of ``main`` with values in ``params``.
    convert_config : dict, optional
        Relay's converter options; tecc's importer has none and ignores it.

    Returns
    -------
    (tecc.graph.Module, dict of str to numpy.ndarray)
    """
    from ..graph.frontend import from_onnx as graph_from_onnx  # noqa: PLC0415 -- loads the passes on use

    del convert_config  # Relay's knobs (e.g. use_nt_batch_matmul) pick layouts tecc chooses itself
    return graph_from_onnx(model, shape=shape, dtype=dtype, opset=opset, freeze_params=freeze_params)


#: the ONNX opset from_pytorch asks torch's exporter for
PYTORCH_OPSET = 17


def from_pytorch(script_module, input_infos, custom_convert_map=None, default_dtype="float32",
                 use_parser_friendly_name=False, keep_quantized_weight=False, export_renamed_c_graph_path=None):
    """Import a PyTorch model (TVM's ``relay.frontend.from_pytorch``).

    The model goes through torch's own ONNX exporter (the TorchScript one, opset
    :data:`PYTORCH_OPSET`) and then tecc's ONNX importer, so every operator the
    ONNX importer takes is covered.

    Parameters
    ----------
    script_module : torch.jit.ScriptModule or torch.nn.Module
        ``torch.jit.trace(model, example).eval()`` as TVM's tutorial makes it (a
        plain module in eval mode works too).
    input_infos : list of (str, shape) or (str, (shape, dtype))
        The inputs' names (they name the graph's inputs) and shapes, in the
        order the model's ``forward`` takes them.
    default_dtype : str
        The dtype of inputs given without one.
    custom_convert_map, use_parser_friendly_name, keep_quantized_weight, export_renamed_c_graph_path
        Relay's options of its own TorchScript parser; tecc has none of them:
        anything but the default is refused.

    Returns
    -------
    (tecc.graph.Module, dict of str to numpy.ndarray)
        The module, whose ``main`` takes the inputs and the weights, and the
        weights' values.

    Raises
    ------
    GraphError
        Without torch, for a bad ``input_infos``, or when torch cannot export the
        model (its message is kept).
    """
    import io  # noqa: PLC0415
    import warnings  # noqa: PLC0415

    from ..graph.ir import GraphError  # noqa: PLC0415

    for name, value in (("custom_convert_map", custom_convert_map), ("export_renamed_c_graph_path",
                                                                    export_renamed_c_graph_path)):
        if value:
            raise GraphError(f"from_pytorch: {name} is not supported: tecc imports through ONNX; leave it out")
    if use_parser_friendly_name or keep_quantized_weight:
        raise GraphError("from_pytorch: use_parser_friendly_name and keep_quantized_weight are not supported; "
                         "leave them False")
    try:
        import torch  # noqa: PLC0415
    except ImportError:
        raise GraphError("from_pytorch needs PyTorch (pip install torch); or export the model to ONNX yourself "
                         "and use relay.frontend.from_onnx") from None
    graph_types = _traced_input_dtypes(script_module, len(input_infos))
    names, examples, shapes = [], [], {}
    for k, info in enumerate(input_infos):
        if not (isinstance(info, (list, tuple)) and len(info) == 2 and isinstance(info[0], str)):
            raise GraphError(f"from_pytorch: input_infos[{k}] must be (name, shape) or (name, (shape, dtype)), "
                             f"got {info!r}")
        name, spec = info
        shape, dtype = spec, graph_types[k] or default_dtype
        if isinstance(spec, (list, tuple)) and len(spec) == 2 and isinstance(spec[1], str):
            shape, dtype = spec
        shape = tuple(int(d) for d in shape)
        try:
            torch_dtype = getattr(torch, str(dtype))
        except AttributeError:
            raise GraphError(f"from_pytorch: input {name!r} has dtype {dtype!r}, which torch does not have") from None
        names.append(name)
        shapes[name] = shape
        examples.append(torch.zeros(shape, dtype=torch_dtype))
    buf = io.BytesIO()
    try:
        with torch.no_grad(), warnings.catch_warnings():
            # a traced module's forward has no Python signature; the exporter says so
            warnings.filterwarnings("ignore", message="no signature found")
            torch.onnx.export(script_module, tuple(examples), buf, input_names=names, opset_version=PYTORCH_OPSET,
                              dynamo=False)
    except Exception as err:  # noqa: BLE001 -- torch's exporter raises many kinds; keep its message
        raise GraphError(f"from_pytorch: torch could not export the model to ONNX ({type(err).__name__}: "
                         f"{str(err).strip().splitlines()[0] if str(err).strip() else ''}); export it yourself "
                         "(torch.onnx.export) and use relay.frontend.from_onnx") from None
    import onnx  # noqa: PLC0415

    model = onnx.load_from_string(buf.getvalue())
    kept = {i.name for i in model.graph.input}
    mod, params = from_onnx(model, shape={n: s for n, s in shapes.items() if n in kept}, freeze_params=False)
    return _with_all_inputs(mod, names, shapes, examples), params


def _traced_input_dtypes(script_module, count) -> list:
    """The dtypes (or None) of the first ``count`` tensor inputs a traced module's graph
    records (``Float(3, 4)``, ``Long(2)``), as TVM reads them when ``input_infos``
    gives shapes alone; a scripted module's inputs are plain ``Tensor`` (None)."""
    graph = getattr(script_module, "graph", None)
    found = []
    if graph is not None:
        for value in graph.inputs():
            ty = value.type()
            if ty.kind() == "TensorType":
                dtype = ty.dtype()
                found.append(str(dtype).replace("torch.", "") if dtype is not None else None)
            elif not found and ty.kind() == "ClassType":
                continue  # the module itself (``self``)
            else:
                found.append(None)
    return (found + [None] * count)[:count]


def _with_all_inputs(mod, names, shapes, examples):
    """``mod`` whose ``main`` takes every input of ``input_infos``, in their order, then
    its weights: torch's exporter drops an input the outputs do not read (``ones_like``),
    and TVM's Relay keeps it (the caller still sets it)."""
    from ..graph.ir import Function, Module, TensorType, Var  # noqa: PLC0415

    main = mod["main"]
    by_name = {p.name_hint: p for p in main.params}
    if all(n in by_name for n in names):
        return mod
    inputs = [by_name.get(n) or Var(n, TensorType(shapes[n], str(ex.dtype).replace("torch.", "")))
              for n, ex in zip(names, examples)]
    rest = [p for p in main.params if p.name_hint not in names]
    new_main = Function(inputs + rest, main.body, main.ret_type, main.attrs, main.span)
    return Module({**mod.functions, "main": new_main}, mod.attrs)


def infer_type(node, mod=None):
    """``node`` with its type recorded (Relay's ``relay.frontend.common.infer_type``, the
    helper frontends call on an expression they build; ``mod`` is accepted and unused:
    tecc types an expression on its own)."""
    from ..graph.transform.infer_type import infer_type as graph_infer_type  # noqa: PLC0415

    del mod
    return graph_infer_type(node)


def infer_shape(inputs, mod=None):
    """The static shape of expression ``inputs`` (Relay's ``relay.frontend.common.infer_shape``)."""
    return tuple(infer_type(inputs, mod).checked_type.shape)


# ``relay.frontend.common``: the frontends' helpers, where TVM code imports them from
import sys as _sys  # noqa: E402
import types as _types  # noqa: E402

common = _types.ModuleType(__name__ + ".common", "Relay's frontend helpers (infer_type, infer_shape).")
common.infer_type, common.infer_shape = infer_type, infer_shape
_sys.modules.setdefault(common.__name__, common)

__all__ = ["common", "from_onnx", "from_pytorch", "infer_shape", "infer_type"]
