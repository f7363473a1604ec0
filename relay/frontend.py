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
    names, examples, shapes = [], [], {}
    for k, info in enumerate(input_infos):
        if not (isinstance(info, (list, tuple)) and len(info) == 2 and isinstance(info[0], str)):
            raise GraphError(f"from_pytorch: input_infos[{k}] must be (name, shape) or (name, (shape, dtype)), "
                             f"got {info!r}")
        name, spec = info
        shape, dtype = spec, default_dtype
        if isinstance(spec, (list, tuple)) and len(spec) == 2 and isinstance(spec[1], str):
            shape, dtype = spec
        shape = tuple(int(d) for d in shape)
        names.append(name)
        shapes[name] = shape
        examples.append(torch.zeros(shape, dtype=getattr(torch, dtype)))
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
    return from_onnx(model, shape=shapes, freeze_params=False)


__all__ = ["from_onnx", "from_pytorch"]
