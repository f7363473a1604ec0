"""TVM's pass objects over tecc's one pass engine: ``tir.transform.<Pass>()``,
``transform.Sequential``, ``module_pass``, ``prim_func_pass``, ``Apply``, and the
storage reuse of ``StorageRewrite``; modules transformed by them build and run for
"llvm" and "cuda" (emulated without a GPU)."""
import io
import warnings
from contextlib import redirect_stdout

import numpy as np
import pytest

import tecc
from tecc import te, tir
from tecc.errors import TeccTypeError
from tecc.tir.transform import pipeline as P
from tecc.topi import cuda as K
from irhelpers import private_cache_dir  # noqa: F401  (an autouse fixture)


def _run(mod, *arrays):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # the GPU emulator's notice
        mod(*arrays)
    return arrays


def _chain(n=64):
    """A -> B1 -> B2 -> B3 -> B4 -> C, every stage at root (four intermediate buffers);
    C also reads B1, so B1 lives to the end."""
    A = te.placeholder((n,), name="A")
    B1 = te.compute((n,), lambda i: A[i] * 2.0, name="B1")
    B2 = te.compute((n,), lambda i: B1[i] + 1.0, name="B2")
    B3 = te.compute((n,), lambda i: B2[i] * 3.0, name="B3")
    B4 = te.compute((n,), lambda i: B3[i] - 1.0, name="B4")
    C = te.compute((n,), lambda i: B4[i] + B1[0], name="C")
    return te.create_schedule(C.op), [A, C]


def _chain_ref(a):
    b1 = a * 2
    return ((b1 + 1) * 3 - 1) + b1[0]


def _allocated(func):
    found = []
    tir.stmt_functor.pre_order_visit(func.body, lambda n: found.append(n.buffer.name)
                                     if isinstance(n, tir.Allocate) else None)
    return found


# ---------------------------------------------------------------------------------------
# the modules and the pass objects
# ---------------------------------------------------------------------------------------
def test_tecc_transform_is_the_generic_infrastructure_and_imports_as_a_module():
    import importlib
    mod = importlib.import_module("tecc.transform")
    assert tecc.transform is mod
    assert mod.PassContext is tir.transform.PassContext
    assert isinstance(mod.Sequential([tir.transform.Simplify()]), tir.transform.Sequential)
    assert not hasattr(mod, "Simplify")  # the tir passes live in tir.transform


@pytest.mark.parametrize("make, name", [
    (lambda: tir.transform.StorageFlatten(64), "flatten"),
    (tir.transform.Simplify, "simplify"),
    (tir.transform.StorageRewrite, "storage_rewrite"),
    (tir.transform.VectorizeLoop, "vectorize"),
    (tir.transform.UnrollLoop, "unroll"),
    (tir.transform.RemoveNoOp, "remove_no_op"),
    (tir.transform.LoopPartition, "loop_partition"),
    (tir.transform.InjectVirtualThread, "inject_virtual_thread"),
    (tir.transform.InjectDoubleBuffer, "inject_double_buffer"),
    (tir.transform.InjectPrefetch, "inject_prefetch"),
    (tir.transform.SplitHostDevice, "split_host_device"),
    (tir.transform.LowerThreadAllreduce, "lower_thread_allreduce"),
    (lambda: tir.transform.ThreadSync("shared"), "thread_sync"),
])
def test_each_tvm_pass_is_a_pass_of_the_engine(make, name):
    p = make()
    assert isinstance(p, tecc.transform.Pass) and p.name == name and p.info.name == name
    assert name in {q.name for q in P.CPU_PIPELINE + P.CUDA_PIPELINE} | {"storage_rewrite"}


def test_the_pipelines_passes_are_the_ones_tvms_names_give():
    assert tir.transform.Simplify() == P.FunctionPass("simplify", P._simplify)
    assert tir.transform.InjectPrefetch() in P.GENERIC_PIPELINE
    assert tir.transform.StorageFlatten(64) in P.GENERIC_PIPELINE
    assert tir.transform.SplitHostDevice() in P.CUDA_PIPELINE


def test_passes_map_a_module_to_a_module_and_keep_it_when_nothing_changes():
    A = te.placeholder((8, 8), name="A")
    B = te.compute((8, 8), lambda i, j: A[i, j] * 2.0, name="B")
    raw = tecc.driver.build_module.schedule_to_module(te.create_schedule(B.op), [A, B])
    flat = tir.transform.StorageFlatten(64)(raw)
    assert isinstance(flat, tecc.IRModule) and flat is not raw
    assert tir.transform.StorageFlatten(64)(flat) is flat
    assert tir.transform.RemoveNoOp()(flat) is flat


