"""Print the device functions of a CUDA schedule as one CUDA C++ translation unit.

:class:`CodeGenCUDA` subclasses :class:`~tecc.cpu_fallback.codegen_c.CodeGenC` through
its public hooks: the walk over the IR is shared, and CUDA changes these:

==========================  ===========================================================
piece                       CUDA
==========================  ===========================================================
``SCALAR_TYPES``            ``float16`` -> ``__half`` (``cuda_fp16.h``)
``STORAGE_TYPES``           ``bfloat16`` -> ``__nv_bfloat16`` (``cuda_bf16.h``); values are
                            computed in ``float`` as in C
``function_prefix``         ``extern "C" __global__ void __launch_bounds__(N)``
``print_function_end``      nothing (kernels return ``void``)
``visit_AttrStmt``          ``thread_extent``: the index variable prints as
                            ``((int)threadIdx.x)``; nothing is declared
``print_allocate``          ``__shared__`` arrays (or carving of ``extern __shared__``
                            memory above 48 KiB), aligned local arrays
``print_barrier``           ``__syncthreads();``
``print_fail``              ``printf`` the message, then ``__trap()``
``visit_unknown_call``      ``tecc.warp_shuffle_down``: ``__shfl_down_sync(0xffffffffu,
                            v, delta, 32)``
helpers                     ``static __device__ __forceinline__``
``_wmma_call``              ``nvcuda::wmma`` calls; a bfloat16 matrix_a/matrix_b load
                            from shared memory is the same PTX instruction with its
                            ``.shared`` state written out (``_shared_bf16_load``)
vectors                     ``tecc_vec<T, N>`` (lane-wise operators); 2/4-lane contiguous
                            accesses at a provably aligned offset load and store
                            through ``float2``/``float4``/``int4``/``__half2``...
==========================  ===========================================================

NVRTC has no standard headers, so ``print_preamble`` declares the fixed-width integer
types itself and includes ``cuda_fp16.h``/``cuda_bf16.h`` when a kernel's IR uses
``float16``/``bfloat16`` (:func:`tecc.tir.analysis.dtypes_used`;
:func:`tecc.cuda_codegen.nvrtc.cuda_include_dirs` finds those headers).
"""
from __future__ import annotations

import math

from ..cpu_fallback.codegen_c import (
    CMP_OPS, P_ADD, P_COND, P_OR, P_PRIMARY, P_UNARY, CodeGenC, LaneOf, pow2_ceil,
    c_string_literal,
)
from ..errors import CompileError
from ..tir import dtype as _dt
from ..tir import expr as E
from ..tir import stmt as S
from ..tir import keys
from ..tir.analysis import (
    const_size, dtypes_used, gpu_loops, storage_bytes, thread_extent_lists, thread_extents, threads_per_block,
)
from ..cpu_fallback.narrow_types import overflow_threshold
from ..tir.analysis.fragments import fragment_allocations, fragment_elements, fragment_info

#: static shared memory above this needs the dynamic (``extern __shared__``) path
STATIC_SHARED_LIMIT = 48 * 1024
#: alignment in bytes of shared arrays and of every carved dynamic shared buffer
SHARED_ALIGN = 16
#: the same in a kernel with tensor-core fragments: wmma loads and stores need 256-bit aligned addresses
WMMA_SHARED_ALIGN = 32

#: (element dtype, lanes) -> (native CUDA vector type, its lane fields) for aligned accesses
NATIVE_VECTORS = {
    ("float32", 2): ("float2", "xy"), ("float32", 4): ("float4", "xyzw"),
    ("int32", 2): ("int2", "xy"), ("int32", 4): ("int4", "xyzw"),
    ("uint32", 2): ("uint2", "xy"), ("uint32", 4): ("uint4", "xyzw"),
    ("float64", 2): ("double2", "xy"), ("int64", 2): ("longlong2", "xy"),
    ("float16", 2): ("__half2", "xy"),
}

#: bytes -> the unsigned type of that size through which an aligned vector of 1- or
#: 2-byte elements (float16 x 4 or 8, int8 x 16...) moves as one access, its lanes
#: reinterpreted through a union (the 128-bit loads and stores a tensor-core
#: kernel's staging of float16 tiles needs)
PACKED_VECTORS = {4: "unsigned int", 8: "uint2", 16: "uint4"}


#: the 8-bit floats sm_89 and later convert with one instruction (PTX's name of each)
HARDWARE_FP8 = {"float8_e4m3fn": "e4m3", "float8_e5m2": "e5m2"}
#: the architectures that have those instructions
HARDWARE_FP8_ARCH = 890


def _arch_branch(text: str, body: list, replace: bool) -> str:
    """Helper ``text`` (one function) with ``body`` first where ``__CUDA_ARCH__`` has the
    8-bit float conversions; ``replace``: instead of the portable body there."""
    lines = text.split("\n")
    guard = f"#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= {HARDWARE_FP8_ARCH}"
    if replace:
        return "\n".join([lines[0], guard, *body, "#else", *lines[1:-1], "#endif", lines[-1]])
    return "\n".join([lines[0], guard, *body, "#endif", *lines[1:]])


