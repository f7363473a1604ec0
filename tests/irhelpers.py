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
* kernels with and without a bug, for the checking mode: :func:`reversal_kernel`,
  :func:`tree_sum_kernel`, :func:`matvec_kernel`, :func:`local_out_of_bounds_kernel`,
  :func:`off_by_one_kernel`, :func:`partial_fetch_kernel`, :func:`copy_into_kernel`,
  :func:`mirror_kernel`, :func:`whole_tile_matmul`;
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
# kernels with and without a bug, for the checking mode's tests: (host, {name: kernel})
# ---------------------------------------------------------------------------
def reversal_kernel(with_barrier):
    """Each block of 64 threads reverses its slice of A into B through shared memory
    (4 blocks): correct with the barrier between the write and the read, a race without."""
    bx, tx = var("blockIdx.x"), var("threadIdx.x")
    A, B = buf1d("A", 256), buf1d("B", 256)
    sh = buf1d("sh", 64, scope="shared")
    stmts = [store(sh, A[bx * 64 + tx], tx)]
    if with_barrier:
        stmts.append(sync())
    stmts.append(store(B, sh[63 - tx], bx * 64 + tx))
    k = kernel("reverse_kernel0", [A, B], S.Allocate(sh, S.seq(*stmts)), [(bx, 4), (tx, 64)])
    return single_launch("reverse_kernel0", k, [buf1d("A", 256), buf1d("B", 256)])


def tree_sum_kernel(with_loop_barrier=True):
    """out[b] = sum of A's b-th slice of 128 by a tree reduction in shared memory (3
    blocks): barriers inside a uniform loop, a uniform let inside it; without the
    loop's barrier, a race."""
    bx, tx = var("blockIdx.x"), var("threadIdx.x")
    A, out = buf1d("A", 3 * 128), buf1d("out", 3)
    red = buf1d("red", 128, scope="shared")
    s, stride = var("s"), var("stride")
    step = S.IfThenElse(tx < stride, store(red, red[tx] + red[tx + stride], tx))
    inner = S.seq(step, sync()) if with_loop_barrier else step
    body = S.Allocate(red, S.seq(
        store(red, A[bx * 128 + tx], tx),
        sync(),
        loop(s, 7, S.LetStmt(stride, E.Call("int32", "shift_right", (tir.const(64), s)), inner)),
        S.IfThenElse(E.EQ(tx, tir.const(0)), store(out, red[0], bx)),
    ))
    k = kernel("sum_kernel0", [A, out], body, [(bx, 3), (tx, 128)])
    return single_launch("sum_kernel0", k, [buf1d("A", 3 * 128), buf1d("out", 3)])


