"""TVM's ``relay.frontend``: model importers (ONNX)."""


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


__all__ = ["from_onnx"]