def native_vector(element: str, lanes: int):
    """``(type, fields)`` of the native access of ``lanes`` elements of ``element``: a CUDA
    vector type and its lane fields (:data:`NATIVE_VECTORS`), or an unsigned type
    and None (:data:`PACKED_VECTORS`: the lanes as bits); None when there is none."""
    if (element, lanes) in NATIVE_VECTORS:
        return NATIVE_VECTORS[(element, lanes)]
    d = _dt.parse(element)
    if d.is_bool or d.is_narrow or d.bits not in (8, 16):
        return None
    packed = PACKED_VECTORS.get(lanes * d.bits // 8)
    return None if packed is None else (packed, None)

_PREAMBLE = """\
// fixed-width integers (NVRTC has no <stdint.h>)
typedef signed char int8_t;
typedef short int16_t;
typedef int int32_t;
typedef long long int64_t;
typedef unsigned char uint8_t;
typedef unsigned short uint16_t;
typedef unsigned int uint32_t;
typedef unsigned long long uint64_t;
#define INT64_C(c) c##LL
#define UINT64_C(c) c##ULL"""

_VECTOR_BINARY_OPS = ("+", "-", "*", "/", "%", "&", "|", "^", "<<", ">>")


def _vector_template() -> str:
    """``tecc_vec<T, N>``: N lanes in an array, with lane-wise operators."""
    lines = [
        "// a small vector: lanes in an array, arithmetic lane by lane",
        "template <typename T, int N>",
        "struct tecc_vec {",
        "    T v[N];",
        "    __device__ __forceinline__ T& operator[](int i) { return v[i]; }",
        "    __device__ __forceinline__ const T& operator[](int i) const { return v[i]; }",
        "};",
    ]
    for op in _VECTOR_BINARY_OPS:
        lines += [
            "",
            "template <typename T, int N>",
            f"__device__ __forceinline__ tecc_vec<T, N> operator{op}(const tecc_vec<T, N>& a, "
            "const tecc_vec<T, N>& b) {",
            "    tecc_vec<T, N> r;",
            "    for (int l = 0; l < N; ++l) {",
            f"        r.v[l] = a.v[l] {op} b.v[l];",
            "    }",
            "    return r;",
            "}",
        ]
    for op in ("-", "~"):
        lines += [
            "",
            "template <typename T, int N>",
            f"__device__ __forceinline__ tecc_vec<T, N> operator{op}(const tecc_vec<T, N>& a) {{",
            "    tecc_vec<T, N> r;",
            "    for (int l = 0; l < N; ++l) {",
            f"        r.v[l] = {op}a.v[l];",
            "    }",
            "    return r;",
            "}",
        ]
    return "\n".join(lines)


def multiple_of(e, known=None) -> int:
    """The largest constant ``g`` this module can prove divides the integer ``e``
    (``0`` means ``e`` is the constant 0, a multiple of everything).

    ``known`` maps variables to a factor proved for them (let-bound values).
    """
    known = known or {}
    if isinstance(e, E.IntImm):
        return abs(int(e.value))
    if isinstance(e, E.Var):
        return known.get(e, 1)
    if isinstance(e, (E.Add, E.Sub, E.Min, E.Max)):
        return math.gcd(multiple_of(e.a, known), multiple_of(e.b, known))
    if isinstance(e, E.Mul):
        return multiple_of(e.a, known) * multiple_of(e.b, known)
    if isinstance(e, E.FloorMod) and isinstance(e.b, E.IntImm) and e.b.value > 0:
        # a mod c = a - c * q: a multiple of gcd(factor of a, c)
        return math.gcd(multiple_of(e.a, known), int(e.b.value))
    if isinstance(e, E.Cast) and _dt.is_integer(e.dtype) and _dt.is_integer(e.value.dtype):
        if _dt.parse(e.dtype).bits >= _dt.parse(e.value.dtype).bits:
            return multiple_of(e.value, known)
        return 1
    if isinstance(e, E.Select):
        return math.gcd(multiple_of(e.true_value, known), multiple_of(e.false_value, known))
    if isinstance(e, E.Call) and e.op == "shift_left" and isinstance(e.args[1], E.IntImm):
        return multiple_of(e.args[0], known) << int(e.args[1].value)
    return 1


class CodeGenCUDA(CodeGenC):
    """Print device PrimFuncs (as the CUDA pipeline leaves them) as CUDA kernels.

    ``CodeGenCUDA().generate([k0, k1])`` returns one translation unit with every
    kernel; afterwards :attr:`kernel_info` holds, per kernel name, what the launcher
    needs from the printing (dynamic shared memory size, alignment required of each
    buffer parameter).
    """

    DECLARE_EXTERNS = False  # device functions come declared by the CUDA headers

    #: NVRTC has no GNU vector shuffles: a strided vector load is per lane
    vector_shuffles = False

    GCC_VECTORS = False  # CUDA's vectors are float4-style structs

    SCALAR_TYPES = {**CodeGenC.SCALAR_TYPES, "float16": "__half"}
    STORAGE_TYPES = {**CodeGenC.STORAGE_TYPES, "bfloat16": "__nv_bfloat16"}
    INCLUDES = ()
    BANNER = "generated by tecc (CUDA)"
    BACKEND = "CUDA"
    #: a kernel cannot call Python (tir.call_packed)
    PACKED_CALLS = False
    #: element dtype -> the header that defines it (NVRTC needs them included)
    DTYPE_HEADERS = {"float16": "cuda_fp16.h", "bfloat16": "cuda_bf16.h"}

    def __init__(self):
        super().__init__()
        self._headers = set()        # "cuda_fp16.h", "cuda_bf16.h", "mma.h"
        self._fragments = {}         # fragment data Var -> {"fragment_shape": "16, 16, 16", ...}
        self._fragment_scopes = {}   # fragment data Var -> its wmma scope (of the kernel being printed)
        self._fragment_buffers = {}  # fragment data Var -> its buffer (of the kernel being printed)
        self._shared_data = set()    # data Vars of the shared buffers allocated around the statement printed
        #: kernel name -> {"dynamic_shared_bytes": int, "param_align": {param index: bytes}}
        self.kernel_info = {}

    # ------------------------------------------------------------------------
    # entry points
    # ------------------------------------------------------------------------
    def generate(self, kernels) -> str:
        """One CUDA translation unit holding every kernel of ``kernels``.

        Parameters
        ----------
        kernels : list of PrimFunc
            Device functions (``attrs["tecc.kernel"]``), flattened, with
            ``thread_extent`` attributes; a single PrimFunc is accepted too.

        Returns
        -------
        str
            CUDA C++ source for NVRTC.
        """
        if isinstance(kernels, S.PrimFunc):
            kernels = [kernels]
        self.__init__()
        for k in kernels:
            self._headers.update(self.DTYPE_HEADERS[d] for d in dtypes_used(k) if d in self.DTYPE_HEADERS)
        names = set()
        for k in kernels:
            if k.name in names:
                raise CompileError(f"two kernels are named {k.name!r}; kernel names must be unique")
            names.add(k.name)
            self.add_function(k)
        return self.finish()

    def add_function(self, func: S.PrimFunc) -> None:
        try:
            shared_bytes = storage_bytes(func, keys.SHARED)
        except ValueError as err:
            raise CompileError(f"kernel {func.name}: {err}; shared memory needs a constant size") from None
        self._func = func
        self._dynamic_shared = shared_bytes > STATIC_SHARED_LIMIT
        frags = fragment_allocations(func.body)
        if frags:  # (the preamble is printed after every kernel: finish())
            self._headers.add("mma.h")
        self._fragment_buffers = {b.data: b for b in frags}
        self._fragment_scopes = {b.data: b.scope for b in frags}
        self._shared_align = WMMA_SHARED_ALIGN if frags else SHARED_ALIGN
        self._dyn_offset = 0
        self._dyn_declared = False
        self._let_factors = {}
        self._param_align = {}
        self._param_of_data = {}
        for i, p in enumerate(func.params):
            buf = func.buffer_map.get(p)
            if buf is not None:
                self._param_of_data[buf.data] = i
                self._param_of_data[p] = i
        self._check_kernel(func)
        super().add_function(func)
        self.kernel_info[func.name] = {
            "dynamic_shared_bytes": self._dyn_offset if self._dynamic_shared else 0,
            "param_align": dict(self._param_align),
        }

    def print_preamble(self) -> str:
        """The half-precision headers the kernels' dtypes need, then the fixed-width
        integer types (NVRTC has no standard headers)."""
        includes = [f"#include <{h}>" for h in (*self.DTYPE_HEADERS.values(), "mma.h") if h in self._headers]
        return "\n".join(includes + ([""] if includes else []) + [_PREAMBLE])

    def print_vector_types(self) -> str:
        """``tecc_vec`` and the typedefs of the vector types used (empty when none)."""
        typedefs = super().print_vector_types()
        return "\n".join([_vector_template(), "", typedefs]) if typedefs else ""

    def print_runtime_support(self) -> str:
        """Kernels report failures by trapping: no error functions."""
        return ""

    def headers(self) -> set:
        """The CUDA headers the last generated source includes."""
        return set(self._headers)

    def _check_kernel(self, func: S.PrimFunc) -> None:
        loops = gpu_loops(func)
        if loops:
            raise CompileError(
                f"kernel {func.name}: loop {loops[0].loop_var.name} is still a thread-binding loop; "
                "lower the schedule for CUDA first (tecc.lower(..., target='cuda'))")
        for tag, extents in thread_extent_lists(func).items():
            if not keys.is_gpu_tag(tag):
                raise CompileError(
                    f"kernel {func.name}: unknown thread tag {tag!r}; use one of {', '.join(keys.GPU_TAGS)}")
            if len(extents) > 1:
                raise CompileError(f"kernel {func.name}: thread tag(s) {[tag]} are bound twice")

    # ------------------------------------------------------------------------
    # types
    # ------------------------------------------------------------------------
    def vector_typedef(self, d, name: str) -> str:
        """``typedef tecc_vec<T, lanes rounded up to a power of two> tecc_<dtype>;``."""
        elem = "bool" if d.is_bool else self.type_name(str(d.element_of()))
        return f"typedef tecc_vec<{elem}, {pow2_ceil(d.lanes)}> {name};"

    # ------------------------------------------------------------------------
    # helpers
    # ------------------------------------------------------------------------
    def use_helper(self, name: str, text: str) -> str:
        """Register a device helper: the C printer's ``static inline`` helpers become
        ``static __device__ __forceinline__`` functions."""
        if text.startswith("static inline "):
            text = "static __device__ __forceinline__ " + text[len("static inline "):]
        return super().use_helper(name, text)

    def bf16_helpers(self) -> None:
        self.use_helper("tecc_bf16_to_f32", "\n".join([
            "static inline float tecc_bf16_to_f32(__nv_bfloat16 v) {",
            "    return __bfloat162float(v);",
            "}"]))
        self.use_helper("tecc_f32_to_bf16", "\n".join([
            "static inline __nv_bfloat16 tecc_f32_to_bf16(float f) {",
            "    return __float2bfloat16_rn(f);",
            "}"]))
        self.use_helper("tecc_bf16_round", "\n".join([
            "static inline float tecc_bf16_round(float f) {",
            "    return __bfloat162float(__float2bfloat16_rn(f));",
            "}"]))

    # the 8- and 4-bit floats: the C printer's conversions, with CUDA's bit casts,
    # and from sm_89 the conversion instructions of e4m3 and e5m2 in front
    def bitcast_helpers(self) -> dict:
        return {
            "tecc_f32_bits": "static inline uint32_t tecc_f32_bits(float f) {\n    return __float_as_uint(f);\n}",
            "tecc_bits_f32": "static inline float tecc_bits_f32(uint32_t u) {\n    return __uint_as_float(u);\n}",
            "tecc_f64_bits": "static inline uint64_t tecc_f64_bits(double d) {\n"
                             "    return (uint64_t)__double_as_longlong(d);\n}",
        }

    def decode_helper_text(self, fmt) -> str:
        text = super().decode_helper_text(fmt)
        kind = HARDWARE_FP8.get(fmt.name)
        if kind is None:
            return text
        return _arch_branch(text, [
            "    unsigned int h2;  // two of them to two halves (exact); the low one to float",
            f'    asm("cvt.rn.f16x2.{kind}x2 %0, %1;" : "=r"(h2) : "h"((unsigned short)v));',
            "    float r;",
            '    asm("cvt.f32.f16 %0, %1;" : "=f"(r) : "h"((unsigned short)(h2 & 0xffffu)));',
            "    return r;",
        ], replace=True)

    def encode_helper_text(self, fmt, width: int) -> str:
        text = super().encode_helper_text(fmt, width)
        kind = HARDWARE_FP8.get(fmt.name)
        if kind is None or width != 32:
            return text
        return _arch_branch(text, [
            f"    if ((__float_as_uint(f) & 0x7fffffffu) < 0x{overflow_threshold(fmt):x}u) {{  // rounds to a finite value",
            "        unsigned short r;  // the instruction saturates only what lies past that: NaN, inf, overflow below",
            f'        asm("cvt.rn.satfinite.{kind}x2.f32 %0, %1, %2;" : "=h"(r) : "f"(0.0f), "f"(f));',
            "        return (uint8_t)(r & 0xffu);",
            "    }",
        ], replace=False)

    def round_to_format(self, dtype: str, value, src_dtype: str) -> str:
        if dtype == "bfloat16" and src_dtype == "float64":  # cuda_bf16.h rounds a double once
            self.bf16_helpers()
            return self.float_value(f"__bfloat162float(__double2bfloat16({value}))", f"__double2bfloat16({value})")
        return super().round_to_format(dtype, value, src_dtype)

    def load_helper(self, dtype: str) -> str:
        """Contiguous load of unknown alignment: element by element."""
        vt = self.type_name(dtype)
        et = self.storage_type(_dt.element(dtype))
        name = f"tecc_load_{dtype}"
        return self.lane_loop_helper(name, f"const {et}* p", _dt.lanes(dtype), "r[l] = p[l];", result=vt)

    def store_helper(self, dtype: str) -> str:
        vt = self.type_name(dtype)
        et = self.storage_type(_dt.element(dtype))
        name = f"tecc_store_{dtype}"
        value = "v[l] != 0" if _dt.is_bool(dtype) else "v[l]"
        return self.lane_loop_helper(name, f"{et}* p, {vt} v", _dt.lanes(dtype), f"p[l] = {value};")

    def _aligned_load_helper(self, dtype: str) -> str:
        vt = self.type_name(dtype)
        et = self.storage_type(_dt.element(dtype))
        native, fields = native_vector(_dt.element(dtype), _dt.lanes(dtype))
        name = f"tecc_load_aligned_{dtype}"
        if fields is None:  # packed: the lanes are the bits of one access
            body = [f"    union {{ {native} bits; {vt} v; }} t;", f"    t.bits = *(const {native}*)p;",
                    "    return t.v;"]
        else:
            lanes = ", ".join(f"t.{f}" for f in fields)
            body = [f"    {native} t = *(const {native}*)p;", f"    {vt} r = {{{lanes}}};", "    return r;"]
        return self.use_helper(name, "\n".join([f"static inline {vt} {name}(const {et}* p) {{", *body, "}"]))

    def _aligned_store_helper(self, dtype: str) -> str:
        vt = self.type_name(dtype)
        et = self.storage_type(_dt.element(dtype))
        native, fields = native_vector(_dt.element(dtype), _dt.lanes(dtype))
        name = f"tecc_store_aligned_{dtype}"
        lines = [f"static inline void {name}({et}* p, {vt} v) {{"]
        if fields is None:
            lines += [f"    union {{ {native} bits; {vt} v; }} t;", "    t.v = v;", f"    *({native}*)p = t.bits;"]
        else:
            lines += [f"    {native} t;"] + [f"    t.{f} = v[{k}];" for k, f in enumerate(fields)]
            lines += [f"    *({native}*)p = t;"]
        return self.use_helper(name, "\n".join(lines + ["}"]))

    def broadcast_helper(self, dtype: str) -> str:
        vt = self.type_name(dtype)
        st = self.type_name(_dt.element(dtype)) if not _dt.is_bool(dtype) else "bool"
        name = f"tecc_broadcast_{dtype}"
        lanes = ", ".join(["x"] * pow2_ceil(_dt.lanes(dtype)))
        return self.use_helper(name, "\n".join([
            f"static inline {vt} {name}({st} x) {{",
            f"    {vt} r = {{{lanes}}};",
            "    return r;",
            "}"]))

    # ------------------------------------------------------------------------
    # function pieces
    # ------------------------------------------------------------------------
    def function_prefix(self) -> str:
        return 'extern "C" __global__ void'

    def print_function_signature(self, func: S.PrimFunc) -> str:
        params = ", ".join(self.print_param(func, p) for p in func.params)
        threads = threads_per_block(func)
        bounds = f" __launch_bounds__({threads})" if threads is not None else ""
        return f"{self.function_prefix()}{bounds} {func.name}({params})"

    def print_function_end(self, func: S.PrimFunc) -> None:
        """Kernels return ``void``: nothing to print."""

    def print_fail(self, message: str) -> None:
        """A failed assertion inside a kernel prints the message and traps (the
        launch then reports an error)."""
        self.emit(f"printf(\"tecc kernel assertion failed: %s\\n\", {c_string_literal(message)});")
        self.emit("__trap();")

    def print_barrier(self, call) -> None:
        scope = call.args[0].value if call.args and isinstance(call.args[0], E.StringImm) else "shared"
        if scope == "warp":
            self.emit("__syncwarp();")
        elif scope == "shared":
            self.emit("__syncthreads();")
        else:
            raise CompileError(f"barrier of scope {scope!r} is not supported in a CUDA kernel; "
                               "only 'shared' (__syncthreads) and 'warp' (__syncwarp)")

    def visit_AttrStmt(self, s):
        if s.attr_key in (keys.FRAGMENT_SHAPE, keys.FRAGMENT_LAYOUT):
            self._fragments.setdefault(s.node, {})[s.attr_key] = s.value.value
            self.print_stmt(s.body)
            return
        if s.attr_key != keys.THREAD_EXTENT:
            return super().visit_AttrStmt(s)
        iv = s.node
        # the index is the builtin, read as a signed int (unsigned arithmetic would
        # change the meaning of subtractions and comparisons)
        with self.printed_as(iv.var, f"((int){iv.thread_tag})"):
            self.print_stmt(s.body)

    def visit_LetStmt(self, s):
        if _dt.is_integer(s.var.dtype):
            self._let_factors[s.var] = multiple_of(s.value, self._let_factors)
        super().visit_LetStmt(s)

    # ------------------------------------------------------------------------
    # memory
    # ------------------------------------------------------------------------
    def print_allocate(self, s: S.Allocate) -> None:
        buf = s.buffer
        if buf.scope == "shared":
            self._print_shared_allocate(s)
            return
        if buf.scope in keys.WMMA_SCOPES:
            self._print_fragment_allocate(s)
            return
        if buf.scope == "global":
            raise CompileError(
                f"kernel {self._func.name}: global buffer {buf.name!r} is allocated inside the kernel; "
                "global intermediates must be workspaces allocated by the host function")
        if not self.is_stack_allocation(buf):
            raise CompileError(
                f"kernel {self._func.name}: local buffer {buf.name!r} needs a constant size of at "
                "most 64 KiB per thread; bound its extent with a constant split factor")
        if buf.scope == keys.REGISTER:
            super().print_allocate(s)  # one variable
            return
        with self.buffer_binding(buf) as name:
            n = max(1, const_size(buf))
            self.emit(f"{self.storage_type(buf.dtype)} {name}[{n}] __align__({SHARED_ALIGN});")
            self.print_stmt(s.body)

    def _print_fragment_allocate(self, s: S.Allocate) -> None:
        """``nvcuda::wmma::fragment<matrix_a, 16, 16, 16, __half, row_major> A[n]``: the
        shape and layout are infer_fragment's attributes, the count is elements over
        elements per fragment."""
        buf = s.buffer
        shape, layout = fragment_info(self._fragments, buf)
        role = buf.scope.split(".")[1]
        args = [f"nvcuda::wmma::{role}", *map(str, shape), self.storage_type(buf.dtype)]
        if layout is not None:
            args.append(f"nvcuda::wmma::{layout}")
        count = const_size(buf) // fragment_elements(buf.scope, shape)
        with self.buffer_binding(buf) as name:
            self.emit(f"nvcuda::wmma::fragment<{', '.join(args)}> {name}[{count}];")
            self.print_stmt(s.body)

    def _wmma_call(self, e) -> str:
        """The ``nvcuda::wmma`` call of a tensor-core intrinsic (TVM's argument orders,
        :mod:`tecc.tir.keys`)."""
        a = e.args

        def frag(var, index):
            return f"{self.expr(var)}[{self.expr(index)}]"

        if e.op == keys.WMMA_FILL:
            return f"nvcuda::wmma::fill_fragment({frag(a[0], a[4])}, {self.expr(a[5])})"
        if e.op == keys.WMMA_MMA:
            return f"nvcuda::wmma::mma_sync({frag(a[0], a[1])}, {frag(a[2], a[3])}, {frag(a[4], a[5])}, " \
                   f"{frag(a[6], a[7])})"
        layout = f"nvcuda::wmma::mem_{a[7].value}"
        if e.op == keys.WMMA_STORE:
            return f"nvcuda::wmma::store_matrix_sync({self.expr(a[5])}, {frag(a[0], a[4])}, {self.expr(a[6])}, " \
                   f"{layout})"
        # a load: the matrix_a/matrix_b fragment types carry their layout, an accumulator's load names it
        scope = self._fragment_scopes.get(a[0])
        if scope != keys.WMMA_ACCUMULATOR and self._reads_shared(a[5]) \
                and self.pointer_dtype(a[0]) == "bfloat16":
            return self._shared_bf16_load(e)
        tail = f", {layout}" if scope == keys.WMMA_ACCUMULATOR else ""
        return f"nvcuda::wmma::load_matrix_sync({frag(a[0], a[4])}, {self.expr(a[5])}, {self.expr(a[6])}{tail})"

    def _reads_shared(self, pointer) -> bool:
        """Whether ``pointer`` (a wmma load's ``access_ptr``) points into a shared buffer."""
        return (isinstance(pointer, E.Call) and pointer.op == keys.ACCESS_PTR
                and pointer.args[1] in self._shared_data)

    def _shared_bf16_load(self, e) -> str:
        """A bfloat16 matrix_a/matrix_b fragment load from shared memory, through a helper
        that issues ``wmma.load`` with its ``.shared`` state written out.

        NVVM infers the state space of the float16 loads' pointers (``wmma.load.a ...
        .shared.f16``, which ptxas turns into LDSM), but not of the bfloat16 ones: their
        generic ``wmma.load ... .bf16`` became 32-bit generic loads (LD.E), four times
        the instructions and a pass through the generic address path.  The instruction
        is the same, its destination registers in the order the builtin stores them into
        the fragment, so the fragment's contents are the builtin's; a static_assert
        pins the fragment's size to the registers the PTX ISA gives the shape."""
        a = e.args
        role = self._fragment_scopes[a[0]].split(".")[1]             # matrix_a / matrix_b
        shape, layout = fragment_info(self._fragments, self._fragment_buffers[a[0]])
        m, n, k = shape
        rows, cols = (m, k) if role == "matrix_a" else (k, n)
        regs = rows * cols // 64                                     # bf16 pairs per lane of a warp
        ptx_layout = "row" if layout == "row_major" else "col"
        frag = (f"nvcuda::wmma::fragment<nvcuda::wmma::{role}, {m}, {n}, {k}, __nv_bfloat16, "
                f"nvcuda::wmma::{layout}>")
        name = f"tecc_wmma_load_shared_{role}_m{m}n{n}k{k}_bf16_{layout}"
        outs = ", ".join(f'"=r"(r[{i}])' for i in range(regs))
        dests = ", ".join(f"%{i}" for i in range(regs))
        self.use_helper(name, "\n".join([
            f"static inline void {name}({frag}& f, const __nv_bfloat16* p, unsigned ldm) {{",
            f'    static_assert(sizeof(f.x) == {4 * regs}, "a {role} m{m}n{n}k{k} bfloat16 fragment holds {regs} '
            f'registers");',
            "    unsigned* r = reinterpret_cast<unsigned*>(&f.x[0]);",
            "    unsigned addr = static_cast<unsigned>(__cvta_generic_to_shared(p));",
            f'    asm volatile("wmma.load.{role[-1]}.sync.aligned.{ptx_layout}.m{m}n{n}k{k}.shared.bf16 '
            f'{{{dests}}}, [%{regs}], %{regs + 1};"',
            f'                 : {outs} : "r"(addr), "r"(ldm) : "memory");',
            "}"]))
        return f"{name}({self.expr(a[0])}[{self.expr(a[4])}], {self.expr(a[5])}, (unsigned)({self.expr(a[6])}))"

    def _print_shared_allocate(self, s: S.Allocate) -> None:
        buf = s.buffer
        n = const_size(buf)
        if n is None:
            raise CompileError(
                f"kernel {self._func.name}: shared buffer {buf.name!r} has the symbolic size "
                f"{buf.shape}; shared memory needs a constant size")
        n = max(1, n)
        st = self.storage_type(buf.dtype)
        with self.buffer_binding(buf) as name:
            if self._dynamic_shared:
                if not self._dyn_declared:
                    self.emit(f"extern __shared__ __align__({self._shared_align}) unsigned char tecc_dynamic_smem[];")
                    self._dyn_declared = True
                    self.reserve_name("tecc_dynamic_smem")
                offset = self._dyn_offset
                align = self._shared_align
                self._dyn_offset = -(-(offset + n * _dt.parse(buf.dtype).bytes) // align) * align
                self.emit(f"{st}* {self.restrict_keyword} {name} = ({st}*)(tecc_dynamic_smem + {offset});")
            else:
                self.emit(f"__shared__ __align__({self._shared_align}) {st} {name}[{n}];")
            self._shared_data.add(buf.data)
            try:
                self.print_stmt(s.body)
            finally:
                self._shared_data.discard(buf.data)

    def _aligned_access(self, buf: S.Buffer, index):
        """The vector dtype of an aligned native-vector access, or None."""
        if not (isinstance(index, E.Ramp) and E.is_const_int(index.stride, 1)):
            return None
        if buf.scope == keys.REGISTER:
            return None
        declared = self.pointer_dtype(buf.data)
        if declared is not None and _dt.parse(declared).bits != _dt.parse(buf.dtype).bits:
            return None  # a pointer to elements of another size: their alignment says nothing here
        if native_vector(buf.dtype, index.lanes) is None:
            return None
        factor = multiple_of(index.base, self._let_factors)
        if factor != 0 and factor % index.lanes != 0:
            return None
        nbytes = index.lanes * _dt.parse(buf.dtype).bytes
        param = self._param_of_data.get(buf.data)
        if param is not None:
            # a kernel parameter: the launcher checks the pointer's alignment
            self._param_align[param] = max(self._param_align.get(param, 1), nbytes)
        elif nbytes > SHARED_ALIGN:  # pragma: no cover - native vectors are at most 16 bytes
            return None
        return _dt.with_lanes(buf.dtype, index.lanes)

    def visit_BufferLoad(self, e):
        buf = e.buffer
        index = self.flat_index(buf, e.indices)
        dtype = self._aligned_access(buf, index)
        if dtype is None:
            return super().visit_BufferLoad(e)
        ptr, _ = self.buffer_ptr(buf)
        name = self._aligned_load_helper(dtype)
        return f"{name}({ptr} + {self.expr(index.base, P_ADD + 1)})", P_PRIMARY

    def visit_BufferStore(self, s):
        buf = s.buffer
        index = self.flat_index(buf, s.indices)
        dtype = self._aligned_access(buf, index)
        if dtype is None or _dt.is_bool(buf.dtype):
            return super().visit_BufferStore(s)
        lanes = _dt.lanes(index.dtype)
        value = s.value if _dt.lanes(s.value.dtype) == lanes else E.Broadcast(s.value, lanes)
        ptr, _ = self.buffer_ptr(buf)
        name = self._aligned_store_helper(dtype)
        self.emit(f"{name}({ptr} + {self.expr(index.base, P_ADD + 1)}, {self.expr(value)});")

    # ------------------------------------------------------------------------
    # loops
    # ------------------------------------------------------------------------
    #: kernel loops are sequential per thread
    PARALLEL_LOOPS = False
    #: a GPU does not trap on an integer division by zero
    CHECK_DIVISION = False

    def print_loop_pragma(self, s: S.For) -> None:
        """``unrolled`` and leftover ``vectorized`` loops get ``#pragma unroll``;
        ``parallel`` runs serially."""
        if s.kind is S.ForKind.PARALLEL:
            self.emit("// parallel loop inside a kernel: runs serially in each thread")
        elif s.kind is S.ForKind.UNROLLED:
            self.emit("#pragma unroll")
        elif s.kind is S.ForKind.VECTORIZED and isinstance(s.extent, E.IntImm):
            self.emit("#pragma unroll")

    # ------------------------------------------------------------------------
    # expressions
    # ------------------------------------------------------------------------
    def float_literal(self, value: float, dtype: str) -> str:
        if math.isnan(value):
            return "__longlong_as_double(0x7ff8000000000000LL)" if dtype == "float64" \
                else "__int_as_float(0x7fc00000)"
        if math.isinf(value):
            if dtype == "float64":
                bits = "0x7ff0000000000000LL" if value > 0 else "0xfff0000000000000LL"
                return f"__longlong_as_double({bits})"
            return f"__int_as_float({'0x7f800000' if value > 0 else '0xff800000'})"
        return super().float_literal(value, dtype)

    def visit_FloatImm(self, e):
        text = self.float_literal(e.value, e.dtype)
        if e.dtype == "float16":
            return f"__half({text})", P_PRIMARY
        return text, (P_PRIMARY if not text.startswith("-") else P_UNARY)

    def visit_Cast(self, e):
        src = _dt.parse(e.value.dtype)
        dst = _dt.parse(e.dtype)
        if dst.lanes > 1 and src.lanes > 1:
            et = "bool" if dst.is_bool else self.type_name(str(dst.element_of()))
            conv = (lambda a: f"{a[0]} != 0") if dst.is_bool else (lambda a: f"({et})({a[0]})")
            name = self.lanewise_helper(f"cast_{src}_to", e.dtype, (e.value.dtype,), conv)
            return f"{name}({self.expr(e.value)})", P_PRIMARY
        if dst.lanes == 1 and dst.code == "float" and dst.bits == 16 and src.is_bool:
            return f"__half((float){self.expr(e.value, P_UNARY)})", P_PRIMARY
        if dst.lanes == 1 and src.code == "float" and src.bits == 16 and not dst.is_float:
            # through float: __half converts to float, then C++ conversion rules apply
            if dst.is_bool:
                return f"((float){self.expr(e.value, P_UNARY)} != 0.0f)", P_PRIMARY
            return f"({self.type_name(e.dtype)})(float){self.expr(e.value, P_UNARY)}", P_UNARY
        return super().visit_Cast(e)

    def visit_Let(self, e):
        """NVRTC has no GNU statement expressions: an immediately invoked lambda."""
        value = self.expr(e.value)
        with self.binding(e.var, e.var.name) as name:
            body = self.expr(e.body)
        t = self.type_name(e.var.dtype)
        rt = self.type_name(e.dtype)
        return f"([&]() -> {rt} {{ {t} {name} = {value}; return {body}; }}())", P_PRIMARY

    def lazy_vector_select(self, e):
        """Vector ``if_then_else``: each lane evaluates only its taken side."""
        vt = self.type_name(e.dtype)
        r = self.fresh_internal("v")
        parts = [f"{vt} {r};"]
        cond, tv, fv = e.args
        for lane in range(_dt.lanes(e.dtype)):
            lane_of = LaneOf(lane)
            c = lane_of.visit(cond) if _dt.lanes(cond.dtype) > 1 else cond
            parts.append(f"{r}[{lane}] = {self.expr(c, P_OR)} ? {self.expr(lane_of.visit(tv), P_OR)} : "
                         f"{self.expr(lane_of.visit(fv), P_COND)};")
        parts.append(f"return {r};")
        return f"([&]() -> {vt} {{ " + " ".join(parts) + " }())", P_PRIMARY

    def visit_CmpOp(self, e):
        if not self.is_vector(e):
            return super().visit_CmpOp(e)
        sym = CMP_OPS[type(e)][0]
        key = {"==": "eq", "!=": "ne", "<": "lt", "<=": "le", ">": "gt", ">=": "ge"}[sym]
        name = self.lanewise_helper(f"{key}_{e.a.dtype}", e.dtype, (e.a.dtype, e.b.dtype),
                                     lambda a: f"{a[0]} {sym} {a[1]}")
        return f"{name}({self.expr(e.a)}, {self.expr(e.b)})", P_PRIMARY

    def visit_Not(self, e):
        if not self.is_vector(e):
            return super().visit_Not(e)
        name = self.lanewise_helper("not", e.dtype, (e.a.dtype,), lambda a: f"!{a[0]}")
        return f"{name}({self.expr(e.a)})", P_PRIMARY

    def vector_minmax_helper(self, op: str, dtype: str) -> str:
        """Lane by lane: CUDA's vector structs (``tecc_vec``) have no comparison
        giving a lane mask, which the C backend's blend needs."""
        return self.lanewise_minmax_helper(op, dtype)

    def print_minmax(self, e, op):
        d = _dt.parse(e.dtype)
        if d.lanes == 1 and d.code == "float" and d.bits in (32, 64):
            fn = ("fmin" if op == "min" else "fmax") + ("f" if d.bits == 32 else "")
            return f"{fn}({self.expr(e.a)}, {self.expr(e.b)})", P_PRIMARY
        return super().print_minmax(e, op)

    def visit_unknown_call(self, e):
        if e.op == keys.WARP_SHUFFLE_DOWN:
            return self._warp_shuffle_down(e), P_PRIMARY
        if e.op in keys.WMMA_INTRINSICS:
            return self._wmma_call(e), P_PRIMARY
        return super().visit_unknown_call(e)

    def _warp_mask(self) -> str:
        """The lanes of the calling thread's warp that exist: all 32, except in the
        last warp of a block whose thread count is not a multiple of 32."""
        ext = thread_extents(self._func)
        dims = [ext.get(t) for t in keys.THREAD_TAGS]
        sizes = [1 if d is None else E.const_int_value(d) for d in dims]
        if any(x is None for x in sizes):
            raise CompileError(f"kernel {self._func.name}: a warp shuffle needs constant thread extents")
        threads = sizes[0] * sizes[1] * sizes[2]
        rest = threads % 32
        if rest == 0:
            return "0xffffffffu"
        linear = "((int)threadIdx.x)"
        if sizes[1] > 1:
            linear = f"(((int)threadIdx.y) * {sizes[0]} + {linear})"
        if sizes[2] > 1:
            linear = f"(((int)threadIdx.z) * {sizes[0] * sizes[1]} + {linear})"
        return f"({linear} / 32 == {threads // 32} ? {hex((1 << rest) - 1)}u : 0xffffffffu)"

    def _warp_shuffle_down(self, e) -> str:
        """``__shfl_down_sync`` over the whole warp (CUDA has overloads for int,
        unsigned, long long, unsigned long long, float, double and ``__half``;
        narrower integers and bool travel as int)."""
        value, delta = e.args
        d = _dt.parse(e.dtype)
        if d.lanes != 1:
            raise CompileError(f"a warp shuffle takes a scalar, got {e.dtype} (in `{e}`)")
        text = f"__shfl_down_sync({self._warp_mask()}, {{}}, {self.expr(delta)}, 32)"
        if d.is_bool or (d.is_integer and d.bits < 32):
            shuffled = text.format(f"(int)({self.expr(value)})")
            if d.is_bool:
                return f"({shuffled} != 0)"
            return f"(({self.type_name(e.dtype)})({shuffled}))"
        return text.format(self.expr(value))

    def intrinsic(self, op: str, args: list, dtype: str) -> str:
        d = _dt.parse(dtype)
        if op == "popcount":
            if d.bits == 64:
                return f"__popcll((unsigned long long)({args[0]}))"
            mask = (1 << (d.bits if d.is_integer else max(d.bits, 8))) - 1  # an int4's own 4 bits
            return f"__popc((unsigned int)({args[0]}) & {mask}u)"
        if op in self.PREDICATES and d.code == "float" and d.bits == 16:
            return f"{self.PREDICATES[op]}((float)({args[0]}))"
        if op in self.PREDICATES:
            return f"{self.PREDICATES[op]}({args[0]})"
        if op == "abs" and d.code == "float" and d.bits == 16:
            return f"__habs({args[0]})"
        if d.code == "float" and d.bits == 16:
            # half precision: compute in float, round back
            fargs = [f"(float)({a})" for a in args]
            return f"__half({self.intrinsic(op, fargs, 'float32')})"
        if op == "rsqrt" and d.code == "float" and d.bits in (32, 64):
            return f"rsqrt{'f' if d.bits == 32 else ''}({args[0]})"
        return super().intrinsic(op, args, dtype)


def generate_cuda(kernels) -> str:
    """CUDA source of ``kernels`` (device PrimFuncs) printed by :class:`CodeGenCUDA`."""
    return CodeGenCUDA().generate(kernels)