def matvec_kernel(second_barrier=True):
    """y = s * (M @ x) with x staged through shared memory in tiles of 32: a local
    accumulator and a loaded let live across barriers (per-thread slots); without the
    barrier that ends an iteration, the next tile overwrites x's while other threads
    may still read it.  Returns (host, kernels, (R, K)), M being R x K."""
    T, K, R = 32, 96, 64
    bx, tx = var("blockIdx.x"), var("threadIdx.x")
    M, x, sc, y = buf1d("M", R * K), buf1d("x", K), buf1d("s", R), buf1d("y", R)
    xs = buf1d("xs", T, scope="shared")
    acc = buf1d("acc", 4, scope="local")
    row, scale, ko, ki = var("row"), var("scale", "float32"), var("ko"), var("ki")
    tile = [store(xs, x[ko * T + tx], tx), sync(),
            loop(ki, T, store(acc, acc[ki % 4] + M[row * K + ko * T + ki] * xs[ki], ki % 4))]
    if second_barrier:
        tile.append(sync())
    body = S.Allocate(xs, S.LetStmt(row, bx * T + tx, S.LetStmt(scale, sc[row], S.Allocate(acc, S.seq(
        S.BufferStore(acc, E.Broadcast(tir.const(0.0, "float32"), 4), (E.Ramp(tir.const(0), tir.const(1), 4),)),
        loop(ko, K // T, S.seq(*tile)),
        store(y, scale * (acc[0] + acc[1] + acc[2] + acc[3]), row),
    )))))
    k = kernel("matvec_kernel0", [M, x, sc, y], body, [(bx, R // T), (tx, T)])
    h, ks = single_launch("matvec_kernel0", k, [S.decl_buffer((R, K), "float32", "M"), buf1d("x", K),
                                                buf1d("s", R), buf1d("y", R)])
    return h, ks, (R, K)


def local_out_of_bounds_kernel():
    """Each thread writes loc[tx % 3] of its 2-element local buffer (live across a
    barrier, so one row per thread): index 2 is out of bounds.  A has 64 elements."""
    bx, tx = var("blockIdx.x"), var("threadIdx.x")
    A = buf1d("A", 64)
    loc = buf1d("loc", 2, scope="local")
    sh = buf1d("sh", 32, scope="shared")
    body = S.Allocate(sh, S.Allocate(loc, S.seq(
        store(loc, 1.0, tx % 3),
        sync(),
        store(A, loc[0], bx * 32 + tx),
    )))
    k = kernel("local_kernel0", [A], body, [(bx, 2), (tx, 32)])
    return single_launch("local_kernel0", k, [buf1d("A", 64)])


def off_by_one_kernel():
    """4 blocks of 64 threads copy A into C (200 elements: no guard) and write tile[tx + 1]
    of a 64-element shared tile: the last thread writes tile[64], the threads past 200
    read A and write C out of bounds."""
    bx, tx = var("blockIdx.x"), var("threadIdx.x")
    A, C = buf1d("A", 200), buf1d("C", 200)
    tile = buf1d("tile", 64, scope="shared")
    i = bx * 64 + tx
    body = S.Allocate(tile, S.seq(store(tile, 1.0, tx + 1), sync(), store(C, A[i], i)))
    k = kernel("oob_kernel0", [A, C], body, [(bx, 4), (tx, 64)])
    return single_launch("oob_kernel0", k, [buf1d("A", 200), buf1d("C", 200)])


def partial_fetch_kernel():
    """32 threads fetch a 64-element shared tile with one load each, then each reads two
    neighbours, B[i] = tile[2 tx] + tile[2 tx + 1] (2 blocks): the upper half of the
    tile is read uninitialized.  A has 128 elements, B 64."""
    bx, tx = var("blockIdx.x"), var("threadIdx.x")
    A, B = buf1d("A", 128), buf1d("B", 64)
    tile = buf1d("tile", 64, scope="shared")
    body = S.Allocate(tile, S.seq(store(tile, A[bx * 64 + tx], tx), sync(),
                                  store(B, tile[2 * tx] + tile[2 * tx + 1], bx * 32 + tx)))
    k = kernel("pairsum_kernel0", [A, B], body, [(bx, 2), (tx, 32)])
    return single_launch("pairsum_kernel0", k, [buf1d("A", 128), buf1d("B", 64)])


def copy_into_kernel(name, blocks, out_size, out_index):
    """out[out_index(bx, tx)] = A[bx * 32 + tx] over ``blocks`` blocks of 32 threads."""
    bx, tx = var("blockIdx.x"), var("threadIdx.x")
    A, out = buf1d("A", blocks * 32), buf1d("out", out_size)
    k = kernel(name, [A, out], store(out, A[bx * 32 + tx], out_index(bx, tx)), [(bx, blocks), (tx, 32)])
    return single_launch(name, k, [buf1d("A", blocks * 32), buf1d("out", out_size)])


def mirror_kernel(with_barrier):
    """Each thread writes B[i] = 2 A[i], then reads its mirror's B[31 - i] into C (2
    blocks of 32): a race on global B without the barrier, ordered with one (a barrier
    orders global memory within a block)."""
    bx, tx = var("blockIdx.x"), var("threadIdx.x")
    A, B, C = buf1d("A", 64), buf1d("B", 64), buf1d("C", 64)
    i = bx * 32 + tx
    stmts = [store(B, A[i] * 2.0, i)] + ([sync()] if with_barrier else [])
    stmts.append(store(C, B[bx * 32 + (31 - tx)], i))
    k = kernel("pair_kernel0", [A, B, C], S.seq(*stmts), [(bx, 2), (tx, 32)])
    return single_launch("pair_kernel0", k, [buf1d(n, 64) for n in "ABC"])


def whole_tile_matmul(n=32):
    """``(schedule, [A, B, C])`` of an n x n GEMM whose shared-memory fetch of A is not
    bound to threads: every thread copies the whole tile (each element is written by
    all of them: a race, though the result is right)."""
    from tecc import te, topi

    A, B = te.placeholder((n, n), name="A"), te.placeholder((n, n), name="B")
    C = topi.nn.matmul(A, B)
    s = te.create_schedule(C.op)
    AA = s.cache_read(A, "shared", [C])
    i, j = C.op.axis
    by, ii = s[C].split(i, factor=8)
    bx, ji = s[C].split(j, factor=8)
    s[C].reorder(by, bx, ii, ji)
    for ax, tag in ((by, "blockIdx.y"), (bx, "blockIdx.x"), (ii, "threadIdx.y"), (ji, "threadIdx.x")):
        s[C].bind(ax, te.thread_axis(tag))
    ko, _ = s[C].split(C.op.reduce_axis[0], factor=8)
    s[AA].compute_at(s[C], ko)
    return s, [A, B, C]


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
