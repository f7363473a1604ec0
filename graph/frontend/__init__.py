"""Importers of models from other frameworks into tecc's graph IR.

:func:`from_onnx` reads an ONNX model (a ``ModelProto`` or a path to a ``.onnx``
file) and returns ``(module, params)`` as TVM's ``relay.frontend.from_onnx`` does.
"""
from .onnx import OnnxImportError, from_onnx, function_ops, supported_ops  # noqa: F401
