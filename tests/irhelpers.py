"""Shared helpers of the tests that build IR by hand and compile or run it.

Every test that writes TIR itself takes its pieces from here, so that a change of
the IR's constructors is made once:

* expressions and statements: :func:`var`, :func:`buf`, :func:`buf1d`,
  :func:`loop`, :func:`store`, :func:`ramp`, :func:`bcast`, :func:`nop`,
  :func:`sync`, :func:`db_write`;
* GPU structure: :func:`thread_iv`, :func:`thread_extent` (the kernel form of a GPU
  index), :func:`bind` (the form before host/device splitting), :func:`thread_attr`;
* functions: :func:`lowered_func` (parameters as ``te`` lowering makes them),
  :func:`make_func`, :func:`kernel`, :func:`host`, :func:`launch`,
  :func:`single_launch`;
* questions on the result: :func:`count_syncs`, :func:`find_loop`;
* the reference interpreter: :func:`run_interp`, :func:`assert_same_results`
  (before and after a pass), :func:`matmul_func`;
* building and running: :func:`cuda_module`, :func:`run_kernels`,
  :func:`check_kernels`, :func:`build_all_arches`, :func:`quiet_call`, and the
  hand-built kernels and split modules :func:`vadd_kernel`, :func:`shuffle_kernel`,
  :func:`add_module`, :func:`two_kernel_module`;
* te: :func:`stages` (the intermediate stages of a topi compute);
* fixtures (autouse in the modules that import them): :func:`private_cache_dir`,
  :func:`fresh_cuda_cache`.
"""
import os
import warnings

import numpy as np
import pytest

from tecc import tir
from tecc.tir import expr as E
from tecc.tir import keys
from tecc.tir import stmt as S


@pytest.fixture(scope="module", autouse=True)
def private_cache_dir(tmp_path_factory):
    """Compile into a fresh cache directory for the whole test module (autouse where
    imported)."""
    old = os.environ.get("TECC_CACHE_DIR")
    os.environ["TECC_CACHE_DIR"] = str(tmp_path_factory.mktemp("tecc_cache"))
    yield
    if old is None:
        os.environ.pop("TECC_CACHE_DIR", None)
    else:
        os.environ["TECC_CACHE_DIR"] = old


