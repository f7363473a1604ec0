"""The infer_fragment pass (tir/transform/infer_fragment.py): each tensor-core fragment
allocation gets its wmma shape and layout as attributes (before/expected IR), shapes
spread through tvm_mma_sync, and each misuse is refused with the kernel, the buffer
and the fix."""
import pytest

from tecc import tir
from tecc.errors import LoweringError
from tecc.tir import expr as E
from tecc.tir import keys
from tecc.tir import stmt as S
from tecc.tir.stmt import Allocate, seq
from tecc.tir.transform.infer_fragment import infer_fragment
from irhelpers import buf1d, kernel, loop, thread_extent, thread_iv, var

c = tir.const


def _call(name, *args):
    return S.Evaluate(tir.call_intrin("handle", f"tir.{name}", *args))


def _gemm_kernel(a_shape=(16, 16, 16), b_shape=(16, 16, 16), b_layout="col_major", with_attrs=False,
                 a_dtype="float16", extra=None, b_dtype="float16", acc_dtype="float32"):
    """One warp: C = A x B over fragments loaded from global memory (A row-major, B as
    ``b_layout``), two accumulators, the second only reached through mma."""
    A, B, C = buf1d("A", 256, "float16"), buf1d("B", 256, "float16"), buf1d("C", 512)
    FA = buf1d("FA", 256, a_dtype, scope="wmma.matrix_a")
    FB = buf1d("FB", 256, b_dtype, scope="wmma.matrix_b")
    FC = buf1d("FC", 512, acc_dtype, scope="wmma.accumulator")
    FD = buf1d("FD", 256, acc_dtype, scope="wmma.accumulator")
    tx = thread_iv("threadIdx.x", 32)
    i = var("i")
    body = seq(
        _call("tvm_fill_fragment", FC.data, 16, 16, 16, 0, 0.0),
        _call("tvm_fill_fragment", FC.data, 16, 16, 16, 1, 0.0),
        _call("tvm_load_matrix_sync", FA.data, *a_shape, 0, A.access_ptr("r"), 16, "row_major"),
        _call("tvm_load_matrix_sync", FB.data, *b_shape, 0, B.access_ptr("r"), 16, b_layout),
        loop(i, 2, _call("tvm_mma_sync", FC.data, i, FA.data, 0, FB.data, 0, FC.data, i)),
        _call("tvm_mma_sync", FD.data, 0, FA.data, 0, FB.data, 0, FC.data, 0),
        _call("tvm_store_matrix_sync", FD.data, 16, 16, 16, 0, C.access_ptr("w"), 16, "row_major"),
        *(extra(FA, FB, FC, FD) if extra else ()),
    )
    for buf, layout in ((FD, None), (FC, None), (FB, b_layout), (FA, "row_major")):
        body = Allocate(buf, body)
        if with_attrs:
            if layout is not None:
                body = S.AttrStmt(buf.data, keys.FRAGMENT_LAYOUT, E.StringImm(layout), body)
            body = S.AttrStmt(buf.data, keys.FRAGMENT_SHAPE, E.StringImm("16, 16, 16"), body)
    return kernel("gemm_kernel0", [A, B, C], thread_extent(tx, body))


def test_fragments_get_shape_and_layout_attributes():
    got = infer_fragment(_gemm_kernel())
    # (the attributes name each fragment's data before the Allocate that binds it)
    tir.assert_structural_equal(got, _gemm_kernel(with_attrs=True), map_free_vars=True)


def test_a_kernel_without_fragments_is_returned_as_is():
    A = buf1d("A", 32)
    tx = thread_iv("threadIdx.x", 32)
    f = kernel("k", [A], thread_extent(tx, S.BufferStore(A, c(1.0), (tx.var,))))
    assert infer_fragment(f) is f


