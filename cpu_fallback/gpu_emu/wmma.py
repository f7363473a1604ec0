"""Tensor-core calls for the emulator, TIR to TIR: each becomes plain loops.

On a GPU a fragment is spread over the 32 lanes of a warp and every lane calls
the wmma functions with the same arguments.  Here lane 0 of each warp does the
warp's work alone, on whole fragments: a fragment buffer (``wmma.matrix_a`` ...)
becomes a ``local`` array of the same element count, element ``(r, c)`` of
fragment ``i`` at ``i * rows * cols + r * cols + c`` (matrix_a: m x k, matrix_b:
k x n, accumulator: m x n).  The other lanes skip the calls: a fragment is only
ever seen through ``tvm_store_matrix_sync``, which lane 0 does for the warp, so
nothing observable changes (and the checker sees one writer per warp).  Each call
becomes

* ``tvm_fill_fragment`` stores the value into every element;
* ``tvm_load_matrix_sync`` copies the matrix from memory (``row_major``: element
  ``(r, c)`` at ``ptr + r * stride + c``; ``col_major``: at ``ptr + c * stride + r``);
* ``tvm_mma_sync`` computes ``d = a x b + c`` element by element, products and sums
  in float32 (the tensor cores' exact fp16 products, accumulated in fp32; an fp16
  accumulator is rounded once per call);
* ``tvm_store_matrix_sync`` writes the matrix back.

A load or store first asserts wmma's address rules (the tile 256-bit aligned, rows a
multiple of 16 bytes apart), which a GPU does not report: a misaligned schedule
fails here with its kernel and buffer named instead of computing garbage there.

The fragment shapes come from the
``fragment_shape`` attributes of ``infer_fragment`` (the CUDA pipeline's).
"""
from __future__ import annotations

from ...tir import dtype as _dt
from ...tir import expr as E
from ...tir import keys
from ...tir import stmt as S
from ...tir.analysis import allocations
from ...tir.analysis.fragments import fragment_allocations, fragment_dims, fragment_elements, parse_fragment_shape
from ...tir.functor import IRMutator


def _int(v) -> E.IntImm:
    return E.IntImm("int32", int(v))


def has_wmma(body) -> bool:
    """Whether ``body`` allocates tensor-core fragments (and so makes wmma calls)."""
    return bool(fragment_allocations(body))


