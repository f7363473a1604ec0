"""TVM's TIR Python API on tecc's IR: ``tir.decl_buffer`` and ``Buffer`` (strides,
``elem_offset``, ``access_ptr``, ``vload``/``vstore``), ``tir.Allocate``'s views,
``tir.PrimFunc`` and ``tecc.IRModule``, ``tir.stmt_functor``; hand-written functions
built and run for "llvm" and "cuda" (emulated without a GPU)."""
import warnings

import numpy as np
import pytest

import tecc
from tecc import te, tir
from tecc.errors import LoweringError, TeccTypeError
from tecc.tir import keys
from irhelpers import private_cache_dir  # noqa: F401  (an autouse fixture)


def _run(mod, *arrays):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # the GPU emulator's notice
        mod(*arrays)
    return arrays


# ---------------------------------------------------------------------------------------
# decl_buffer and Buffer
# ---------------------------------------------------------------------------------------
def test_decl_buffer_takes_tvms_parameters_in_tvms_order():
    data = tir.Var("p", "handle")
    n = te.var("n")
    b = tir.decl_buffer((n, 8), "float16", "B", data, [8 * 2, 2], te.var("off"), "shared", 32, 4)
    assert (b.name, b.dtype, b.data, b.scope) == ("B", "float16", data, "shared")
    assert [str(s) for s in b.shape] == ["n", "8"]
    assert [int(s) for s in b.strides] == [16, 2]
    assert b.elem_offset.name == "off"
    assert (b.data_alignment, b.offset_factor) == (32, 4)


def test_decl_buffer_defaults_match_tvm():
    b = tir.decl_buffer(16)
    assert b.name == "buffer" and b.dtype == "float32" and [int(s) for s in b.shape] == [16]
    assert b.scope == "global" and b.strides == ()
    assert isinstance(b.elem_offset, tir.IntImm) and b.elem_offset.value == 0
    assert (b.data_alignment, b.offset_factor) == (64, 1)
    assert b.data.dtype == "handle" and b.data.name == "buffer"


def test_offset_factor_without_elem_offset_makes_an_offset_variable():
    b = tir.decl_buffer((4, 4), name="W", offset_factor=16)
    assert isinstance(b.elem_offset, tir.Var) and b.elem_offset.name == "W_elem_offset"
    assert b.offset_factor == 16
    # offset_of counts from data: strides and the offset
    (off,) = b.offset_of((1, 2))
    assert str(off) == "6 + W_elem_offset"


def test_symbolic_strides_are_kept():
    ld = te.var("ldw")
    b = tir.decl_buffer((4, 4), name="W", strides=[ld, 1])
    assert b.strides[0] is ld
    (off,) = b.offset_of((2, 3))
    assert "ldw" in str(off)


@pytest.mark.parametrize("call, message", [
    (lambda: tir.decl_buffer((4,), "float32", "A", "shared"), r"'A'.*data must be a handle Var.*scope='shared'"),
    (lambda: tir.decl_buffer((4, 4), name="A", strides=[1]), r"'A'.*1 strides for 2 dimensions"),
    (lambda: tir.decl_buffer((4,), name="A", axis_separators=[1]), r"'A'.*axis_separators.*one dimension"),
    (lambda: tir.decl_buffer((4,), name="A", buffer_type="auto_broadcast"), r"'A'.*auto_broadcast"),
    (lambda: tir.decl_buffer((4,), name="A", offset_factor=-1), r"'A'.*offset_factor"),
    (lambda: tir.decl_buffer((4,), name="A", data_alignment=0), r"'A'.*data_alignment"),
])
def test_decl_buffer_errors_name_the_buffer_and_the_fix(call, message):
    with pytest.raises(TeccTypeError, match=message):
        call()


def test_buffer_indexing_vload_and_vstore():
    b = tir.decl_buffer((4, 8), "float32", "A")
    i = te.var("i")
    load = b[i, 2]
    assert isinstance(load, tir.BufferLoad) and load.buffer is b
    v = b.vload((i, 4), "float32x4")
    assert v.dtype == "float32x4" and isinstance(v.indices[1], tir.Ramp) and v.indices[1].lanes == 4
    assert b.vload([1, 0]).dtype == "float32"
    st = b.vstore((i, 0), tir.Broadcast(tir.const(1.0, "float32"), 4))
    assert isinstance(st, tir.BufferStore) and st.indices[1].lanes == 4
    st1 = b.vstore((0, 0), 2.0)  # a number takes the buffer's dtype
    assert st1.value.dtype == "float32"


