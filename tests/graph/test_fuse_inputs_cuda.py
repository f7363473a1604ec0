"""Injective chains fused into the matrix products that read them (GPU targets,
``fuse_ops``' ``fuse_inputs``), differentially: random chains of transposes,
reshapes, slices, concatenations and element-wise ops in front of ``nn.dense`` and
``nn.batch_matmul``, built for CUDA and run on the GPU (or the GPU-semantics
emulator, which checks every access), against numpy.  Each chain must run inside the
product's kernel: the model is one kernel call."""
import json

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tecc
from tecc import graph as G
from tecc.contrib.graph_executor import GraphModule
from tecc.graph import Constant, TensorType, Var, call
from tecc.graph.build import build
from tecc.runtime.graph_executor import calls_kernel


def _chain(draw, x, value):
    """Random injective steps on ``x`` (a graph value) and ``value`` (its numpy twin):
    ``(expr, array)``."""
    for _ in range(draw(st.integers(1, 4))):
        kind = draw(st.sampled_from(["transpose", "reshape", "slice", "concat", "negative"]))
        rank = value.ndim
        if kind == "transpose" and rank >= 2:
            perm = tuple(draw(st.permutations(range(rank))))
            x, value = call("transpose", x, axes=perm), value.transpose(perm)
        elif kind == "reshape":
            shape = (value.size // value.shape[-1], value.shape[-1]) if draw(st.booleans()) else value.shape[::-1]
            if int(np.prod(shape)) == value.size:
                x, value = call("reshape", x, newshape=tuple(int(d) for d in shape)), value.reshape(shape)
        elif kind == "slice" and value.shape[-1] >= 2:
            stop = draw(st.integers(1, value.shape[-1]))
            begin, end = (0,) * rank, tuple(value.shape[:-1]) + (stop,)
            x = call("strided_slice", x, begin=begin, end=end, strides=(1,) * rank)
            value = value[..., :stop]
        elif kind == "concat":
            axis = draw(st.integers(0, rank - 1))
            x = call("concatenate", G.Tuple([x, call("negative", x)]), axis=axis)
            value = np.concatenate([value, -value], axis=axis)
        elif kind == "negative":
            x, value = call("negative", x), -value
    return x, value


@st.composite
def cases(draw):
    shape = tuple(draw(st.lists(st.integers(2, 6), min_size=2, max_size=3)))
    rng = np.random.default_rng(draw(st.integers(0, 2 ** 16)))
    data = rng.standard_normal(shape).astype("float32")
    x = Var("x", TensorType(shape))
    chain, value = _chain(draw, call("transpose", x, axes=tuple(range(len(shape)))[::-1]), data.transpose())
    if draw(st.booleans()) or value.ndim != 3:  # dense of the chain as rows x features
        value = value.reshape(-1, value.shape[-1])
        chain = call("reshape", chain, newshape=tuple(int(d) for d in value.shape))
        w = rng.standard_normal((3, value.shape[-1])).astype("float32")
        return x, data, call("nn.dense", chain, Constant(w), units=3), value @ w.T
    w = rng.standard_normal((value.shape[0], 3, value.shape[-1])).astype("float32")
    return x, data, call("nn.batch_matmul", chain, Constant(w)), value @ w.transpose(0, 2, 1)


@pytest.mark.filterwarnings("ignore:no CUDA GPU found")
@settings(max_examples=12, derandomize=True, deadline=None, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(case=cases())
def test_random_injective_chains_run_inside_the_product(case):
    x, data, out, want = case
    with tecc.transform.PassContext(opt_level=3):
        factory = build(G.Module.from_expr(G.Function([x], out)), "cuda", {})
    kernels = [n["name"] for n in json.loads(factory.get_graph_json())["nodes"] if calls_kernel(n)]
    assert len(kernels) == 1, kernels
    gm = GraphModule(factory["default"](tecc.cuda(0)))
    gm.run(x=data)
    np.testing.assert_allclose(gm.get_output(0).numpy(), want, rtol=1e-4, atol=1e-4)


@pytest.mark.filterwarnings("ignore:no CUDA GPU found")
def test_tuned_configs_with_vector_fetches_read_a_fused_transpose_correctly():
    """A tuned batch_matmul config that fetches its tiles in vectors (knob ``vec``),
    applied to an operand that is an inlined transpose (what fuse_inputs makes of
    attention's head split), reads the right elements: the tile's source is not
    contiguous, so the fetch cannot be one vector load."""
    from tecc import autotvm, te, topi  # noqa: PLC0415
    from tecc.tuner.task.dispatcher import ApplyConfig  # noqa: PLC0415

    q = te.placeholder((16, 4, 32), name="q")  # tokens, heads, head dim
    k = te.placeholder((4, 16, 32), name="k")
    task = autotvm.task.create("batch_matmul.cuda", args=(te.placeholder((4, 16, 32)), k, None, "float32", False, True),
                               target="cuda")
    space = task.config_space
    wide = [i for i in range(len(space)) if space.get(i)["vec"].val >= 2 and space.is_index_valid(i)]
    rng = np.random.default_rng(0)
    qv, kv = rng.random((16, 4, 32), dtype=np.float32), rng.random((4, 16, 32), dtype=np.float32)
    want = np.einsum("shd,htd->hst", qv, kv)
    checked = 0
    for index in wide[::max(1, len(wide) // 3)][:3]:
        with tecc.target.Target("cuda"), ApplyConfig(space.get(index)):
            out = topi.cuda.batch_matmul(topi.transpose(q, (1, 0, 2)), k, None, "float32", False, True)
            try:
                s = topi.cuda.schedule_batch_matmul([out])
            except autotvm.task.space.InstantiationError:
                continue  # a config this operand cannot take (refused, never built)
        f = tecc.build(s, [q, k, out], target="cuda")
        dev = tecc.cuda(0)
        res = tecc.nd.array(np.zeros((4, 16, 16), "float32"), dev)
        f(tecc.nd.array(qv, dev), tecc.nd.array(kv, dev), res)
        np.testing.assert_allclose(res.numpy(), want, rtol=1e-5, atol=1e-5)
        checked += 1
    assert checked >= 2
