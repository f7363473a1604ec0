"""The pass engine (tir/transform/pipeline.py): the named pipelines, options,
PassContext, printing, timing, the verifier switch, and passes that change nothing
handing back the module they were given."""
import io as _io
from dataclasses import replace

import numpy as np
import pytest

from tecc import tir
from tecc.errors import TeccError
from tecc.tir.stmt import BufferStore, For, ForKind, IfThenElse, seq
from tecc.tir.transform import pipeline as P
from tecc.tir.analysis import run_prim_func, verify_well_formed
from tecc.tir.transform import (
    CPU_PIPELINE, CUDA_PIPELINE, GENERIC_PIPELINE, FunctionPass, ModulePass, PassConfigError, PassContext,
    PassOptions, list_passes, run_pipeline,
)
from irhelpers import buf1d, kernel, loop, lowered_func, single_launch, store, var

c = tir.const


def guarded_matmul(n=10, f=4):
    """C = A @ B with the j axis split by a non-dividing factor and vectorized inside."""
    A, B, C = (tir.decl_buffer((n, n), "float32", name) for name in "ABC")
    i, k, jo, ji = tir.Var("i"), tir.Var("k"), tir.Var("j.outer"), tir.Var("j.inner")
    j = jo * f + ji
    init = IfThenElse(tir.likely(j < n), BufferStore(C, c(0.0), (i, j)))
    upd = IfThenElse(tir.likely(j < n), BufferStore(C, C[i, j] + A[i, k] * B[k, j], (i, j)))
    body = loop(i, n, loop(jo, (n + f - 1) // f, seq(
        loop(ji, f, init, ForKind.VECTORIZED),
        loop(k, n, loop(ji, f, upd, ForKind.UNROLLED)))))
    return lowered_func("mm", [A, B, C], body)


def run_mm(func, n=10):
    rng = np.random.default_rng(1)
    a, b = rng.random((n, n), dtype=np.float32), rng.random((n, n), dtype=np.float32)
    out = np.full((n, n), 7.0, np.float32)
    run_prim_func(func, a, b, out)
    return a @ b, out


def lowered(func, options):
    """The function ``func`` after the pipeline of ``options`` (run on its module)."""
    return run_pipeline(func, options)[func.name]


def test_pipeline_is_a_literal_named_list():
    assert list_passes(PassOptions()) == [p.name for p in CPU_PIPELINE]
    assert list_passes(PassOptions())[0] == "flatten"
    assert list_passes(PassOptions())[-1] == "promote_local_registers"
    cuda = list_passes(PassOptions(target_kind="cuda"))
    assert cuda[0] == "flatten" and "inject_virtual_thread" in cuda and "loop_partition" not in cuda
    # host/device split, thread reductions and register promotion are passes too
    assert cuda.index("split_host_device") < cuda.index("lower_thread_allreduce") < cuda.index("thread_sync")
    assert cuda[-3:] == ["promote_local_registers", "infer_fragment", "verify_gpu"]
    # both begin with the target-independent part that lower() runs without a target
    generic = list_passes(PassOptions(target_kind=None))
    assert generic == [p.name for p in GENERIC_PIPELINE]
    assert CPU_PIPELINE[:len(generic)] == GENERIC_PIPELINE == CUDA_PIPELINE[:len(generic)]


def test_generic_run_then_target_run_equals_one_target_run():
    f = guarded_matmul()
    generic = run_pipeline(f, PassOptions(target_kind=None))
    assert generic.attrs["tecc.lowered"] == "generic"
    out = _io.StringIO()
    rest = run_pipeline(generic, PassOptions(print_after=("all",)), stream=out)
    headers = [ln.split()[2] for ln in out.getvalue().splitlines() if ln.startswith("# after")]
    assert headers == list_passes(PassOptions())[len(GENERIC_PIPELINE):]
    whole = run_pipeline(f, PassOptions())
    tir.assert_structural_equal(rest["mm"], whole["mm"])
    assert run_pipeline(whole, PassOptions()).attrs["tecc.lowered"] == "c"  # nothing left to run
    with pytest.raises(TeccError, match="lowered for target kind 'c'"):
        run_pipeline(whole, PassOptions(target_kind="cuda"))