@pytest.mark.parametrize("call, message", [
    (lambda b: b[1], r"'A' has 2 dimensions.*1 indices"),
    (lambda b: b[0:2, 0], r"'A'.*slice"),
    (lambda b: b.vload((0, 0), "int32x4"), r"'A' holds float32.*int32x4"),
    (lambda b: b.vstore((0, 0), tir.const(1, "int32")), r"'A' holds float32.*int32"),
    (lambda b: b.access_ptr("x"), r"'A'.*access mask 'x'"),
])
def test_buffer_access_errors_name_the_buffer(call, message):
    with pytest.raises(TeccTypeError, match=message):
        call(tir.decl_buffer((4, 8), "float32", "A"))


def test_access_ptr_is_the_address_of_data_plus_elem_offset_plus_offset():
    off = te.var("off")
    b = tir.decl_buffer((4, 8), "float32", "A", elem_offset=off)
    p = b.access_ptr("rw", offset=3)
    assert isinstance(p, tir.Call) and p.op == keys.ACCESS_PTR and p.dtype == "handle"
    ann, data, start, extent, mask = p.args
    assert ann.op == keys.TYPE_ANNOTATION and ann.dtype == "float32"
    assert data is b.data
    assert str(start) == "off + 3" and str(extent) == "29"
    assert mask.value == tir.Buffer.READ | tir.Buffer.WRITE
    assert b.access_ptr("r").args[4].value == 1 and b.access_ptr(tir.Buffer.WRITE).args[4].value == 2
    # no offset at all: start is 0, the extent the whole buffer
    c = tir.decl_buffer((16,), "int8", "C")
    assert [str(a) for a in c.access_ptr("w").args[2:4]] == ["0", "16"]


def test_a_buffer_handed_out_for_writing_counts_as_written():
    from tecc.tir.analysis import written_data
    a, b = tir.decl_buffer((8,), name="A"), tir.decl_buffer((8,), name="B")
    stmt = tir.Evaluate(tir.call_extern("int32", "copy", b.access_ptr("w"), a.access_ptr("r")))
    assert written_data(stmt) == {b.data}


# ---------------------------------------------------------------------------------------
# statements
# ---------------------------------------------------------------------------------------
def test_allocate_shows_tvms_fields():
    ib = tir.ir_builder.create()
    buf = ib.allocate("float16", (97, 3), name="T", scope="local")
    buf[0, 0] = 1.0
    alloc = ib.get()
    assert isinstance(alloc, tir.Allocate)
    assert [e.value for e in alloc.extents] == [97, 3]
    assert alloc.dtype == "float16" and alloc.buffer_var is buf.asobject().data
    assert alloc.condition.value == 1


def test_allocate_extents_of_a_lowered_schedule():
    A = te.placeholder((97,), name="A")
    B = te.compute((97,), lambda i: A[i] + 1.0, name="B")
    C = te.compute((97,), lambda i: B[i] * 2.0, name="C")
    s = te.create_schedule(C.op)
    found = []
    tir.stmt_functor.post_order_visit(tecc.lower(s, [A, C])["main"].body,
                                      lambda n: found.append(n) if isinstance(n, tir.Allocate) else None)
    assert [a.extents[0].value for a in found] == [97]


def test_seqstmt_and_evaluate_take_tvms_arguments():
    a = tir.Evaluate(0)
    assert isinstance(a.value, tir.IntImm) and a.value.value == 0
    s = tir.SeqStmt([tir.Evaluate(1), tir.Evaluate(2)])
    assert isinstance(s.seq, tuple) and len(s) == 2


# ---------------------------------------------------------------------------------------
# PrimFunc and IRModule
# ---------------------------------------------------------------------------------------
def _scale_func(name, n=16, factor=2.0):
    A = tir.decl_buffer((n,), "float32", "A")
    B = tir.decl_buffer((n,), "float32", "B")
    ib = tir.ir_builder.create()
    a, b = ib.buffer_ptr(A), ib.buffer_ptr(B)
    with ib.for_range(0, n, name="i") as i:
        b[i] = a[i] * factor
    return tir.PrimFunc([A, B], ib.get()).with_attr("global_symbol", name), A, B