def test_inject_prefetch_after_storage_flatten_as_tvm_orders_them():
    # TVM's flow: lower the schedule to a module, flatten, then InjectPrefetch
    n = 64
    k = te.reduce_axis((0, n), name="k")
    A = te.placeholder((n, n), name="A")
    B = te.compute((n,), lambda i: te.sum(A[i, k], axis=k), name="B")
    s = te.create_schedule(B.op)
    ko, _ = s[B].split(k, factor=16)
    s[B].prefetch(A, ko, 1)
    raw = tecc.driver.build_module.schedule_to_module(s, [A, B])
    mod = tir.transform.InjectPrefetch()(tir.transform.StorageFlatten(64)(raw))
    assert "tir.prefetch(A[i*64 + k.outer*16 + 16])" in str(mod["main"])
    assert tir.transform.InjectPrefetch()(mod) is mod


def test_sequential_runs_through_the_engine_printing_and_skipping_disabled_passes():
    s, args = _chain()
    raw = tecc.driver.build_module.schedule_to_module(s, args)
    seq = tecc.transform.Sequential([tir.transform.StorageFlatten(64), tir.transform.Simplify(),
                                     tir.transform.RemoveNoOp()])
    out = io.StringIO()
    with tecc.transform.PassContext(config={"tir.print_after": ["simplify"]}), redirect_stdout(out):
        seq(raw)
    assert "# after simplify" in out.getvalue()
    out = io.StringIO()
    with tecc.transform.PassContext(disabled_pass=["tir.Simplify"], config={"tir.print_after": ["all"]}), \
            redirect_stdout(out):
        seq(raw)
    assert "# after flatten" in out.getvalue() and "simplify" not in out.getvalue()
    # a Sequential is a pass too
    outer = tecc.transform.Sequential([seq, tir.transform.StorageRewrite()])
    assert isinstance(outer(raw), tecc.IRModule)


def test_module_pass_and_prim_func_pass_as_functions_and_classes():
    s, args = _chain()
    mod = tecc.lower(s, args)
    seen = []

    @tecc.transform.module_pass(opt_level=0)
    def count(m, ctx):
        seen.append((len(m), type(ctx).__name__))
        return m

    assert count.name == "count" and count(mod) is mod and seen == [(1, "PassContext")]

    @tir.transform.prim_func_pass(opt_level=0, name="tag")
    def tag(func, m, ctx):
        return func.with_attr("tagged", True)

    tagged = tag(mod)
    assert tagged["main"].attrs["tagged"] is True and "tagged" not in mod["main"].attrs

    @tir.transform.prim_func_pass(opt_level=0)
    class Rename:
        def __init__(self, name):
            self.name = name

        def transform_function(self, func, m, ctx):
            return func.with_attr("global_symbol", self.name)

    renamed = Rename("renamed")(mod)
    assert renamed["main"].name == "renamed"

    @tecc.transform.module_pass
    class Keep:
        def transform_module(self, m, ctx):
            return m

    assert Keep()(mod) is mod


def test_apply_changes_every_function():
    s, args = _chain()
    mod = tecc.lower(s, args)
    target = tecc.target.Target("cuda")
    new = tir.transform.Apply(lambda f: f.with_attr("target", target))(mod)
    assert all(f.attrs["target"] is target for f in new.functions.values())


# ---------------------------------------------------------------------------------------
# user errors
# ---------------------------------------------------------------------------------------
def test_pass_errors_name_the_pass_and_the_fix():
    s, args = _chain()
    mod = tecc.lower(s, args)
    with pytest.raises(TeccTypeError, match=r"'simplify' maps an IRModule.*PrimFunc.*IRModule.from_expr"):
        tir.transform.Simplify()(mod["main"])
    with pytest.raises(TeccTypeError, match=r"'apply' turned function 'main' into a NoneType"):
        tir.transform.Apply(lambda f: None)(mod)
    with pytest.raises(TeccTypeError, match=r"'bad' returned a int; a module pass must return an IRModule"):
        tecc.transform.module_pass(lambda m, ctx: 1, name="bad")(mod)
    with pytest.raises(TeccTypeError, match=r"Sequential 'seq': entry 1 is a str"):
        tecc.transform.Sequential([tir.transform.Simplify(), "Simplify"], name="seq")
    with pytest.raises(P.PassConfigError, match=r"ThreadSync\('warp'\).*'shared' memory only"):
        tir.transform.ThreadSync("warp")
    with pytest.raises(P.PassConfigError, match="cache_line_size must be a positive int"):
        tir.transform.StorageFlatten(0)
    with pytest.raises(AttributeError, match=r"no pass 'MakePackedAPI'.*Simplify"):
        tir.transform.MakePackedAPI()