class _LowerWMMA(IRMutator):
    def __init__(self, kernel_name, buffers, original_scope, lane, sim_error):
        super().__init__()
        self.kernel_name = kernel_name
        self.buffers = buffers        # data Var -> Buffer (parameters and allocations)
        self.original_scope = original_scope  # fragment data Var -> its wmma scope
        self.lane = lane              # the thread's lane in its warp (an expression)
        self.sim_error = sim_error
        self.shape = {}               # fragment data Var -> (m, n, k)
        self.local = {}               # fragment data Var -> its local twin
        self.counter = 0

    # -- fragments become local arrays ------------------------------------------------
    def twin(self, var):
        buf = self.local.get(var)
        if buf is None:
            raise self.sim_error(f"kernel {self.kernel_name}: {var} is used as a tensor-core fragment but is not a "
                                 "wmma buffer allocated in the kernel")
        return buf

    def visit_AttrStmt(self, s):
        if s.attr_key == keys.FRAGMENT_SHAPE:
            self.shape[s.node] = parse_fragment_shape(s.value.value)
            return self.visit(s.body)
        if s.attr_key == keys.FRAGMENT_LAYOUT:
            return self.visit(s.body)
        return super().generic_visit(s)

    def visit_Allocate(self, s):
        buf = s.buffer
        if buf.scope not in keys.WMMA_SCOPES:
            return self.generic_visit(s)
        if buf.data not in self.shape:
            raise self.sim_error(f"kernel {self.kernel_name}: fragment {buf.name!r} has no fragment_shape "
                                 "attribute; run the CUDA pipeline (its infer_fragment pass) first")
        twin = S.Buffer(buf.name, buf.dtype, buf.shape, buf.data, keys.LOCAL)
        self.local[buf.data] = twin
        return S.Allocate(twin, self.visit(s.body))

    # -- the calls --------------------------------------------------------------------
    def visit_Evaluate(self, s):
        call = s.value
        if not isinstance(call, E.Call) or call.op not in keys.WMMA_INTRINSICS:
            return self.generic_visit(s)
        # one lane per warp does the warp's work: a fragment is seen only through
        # tvm_store_matrix_sync, and every lane's fragments would hold the same values
        work = getattr(self, "lower_" + call.op)(call)
        # each fragment index within its buffer (a GPU would use registers it does not have)
        a = call.args
        pairs = [(a[0], a[1]), (a[2], a[3]), (a[4], a[5]), (a[6], a[7])] if call.op == keys.WMMA_MMA \
            else [(a[0], a[4])]
        for var, index in reversed(pairs):
            frag = self.twin(var)
            count = E.const_int_value(frag.shape[0]) // (
                fragment_elements(self.original_scope[frag.data], self.shape[frag.data]))
            ok = E.And(E.GE(index, _int(0)), E.LT(index, _int(count)))
            work = S.AssertStmt(ok, f"kernel {self.kernel_name}: {call.op} uses a fragment of {frag.name!r} past its "
                                    f"{count} fragments (index `{index}`); the tensorized region lies outside the "
                                    "cached stage's buffer", work)
        return S.IfThenElse(E.EQ(self.lane, _int(0)), work)

    def loop(self, name, extent, body_of):
        self.counter += 1
        v = E.Var(f"wmma_{name}{self.counter}", "int32")
        return S.For(v, _int(0), _int(extent), S.ForKind.SERIAL, body_of(v))

    def memory(self, ptr, call):
        """(buffer, element offset) of the address ``ptr`` handed to a load or store."""
        if isinstance(ptr, E.Call) and ptr.op == keys.ACCESS_PTR:
            ann, data, offset = ptr.args[0], ptr.args[1], ptr.args[2]
            buf = self.buffers.get(data)
            if buf is None:
                raise self.sim_error(f"kernel {self.kernel_name}: `{call}` reads or writes through {data}, which "
                                     "is neither a parameter nor an allocation of the kernel")
            if ann.dtype != buf.dtype:
                raise self.sim_error(f"kernel {self.kernel_name}: `{call}` views {buf.name!r} ({buf.dtype}) as "
                                     f"{ann.dtype}; the emulator needs the buffer's own element type")
            return buf, offset
        raise self.sim_error(f"kernel {self.kernel_name}: `{call}`: the emulator follows pointers given as "
                             "buf.access_ptr(...); pass the address that way")

    def lower_tvm_fill_fragment(self, call):
        frag = self.twin(call.args[0])
        rows, cols = fragment_dims(self.original_scope[frag.data], self.shape[frag.data])
        index, value = call.args[4], call.args[5]
        base = E.Mul(index, _int(rows * cols))
        value = value if value.dtype == frag.dtype else E.Cast(frag.dtype, value)
        return self.loop("i", rows * cols, lambda i: S.BufferStore(frag, value, (E.Add(base, i),)))

    def _matrix(self, call, store):
        frag = self.twin(call.args[0])
        rows, cols = fragment_dims(self.original_scope[frag.data], self.shape[frag.data])
        index, ptr, stride, layout = call.args[4], call.args[5], call.args[6], call.args[7].value
        mem, offset = self.memory(ptr, call)

        def body(r, c):
            at = E.Add(offset, E.Add(E.Mul(r, stride), c) if layout == "row_major" else E.Add(E.Mul(c, stride), r))
            f_at = E.Add(E.Add(E.Mul(index, _int(rows * cols)), E.Mul(r, _int(cols))), c)
            if store:
                value = E.BufferLoad(frag, (f_at,))
                if value.dtype != mem.dtype:
                    value = E.Cast(mem.dtype, value)
                return S.BufferStore(mem, value, (at,))
            value = E.BufferLoad(mem, (at,))
            if value.dtype != frag.dtype:
                value = E.Cast(frag.dtype, value)
            return S.BufferStore(frag, value, (f_at,))

        nest = self.loop("r", rows, lambda r: self.loop("c", cols, lambda c: body(r, c)))
        return S.AssertStmt(self.aligned(mem, offset, stride), self.misaligned(call, mem), nest)

    @staticmethod
    def aligned(mem, offset, stride):
        """wmma's address rules: the tile's first element 256-bit aligned (buffers
        start so aligned: CUDA's shared arrays in wmma kernels, the runtime's global
        ones), the stride a multiple of 16 bytes."""
        size = E.IntImm("int32", _dt.parse(mem.dtype).bytes)
        return E.And(E.EQ(E.FloorMod(E.Mul(E.Cast("int32", offset), size), _int(32)), _int(0)),
                     E.EQ(E.FloorMod(E.Mul(E.Cast("int32", stride), size), _int(16)), _int(0)))

    def misaligned(self, call, mem):
        return (f"kernel {self.kernel_name}: {call.op} on {mem.name!r}: the tile must start on a 32-byte boundary and "
                "its rows (stride) be a multiple of 16 bytes apart, as wmma requires (the GPU would fault or read "
                "garbage); pad the buffer's rows (storage_align) or tile at multiples of 16 elements")

    def lower_tvm_load_matrix_sync(self, call):
        return self._matrix(call, store=False)

    def lower_tvm_store_matrix_sync(self, call):
        return self._matrix(call, store=True)

    def lower_tvm_mma_sync(self, call):
        d, di, a, ai, b, bi, c, ci = call.args
        d, a, b, c = (self.twin(x) for x in (d, a, b, c))
        m, n, k = self.shape[d.data]
        acc = S.Buffer(f"wmma_acc{self.counter}", "float32", (_int(1),), E.Var(f"wmma_acc{self.counter}", "handle"),
                       keys.LOCAL)
        zero = (_int(0),)

        def f32(x):
            return x if x.dtype == "float32" else E.Cast("float32", x)

        def cell(i, j):
            at_c = E.Add(E.Add(E.Mul(ci, _int(m * n)), E.Mul(i, _int(n))), j)
            at_d = E.Add(E.Add(E.Mul(di, _int(m * n)), E.Mul(i, _int(n))), j)

            def step(kk):
                x = f32(E.BufferLoad(a, (E.Add(E.Add(E.Mul(ai, _int(m * k)), E.Mul(i, _int(k))), kk),)))
                y = f32(E.BufferLoad(b, (E.Add(E.Add(E.Mul(bi, _int(k * n)), E.Mul(kk, _int(n))), j),)))
                return S.BufferStore(acc, E.Add(E.BufferLoad(acc, zero), E.Mul(x, y)), zero)

            out = E.BufferLoad(acc, zero)
            return S.seq(S.BufferStore(acc, f32(E.BufferLoad(c, (at_c,))), zero),
                         self.loop("k", k, step),
                         S.BufferStore(d, out if d.dtype == "float32" else E.Cast(d.dtype, out), (at_d,)))

        nest = self.loop("i", m, lambda i: self.loop("j", n, lambda j: cell(i, j)))
        return S.Allocate(acc, nest)


def lower_wmma(body, func, lane, sim_error):
    """Rewrite the tensor-core calls and fragments of a kernel body (see the module docs).

    Parameters
    ----------
    body : Stmt
        The kernel body (thread attributes stripped).
    func : PrimFunc
        The kernel (its parameters' buffers).
    lane : PrimExpr
        The calling thread's lane in its warp.
    sim_error : type
        The exception to raise (the emulator's ``SimError``).

    Returns
    -------
    Stmt
    """
    buffers = {b.data: b for b in func.buffer_map.values()}
    buffers.update((b.data, b) for b in allocations(body))
    scopes = {b.data: b.scope for b in fragment_allocations(body)}
    return _LowerWMMA(func.name, buffers, scopes, lane, sim_error).visit(body)


__all__ = ["has_wmma", "lower_wmma"]
