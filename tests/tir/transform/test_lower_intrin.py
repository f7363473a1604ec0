"""lower_intrin: intrinsic lowering rules users register (TVM's
ir.register_intrin_lowering / register_op_attr, its intrinsics tutorial)."""
import numpy as np
import pytest

import tecc
from tecc import te, tir
from tecc.errors import CompileError, TeccTypeError
from tecc.tir.op import INTRIN_LOWERING, OP_ATTRS


@pytest.fixture
def registry():
    """Rules registered in a test are gone after it."""
    rules, attrs = dict(INTRIN_LOWERING), {k: dict(v) for k, v in OP_ATTRS.items()}
    yield
    INTRIN_LOWERING.clear()
    INTRIN_LOWERING.update(rules)
    OP_ATTRS.clear()
    OP_ATTRS.update(attrs)


def _elementwise(fcompute, target):
    A = te.placeholder((70,), name="A")
    B = te.compute(A.shape, lambda i: fcompute(A[i]), name="B")
    s = te.create_schedule(B.op)
    if target == "cuda":
        bx, tx = s[B].split(B.op.axis[0], factor=32)
        s[B].bind(bx, te.thread_axis("blockIdx.x"))
        s[B].bind(tx, te.thread_axis("threadIdx.x"))
    return tecc.build(s, [A, B], target=target, name="f")


def _run(f, target, a):
    dev = tecc.device(target)
    b = tecc.nd.array(np.zeros_like(a), dev)
    f(tecc.nd.array(a, dev), b)
    return b.numpy()


def _source(f, target):
    return f.imported_modules[0].get_source() if target == "cuda" else f.get_source()


@pytest.mark.filterwarnings("ignore:no CUDA GPU found")
@pytest.mark.parametrize("target", ["llvm", "cuda"])
def test_a_declared_intrinsic_lowered_by_its_rules(registry, target):
    def to_extern(call):
        if call.dtype == "float32":
            return tir.call_pure_extern("float32", "logf", call.args[0])
        return call

    tecc.ir.register_op_attr("tir.tecc_mylog", "TCallEffectKind", tir.CallEffectKind.Pure)
    tecc.ir.register_intrin_lowering("tir.tecc_mylog", target="default", f=to_extern, level=99)
    expr = tir.call_intrin("float32", "tir.tecc_mylog", tir.const(2.0, "float32"))
    assert expr.op.name == "tir.tecc_mylog" and expr.op == "tecc_mylog"
    f = _elementwise(lambda x: tir.call_intrin("float32", "tir.tecc_mylog", x), target)
    assert "logf(" in _source(f, target)
    a = np.linspace(0.5, 4.0, 70).astype("float32")
    np.testing.assert_allclose(_run(f, target, a), np.log(a), rtol=1e-6)


@pytest.mark.filterwarnings("ignore:no CUDA GPU found")
def test_a_rule_for_one_target_leaves_the_others(registry):
    @tecc.ir.register_intrin_lowering("tir.exp", target="cuda", level=99)
    def fast_exp(call):
        assert call.op.name == "tir.exp"
        return tir.call_pure_extern(call.dtype, "__expf", call.args[0]) if call.dtype == "float32" else call

    assert "__expf(" in _source(_elementwise(te.exp, "cuda"), "cuda")
    assert "__expf" not in _source(_elementwise(te.exp, "llvm"), "llvm")


def test_intrinsic_errors(registry):
    with pytest.raises(TeccTypeError, match=r"unknown op 'tir.nosuch'.*declared with tecc.ir.register_op_attr"):
        tir.call_intrin("float32", "tir.nosuch", tir.const(1.0, "float32"))
    with pytest.raises(TeccTypeError, match="target must be a name such as 'cuda'"):
        tecc.ir.register_intrin_lowering("tir.exp", target=None, f=lambda c: c)
    with pytest.raises(TeccTypeError, match="f must be a function of the call"):
        tecc.ir.register_intrin_lowering("tir.exp", target="cuda", f=3)
    # declared but never given code for this target: the printer says so
    tecc.ir.register_op_attr("tir.tecc_unlowered", "TCallEffectKind", tir.CallEffectKind.Pure)
    with pytest.raises(CompileError, match="tecc_unlowered"):
        _elementwise(lambda x: tir.call_intrin("float32", "tir.tecc_unlowered", x), "llvm")