@pytest.fixture(autouse=True)
def fresh_cuda_cache(tmp_path, monkeypatch):
    """Each test compiles CUDA into its own cache directory (``tmp_path / "cache"``),
    with the in-memory cache empty and ``TECC_REQUIRE_GPU`` unset (autouse where
    imported)."""
    from tecc.cuda_codegen import cache

    monkeypatch.setenv("TECC_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("TECC_REQUIRE_GPU", raising=False)
    cache.clear_memory()
    yield
    cache.clear_memory()


# ---------------------------------------------------------------------------
# expressions and statements
# ---------------------------------------------------------------------------
def var(name, dtype="int32"):
    """A fresh variable (``int32`` unless told)."""
    return tir.Var(name, dtype)


def buf(name, shape, dtype="float32", scope="global", strides=()):
    """A buffer of ``shape`` (an int or a tuple), with explicit ``strides`` if given."""
    b = S.decl_buffer(shape, dtype, name, scope=scope)
    if strides:
        b = S.Buffer(b.name, b.dtype, b.shape, b.data, scope, tuple(tir.convert(s) for s in strides))
    return b


def buf1d(name, size, dtype="float32", scope="global"):
    """A 1-D buffer of ``size`` elements."""
    return S.decl_buffer((size,), dtype, name, scope=scope)


def loop(v, extent, body, kind=S.ForKind.SERIAL, min=0, annotations=()):  # noqa: A002 - TIR's name
    """``for (v, min, extent)`` of ``kind`` around ``body``."""
    return S.For(v, tir.convert(min), tir.convert(extent), kind, body, None, tuple(annotations))


def store(b, value, *indices):
    """``b[indices] = value`` (Python numbers converted)."""
    return S.BufferStore(b, tir.convert(value), tuple(tir.convert(i) for i in indices))


def ramp(base, lanes, stride=1):
    """``ramp(base, stride, lanes)``: ``lanes`` consecutive (or strided) indices."""
    return E.Ramp(tir.convert(base), tir.const(stride), lanes)


def bcast(value, lanes, dtype="float32"):
    """The constant ``value`` in every one of ``lanes`` lanes."""
    return E.Broadcast(tir.const(value, dtype), lanes)


def nop():
    """A statement that does nothing (``Evaluate(0)``)."""
    return S.Evaluate(tir.const(0))


def sync():
    """``__syncthreads()``."""
    return S.Evaluate(E.Call("int32", keys.STORAGE_SYNC, (E.StringImm("shared"),)))


def db_write(b, body):
    """``body`` marked as the write into the other slot of double-buffered ``b`` (as
    inject_double_buffer marks its prefetch)."""
    return S.AttrStmt(b.data, "double_buffer_write", tir.const(1), body)


# ---------------------------------------------------------------------------
# GPU indices: the kernel form (thread_extent attributes) and the loop form
# ---------------------------------------------------------------------------
def thread_iv(tag, extent, v=None):
    """The IterVar of the GPU index ``tag`` over ``[0, extent)``; its variable is
    ``v``, or a fresh one named like the tag."""
    ext = tir.convert(extent)
    return E.IterVar(E.Range(tir.const(0), ext), v if v is not None else var(tag), E.IterVarType.THREAD_INDEX,
                     tag)


def thread_extent(iv, body):
    """``body`` inside the ``thread_extent`` attribute of ``iv`` (a kernel's launch)."""
    return S.AttrStmt(iv, keys.THREAD_EXTENT, iv.dom.extent, body)


def thread_attr(v, extent, body):
    """``body`` inside ``thread_extent`` of ``v`` (a Var named like its tag)."""
    return thread_extent(thread_iv(v.name, extent, v), body)


def bind(v, extent, tag, body):
    """A loop over ``v`` bound to ``tag``, as lowering leaves it before host/device
    splitting (``vthread`` tags included)."""
    return S.For(v, tir.const(0), tir.convert(extent), S.ForKind.THREAD_BINDING, body, thread_iv(tag, extent))


# ---------------------------------------------------------------------------
# functions
# ---------------------------------------------------------------------------
def func_params(args):
    """``(params, buffer_map)`` for a PrimFunc over ``args``: a handle parameter per
    Buffer, scalars as they are."""
    params, bmap = [], {}
    for a in args:
        if isinstance(a, S.Buffer):
            p = E.Var(a.name, "handle")
            params.append(p)
            bmap[p] = a
        else:
            params.append(a)
    return tuple(params), bmap


def make_func(name, args, body):
    """A PrimFunc called ``name`` over ``args`` (Buffers and scalar Vars)."""
    params, bmap = func_params(args)
    return S.PrimFunc(params, body, bmap, {"global_symbol": name})


def lowered_func(name, args, body, attrs=None):
    """A PrimFunc shaped as ``te`` lowering makes one: the parameter of a Buffer in
    ``args`` is the buffer's own data variable (scalars as they are); ``attrs`` are
    added to the ``global_symbol``."""
    params = tuple(a.data if isinstance(a, S.Buffer) else a for a in args)
    bmap = {a.data: a for a in args if isinstance(a, S.Buffer)}
    return S.PrimFunc(params, body, bmap, {"global_symbol": name, **(attrs or {})})


CUDA_TARGET = "cuda -arch=sm_80"


def kernel(name, args, body, launch=()):
    """A device function over ``args``; ``launch`` is ``[(Var, extent)]`` (the Var
    named like its tag, blockIdx.* first), wrapped around ``body`` outermost first."""
    params, bmap = func_params(args)
    for v, ext in reversed(list(launch)):
        body = thread_attr(v, ext, body)
    return S.PrimFunc(tuple(params), body, bmap, {"global_symbol": name, keys.KERNEL: True})


def launch(name, *args):
    """``tecc.launch(name, args...)`` in a host function."""
    return S.Evaluate(E.Call("int32", keys.LAUNCH, (E.StringImm(name),) + tuple(args)))


def host(name, args, body):
    """A host function over ``args``; ``body(*params)`` builds its body."""
    params, bmap = func_params(list(args))
    return S.PrimFunc(params, body(*params), bmap, {"global_symbol": name, keys.HOST: True})


def single_launch(kname, kfunc, host_args):
    """A host function launching ``kfunc`` on its parameters in order, and
    ``{kname: kfunc}``."""
    return host(kname + "_host", host_args, lambda *params: launch(kname, *params)), {kname: kfunc}


# ---------------------------------------------------------------------------
# questions on the result of a pass
# ---------------------------------------------------------------------------
def count_syncs(stmt):
    """The number of barriers below ``stmt``."""
    from tecc.tir.transform.thread_sync import is_storage_sync

    found = []
    tir.post_order_visit(stmt, lambda n: found.append(n) if is_storage_sync(n) else None)
    return len(found)


def find_loop(stmt, name):
    """The one loop below ``stmt`` whose variable is called ``name``."""
    found = []
    tir.post_order_visit(stmt, lambda n: found.append(n) if isinstance(n, S.For) and n.loop_var.name == name else None)
    assert len(found) == 1, f"{len(found)} loops named {name}"
    return found[0]


# ---------------------------------------------------------------------------
# building and running
# ---------------------------------------------------------------------------
def cuda_module(host_func, kernels, target=CUDA_TARGET):
    """The CUDAModule of a hand-built host function and its kernels."""
    from tecc.cuda_codegen import build_cuda

    return build_cuda(S.IRModule({host_func.name: host_func, **kernels}), target)


def quiet_call(mod, *arrays):
    """``mod(*arrays)`` with the CPU emulation's RuntimeWarning silenced."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        mod(*arrays)
    return arrays


def run_kernels(host_func, kernels, args):
    """Build and run (on the GPU emulation without a GPU; warning silenced)."""
    mod = cuda_module(host_func, kernels)
    quiet_call(mod, *args)
    return mod


def check_kernels(host_func, kernels, args, **options):
    """The findings of ``CUDAModule.check`` on a hand-built module."""
    return cuda_module(host_func, kernels).check(*args, **options)


def build_all_arches(s, args):
    """``tecc.build`` for sm_80 and sm_90 (each must give a cubin); the sm_90 module."""
    import tecc

    mods = {arch: tecc.build(s, args, target=f"cuda -arch={arch}") for arch in ("sm_80", "sm_90")}
    for arch, mod in mods.items():
        assert mod.cubin[:4] == b"\x7fELF", f"no cubin for {arch}"
    return mods["sm_90"]


# ---------------------------------------------------------------------------
# hand-built split modules (host functions + kernels, as the CUDA pipeline leaves them)
# ---------------------------------------------------------------------------
def add_module(target="cuda -arch=sm_90", guard=True):
    """C = A + B over (n, 4) float32 arrays, 64 threads per block, symbolic n (without
    ``guard``, the threads past the end access out of bounds)."""
    from tecc.cuda_codegen import build_cuda

    kn = var("n")
    size = kn * 4
    A, B, C = (buf1d(x, size) for x in "ABC")
    bx, tx = var("blockIdx.x"), var("threadIdx.x")
    i = bx * 64 + tx
    body = S.BufferStore(C, A[i] + B[i], (i,))
    if guard:
        body = S.IfThenElse(tir.likely(i < size), body)
    k = kernel("add_kernel0", [A, B, C, kn], body, [(bx, (size + 63) // 64), (tx, 64)])
    n = var("n")
    hb = [S.decl_buffer((n, 4), "float32", x) for x in "ABC"]
    h = host("add", hb + [n], lambda a, b, c, n_: launch("add_kernel0", a, b, c, n_))
    return build_cuda(S.IRModule({"add": h, "add_kernel0": k}), target)


def two_kernel_module(target="cuda -arch=sm_90"):
    """T = A * 2 in a workspace, then C = T + 1 (two launches) over 16x16 arrays."""
    from tecc.cuda_codegen import build_cuda

    m = 256
    A, T1, T2, C = (buf1d(x, m) for x in ("A", "T", "T", "C"))
    bx1, tx1 = var("blockIdx.x"), var("threadIdx.x")
    i1 = bx1 * 64 + tx1
    k1 = kernel("scale_kernel0", [A, T1], S.BufferStore(T1, A[i1] * tir.const(2.0, "float32"), (i1,)),
                [(bx1, 4), (tx1, 64)])
    bx2, tx2 = var("blockIdx.x"), var("threadIdx.x")
    i2 = bx2 * 64 + tx2
    k2 = kernel("inc_kernel1", [T2, C], S.BufferStore(C, T2[i2] + tir.const(1.0, "float32"), (i2,)),
                [(bx2, 4), (tx2, 64)])
    ws = buf1d("T", m)

    def body(a, c):
        return S.Allocate(ws, S.seq(launch("scale_kernel0", a, ws.data), launch("inc_kernel1", ws.data, c)))

    h = host("scale_inc", [buf("A", (16, 16)), buf("C", (16, 16))], body)
    return build_cuda([h, k1, k2], target)


def vadd_kernel(name="vadd", dtype="float32"):
    """``C = A + B`` over ``n`` elements (a scalar parameter): blocks of 256 threads,
    the last block guarded."""
    n = var("n")
    A, B, C = buf1d("A", n, dtype), buf1d("B", n, dtype), buf1d("C", n, dtype)
    bx, tx = var("blockIdx.x"), var("threadIdx.x")
    i = bx * 256 + tx
    body = S.IfThenElse(tir.likely(i < n), S.BufferStore(C, A[i] + B[i], (i,)))
    return kernel(name, [A, B, C, n], body, [(bx, (n + 255) // 256), (tx, 256)])


def shuffle_kernel(dtype, block, delta):
    """``(host, kernel)``: ``dst[L] = warp_shuffle_down(src[L], delta)`` for the linear
    thread number ``L`` of one block of ``block = (x, y)`` threads."""
    from tecc.tir.op import warp_shuffle_down

    bx, by = block
    tx, ty = var("threadIdx.x"), var("threadIdx.y")
    src, dst = buf1d("src", bx * by, dtype), buf1d("dst", bx * by, dtype)
    lin = tx + ty * bx
    x = var("x", dtype)
    body = S.LetStmt(x, warp_shuffle_down(E.BufferLoad(src, (lin,)), delta), S.BufferStore(dst, x, (lin,)))
    k = kernel("shfl_kernel0", [src, dst], body, [(tx, bx), (ty, by)])
    h = host("shfl", [src, dst], lambda s, d: launch("shfl_kernel0", s, d))
    return h, k


# ---------------------------------------------------------------------------
# the reference interpreter: a pass must not change what a function computes
# ---------------------------------------------------------------------------
def run_interp(func, *arrays):
    """Copies of ``arrays`` after running ``func`` on them with the reference
    interpreter (ints pass through as scalar arguments)."""
    from tecc.tir.analysis import run_prim_func

    arrays = [a if isinstance(a, int) else np.array(a, copy=True) for a in arrays]
    run_prim_func(func, *arrays)
    return arrays


def assert_same_results(f, g, *arrays, rtol=1e-6):
    """``f`` and ``g`` (a function before and after a pass) compute the same arrays."""
    for w, o in zip(run_interp(f, *arrays), run_interp(g, *arrays)):
        np.testing.assert_allclose(o, w, rtol=rtol)


def matmul_func(n=8):
    """``C = A @ B`` over ``n x n`` float32 buffers, as a plain 2-D loop nest."""
    A, B, C = buf("A", (n, n)), buf("B", (n, n)), buf("C", (n, n))
    i, j, k = var("i"), var("j"), var("k")
    body = loop(i, n, loop(j, n, S.seq(
        S.BufferStore(C, tir.const(0.0), (i, j)),
        loop(k, n, S.BufferStore(C, C[i, j] + A[i, k] * B[k, j], (i, j))))))
    return lowered_func("f", [A, B, C], body)


# ---------------------------------------------------------------------------
# te: the stages of a compute (as imported from tecc.topi.nn)
# ---------------------------------------------------------------------------
def stages(t):
    """``{op name: tensor}`` of ``t`` and of every compute stage it reads, directly or
    not (placeholders left out): how a test finds the intermediate stages of a
    topi compute (``stages(out)["Mx"]``)."""
    from tecc.te.tensor import PlaceholderOp

    found, todo = {}, [t]
    while todo:
        x = todo.pop()
        if isinstance(x.op, PlaceholderOp) or x.op.name in found:
            continue
        found[x.op.name] = x
        todo.extend(x.op.input_tensors)
    return found