def test_primfunc_takes_buffers_and_vars_in_tvms_order():
    f, A, B = _scale_func("scale")
    assert f.params == (A.data, B.data) and f.buffer_map == {A.data: A, B.data: B}
    assert f.attrs["global_symbol"] == "scale" and f.name == "scale"
    n = tir.Var("n", "int32")
    g = tir.PrimFunc([A, n], f.body, None, None, {"global_symbol": "g"})
    assert g.params[1] is n and g.ret_type is None and g.name == "g"
    # tecc's earlier order, PrimFunc(params, body, buffer_map, attrs), still works
    h = tir.PrimFunc(f.params, f.body, f.buffer_map, {"global_symbol": "h"})
    assert h.buffer_map == f.buffer_map and h.name == "h"


def test_primfunc_with_attr_with_body_and_errors():
    f, _, _ = _scale_func("scale")
    g = f.with_attr({"target": "llvm", "tir.noalias": True})
    assert g.attrs["target"] == "llvm" and g.attrs["global_symbol"] == "scale" and "target" not in f.attrs
    assert f.with_body(f.body) is f
    body = tir.Evaluate(0)
    assert f.with_body(body).body is body
    with pytest.raises(TeccTypeError, match="parameter 1 is a str"):
        tir.PrimFunc([f.params[0], "B"], f.body)
    with pytest.raises(TeccTypeError, match="body must be a statement"):
        tir.PrimFunc([], tir.const(1))


def test_irmodule_from_a_dict_and_from_expr():
    f1, _, _ = _scale_func("f1")
    f2, _, _ = _scale_func("f2", factor=3.0)
    mod = tecc.IRModule({"first": f1, "second": f2})
    assert mod["first"] is f1 and len(mod) == 2
    assert tecc.IRModule.from_expr(f1)["f1"] is f1
    assert tecc.IRModule is tir.IRModule
    with pytest.raises(TeccTypeError, match="'bad' is a int"):
        tecc.IRModule({"bad": 1})
    with pytest.raises(TeccTypeError, match="from_expr takes a tir.PrimFunc"):
        tecc.IRModule.from_expr(f1.body)


def test_build_a_module_of_hand_written_functions_named_by_global_symbol():
    f1, _, _ = _scale_func("times_two")
    f2, _, _ = _scale_func("times_three", factor=3.0)
    m = tecc.build(tecc.IRModule({"a": f1, "b": f2}), None, "c")
    a = np.arange(16, dtype="float32")
    b2, b3 = np.zeros(16, "float32"), np.zeros(16, "float32")
    m["times_two"](a, b2)
    m["times_three"](a, b3)
    np.testing.assert_allclose(b2, a * 2)
    np.testing.assert_allclose(b3, a * 3)


def test_a_pointer_parameter_is_a_one_element_buffer():
    ib = tir.ir_builder.create()
    A = ib.pointer("float32", name="A")
    A[0] = A[0] + 1.0
    f = tir.PrimFunc([A], ib.get()).with_attr("global_symbol", "inc")
    (p,) = f.params
    assert f.buffer_map[p] is A.asobject() and [int(s) for s in A.asobject().shape] == [1]
    m = tecc.build(tecc.IRModule.from_expr(f), target="llvm")
    x = np.array([41.0], "float32")
    m(x)
    assert x[0] == 42.0


# ---------------------------------------------------------------------------------------
# layouts of parameters: elem_offset, symbolic strides
# ---------------------------------------------------------------------------------------
def _copy_2d_module(target, **layout):
    """A module copying (4, 8) arrays ``B = A``, ``A`` declared with ``layout``."""
    A = tir.decl_buffer((4, 8), "float32", "A", **layout)
    B = tir.decl_buffer((4, 8), "float32", "B")
    ib = tir.ir_builder.create()
    a, b = ib.buffer_ptr(A), ib.buffer_ptr(B)
    if target == "cuda":
        bx, tx = te.thread_axis("blockIdx.x"), te.thread_axis("threadIdx.x")
        ib.scope_attr(bx, "thread_extent", 4)
        ib.scope_attr(tx, "thread_extent", 8)
        b[bx, tx] = a[bx, tx]
    else:
        with ib.for_range(0, 4, name="i") as i:
            with ib.for_range(0, 8, name="j") as j:
                b[i, j] = a[i, j]
    f = tir.PrimFunc([A, B], ib.get()).with_attr("global_symbol", "copy2d")
    return tecc.build(f, target=target)