def test_passes_that_change_nothing_return_their_module():
    """A FunctionPass whose function returns its input, and the split of a module that
    is split already, hand back the very module they were given."""
    flat = run_pipeline(guarded_matmul(), PassOptions(target_kind=None))
    flatten_pass = next(p for p in GENERIC_PIPELINE if p.name == "flatten")
    assert isinstance(flatten_pass, FunctionPass)
    assert flatten_pass(flat, PassOptions()) is flat
    split = next(p for p in CUDA_PIPELINE if p.name == "split_host_device")
    assert isinstance(split, ModulePass)
    tx = var("threadIdx.x")
    A = buf1d("A", 32)
    host, kernels = single_launch("k", kernel("k", [A], store(A, 1.0, tx), [(tx, 32)]), [A])
    mod = tir.IRModule({host.name: host, **kernels})
    assert split(mod, PassOptions(target_kind="cuda")) is mod


def test_pass_options_are_hashable_cache_keys():
    a = PassOptions(print_after=["flatten"])
    b = PassOptions(print_after=("flatten",))
    assert a == b and hash(a) == hash(b)
    assert {a: 1}[b] == 1
    assert PassOptions(verify=True) != PassOptions()
    with pytest.raises(TeccError):
        PassOptions(target_kind="llvm-ish")


def test_pipeline_end_to_end_matches_numpy():
    f = guarded_matmul()
    g = lowered(f, PassOptions(verify=True))
    verify_well_formed(g, require_flat=True)
    want, got = run_mm(g)
    np.testing.assert_allclose(got, want, rtol=1e-5)
    # the main part of the j.outer loop is vectorized, guard-free code
    text = tir.to_text(g)
    assert "ramp(" in text


@pytest.mark.parametrize("opts", [
    PassOptions(vectorize=False), PassOptions(loop_partition=False), PassOptions(unroll_max_extent=0),
])
def test_pipeline_options_keep_results(opts):
    g = lowered(guarded_matmul(), replace(opts, verify=True))
    want, got = run_mm(g)
    np.testing.assert_allclose(got, want, rtol=1e-5)


def test_print_after_marks_unchanged_passes():
    f = guarded_matmul()
    out = _io.StringIO()
    run_pipeline(f, PassOptions(print_after=("all",)), stream=out)
    text = out.getvalue()
    headers = [ln for ln in text.splitlines() if ln.startswith("# after")]
    assert [h.split()[2] for h in headers] == list_passes(PassOptions())
    assert headers[0] == "# after flatten"
    # flattening an already flat function changes nothing
    out2 = _io.StringIO()
    g = lowered(f, PassOptions(print_after=("flatten",)))
    run_pipeline(g, PassOptions(print_after=("flatten",), print_before=("remove_no_op",)), stream=out2)
    text2 = out2.getvalue()
    assert "# after flatten (unchanged)" in text2
    assert "# before remove_no_op" in text2
    assert "primfn mm(" in text2


def test_print_after_defaults_to_stdout(capsys):
    run_pipeline(guarded_matmul(), PassOptions(print_after=("vectorize",)))
    assert "# after vectorize" in capsys.readouterr().out


def test_timing_table():
    out = _io.StringIO()
    run_pipeline(guarded_matmul(), PassOptions(timing=True), stream=out)
    lines = out.getvalue().splitlines()
    assert lines[0].startswith(f"# pass timing ({len(list_passes(PassOptions()))} passes")
    rows = lines[2:]
    assert [r.split()[0] for r in rows] == list_passes(PassOptions())
    assert all(float(r.split()[1]) >= 0 for r in rows)


def _broken_pass(func, options):
    """Rebinds the first loop's variable inside itself: an ill-formed IR."""
    outer = func.body
    assert isinstance(outer, For)
    bad = replace(outer, body=For(outer.loop_var, c(0), c(2), ForKind.SERIAL, outer.body))
    return func.with_body(bad)