def test_a_shape_spreads_through_mma_to_a_fragment_no_call_names():
    """FE is only an mma operand: its shape is its partners'."""
    A, B, C = buf1d("A", 512, "float16"), buf1d("B", 256, "float16"), buf1d("C", 256)
    FA = buf1d("FA", 512, "float16", scope="wmma.matrix_a")
    FB = buf1d("FB", 256, "float16", scope="wmma.matrix_b")
    FC = buf1d("FC", 256, scope="wmma.accumulator")
    FE = buf1d("FE", 256, scope="wmma.accumulator")
    tx = thread_iv("threadIdx.x", 32)
    body = seq(
        _call("tvm_load_matrix_sync", FA.data, 32, 8, 16, 0, A.access_ptr("r"), 16, "row_major"),
        _call("tvm_load_matrix_sync", FB.data, 32, 8, 16, 0, B.access_ptr("r"), 8, "row_major"),
        _call("tvm_mma_sync", FE.data, 0, FA.data, 0, FB.data, 0, FE.data, 0),
        _call("tvm_mma_sync", FC.data, 0, FA.data, 0, FB.data, 0, FE.data, 0),
        _call("tvm_store_matrix_sync", FC.data, 32, 8, 16, 0, C.access_ptr("w"), 8, "row_major"),
    )
    for buf in (FE, FC, FB, FA):
        body = Allocate(buf, body)
    got = infer_fragment(kernel("k", [A, B, C], thread_extent(tx, body)))
    shapes = {}
    tir.stmt_functor.post_order_visit(got.body, lambda n: shapes.__setitem__(n.node.name, n.value.value)
                                      if isinstance(n, S.AttrStmt) and n.attr_key == keys.FRAGMENT_SHAPE else None)
    assert shapes == {"FA": "32, 8, 16", "FB": "32, 8, 16", "FC": "32, 8, 16", "FE": "32, 8, 16"}


@pytest.mark.parametrize("make, match", [
    (lambda: _gemm_kernel(b_shape=(32, 8, 16)),
     r"kernel gemm_kernel0: tensor-core fragment 'F[AB]' \(wmma\.matrix_[ab]\): used as an (16x16x16|32x8x16) fragment "
     r"by .* and as an (32x8x16|16x16x16) one by .*give each shape its own cache stage"),
    (lambda: _gemm_kernel(a_dtype="float32"),
     r"fragment 'FA' \(wmma\.matrix_a\): has element type float32; tecc's wmma fragments hold float16 or "
     r"bfloat16"),
    (lambda: _gemm_kernel(a_dtype="bfloat16"),
     r"kernel gemm_kernel0: `.*tvm_mma_sync.*` multiplies 'FA' by 'FB' into 'FC': its operands are bfloat16 and "
     r"float16; wmma multiplies operands of one type"),
    (lambda: _gemm_kernel(a_dtype="bfloat16", b_dtype="bfloat16", acc_dtype="float16"),
     r"multiplies 'FA' by 'FB' into 'FC': bfloat16 operands accumulate in float32, not float16: compute the "
     r"product in float32 and cast its result"),
    (lambda: _gemm_kernel(extra=lambda FA, FB, FC, FD: [
        _call("tvm_load_matrix_sync", FA.data, 16, 16, 16, 0, FC.access_ptr("r"), 16, "col_major")]),
     r"fragment 'FA' \(wmma\.matrix_a\): loaded row_major and col_major"),
    (lambda: _gemm_kernel(extra=lambda FA, FB, FC, FD: [
        _call("tvm_mma_sync", FC.data, 0, FB.data, 0, FB.data, 0, FC.data, 0)]),
     r"fragment 'FB' \(wmma\.matrix_b\): passed as tvm_mma_sync's a operand, which must be a wmma\.matrix_a fragment"),
    (lambda: _gemm_kernel(extra=lambda FA, FB, FC, FD: [
        _call("tvm_store_matrix_sync", FA.data, 16, 16, 16, 0, FC.access_ptr("w"), 16, "row_major")]),
     r"fragment 'FA' \(wmma\.matrix_a\): stored with tvm_store_matrix_sync, which stores accumulators only"),
    (lambda: _gemm_kernel(extra=lambda FA, FB, FC, FD: [S.BufferStore(FD, c(1.0), (c(3),))]),
     r"fragment 'FD' \(wmma\.accumulator\): written element by element \(`FD\[3\] = 1f`\)"),
])
def test_misuses_are_refused_with_kernel_buffer_and_fix(make, match):
    with pytest.raises(LoweringError, match=match):
        infer_fragment(make())