@pytest.mark.parametrize("target", ["llvm", "cuda"])
@pytest.mark.parametrize("layout", [
    {"offset_factor": 8},
    {"strides": [te.var("ldw"), 1]},
    {"strides": [te.var("ldw"), te.var("one")], "elem_offset": te.size_var("Aoffset")},
])
def test_parameter_layout_variables_take_the_layout_of_passed_arrays(target, layout):
    m = _copy_2d_module(target, **layout)
    a = np.random.default_rng(0).standard_normal((4, 8)).astype("float32")
    b = np.zeros((4, 8), "float32")
    _run(m, a, b)
    np.testing.assert_array_equal(b, a)


def test_constant_strides_that_are_not_compact_are_an_error_naming_the_buffer():
    with pytest.raises(LoweringError, match=r"'copy2d'.*'A' has stride 16 in dimension 0.*compact"):
        _copy_2d_module("llvm", strides=[16, 1])


# ---------------------------------------------------------------------------------------
# stmt_functor
# ---------------------------------------------------------------------------------------
def _loop_nest():
    f, A, B = _scale_func("scale", n=8)
    return f.body, A, B


def test_post_and_pre_order_visit():
    body, _, _ = _loop_nest()
    post, pre = [], []
    tir.stmt_functor.post_order_visit(body, lambda n: post.append(type(n).__name__))
    tir.stmt_functor.pre_order_visit(body, lambda n: pre.append(type(n).__name__))
    assert post[-1] == "For" and pre[0] == "For"
    assert "BufferStore" in post and "BufferLoad" in pre
    # returning False skips the children
    top = []
    tir.stmt_functor.pre_order_visit(body, lambda n: top.append(n) or False)
    assert top == [body]


def test_ir_transform_with_only_enable_and_the_same_object_when_unchanged():
    body, A, B = _loop_nest()

    def double_stores(n):
        return tir.BufferStore(n.buffer, n.value * 2.0, n.indices)

    new = tir.stmt_functor.ir_transform(body, None, double_stores, ["tir.BufferStore"])
    assert new is not body and "*2f*2f" in str(new).replace(" ", "")
    assert tir.stmt_functor.ir_transform(body, None, lambda n: None) is body
    # preorder replaces without visiting below
    stop = tir.Evaluate(0)
    assert tir.stmt_functor.ir_transform(body, lambda n: stop, None, [tir.For]) is stop
    with pytest.raises(TeccTypeError, match="unknown node type 'tir.Bogus'"):
        tir.stmt_functor.ir_transform(body, None, None, ["tir.Bogus"])


def test_substitute_with_numbers_a_dict_or_a_function():
    n, m = te.var("n"), te.var("m")
    e = n * 4 + m
    assert str(tir.stmt_functor.substitute(e, {n: 3})) == "3*4 + m"
    assert str(tir.stmt_functor.substitute(e, lambda v: tir.const(1) if v is m else None)) == "n*4 + 1"
    with pytest.raises(TeccTypeError, match="not a tir.Var"):
        tir.stmt_functor.substitute(e, {"n": 3})


def test_renew_defs_gives_fresh_definitions_that_compute_the_same():
    f, _, _ = _scale_func("scale", n=8)
    g = tir.stmt_functor.renew_defs(f)
    assert all(p is not q for p, q in zip(f.params, g.params))
    assert all(g.buffer_map[q].data is q for q in g.params)
    assert tir.structural_equal(f, g)
    found = []
    tir.stmt_functor.post_order_visit(g.body, lambda x: found.append(x) if isinstance(x, tir.For) else None)
    f_loops = []
    tir.stmt_functor.post_order_visit(f.body, lambda x: f_loops.append(x) if isinstance(x, tir.For) else None)
    assert found[0].loop_var is not f_loops[0].loop_var
    m = tecc.build(g, target="llvm")
    a, b = np.arange(8, dtype="float32"), np.zeros(8, "float32")
    m(a, b)
    np.testing.assert_allclose(b, a * 2)


def test_access_ptr_hands_the_right_address_to_an_external_function():
    # memcpy(B + 4, A + elem_offset + 2, 4 floats): the address includes the offsets
    A = tir.decl_buffer((16,), "float32", "A", offset_factor=4)
    B = tir.decl_buffer((16,), "float32", "B")
    ib = tir.ir_builder.create()
    ib.emit(tir.call_extern("handle", "memcpy", B.access_ptr("w", offset=4), A.access_ptr("r", offset=2), 16))
    f = tir.PrimFunc([A, B], ib.get()).with_attr("global_symbol", "copy4")
    m = tecc.build(f, target="llvm")
    a = np.arange(16, dtype="float32")
    b = np.zeros(16, "float32")
    m(a, b)
    np.testing.assert_array_equal(b[4:8], a[2:6])