def test_verify_switch_names_the_broken_pass(monkeypatch):
    broken = list(CPU_PIPELINE)
    broken.insert(3, FunctionPass("my_broken_pass", _broken_pass))
    monkeypatch.setattr(P, "CPU_PIPELINE", broken)
    f = guarded_matmul()
    # without the switch the broken IR goes through
    run_pipeline(f, PassOptions())
    with pytest.raises(AssertionError) as err:
        run_pipeline(f, PassOptions(verify=True))
    msg = str(err.value)
    assert "after pass 'my_broken_pass'" in msg
    assert "bound again" in msg
    assert "for (i, 0, 2)" in msg  # the printed IR around the bad node


def test_pass_context_sets_default_options():
    assert PassContext.current().pass_options() == PassOptions()
    cfg = {"tir.print_after": ["flatten"], "tir.verify": True, "tir.unroll_max_extent": 4,
           "tir.disable_vectorize": True}
    with PassContext(opt_level=3, config=cfg) as ctx:
        assert PassContext.current() is ctx
        opts = ctx.pass_options()
        assert opts.print_after == ("flatten",) and opts.verify and opts.unroll_max_extent == 4
        assert not opts.vectorize and opts.loop_partition
        with PassContext(opt_level=0):
            inner = PassContext.current().pass_options()
            assert not inner.vectorize and not inner.loop_partition
        assert PassContext.current() is ctx
        out = _io.StringIO()
        run_pipeline(guarded_matmul(), stream=out)
        assert out.getvalue().startswith("# after flatten\n")
    assert PassContext.current().pass_options() == PassOptions()
    with PassContext(disabled_pass=["loop_partition"]):
        assert not PassContext.current().pass_options().loop_partition


def test_pass_context_rejects_bad_config():
    with pytest.raises(PassConfigError, match="unknown PassContext config key"):
        PassContext(config={"tir.print_afterr": ["flatten"]})
    with pytest.raises(PassConfigError, match="unknown pass"):
        PassContext(config={"tir.print_after": ["flaten"]})
    with pytest.raises(TeccError, match="must be a bool"):
        PassContext(config={"tir.verify": "yes"})


def _recording_pass(seen, phase):
    """A user pass (TVM's prim_func_pass) noting what IR it saw at ``phase``."""

    @tir.transform.prim_func_pass(opt_level=0, name=f"phase{phase}")
    def look(func, mod, ctx):
        kinds = set()
        tir.stmt_functor.post_order_visit(func.body, lambda n: kinds.add(type(n).__name__))
        loads = []
        tir.stmt_functor.post_order_visit(func.body, lambda n: loads.append(n) if type(n).__name__ == "BufferLoad"
                                          else None)
        seen[phase] = {"dims": max(len(ld.indices) for ld in loads),
                       "ramp": any(type(i).__name__ == "Ramp" for ld in loads for i in ld.indices),
                       "attrs": dict(mod.attrs)}
        return func

    return look


@pytest.mark.parametrize("target", ["llvm", "cuda"])
def test_add_lower_pass_runs_user_passes_at_their_phases(target):
    import tecc
    from tecc import te

    A = te.placeholder((4, 32), name="A")
    B = te.compute((4, 32), lambda i, j: A[i, j] * 2.0, name="B")
    s = te.create_schedule(B.op)
    if target == "cuda":
        s[B].bind(B.op.axis[0], te.thread_axis("blockIdx.x"))
        jo, ji = s[B].split(B.op.axis[1], factor=4)
        s[B].bind(jo, te.thread_axis("threadIdx.x"))
        s[B].vectorize(ji)
    else:
        s[B].vectorize(s[B].split(B.op.axis[1], factor=8)[1])
    seen = {}
    cfg = {"tir.add_lower_pass": [(ph, _recording_pass(seen, ph)) for ph in (3, 1, 0, 2)]}
    with PassContext(config=cfg):
        names = P.list_passes(PassContext.current().pass_options(target_kind="cuda" if target == "cuda" else "c"))
        f = tecc.build(s, [A, B], target=target)
    assert names[0] == "phase0" and names[names.index("flatten") + 1] == "phase1"
    assert names[names.index("vectorize") + 1] == "phase2" and names[names.index("remove_no_op") + 1] == "phase3"
    assert seen[0]["dims"] == 2 and seen[1]["dims"] == 1           # before and after flatten
    assert not seen[1]["ramp"] and seen[2]["ramp"] and seen[3]["ramp"]  # vector code from phase 2 on
    dev = tecc.device(target)
    a = np.random.default_rng(0).standard_normal((4, 32)).astype("float32")
    b = tecc.nd.array(np.zeros((4, 32), "float32"), dev)
    f(tecc.nd.array(a, dev), b)
    np.testing.assert_allclose(b.numpy(), a * 2)


