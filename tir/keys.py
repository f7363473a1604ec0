"""Every name the IR uses as a key: attribute keys, function attributes, intrinsic names
and GPU thread tags, in one module.

Passes, analyses, printers and the emulator import these names instead of spelling the
strings, so a reader finds every producer and consumer of a key with one search.

==========================  ================================================================
name                        meaning
==========================  ================================================================
``THREAD_EXTENT``           ``AttrStmt(IterVar, "thread_extent", extent)``: a kernel body runs
                            with ``extent`` threads along the IterVar's tag
``VIRTUAL_THREAD``          the same for a ``vthread`` axis (before inject_virtual_thread)
``DOUBLE_BUFFER_SCOPE``     ``AttrStmt(data, ...)``: the buffer is double-buffered across the
                            enclosing loop (te lowering -> inject_double_buffer); value 2:
                            its prefetch goes through registers (``register_prefetch``)
``DOUBLE_BUFFER_WRITE``     marks the fetch into the next slot (inject_double_buffer ->
                            thread_sync)
``PREFETCH_SCOPE``          ``AttrStmt(data, ..., offset)`` at the top of a loop's body: prefetch
                            what the body reads of the buffer ``offset`` iterations ahead
                            (te lowering of ``Stage.prefetch`` -> inject_prefetch)
``PREFETCH``                intrinsic ``(BufferLoad)``: prefetch the cache line of that element
                            for reading (inject_prefetch -> the C printer's
                            ``__builtin_prefetch``); never faults, reads nothing
``EXTERN_SCOPE``            ``AttrStmt(0, ...)`` around the statement of an extern stage on a CPU
                            (a hybrid script's, from te lowering); only marks it
``THREAD_ALLREDUCE``        ``AttrStmt(CommReducer, ...)`` around the intrinsic of the same
                            name: a reduction across the threads of a block (te lowering ->
                            lower_thread_allreduce)
``KERNEL`` / ``HOST``       PrimFunc attributes: a device function / the host side of a split
                            GPU function (split_host_device)
``GLOBAL_SYMBOL``           PrimFunc attribute: the function's exported name
``LAUNCH``                  intrinsic in a host function: launch a kernel with arguments
``STORAGE_SYNC``            intrinsic: a barrier (``__syncthreads()`` for scope "shared")
``WARP_SHUFFLE_DOWN``       intrinsic: read a value from the lane ``delta`` above
``ACCESS_PTR``              intrinsic ``(type_annotation, data, offset, extent, mask)``: the
                            address ``data + offset`` (elements of the annotated dtype), of
                            ``extent`` elements read (mask bit 1) / written (bit 2) by a callee
                            (``Buffer.access_ptr``)
``TYPE_ANNOTATION``         intrinsic with no arguments whose dtype names a type
``REINTERPRET``             intrinsic ``(value)``: the bits of ``value`` as the call's dtype
``CALL_EXTERN``,            intrinsic ``(StringImm(name), args...)``: a call of the C (or CUDA)
``CALL_PURE_EXTERN``        function ``name``; "pure": it has no side effects
``CALL_PACKED``             intrinsic ``(StringImm(name), args...)``: call the function registered
                            as ``name`` (``tecc.register_func``) from CPU code; an argument
                            that is a buffer is a ``STACK_MAKE_ARRAY`` call
``STACK_MAKE_ARRAY``        ``(data, shape, strides, ndim, zero of the element dtype,
                            elem_offset)``: a buffer passed to a packed function; ``shape``
                            and ``strides`` are ``STACK_MAKE_SHAPE`` calls (``strides`` may
                            be the integer 0: compact)
``STACK_MAKE_SHAPE``        ``(extents...)``: the shape (or strides) of such a buffer
==========================  ================================================================
"""
from __future__ import annotations

THREAD_EXTENT = "thread_extent"
VIRTUAL_THREAD = "virtual_thread"
DOUBLE_BUFFER_SCOPE = "double_buffer_scope"
DOUBLE_BUFFER_WRITE = "double_buffer_write"
PREFETCH_SCOPE = "prefetch_scope"
PREFETCH = "tir.prefetch"
THREAD_ALLREDUCE = "tecc.thread_allreduce"
EXTERN_SCOPE = "extern_scope"

KERNEL = "tecc.kernel"
HOST = "tecc.host"
GLOBAL_SYMBOL = "global_symbol"

LAUNCH = "tecc.launch"
STORAGE_SYNC = "tvm_storage_sync"
WARP_SHUFFLE_DOWN = "tecc.warp_shuffle_down"
ACCESS_PTR = "tvm_access_ptr"
TYPE_ANNOTATION = "type_annotation"
REINTERPRET = "reinterpret"
CALL_EXTERN = "call_extern"
CALL_PURE_EXTERN = "call_pure_extern"
#: the calls out of compiled code into registered functions keep TVM's intrinsic names
CALL_PACKED = "tir.tvm_call_packed"
STACK_MAKE_ARRAY = "tir.tvm_stack_make_array"
STACK_MAKE_SHAPE = "tir.tvm_stack_make_shape"

#: threads per warp that the warp intrinsics assume
WARP_SIZE = 32

#: GPU index tags, in the order CUDA numbers its launch dimensions
BLOCK_TAGS = ("blockIdx.x", "blockIdx.y", "blockIdx.z")
THREAD_TAGS = ("threadIdx.x", "threadIdx.y", "threadIdx.z")
GPU_TAGS = BLOCK_TAGS + THREAD_TAGS

#: memory scopes; "register" holds one value (scalar or vector) of a promoted local buffer
GLOBAL, SHARED, LOCAL, WARP, REGISTER = "global", "shared", "local", "warp", "register"
#: tensor-core fragments (``nvcuda::wmma::fragment``): per warp, held in the registers
#: of its lanes; only the wmma intrinsics below touch them
WMMA_MATRIX_A, WMMA_MATRIX_B, WMMA_ACCUMULATOR = "wmma.matrix_a", "wmma.matrix_b", "wmma.accumulator"
WMMA_SCOPES = (WMMA_MATRIX_A, WMMA_MATRIX_B, WMMA_ACCUMULATOR)

#: the wmma intrinsics (TVM's names and argument orders):
#: ``tvm_fill_fragment(frag, m, n, k, index, value)``,
#: ``tvm_load_matrix_sync(frag, m, n, k, index, ptr, stride, layout)``,
#: ``tvm_mma_sync(d, di, a, ai, b, bi, c, ci)``,
#: ``tvm_store_matrix_sync(frag, m, n, k, index, ptr, stride, layout)``
WMMA_FILL = "tvm_fill_fragment"
WMMA_LOAD = "tvm_load_matrix_sync"
WMMA_MMA = "tvm_mma_sync"
WMMA_STORE = "tvm_store_matrix_sync"
WMMA_INTRINSICS = (WMMA_FILL, WMMA_LOAD, WMMA_MMA, WMMA_STORE)
#: on an ``Allocate`` of a fragment buffer: ``"m, n, k"`` and the layout of its loads
#: (added by ``infer_fragment``, read by the CUDA printer)
FRAGMENT_SHAPE = "fragment_shape"
FRAGMENT_LAYOUT = "fragment_layout"


def is_gpu_tag(tag: str) -> bool:
    """True for ``blockIdx.*`` and ``threadIdx.*`` (not ``vthread``)."""
    return tag in GPU_TAGS


def is_thread_attr(key: str) -> bool:
    """True for the attribute keys that bind a thread index variable."""
    return key in (THREAD_EXTENT, VIRTUAL_THREAD)
