"""Code linked into a CPU module by the import_c / import_llvm pragmas
(TVM's tensorize tutorial), and tecc.contrib.clang.create_llvm."""
import numpy as np
import pytest

import tecc
from tecc import te, tir
from tecc.contrib import clang
from tecc.errors import CompileError

SCALE = """
extern "C" int scale_rows(float *out, float *in, int n, float k) {
    for (int i = 0; i < n; ++i) out[i] = in[i] * k;
    return 0;
}
"""


def _scaled(code_kind, code, k=3.0):
    A = te.placeholder((4, 8), name="A")
    B = te.extern((4, 8), [A], lambda ins, outs: tir.call_extern(
        "int32", "scale_rows", outs[0].access_ptr("w"), ins[0].access_ptr("r"), 32, tir.const(k, "float32")),
        name="B")
    C = te.compute((4, 8), lambda i, j: B[i, j] + 1.0, name="C")
    s = te.create_schedule(C.op)
    s[C].pragma(C.op.axis[0], code_kind, code)
    return s, A, C


@pytest.mark.parametrize("kind, code", [
    ("import_c", SCALE.replace('extern "C" ', "")),                       # C
    ("import_llvm", SCALE),                                                # C++ source (no clang needed)
])
def test_imported_code_is_compiled_and_linked(kind, code):
    s, A, C = _scaled(kind, code)
    f = tecc.build(s, [A, C], target="llvm")
    src = f.get_source()
    assert "scale_rows(float" not in src  # linked beside the unit, not pasted into it
    # a float argument needs a prototype (C would pass a double to an undeclared function)
    assert "int32_t scale_rows(void*, void*, int32_t, float);" in src
    a = np.arange(32, dtype="float32").reshape(4, 8)
    c = tecc.nd.array(np.zeros((4, 8), "float32"))
    f(tecc.nd.array(a), c)
    np.testing.assert_allclose(c.numpy(), a * 3 + 1)


def test_a_later_import_overrides_an_earlier_definition():
    # TVM links imported modules with the later one's definitions winning
    s, A, C = _scaled("import_c", SCALE.replace('extern "C" ', ""))
    later = SCALE.replace('extern "C" ', "").replace("in[i] * k", "in[i] * k * 2.0f")
    s[C].pragma(C.op.axis[1], "import_c", later)
    f = tecc.build(s, [A, C], target="llvm")
    a = np.ones((4, 8), "float32")
    c = tecc.nd.array(np.zeros((4, 8), "float32"))
    f(tecc.nd.array(a), c)
    np.testing.assert_allclose(c.numpy(), np.full((4, 8), 7.0))


def test_create_llvm_without_clang_gives_the_source(monkeypatch, tmp_path):
    monkeypatch.setenv("TECC_CLANG", "no-such-clang-here")
    assert clang.create_llvm(SCALE) == SCALE
    src = tmp_path / "k.cc"
    src.write_text(SCALE)
    assert clang.create_llvm([str(src)]) == SCALE


def test_llvm_ir_without_clang_is_a_clear_error(monkeypatch):
    monkeypatch.setenv("TECC_CLANG", "no-such-clang-here")
    ir = "; ModuleID = 'x'\ndefine i32 @scale_rows(ptr %0, ptr %1, i32 %2, float %3) {\n  ret i32 0\n}\n"
    s, A, C = _scaled("import_llvm", ir)
    with pytest.raises(CompileError, match="holds LLVM IR, which tecc's C backend compiles with clang, and no clang "
                                           "was found .* 'import_c'"):
        tecc.build(s, [A, C], target="llvm")


def test_imported_code_in_a_cuda_build_is_refused_with_the_fix():
    A = te.placeholder((64, 8), name="A")
    B = te.compute((64, 8), lambda i, j: A[i, j] * 2.0, name="B")
    s = te.create_schedule(B.op)
    bx, tx = s[B].split(B.op.axis[0], factor=32)
    s[B].bind(bx, te.thread_axis("blockIdx.x"))
    s[B].bind(tx, te.thread_axis("threadIdx.x"))
    s[B].pragma(B.op.axis[1], "import_c", SCALE.replace('extern "C" ', ""))  # a loop inside the kernel
    with pytest.raises(CompileError, match="import_c / import_llvm pragma links C code into a CPU module; CUDA "
                                           "device code cannot call it"):
        tecc.build(s, [A, B], target="cuda")
    t = te.create_schedule(B.op)
    bx, tx = t[B].split(B.op.axis[0], factor=32)
    t[B].bind(bx, te.thread_axis("blockIdx.x"))
    t[B].bind(tx, te.thread_axis("threadIdx.x"))
    t[B].pragma(bx, "import_c", "int other(void) { return 0; }")  # on a block-bound loop: refused too
    with pytest.raises(CompileError, match="import_c / import_llvm pragma links C code into a CPU module"):
        tecc.build(t, [A, B], target="cuda")
