"""What went wrong when a converter failed with an error of its own (an IndexError, a
ValueError...) rather than an :class:`~.common.OnnxImportError`: ONNX's verdict on the
node, or, when ONNX finds the node valid, an error that names the node and says the
failure is tecc's.

ONNX's strict shape inference knows every operator's rules (ranks, attribute sizes,
operand counts) and names what breaks them. The importer does not run it on the
whole model: onnxruntime runs models it refuses (outputs declared with other shapes,
value_info a converter wrote wrong), and tecc follows onnxruntime. It runs here on one
node only, when that node's converter has already failed, with the operand types
tecc inferred and the values of its constant operands."""
from __future__ import annotations

import re

import numpy as np

from ...ir import numpy_dtype
from .common import OnnxImportError, _onnx

#: constant operands up to this many bytes go into the node's model (shape inference
#: reads a Reshape's shape, a Slice's starts...); larger ones as their type only
_VALUE_BYTES = 1 << 20

#: the prefixes ONNX's inference errors repeat before what is wrong
_PREFIXES = re.compile(r"^(\[[A-Za-z]+\] |Inference error\(s\): |\(op_type:[^)]*\): )+")


def onnx_verdict(ctx, node, inputs):
    """The first line of ONNX's strict shape inference's error on ``node`` with the
    operand types (and small constant values) tecc has, or None: ONNX finds nothing
    wrong, or the node cannot be put to it (an operand that is not a tensor)."""
    onnx = _onnx()
    helper = onnx.helper
    try:
        declared, values, seen = [], [], set()
        for name, expr in zip(node.inputs, inputs):
            if not name or expr is None or name in seen:
                continue
            seen.add(name)
            ty = ctx.type_of(expr)
            elem = helper.np_dtype_to_tensor_dtype(numpy_dtype(ty.dtype))
            if ctx.is_const(expr):
                value = np.asarray(ctx.value(expr, name))
                if value.nbytes <= _VALUE_BYTES:
                    values.append(onnx.numpy_helper.from_array(value, name))
            declared.append(helper.make_tensor_value_info(name, elem, ty.shape))
        outputs = [helper.make_empty_tensor_value_info(name) for name in node.outputs if name]
        graph = helper.make_graph([node.proto], "node", declared, outputs, initializer=values)
        model = helper.make_model(graph, opset_imports=list(ctx.model.opset_import))
        model.ir_version = ctx.model.ir_version
    except Exception:  # noqa: BLE001 -- the node cannot be put to ONNX: no verdict
        return None
    try:
        onnx.shape_inference.infer_shapes(model, check_type=True, strict_mode=True, data_prop=True)
    except onnx.shape_inference.InferenceError as err:
        lines = [line.strip() for line in str(err).splitlines() if line.strip()]
        # "[ShapeInferenceError] Inference error(s): (op_type:Concat): [ShapeInferenceError] All inputs..."
        return _PREFIXES.sub("", lines[0]) if lines else "invalid"
    except Exception:  # noqa: BLE001 -- another failure of ONNX's own: no verdict
        return None
    return None


def converter_failed(ctx, node, inputs, err: Exception) -> OnnxImportError:
    """The error to raise for ``err``, which ``node``'s converter raised: ONNX's verdict
    when it finds the node invalid; otherwise an error that names the node and calls
    the failure a fault of tecc's importer (``internal`` set: the fuzz tests look for
    it)."""
    if isinstance(err, MemoryError):
        return OnnxImportError(f"{node.where}: converting it needs more memory than there is: an attribute or "
                               "operand implies a very large tensor; check its sizes")
    verdict = onnx_verdict(ctx, node, inputs)
    if verdict is not None:
        return OnnxImportError(f"{node.where} is not a valid ONNX node (ONNX's shape inference: {verdict}); fix "
                               "the model")
    error = OnnxImportError(f"{node.where}: tecc's importer failed converting this node ({type(err).__name__}: "
                            f"{err}), which ONNX's shape inference accepts: a fault of tecc's, please report it "
                            "with the model")
    error.internal = True
    return error
