"""Pass instruments (tecc.instrument): called by the one pass engine around every
pass of a build, of a model build, and of passes run by hand."""
import numpy as np
import pytest

import tecc
from tecc import te
from tecc.errors import TeccTypeError
from tecc.transform import PassContext


def _vector_add():
    A = te.placeholder((64,), name="A")
    B = te.compute((64,), lambda i: A[i] * 2.0, name="B")
    s = te.create_schedule(B.op)
    s[B].vectorize(s[B].split(B.op.axis[0], factor=8)[1])
    return s, A, B


@tecc.instrument.pass_instrument
class Recorder:
    def __init__(self, skip=()):
        self.events, self.skip = [], set(skip)

    def enter_pass_ctx(self):
        self.events.append("enter")

    def exit_pass_ctx(self):
        self.events.append("exit")

    def should_run(self, mod, info):
        return info.name not in self.skip

    def run_before_pass(self, mod, info):
        self.events.append(("before", info.name))

    def run_after_pass(self, mod, info):
        self.events.append(("after", info.name))


def test_instruments_see_every_pass_of_a_build_in_order():
    rec = Recorder()
    s, A, B = _vector_add()
    with PassContext(instruments=[rec]):
        assert rec.events == ["enter"]
        f = tecc.build(s, [A, B], target="llvm")
    assert rec.events[-1] == "exit"
    befores = [e[1] for e in rec.events if isinstance(e, tuple) and e[0] == "before"]
    afters = [e[1] for e in rec.events if isinstance(e, tuple) and e[0] == "after"]
    from tecc.tir.transform.pipeline import CPU_PIPELINE

    assert befores == afters == [p.name for p in CPU_PIPELINE]
    a = tecc.nd.array(np.arange(64, dtype="float32"))
    b = tecc.nd.array(np.zeros(64, "float32"))
    f(a, b)
    np.testing.assert_allclose(b.numpy(), np.arange(64) * 2)


def test_should_run_false_skips_the_pass():
    s, A, B = _vector_add()
    with PassContext(instruments=[Recorder(skip={"vectorize"})]):
        code = tecc.build(s, [A, B], target="llvm").get_source()
    assert "tecc_load_float32x" not in code and "simd" in code  # the loop stayed a loop (a SIMD pragma)
    assert "tecc_load_float32x" in tecc.build(s, [A, B], target="llvm").get_source()


def test_graph_passes_are_instrumented_under_their_tvm_names():
    from tecc import graph as G
    from tecc.graph.transform import FoldConstant, InferType, Sequential

    x = G.Var("x", G.TensorType((4,)))
    mod = G.Module.from_expr(G.Function([x], G.call("add", x, G.call("exp", G.const(np.ones(4, "float32"))))))
    timing = tecc.instrument.PassTimingInstrument()
    rec = Recorder()
    with PassContext(opt_level=3, instruments=[rec, timing]):
        Sequential([InferType(), FoldConstant()])(mod)
    # the sequence and each pass in it; the kernel FoldConstant compiles to fold exp(1)
    # is its own business (a fresh context, as in TVM): its TIR passes are not shown
    assert [e for e in rec.events if isinstance(e, tuple)] == [
        ("before", "sequential"), ("before", "InferType"), ("after", "InferType"), ("before", "FoldConstant"),
        ("after", "FoldConstant"), ("after", "sequential")]
    table = timing.render()
    assert table.splitlines()[0].split() == ["pass", "runs", "ms", "%"]
    assert {line.split()[0] for line in table.splitlines()[1:]} == {"sequential", "InferType", "FoldConstant"}


def test_a_trace_function_sees_every_pass_as_before_v08():
    """TVM before v0.8: PassContext(trace=fn), fn(mod, info, is_before) around every
    pass (v0.7's use_pass_infra prints the module before each)."""
    from tecc import graph as G
    from tecc.graph.transform import FoldConstant, InferType, Sequential

    x = G.Var("x", G.TensorType((4,)))
    mod = G.Module.from_expr(G.Function([x], G.call("add", x, G.const(np.ones(4, "float32")))))
    seen = []
    with PassContext(opt_level=3, trace=lambda m, info, before: seen.append((info.name, before, type(m).__name__))):
        Sequential([InferType(), FoldConstant()])(mod)
    assert seen[:3] == [("sequential", True, "Module"), ("InferType", True, "Module"), ("InferType", False, "Module")]
    assert seen[-1] == ("sequential", False, "Module")
    with pytest.raises(TeccTypeError, match=r"PassContext trace must be a function \(mod, info, is_before\)"):
        PassContext(trace="print")


def test_override_instruments_and_printing(capsys):
    first, second = Recorder(), Recorder()
    with PassContext(instruments=[first]) as ctx:
        ctx.override_instruments([second, tecc.instrument.PassPrintingInstrument(["simplify"], [])])
        s, A, B = _vector_add()
        tecc.lower(s, [A, B])
    assert first.events == ["enter", "exit"] and second.events[0] == "enter" and second.events[-1] == "exit"
    assert "# before simplify\n" in capsys.readouterr().out


def test_bad_instruments_are_refused():
    with pytest.raises(TeccTypeError, match=r"instruments\[0\] is the class Recorder; give an instance: Recorder\(\)"):
        PassContext(instruments=[Recorder])
    with pytest.raises(TeccTypeError, match=r"instruments\[1\] \(int\) has none of the hooks"):
        PassContext(instruments=[Recorder(), 3])
    with pytest.raises(TeccTypeError, match=r"class 'Empty' defines none of the hooks"):
        @tecc.instrument.pass_instrument
        class Empty:
            pass


def test_instrument_errors_follow_tvms_rules():
    log = []

    @tecc.instrument.pass_instrument
    class Probe:
        def __init__(self, name, fail=""):
            self.name_, self.fail = name, fail

        def enter_pass_ctx(self):
            log.append((self.name_, "enter"))
            if self.fail == "enter":
                raise ValueError(f"{self.name_} enter")

        def exit_pass_ctx(self):
            log.append((self.name_, "exit"))
            if self.fail == "exit":
                raise ValueError(f"{self.name_} exit")

    # a failed enter: those entered before it exit, the instruments are dropped
    ctx = PassContext(instruments=[Probe("a"), Probe("b", "enter"), Probe("c")])
    with pytest.raises(ValueError, match="b enter"):
        with ctx:
            pass
    assert log == [("a", "enter"), ("b", "enter"), ("a", "exit")] and ctx.instruments == ()
    assert PassContext.current() is not ctx  # the failed with left no context behind
    # a failed exit: the ones after it are not exited, and the instruments are dropped
    log.clear()
    ctx = PassContext(instruments=[Probe("a"), Probe("b", "exit"), Probe("c")])
    with pytest.raises(ValueError, match="b exit"):
        with ctx:
            pass
    assert log[-2:] == [("a", "exit"), ("b", "exit")] and ctx.instruments == ()
    # override_instruments on the context outside every with: old ones exit, new ones enter
    log.clear()
    outer = PassContext.current()
    outer.override_instruments([Probe("x")])
    try:
        assert log == [("x", "enter")]
    finally:
        outer.override_instruments([])
    assert log == [("x", "enter"), ("x", "exit")]
