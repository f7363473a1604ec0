"""How objects show themselves: text in a terminal, HTML in Jupyter (``tecc.display``)."""
import subprocess
import sys

import numpy as np
import pytest

import tecc
from tecc import display, te


def _matmul_schedule(n=256):
    A = te.placeholder((n, n), name="A")
    B = te.placeholder((n, n), name="B")
    k = te.reduce_axis((0, n), name="k")
    C = te.compute((n, n), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")
    s = te.create_schedule(C.op)
    AA = s.cache_read(A, "shared", [C])
    CL = s.cache_write(C, "local")
    bx, tx = s[C].split(C.op.axis[0], factor=32)
    by, ty = s[C].split(C.op.axis[1], factor=32)
    s[C].reorder(bx, by, tx, ty)
    s[C].bind(bx, te.thread_axis("blockIdx.x"))
    s[C].bind(tx, te.thread_axis("threadIdx.x"))
    s[CL].compute_at(s[C], ty)
    ko, ki = s[CL].split(s[CL].op.reduce_axis[0], factor=8)
    s[AA].compute_at(s[CL], ko)
    s[CL].unroll(ki)
    return s, [A, B, C]


def test_a_schedule_shows_its_loop_tree_with_extents_bindings_and_attached_stages():
    s, _ = _matmul_schedule()
    assert repr(s) == "<tecc.te.Schedule outputs=[C], 5 stages>"
    tree = s.loop_tree().splitlines()
    assert tree[0] == "C  (ComputeOp, global, output)"
    assert "  for i.outer in 0..8  [blockIdx.x]" in tree
    assert "      for i.inner in 0..32  [threadIdx.x]" in tree
    assert "          C.local  (ComputeOp, local)" in tree
    assert "                for k.outer in 0..32  [reduce]" in tree
    assert "                  A.shared  (ComputeOp, shared)" in tree
    assert "                  for k.inner in 0..8  [reduce, unrolled]" in tree
    assert tree[-1] == "inputs: A, B"
    assert "<pre" in s._repr_html_() and "blockIdx.x" in s._repr_html_()


def test_an_inlined_stage_and_an_unfinished_schedule_still_show():
    A = te.placeholder((16,), name="A")
    B = te.compute((16,), lambda i: A[i] + 1.0, name="B")
    C = te.compute((16,), lambda i: B[i] * 2.0, name="C")
    s = te.create_schedule(C.op)
    s[B].compute_inline()
    tree = s.loop_tree()
    assert "inlined: B" in tree and "for i in 0..16" in tree


def test_a_cuda_module_lists_its_kernels_with_launch_shape_and_resources():
    s, args = _matmul_schedule()
    mod = tecc.build(s, args, target="cuda -arch=sm_80")
    ((fname, kernel, grid, block),) = mod.launch_dims()
    assert fname == mod.entry_name and grid == (8, 1, 1) and block == (32, 1, 1)
    text = mod.describe()
    assert "A: float32(256, 256), B: float32(256, 256), C: float32(256, 256) (written)" in text
    res = mod.kernel_resources[kernel]
    row = [line for line in text.splitlines() if line.startswith(f"{fname}  {kernel}")]
    assert row and row[0].split()[2:6] == ["8", "32", str(res.registers), str(res.spill_store_bytes)]
    page = mod._repr_html_()
    assert page.count("<table>") == 2 and "<details><summary>source (" in page
    assert "__global__" in page  # the CUDA source, highlighted inside the details
    assert "<pre" in mod.imported_modules[0]._repr_html_()


def test_a_cpu_module_lowered_ir_and_a_timing_render_as_html():
    n = 64
    A = te.placeholder((n,), name="A")
    B = te.compute((n,), lambda i: A[i] * 2.0, name="B")
    s = te.create_schedule(B.op)
    lowered = tecc.lower(s, [A, B])
    assert "primfn" in lowered._repr_html_() or "main" in lowered._repr_html_()
    mod = tecc.build(s, [A, B], target="llvm")
    assert mod._kernel_table() is None and "<table>" in mod._repr_html_()
    a, b = np.ones(n, "float32"), np.zeros(n, "float32")
    timing = mod.time_evaluator(mod.entry_name, tecc.cpu(0), number=2, repeat=3)(a, b)
    page = timing._repr_html_()
    assert "median ms" in page and page.count("<tr>") == 2


def test_code_shows_as_escaped_text_without_pygments(monkeypatch):
    import builtins

    real = builtins.__import__

    def no_pygments(name, *args, **kwargs):
        if name.startswith("pygments"):
            raise ImportError("no pygments here")
        return real(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_pygments)
    out = display.code_html("a < b && c", "c")
    assert out.startswith("<pre") and "a &lt; b &amp;&amp; c" in out


def test_tables_as_text_and_html():
    cols, rows = ["op", "ms", "x_ref"], [["matmul", 0.123456, None], ["softmax", 1.5, 2.0]]
    text = display.table_text(cols, rows).splitlines()
    assert text[0].split() == cols and set(text[1]) <= {"-", " "} and text[2].split() == ["matmul", "0.1235", "-"]
    page = display.table_html(cols, rows, caption="a & b")
    assert page.count("<tr>") == 3 and "a &amp; b" in page


def test_importing_tecc_imports_no_pygments_or_matplotlib():
    code = ("import sys, tecc; from tecc import te; import tecc.display; "
            "print(sorted(m for m in ('pygments', 'matplotlib') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