def test_a_fragment_size_that_is_not_whole_fragments_is_refused():
    A = buf1d("A", 256, "float16")
    FA = buf1d("FA", 300, "float16", scope="wmma.matrix_a")
    tx = thread_iv("threadIdx.x", 32)
    body = Allocate(FA, _call("tvm_load_matrix_sync", FA.data, 16, 16, 16, 0, A.access_ptr("r"), 16, "row_major"))
    with pytest.raises(LoweringError, match=r"'FA' \(wmma\.matrix_a\): holds 300 elements, not a whole number of "
                                            r"16x16x16 fragments \(256 elements each\)"):
        infer_fragment(kernel("k", [A], thread_extent(tx, body)))


def test_an_arch_without_tensor_cores_is_refused():
    with pytest.raises(LoweringError, match=r"kernel gemm_kernel0: fragment 'FA' \(wmma\.matrix_a\) needs tensor "
                                            r"cores, which sm_61 lacks"):
        infer_fragment(_gemm_kernel(), "sm_61")


def test_bfloat16_fragments_need_sm_80():
    """bfloat16 operands multiply into float32 accumulators from sm_80 on."""
    bf16 = dict(a_dtype="bfloat16", b_dtype="bfloat16")
    got = infer_fragment(_gemm_kernel(**bf16), "sm_80")
    tir.assert_structural_equal(got, _gemm_kernel(with_attrs=True, **bf16), map_free_vars=True)
    with pytest.raises(LoweringError, match=r"kernel gemm_kernel0: tensor-core fragment 'F[AB]' "
                                            r"\(wmma\.matrix_[ab]\): holds bfloat16, which the tensor cores of sm_75 "
                                            r"do not take \(sm_80 and later do\); compile for sm_80"):
        infer_fragment(_gemm_kernel(**bf16), "sm_75")


def _let(v, value, body_of):
    return S.LetStmt(v, value, body_of(v))


def _one_load_kernel(wrap, lanes=32):
    """A warp loading one fragment; ``wrap(tx, load)`` places the load."""
    A = buf1d("A", 4096, "float16")
    FA = buf1d("FA", 256, "float16", scope="wmma.matrix_a")
    tx = thread_iv("threadIdx.x", lanes)
    load = lambda offset=0: _call("tvm_load_matrix_sync", FA.data, 16, 16, 16, 0,  # noqa: E731
                                  A.access_ptr("r", offset=offset), 16, "row_major")
    return kernel("k", [A], thread_extent(tx, Allocate(FA, wrap(tx.var, load))))


@pytest.mark.parametrize("wrap, lanes, match", [
    (lambda tx, load: load(), 16, r"kernel k: tensor-core fragment 'FA' is a warp's, but threadIdx.x has extent 16, "
                                  r"so warps straddle threadIdx.y; bind threadIdx.x to an axis of 32"),
    (lambda tx, load: load(tx * 256), 32, r"depends on threadIdx.x \(its arguments differ between lanes\); the 32 "
                                          r"lanes of a warp make each wmma call together"),
    (lambda tx, load: S.IfThenElse(tx < 16, load()), 32,
     r"depends on threadIdx.x \(it sits inside the condition `threadIdx.x < 16`, which differs between lanes\)"),
    (lambda tx, load: _let(var("j"), tx // 8, lambda j: loop(var("i"), j + 1, load())), 32,
     r"it sits inside loop i, which differs between lanes"),
])
def test_a_wmma_call_that_differs_between_lanes_is_refused(wrap, lanes, match):
    with pytest.raises(LoweringError, match=match):
        infer_fragment(_one_load_kernel(wrap, lanes))


def test_warp_uniform_control_flow_around_wmma_calls_is_fine():
    ty = thread_iv("threadIdx.y", 2)
    f = _one_load_kernel(lambda tx, load: thread_extent(ty, S.IfThenElse(ty.var < 1, load())))
    assert infer_fragment(f) is not f
