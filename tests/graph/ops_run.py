"""Shared by the operator tests of the graph IR: build one operator through a tiny
graph -- a Function of one call, type-inferred, lowered with the operator's
``lower`` on TE placeholders, scheduled with ``topi.schedule`` for the target --
and run it on numpy arrays.  (The real builder of whole models is
``tecc.graph.build``; this one checks the operators alone.)"""
import warnings

import numpy as np

import tecc
from tecc import graph as g
from tecc import te, topi
from tecc.graph.transform.infer_type import infer_type
from tecc.runtime import dtypes
from tecc.target import Target


def make_call(name, args, attrs):
    """``(function, call, params)``: ``name`` applied to ``args`` (numpy arrays; a
    list of arrays is one Tuple operand) through fresh Vars."""
    params, operands = [], []
    for arg in args:
        if isinstance(arg, list):
            fields = []
            for a in arg:
                v = g.Var(f"x{len(params)}", g.TensorType(a.shape, str(a.dtype)))
                params.append(v)
                fields.append(v)
            operands.append(g.Tuple(fields))
        else:
            v = g.Var(f"x{len(params)}", g.TensorType(arg.shape, str(arg.dtype)))
            params.append(v)
            operands.append(v)
    call = g.call(name, *operands, **attrs)
    fn = g.Function(params, call)
    infer_type(fn)
    return fn, call, params


def lower_call(call, params, target):
    """``(placeholders, outputs)``: the call lowered on TE placeholders, one per
    parameter, inside ``target``'s scope."""
    holders = {p: te.placeholder(p.checked_type.shape, dtype=p.checked_type.dtype, name=p.name_hint)
               for p in params}
    inputs = []
    for a in call.args:
        inputs.append([holders[f] for f in a.fields] if isinstance(a, g.Tuple) else holders[a])
    outs = call.op.lower(inputs, call.attrs, call.checked_type)
    outs = list(outs) if isinstance(outs, (list, tuple)) else [outs]
    return [holders[p] for p in params], outs


def run_op(name, args, attrs=None, target="llvm"):
    """Build operator ``name`` on ``args`` (with ``attrs``) for ``target`` and run
    it; the output array, or a list of them for a tuple result.  The outputs'
    shapes and dtypes are checked against the inferred type."""
    _, call, params = make_call(name, args, attrs or {})
    flat = [a for arg in args for a in (arg if isinstance(arg, list) else [arg])]
    with Target(target):
        holders, outs = lower_call(call, params, target)
        s = topi.schedule(outs, target)
        mod = tecc.build(s, holders + outs, target)
    ty = call.checked_type
    types = list(ty.fields) if isinstance(ty, g.TupleType) else [ty]
    assert len(types) == len(outs)
    results = []
    for t, out in zip(types, outs):
        assert [int(d) for d in out.shape] == list(t.shape), (name, out.shape, t)
        assert out.dtype == t.dtype, (name, out.dtype, t)
        results.append(np.zeros(t.shape, dtype=t.dtype))
    if target.startswith("cuda"):
        findings = mod.check(*flat, *results)
        assert findings == [], "\n".join(str(x) for x in findings)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # no GPU here: the emulator runs it
        mod(*flat, *results)
    return results if isinstance(ty, g.TupleType) else results[0]