def test_lower_thread_allreduce_on_an_unsplit_gpu_function_lowers_each_kernel_nest():
    # as TVM's test_reduce_storage_reuse runs it: before SplitHostDevice
    s, args = K.softmax_rows(4, 64, num_thread=32)
    mod = tecc.lower(s, args, name="softmax")
    low = tir.transform.LowerThreadAllreduce()(mod)
    assert "tecc.thread_allreduce" in str(mod["softmax"]) and "tecc.thread_allreduce" not in str(low["softmax"])
    m = tecc.build(low, target="cuda")
    x = np.random.default_rng(0).standard_normal((4, 64)).astype("float32")
    y = np.zeros_like(x)
    _run(m, x, y)
    e = np.exp(x - x.max(axis=1, keepdims=True))
    np.testing.assert_allclose(y, e / e.sum(axis=1, keepdims=True), rtol=1e-5, atol=1e-6)


# ---------------------------------------------------------------------------------------
# GPU passes composed by hand
# ---------------------------------------------------------------------------------------
def test_split_allreduce_and_sync_by_hand_build_and_run_on_cuda():
    s, args = K.softmax_rows(4, 64, num_thread=32)
    mod = tecc.lower(s, args, name="softmax")
    seq = tecc.transform.Sequential([
        tir.transform.SplitHostDevice(), tir.transform.LowerThreadAllreduce(),
        tir.transform.ThreadSync("shared"), tir.transform.Simplify(),
    ])
    split = seq(mod)
    assert sorted(split.functions) == ["softmax", "softmax_kernel0"]
    assert "tvm_storage_sync" in str(split["softmax_kernel0"])
    m = tecc.build(split, target="cuda")
    x = np.random.default_rng(0).standard_normal((4, 64)).astype("float32")
    y = np.zeros_like(x)
    _run(m, x, y)
    e = np.exp(x - x.max(axis=1, keepdims=True))
    np.testing.assert_allclose(y, e / e.sum(axis=1, keepdims=True), rtol=1e-5, atol=1e-6)


# ---------------------------------------------------------------------------------------
# StorageRewrite
# ---------------------------------------------------------------------------------------
def test_storage_rewrite_reuses_a_dead_buffer_of_the_same_kind():
    s, args = _chain()
    mod = tecc.lower(s, args)
    assert _allocated(mod["main"]) == ["B1", "B2", "B3", "B4"]
    new = tir.transform.StorageRewrite()(mod)
    # B4 takes over B2 (dead once B3 is computed); B1 is read to the end, B3 by B4
    assert _allocated(new["main"]) == ["B1", "B2", "B3"]
    stores = {}
    tir.stmt_functor.post_order_visit(new["main"].body, lambda n: stores.setdefault(n.buffer.name, n.buffer.data.name)
                                      if isinstance(n, tir.BufferStore) else None)
    assert stores["B4"] == "B2"
    assert tir.transform.StorageRewrite()(new) is new  # nothing left to reuse


@pytest.mark.parametrize("target", ["llvm", "cuda"])
def test_storage_rewrite_keeps_results(target):
    s, args = _chain()
    if target == "cuda":
        for stage in s.stages:
            if stage.op.name in ("B1", "B2", "B3", "B4", "C"):
                bx, tx = stage.split(stage.op.axis[0], factor=32)
                stage.bind(bx, te.thread_axis("blockIdx.x"))
                stage.bind(tx, te.thread_axis("threadIdx.x"))
    mod = tecc.lower(s, args)
    new = tir.transform.StorageRewrite()(mod)
    assert len(_allocated(new["main"])) == 3
    m = tecc.build(new, target=target)
    a = np.random.default_rng(3).standard_normal(64).astype("float32")
    c = np.zeros(64, "float32")
    _run(m, a, c)
    np.testing.assert_allclose(c, _chain_ref(a), rtol=1e-6)


def test_storage_rewrite_leaves_buffers_of_other_sizes_dtypes_or_taken_addresses():
    n = 16
    A = tir.decl_buffer((n,), "float32", "A")
    ib = tir.ir_builder.create()
    a = ib.buffer_ptr(A)
    t1 = ib.allocate("float32", n, name="t1")
    t2 = ib.allocate("float32", 2 * n, name="t2")     # another size
    t3 = ib.allocate("int32", n, name="t3")           # another dtype
    t4 = ib.allocate("float32", n, name="t4", scope="local")  # another scope
    t5 = ib.allocate("float32", n, name="t5")         # passed by address below
    t1[0] = a[0]
    a[1] = t1[0]
    t2[0] = a[2]
    t3[0] = 1
    t4[0] = a[3]
    ib.emit(tir.call_extern("int32", "use", t5.asobject().access_ptr("w")))
    a[4] = t2[0] + t4[0] + t3[0].astype("float32")
    f = tir.PrimFunc([A], ib.get()).with_attr("global_symbol", "f")
    mod = tecc.IRModule.from_expr(f)
    assert tir.transform.StorageRewrite()(mod) is mod