def test_add_lower_pass_rewrites_what_is_built():
    """The tutorial's kind of pass: a phase-1 pass that changes the code (here: every
    store doubled), seen in the lowered text and in the results."""
    import tecc
    from tecc import te

    A = te.placeholder((16,), name="A")
    B = te.compute((16,), lambda i: A[i] + 1.0, name="B")
    s = te.create_schedule(B.op)

    @tir.transform.prim_func_pass(opt_level=0)
    def double_stores(func, mod, ctx):
        def rewrite(node):
            return BufferStore(node.buffer, node.value * tir.const(2.0, "float32"), node.indices)
        return func.with_body(tir.stmt_functor.ir_transform(func.body, None, rewrite, ["tir.BufferStore"]))

    with PassContext(config={"tir.add_lower_pass": [(1, double_stores)]}):
        text = str(tecc.lower(s, [A, B]))
        f = tecc.build(s, [A, B], target="llvm")
    assert "*2f" in text.replace(" ", "")
    a = np.arange(16, dtype="float32")
    b = tecc.nd.array(np.zeros(16, "float32"))
    f(tecc.nd.array(a), b)
    np.testing.assert_allclose(b.numpy(), (a + 1) * 2)
    g = tecc.build(s, [A, B], target="llvm")  # outside the context: the pass is gone
    g(tecc.nd.array(a), b)
    np.testing.assert_allclose(b.numpy(), a + 1)


def test_add_lower_pass_rejects_bad_entries():
    ok = _recording_pass({}, 1)
    with pytest.raises(PassConfigError, match=r"phase 5 of .* must be 0, 1, 2 or 3"):
        PassContext(config={"tir.add_lower_pass": [(5, ok)]})
    with pytest.raises(TeccError, match=r"is not a pass; make one with tecc.tir.transform.prim_func_pass"):
        PassContext(config={"tir.add_lower_pass": [(1, lambda f, m, c: f)]})
    with pytest.raises(TeccError, match=r"each entry is \(phase, pass\)"):
        PassContext(config={"tir.add_lower_pass": [ok]})


@pytest.mark.parametrize("symbolic", [False, True])
@pytest.mark.parametrize("kind", [ForKind.SERIAL, ForKind.VECTORIZED, ForKind.UNROLLED])
def test_random_split_schedules_match_numpy(symbolic, kind):
    """Differential: 2-D elementwise op with a non-dividing split of the inner axis."""
    rng = np.random.default_rng(hash((symbolic, kind.value)) % 2**32)
    for _ in range(4):
        rows, cols, factor = int(rng.integers(1, 4)), int(rng.integers(1, 20)), int(rng.choice([2, 3, 4, 8]))
        m = tir.SizeVar("m") if symbolic else cols
        A, B = tir.decl_buffer((rows, m), "float32", "A"), tir.decl_buffer((rows, m), "float32", "B")
        i, jo, ji = tir.Var("i"), tir.Var("jo"), tir.Var("ji")
        j = jo * factor + ji
        store = BufferStore(B, A[i, j] * 2.0 + 1.0, (i, j))
        body = loop(i, rows, loop(jo, (m + factor - 1) // factor,
                                  loop(ji, factor, IfThenElse(tir.likely(j < m), store), kind)))
        f = lowered_func("ew", [A, B, m] if symbolic else [A, B], body)
        g = lowered(f, PassOptions(verify=True))
        a = rng.random((rows, cols), dtype=np.float32)
        out = np.zeros((rows, cols), np.float32)
        run_prim_func(g, a, out)
        np.testing.assert_allclose(out, a * 2 + 1, rtol=1e-6, err_msg=tir.to_text(g))