def assert_outputs_match(got, expected, rtol, atol, who="expected"):
    """Raise AssertionError unless the arrays ``got`` match ``expected``: their count,
    and each one's shape, dtype and values (exact for integers and bools, within
    ``rtol``/``atol`` for floats; bfloat16 within two of its units in the last place,
    ``rtol`` of at least 2**-6, as onnx's own test runner compares it: a value computed
    in float32 and rounded once may sit an ulp from one rounded step by step); ``who``
    names the reference in the messages."""
    assert len(got) == len(expected), f"{len(got)} outputs, {who} {len(expected)}"
    for i, (g, e) in enumerate(zip(got, expected)):
        g, e = np.asarray(g), np.asarray(e)
        assert g.shape == e.shape, f"output {i}: shape {g.shape}, {who} {e.shape}"
        assert g.dtype == e.dtype, f"output {i}: dtype {g.dtype}, {who} {e.dtype}"
        narrow = dtypes.is_narrow(e.dtype.name)  # bfloat16, float8_e4m3fn, int4...: ml_dtypes' arrays
        if e.dtype.kind in "biu" or narrow and dtypes.kind(e.dtype.name) in "iu":
            np.testing.assert_array_equal(g.astype(np.int64) if narrow else g, e.astype(np.int64) if narrow else e,
                                          err_msg=f"output {i}")
        elif e.dtype.name == "bfloat16":
            np.testing.assert_allclose(g.astype(np.float32), e.astype(np.float32), rtol=max(rtol, 2 ** -6), atol=atol,
                                       err_msg=f"output {i}")
        elif narrow:  # the 8- and 4-bit floats, as onnx's runner compares them (NaN equal to NaN)
            np.testing.assert_allclose(g.astype(np.float32), e.astype(np.float32), rtol=rtol, atol=atol,
                                       err_msg=f"output {i}")
        else:
            np.testing.assert_allclose(g, e, rtol=rtol, atol=atol, err_msg=f"output {i}")


def reference_session(model):
    """An onnxruntime session of ``model`` that computes the graph as written: its graph
    rewrites are off (onnxruntime's optimizer changes results, e.g. it drops a
    QuantizeLinear/DequantizeLinear pair between two of different zero points, so
    the values are no longer rounded to the first pair's scale)."""
    import onnxruntime as ort  # noqa: PLC0415

    opts = ort.SessionOptions()
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    return ort.InferenceSession(model.SerializeToString(), opts, providers=["CPUExecutionProvider"])


def typed_model(nodes, inputs, outputs, inits=None, opset=13, name="model", ir_version=9):
    """An ONNX model of ``nodes``: ``inputs`` / ``inits`` map names to arrays, the
    outputs (names) are typed by ONNX's shape inference."""
    import onnx  # noqa: PLC0415
    from onnx import helper, numpy_helper  # noqa: PLC0415

    in_infos = [helper.make_tensor_value_info(n, helper.np_dtype_to_tensor_dtype(a.dtype), a.shape)
                for n, a in inputs.items()]
    graph = helper.make_graph(nodes, name, in_infos, [helper.make_empty_tensor_value_info(n) for n in outputs],
                              initializer=[numpy_helper.from_array(np.asarray(a), n) for n, a in (inits or {}).items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = min(model.ir_version, ir_version)
    inferred = onnx.shape_inference.infer_shapes(model)
    by_name = {v.name: v for v in list(inferred.graph.value_info) + list(inferred.graph.output)}
    del model.graph.output[:]
    model.graph.output.extend(by_name[n] for n in outputs)
    return model


def tecc_outputs(model, inputs, target="llvm", opt_level=3, freeze_params=True, shape=None, mixed_precision=None):
    """Import the ONNX ``model``, build it for ``target`` at ``opt_level`` and run it
    on ``inputs`` (name -> array), on the CPU for "llvm" and on ``cuda(0)`` for
    "cuda" (the GPU, or the CPU emulation of CUDA where there is none); the outputs
    as numpy arrays.  ``mixed_precision``: the model computed in that type first
    (ToMixedPrecision)."""
    from tecc.contrib import graph_executor  # noqa: PLC0415
    from tecc.graph.build import build  # noqa: PLC0415
    from tecc.graph.frontend import from_onnx  # noqa: PLC0415
    from tecc.graph.transform import to_mixed_precision  # noqa: PLC0415

    mod, params = from_onnx(model, shape=shape, freeze_params=freeze_params)
    if mixed_precision:
        mod = to_mixed_precision(mod, mixed_precision)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "no tuned config" notes; no GPU: the emulator runs CUDA
        with tecc.transform.PassContext(opt_level=opt_level):
            factory = build(mod, target=target, params=params)
        dev = tecc.cuda(0) if str(target).startswith("cuda") else tecc.cpu(0)
        gmod = graph_executor.GraphModule(factory["default"](dev))
    for name, value in inputs.items():
        gmod.set_input(name, value)
    gmod.run()
    return [gmod.get_output(i).numpy() for i in range(gmod.get_num_outputs())]
