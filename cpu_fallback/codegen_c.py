"""Print lowered :class:`~tecc.tir.PrimFunc` s as a C translation unit.

:class:`CodeGenC` is the one C-like printer of tecc.  It only prints: the IR it
receives is flattened, vectorized and register-promoted by the pipeline, and every
fact about it (strides, buffers written, thread extents) comes from
:mod:`tecc.tir.analysis`.  The CUDA printer and the GPU emulator's printer subclass
it and change tables and public hooks, not the walk over the IR:

===============================  ======================================================
hook                             what it decides
===============================  ======================================================
``SCALAR_TYPES``,                the C type of a value / of one buffer element
``STORAGE_TYPES``                (bfloat16 is stored as ``uint16_t`` bits, the 8- and 4-bit
                                 floats and int4... as ``uint8_t`` bits: :mod:`.narrow_types`)
``type_name``, ``storage_type``  the same, for any dtype (vectors too)
``vector_typedef``               how a vector type is declared
``MATH_FUNCS``, ``intrinsic``    the C text of a math intrinsic on scalar arguments
``visit_unknown_call``           intrinsics only a subclass knows (warp shuffles)
``BANNER``, ``print_preamble``,  the start of the translation unit: includes or
``print_vector_types``,          typedefs, vector types, error reporting
``print_runtime_support``
``function_prefix``,             the function's declaration and its last statement
``print_function_signature``,
``print_function_end``
``print_allocate``               how shared, local and register buffers are declared
``PARALLEL_LOOPS``,              OpenMP for ``parallel``; the pragma of other loops
``print_loop_pragma``
``print_barrier``, ``print_fail``  a thread barrier; a failed assertion
``load_helper``, ``store_helper``,  vector memory accesses and values
``broadcast_helper``,
``lazy_vector_select``
``PACKED_CALLS``                 whether ``tir.call_packed`` may be printed (a GPU
                                 printer refuses it: kernels cannot call Python)
===============================  ======================================================

Subclasses name things through :meth:`CodeGenC.binding`, :meth:`~CodeGenC.buffer_binding`
and :meth:`~CodeGenC.printed_as` (a scope in which a variable has a C name) and
:meth:`~CodeGenC.reserve_name`.

The exported function returns ``0`` on success and ``-1`` when an ``AssertStmt`` fails
or a heap allocation fails; the message is then returned by the library's exported
``const char* tecc_get_last_error(void)``.

A ``tir.call_packed("my.func", ...)`` prints as a call of ``tecc_call_packed`` with a
``static void* my_func_packed`` handle (one per name and translation unit) and an array
of ``tecc_packed_arg_t`` arguments; the handle is resolved on the first call through
two function pointers the runtime sets when it loads the library
(:mod:`tecc.runtime.packed_func`).

Vectors (``float32x8``) use GCC vector extensions.  A vector type whose lane count is
not a power of two is stored in the next power of two; loads and stores touch only the
real lanes.  Contiguous vector loads and stores go through ``memcpy`` (alignment-safe,
one vector move after inlining); strided or gathered accesses go element by element.
"""
from __future__ import annotations

import dataclasses
import math
import re
from contextlib import contextmanager

import numpy as np

from ..errors import CompileError
from ..runtime import dtypes as _rt_dtypes
from ..runtime import packed_func as _packed
from ..runtime.symbols import c_symbol
from ..tir import dtype as _dt
from ..tir import expr as E
from ..tir import stmt as S
from ..tir import keys
from ..tir.analysis import const_size, flat_index, uses, written_data
from ..tir.analysis.buffers import IMPORT_PRAGMAS
from ..tir.functor import IRMutator, IRVisitor, post_order_visit
from ..tir.printer import to_text
from . import narrow_types

# C operator precedence, higher binds tighter
P_PRIMARY = 16
P_UNARY = 14
P_MUL = 13
P_ADD = 12
P_SHIFT = 11
P_REL = 10
P_EQ = 9
P_BITAND = 8
P_BITXOR = 7
P_BITOR = 6
P_AND = 5
P_OR = 4
P_COND = 3

#: the printer's own intrinsic around a divisor that is checked at run time
_CHECKED_DIVISOR = "tecc.checked_divisor"

#: stack allocations up to this many bytes; larger or symbolic ones go to the heap
STACK_LIMIT_BYTES = 64 * 1024

_C_KEYWORDS = frozenset("""
auto break case char const continue default do double else enum extern float for goto if
inline int long register restrict return short signed sizeof static struct switch typedef
union unsigned void volatile while bool true false main errno NULL int8_t int16_t int32_t
int64_t uint8_t uint16_t uint32_t uint64_t size_t abs min max exp log sqrt
""".split())

CMP_OPS = {E.EQ: ("==", P_EQ), E.NE: ("!=", P_EQ), E.LT: ("<", P_REL), E.LE: ("<=", P_REL),
            E.GT: (">", P_REL), E.GE: (">=", P_REL)}


def c_string_literal(text: str) -> str:
    """``text`` as a C string literal (non-ASCII bytes as octal escapes)."""
    out = ['"']
    for byte in text.encode("utf-8"):
        ch = chr(byte)
        if ch == "\\" or ch == '"':
            out.append("\\" + ch)
        elif ch == "\n":
            out.append("\\n")
        elif 32 <= byte < 127:
            out.append(ch)
        else:
            out.append(f"\\{byte:03o}")
    out.append('"')
    return "".join(out)


def _promoted(dtype: str) -> bool:
    """Whether C's default argument promotion changes a scalar of ``dtype`` (float,
    half, and integers narrower than int): then a called function needs a prototype."""
    d = _dt.parse(dtype)
    if d.lanes > 1 or d.is_handle:
        return False
    return d.is_float and d.bits < 64 or d.is_bool or (d.code in ("int", "uint") and d.bits < 32)


def pow2_ceil(n: int) -> int:
    return 1 << max(0, (n - 1).bit_length())


class LaneOf(IRMutator):
    """The scalar expression of lane ``lane`` of a vector expression."""

    def __init__(self, lane: int):
        self.lane = lane

    def visit_Ramp(self, e):
        base = self.visit(e.base)
        if self.lane == 0:
            return base
        stride = self.visit(e.stride)
        if isinstance(stride, E.IntImm):
            return E.Add(base, E.IntImm(base.dtype, stride.value * self.lane))
        return E.Add(base, E.Mul(stride, E.IntImm(base.dtype, self.lane)))

    def visit_Broadcast(self, e):
        return self.visit(e.value)

    def visit_Cast(self, e):
        return E.Cast(_dt.element(e.dtype), self.visit(e.value))

    def visit_Call(self, e):
        return E.Call(_dt.element(e.dtype), e.op, tuple(self.visit(a) for a in e.args))

    def visit_Var(self, v):
        assert _dt.lanes(v.dtype) == 1, f"cannot take a lane of the vector variable {v.name}"
        return v

    def visit_Let(self, e):
        assert _dt.lanes(e.var.dtype) == 1, "cannot take a lane of a vector let"
        return IRMutator.generic_visit(self, e)


def _narrow_vector_copy(s):
    """A vector store of a vector load of one narrow type (bfloat16, the 8- and 4-bit
    floats, int4...: ``B[ramp] = A[ramp]``, a staging copy), as the same copy of their
    stored bits (``uint16``, ``uint8``...), or None.  Those types have no vector values
    (they compute one lane at a time); moving their bits needs none, and a vectorized
    copy moves them as wide accesses."""
    value = s.value
    if not (isinstance(value, E.BufferLoad) and s.buffer.dtype == value.buffer.dtype
            and _dt.parse(s.buffer.dtype).is_narrow and _dt.lanes(value.dtype) > 1):
        return None
    stored = str(_dt.parse(s.buffer.dtype).storage_bits())

    def bits(buf):
        return dataclasses.replace(buf, dtype=stored)

    return S.BufferStore(bits(s.buffer), E.BufferLoad(bits(value.buffer), value.indices), s.indices)


class CodeGenC(IRVisitor):
    """Print flattened PrimFuncs as C.

    Use :meth:`generate` for a whole translation unit with one exported function, or
    :meth:`add_function` (any number of times) followed by :meth:`finish`.
    """

    #: keyword that marks non-aliasing pointer parameters
    restrict_keyword = "__restrict__"
    #: indentation unit
    indent_unit = "    "
    #: GNU C vector shuffles (``__builtin_shuffle``) print a stride-2 vector load
    vector_shuffles = True
    #: C types of scalar dtypes (values); the storage floats' values are computed as
    #: float, the narrow integers' as the byte that holds them
    SCALAR_TYPES = {
        "bool": "bool", "int8": "int8_t", "int16": "int16_t", "int32": "int32_t", "int64": "int64_t",
        "uint8": "uint8_t", "uint16": "uint16_t", "uint32": "uint32_t", "uint64": "uint64_t",
        "float16": "_Float16", "float32": "float", "float64": "double", "handle": "void*",
        **{name: "float" for name in _rt_dtypes.FLOAT_FORMATS},
        **{name: "int8_t" if signed else "uint8_t" for name, (_, signed) in _rt_dtypes.NARROW_INTS.items()},
    }
    #: C types of buffer elements where they differ from the value type (a narrow
    #: type's bits)
    STORAGE_TYPES = {
        **{name: "uint16_t" if f.bits == 16 else "uint8_t" for name, f in _rt_dtypes.FLOAT_FORMATS.items()},
        **{name: "uint8_t" for name in _rt_dtypes.NARROW_INTS},
    }
    #: intrinsic -> C math function (float64 spelling; float32 adds the ``f`` suffix)
    MATH_FUNCS = {
        "exp": "exp", "exp2": "exp2", "log": "log", "log2": "log2", "log10": "log10",
        "log1p": "log1p", "sqrt": "sqrt", "sin": "sin", "cos": "cos", "tan": "tan", "asin": "asin",
        "acos": "acos", "atan": "atan", "sinh": "sinh", "cosh": "cosh", "tanh": "tanh", "erf": "erf",
        "floor": "floor", "ceil": "ceil", "trunc": "trunc", "round": "nearbyint",
        "nearbyint": "nearbyint", "fabs": "fabs", "pow": "pow", "fmod": "fmod", "atan2": "atan2",
        "hypot": "hypot", "copysign": "copysign",
    }
    #: type-generic C predicates (macros of math.h)
    PREDICATES = {"isnan": "isnan", "isinf": "isinf", "isfinite": "isfinite"}
    INCLUDES = ("stdint.h", "stdbool.h", "stddef.h", "stdlib.h", "string.h", "math.h")
    #: the first line of every translation unit (after ``// ``)
    BANNER = "generated by tecc"
    #: the backend's name in messages
    BACKEND = "C"

    def __init__(self):
        self._functions = []      # printed function texts
        self._helpers = {}        # name -> C text, in first-use order
        self._vector_types = {}   # name -> typedef
        self._packed_handles = {}  # packed function name -> its cached handle's C name
        self._reset_function()

    # ------------------------------------------------------------------------
    # entry points
    # ------------------------------------------------------------------------
    def generate(self, func: S.PrimFunc) -> str:
        """A complete C translation unit exporting ``func``."""
        self.__init__()
        self.add_function(func)
        return self.finish()

    def add_function(self, func: S.PrimFunc) -> None:
        """Print one function into the translation unit being built."""
        self._reset_function()
        if not re.match(r"^[A-Za-z_][A-Za-z0-9_]*$", func.name) or func.name.startswith("tecc_"):
            raise CompileError(
                f"function name {func.name!r} is not a valid C identifier (or uses the reserved "
                "prefix 'tecc_'); pass name='my_kernel' to build")
        self._used.add(c_symbol(func.name))
        self._function_name = func.name

        self._stored = written_data(func.body)
        for p in func.params:
            buf = func.buffer_map.get(p)
            if buf is not None:
                name = self.bind_name(buf.data, buf.name)
                self._names[p] = name
                self._ptr_dtype[buf.data] = buf.dtype
                self._ptr_dtype[p] = buf.dtype
                if buf.data in self._stored:
                    self._stored.add(p)
            else:
                self.bind_name(p, p.name)
        header = self.print_function_signature(func)
        self.emit(header + " {")
        with self.indented():
            self.print_stmt(func.body)
            self.print_function_end(func)
        self.emit("}")
        self._functions.append("\n".join(self._lines))

    def append_function(self, text: str) -> None:
        """Add ``text``, a C function a subclass writes out itself, after the functions
        printed so far."""
        self._functions.append(text)

    def finish(self) -> str:
        """The translation unit: banner, preamble, vector types, runtime support, the
        helpers used and the functions (each piece a hook a subclass may change)."""
        parts = [f"// {self.BANNER}", ""]
        for piece in (self.print_preamble(), self.print_vector_types(), self.print_runtime_support(),
                      self.print_packed_support()):
            if piece:
                parts += [piece, ""]
        for text in list(self._helpers.values()) + self._functions:
            parts += [text, ""]
        return "\n".join(parts)

    def print_preamble(self) -> str:
        """What the translation unit starts with: the includes."""
        return "\n".join(f"#include <{h}>" for h in self.INCLUDES)

    def print_vector_types(self) -> str:
        """The typedefs of the vector types used (empty when none)."""
        return "\n".join(self._vector_types.values())

    # ------------------------------------------------------------------------
    # per-function state, names and output
    # ------------------------------------------------------------------------
    def _reset_function(self):
        self._names = {}          # Var / data Var -> C name
        self._used = set()        # C names taken in this function
        self._lines = []
        self._indent = 0
        self._ptr_dtype = {}      # data Var -> dtype of the declared pointer
        self._heap = []           # names of live heap allocations, innermost last
        self._parallel = None     # fail path of the enclosing parallel loop, or None
        self._counter = 0
        self._stored = set()
        self._checks_division = False
        #: C text of a storage float's value (a conversion, a load, a rounded result)
        #: -> C text of its bits, which a store of that value writes without
        #: converting the float back
        self._bits_of = {}

    def emit(self, line: str) -> None:
        self._lines.append(self.indent_unit * self._indent + line if line else "")

    @contextmanager
    def indented(self):
        self._indent += 1
        try:
            yield
        finally:
            self._indent -= 1

    def fresh_name(self, hint: str) -> str:
        """A C identifier from ``hint`` that is unused in this function."""
        base = "".join(c if (c.isalnum() and c.isascii()) or c == "_" else "_" for c in (hint or "v"))
        if not base or base[0].isdigit():
            base = "v_" + base
        if base in _C_KEYWORDS or base.startswith("tecc_") or base.startswith("__"):
            base = base + "_"
        name = base
        k = 1
        while name in self._used or name in self._packed_handles.values():
            name = f"{base}_{k}"
            k += 1
        self._used.add(name)
        return name

    def bind_name(self, var, hint: str) -> str:
        """Give a binding site its own C name (shadowing any earlier binding)."""
        name = self.fresh_name(hint)
        self._names[var] = name
        return name

    @contextmanager
    def binding(self, var, hint: str):
        """Inside the block ``var`` has a fresh C name (yielded); the outer one after."""
        saved = self._names.get(var)
        name = self.bind_name(var, hint)
        try:
            yield name
        finally:
            self.restore_name(var, saved)

    @contextmanager
    def buffer_binding(self, buf: S.Buffer):
        """Inside the block ``buf``'s data has a fresh C name (yielded), a pointer to
        ``buf.dtype`` elements."""
        saved = self._ptr_dtype.get(buf.data)
        self._ptr_dtype[buf.data] = buf.dtype
        try:
            with self.binding(buf.data, buf.name) as name:
                yield name
        finally:
            if saved is None:
                self._ptr_dtype.pop(buf.data, None)
            else:
                self._ptr_dtype[buf.data] = saved

    @contextmanager
    def printed_as(self, var, text: str):
        """Inside the block ``var`` prints as ``text`` (a builtin, say)."""
        saved = self._names.get(var)
        self._names[var] = text
        try:
            yield
        finally:
            self.restore_name(var, saved)

    def pointer_dtype(self, data):
        """The element dtype ``data`` (a buffer's data variable) is declared as a
        pointer to, or None."""
        return self._ptr_dtype.get(data)

    def reserve_name(self, name: str) -> None:
        """Keep ``name`` (a fixed identifier the printer emits) from being given out."""
        self._used.add(name)

    def name_of(self, var) -> str:
        name = self._names.get(var)
        assert name is not None, f"variable {getattr(var, 'name', var)} is used but never bound"
        return name

    def fresh_internal(self, prefix: str) -> str:
        self._counter += 1
        name = f"tecc_{prefix}_{self._counter}"
        self._used.add(name)
        return name

    # ------------------------------------------------------------------------
    # types
    # ------------------------------------------------------------------------
    def type_name(self, dtype: str) -> str:
        """The C type of a value of ``dtype`` (scalars and vectors)."""
        d = _dt.parse(dtype)
        if d.lanes > 1:
            return self.vector_type(dtype)
        return self.SCALAR_TYPES[str(d)]

    def storage_type(self, dtype: str) -> str:
        """The C type of one buffer element of ``dtype``."""
        d = _dt.parse(dtype)
        if d.lanes > 1:
            return self.vector_type(dtype)
        return self.STORAGE_TYPES.get(str(d), self.SCALAR_TYPES[str(d)])

    def vector_type(self, dtype: str) -> str:
        """Name (and on first use, typedef) of a GCC vector type.

        Boolean vectors are stored as ``int8_t`` lanes holding 0 or non-zero.
        """
        d = _dt.parse(dtype)
        assert d.lanes > 1
        if d.is_narrow:
            elem = d.element_of()
            raise CompileError(f"the {self.BACKEND} backend has no {elem} vectors (it computes {elem} one lane at a "
                               f"time); keep {elem} loops scalar (do not vectorize them), or vectorize copies only")
        name = "tecc_" + str(d)
        if name not in self._vector_types:
            self._vector_types[name] = self.vector_typedef(d, name)
        return name

    def vector_typedef(self, d, name: str) -> str:
        """The typedef of vector type ``name`` for the parsed dtype ``d`` (a GCC vector
        extension; lane counts rounded up to a power of two)."""
        elem = "int8_t" if d.is_bool else self.SCALAR_TYPES[str(d.element_of())]
        ebytes = 1 if d.is_bool else d.bits // 8
        return f"typedef {elem} {name} __attribute__((vector_size({pow2_ceil(d.lanes) * ebytes})));"

    def bool_vector_type(self, lanes: int) -> str:
        return self.vector_type(f"boolx{lanes}")

    # ------------------------------------------------------------------------
    # helpers emitted on demand
    # ------------------------------------------------------------------------
    def use_helper(self, name: str, text: str) -> str:
        """Register a static helper function (once) and return its name."""
        if name not in self._helpers:
            self._helpers[name] = text
        return name

    def print_runtime_support(self) -> str:
        """Error reporting shared by the functions of one library."""
        return "\n".join([
            "static const char* tecc_last_error = \"\";",
            "static int tecc_faults = 0;  // set by a checked integer division by zero",
            "",
            "static void tecc_set_error(const char* msg) {",
            "    __atomic_store_n(&tecc_last_error, msg, __ATOMIC_RELAXED);",
            "}",
            "",
            "__attribute__((visibility(\"default\"))) const char* tecc_get_last_error(void) {",
            "    return __atomic_load_n(&tecc_last_error, __ATOMIC_RELAXED);",
            "}",
            "",
            "static void* tecc_alloc(size_t nbytes) {",
            "    size_t rounded = (nbytes + 63) / 64 * 64;",
            "    return aligned_alloc(64, rounded ? rounded : 64);",
            "}",
        ])

    def bf16_helpers(self) -> None:
        self.use_helper("tecc_bf16_to_f32", "\n".join([
            "static inline float tecc_bf16_to_f32(uint16_t v) {",
            "    uint32_t u = (uint32_t)v << 16;",
            "    float f;",
            "    memcpy(&f, &u, 4);",
            "    return f;",
            "}"]))
        self.use_helper("tecc_f32_to_bf16", "\n".join([
            "static inline uint16_t tecc_f32_to_bf16(float f) {",
            "    uint32_t u;",
            "    memcpy(&u, &f, 4);",
            "    if ((u & 0x7fffffffu) > 0x7f800000u) {",
            "        return (uint16_t)((u >> 16) | 0x40u);  // quiet NaN",
            "    }",
            "    u += 0x7fffu + ((u >> 16) & 1u);  // round to nearest even",
            "    return (uint16_t)(u >> 16);",
            "}"]))
        self.use_helper("tecc_bf16_round", "\n".join([
            "static inline float tecc_bf16_round(float f) {",
            "    return tecc_bf16_to_f32(tecc_f32_to_bf16(f));",
            "}"]))

    # the 8- and 4-bit floats and the narrow integers (text: .narrow_types) -----
    def bitcast_helpers(self) -> dict:
        """Name -> text of the helpers giving a float's bits and back, which the
        narrow floats' conversions call (the CUDA printer has intrinsics for them)."""
        return narrow_types.bitcast_helpers()

    def decode_helper_text(self, fmt) -> str:
        """The text of ``tecc_<F>_to_f32`` (the CUDA printer may put an instruction first)."""
        return narrow_types.decode_helper(fmt)

    def encode_helper_text(self, fmt, width: int) -> str:
        """The text of ``tecc_f<width>_to_<F>`` (the same)."""
        return narrow_types.encode_helper(fmt, width)

    def float_format_helpers(self, dtype: str) -> tuple:
        """``(to_float, from_float, round)``: the names of storage float ``dtype``'s
        conversions of one scalar, each registered on first use."""
        if dtype == "bfloat16":
            self.bf16_helpers()
            return "tecc_bf16_to_f32", "tecc_f32_to_bf16", "tecc_bf16_round"
        fmt = _rt_dtypes.FLOAT_FORMATS[dtype]
        for name, text in self.bitcast_helpers().items():
            self.use_helper(name, text)
        dec, enc, rnd = narrow_types.names(dtype)
        self.use_helper(dec, self.decode_helper_text(fmt))
        self.use_helper(enc, self.encode_helper_text(fmt, 32))
        self.use_helper(rnd, narrow_types.round_helper(fmt))
        return dec, enc, rnd

    def float_value(self, value: str, bits: str) -> str:
        """``value`` (C text of a storage float's value), remembering that ``bits`` is
        the C text of its bits (what a store of it writes)."""
        self._bits_of[value] = bits
        return value

    def round_to_format(self, dtype: str, value, src_dtype: str) -> str:
        """C text of ``value`` (C text of a ``src_dtype`` scalar) rounded to storage
        float ``dtype``, as a float; a double rounds once, from its own bits."""
        dec, enc, rnd = self.float_format_helpers(dtype)
        if src_dtype == "float64":
            for name, text in self.bitcast_helpers().items():  # (bfloat16's own helpers need none)
                self.use_helper(name, text)
            fmt = _rt_dtypes.FLOAT_FORMATS[dtype]
            enc64 = self.use_helper(f"tecc_f64_to_{dtype}", self.encode_helper_text(fmt, 64))
            return self.float_value(f"{dec}({enc64}({value}))", f"{enc64}({value})")
        return self.float_value(f"{rnd}((float){value})", f"{enc}((float){value})")

    def rounded(self, dtype: str, value: str) -> str:
        """C text of float ``value`` (an operation's result) rounded to storage float
        ``dtype``."""
        _, enc, rnd = self.float_format_helpers(dtype)
        return self.float_value(f"{rnd}({value})", f"{enc}({value})")

    def narrow_int_cast(self, dtype: str, value, src) -> str:
        """C text of ``value`` (a scalar of parsed dtype ``src``) converted to narrow
        integer ``dtype``: an integer wrapped to its width, a float truncated (0 where
        that lies outside the type, as ml_dtypes converts)."""
        if src.is_float:
            width = 64 if str(src) == "float64" else 32
            name = self.use_helper(f"tecc_f{width}_to_{dtype}", narrow_types.int_from_float_helper(dtype, width))
            return f"{name}({value})" if width == 64 else f"{name}((float){value})"
        name = self.use_helper(f"tecc_wrap_{dtype}", narrow_types.int_wrap_helper(dtype))
        return f"{name}({value})"

    def int_helper(self, op: str, dtype: str) -> str:
        """Floor division / modulo and min / max of a scalar type."""
        t = self.type_name(dtype)
        name = f"tecc_{op}_{dtype}"
        if op == "floordiv":
            body = [f"    {t} q = a / b;", f"    {t} r = a % b;",
                    "    return (r != 0 && ((r < 0) != (b < 0))) ? q - 1 : q;"]
        elif op == "floormod":
            body = [f"    {t} r = a % b;",
                    "    return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;"]
        elif op == "min":
            body = ["    return a < b ? a : b;"]
        elif op == "max":
            body = ["    return a > b ? a : b;"]
        else:  # pragma: no cover - internal misuse
            raise AssertionError(op)
        text = "\n".join([f"static inline {t} {name}({t} a, {t} b) {{"] + body + ["}"])
        return self.use_helper(name, text)

    def lanewise_helper(self, key: str, dtype: str, arg_dtypes, lane_expr) -> str:
        """A helper computing a vector result lane by lane.

        ``lane_expr(arg_names)`` gives the C expression of one lane from the lane
        accessors (``a[l]``...) of the arguments.
        """
        lanes = _dt.lanes(dtype)
        rt = self.type_name(dtype)
        name = f"tecc_{key}_{dtype}"
        if name in self._helpers:
            return name
        params = ", ".join(f"{self.type_name(t)} {n}" for t, n in zip(arg_dtypes, "abc"))
        lane_args = [f"{n}[l]" for n in "abc"[:len(arg_dtypes)]]
        text = "\n".join([
            f"static inline {rt} {name}({params}) {{",
            f"    {rt} r = {{0}};",
            f"    for (int l = 0; l < {lanes}; ++l) {{",
            f"        r[l] = {lane_expr(lane_args)};",
            "    }",
            "    return r;",
            "}"])
        return self.use_helper(name, text)

    def lanewise_minmax_helper(self, op: str, dtype: str) -> str:
        """``a < b ? a : b`` (min) or ``a > b ? a : b`` (max), lane by lane."""
        rel = "<" if op == "min" else ">"
        return self.lanewise_helper(op, dtype, (dtype, dtype), lambda a: f"{a[0]} {rel} {a[1]} ? {a[0]} : {a[1]}")

    def vector_minmax_helper(self, op: str, dtype: str) -> str:
        """``a < b ? a : b`` (min) or ``a > b ? a : b`` (max) of two int or float
        vectors, all lanes at once: the comparison's lane mask blends the operands'
        bits.  That is x86's minps/maxps operand order (a NaN in either gives ``b``) and
        compiles to a compare and a blend; the lane-by-lane form it replaces was
        scalarized by GCC, which made a relu after a convolution cost 10% of it."""
        vt = self.type_name(dtype)
        rel = "<" if op == "min" else ">"
        return self.use_helper(f"tecc_{op}_{dtype}", "\n".join([
            f"static inline {vt} tecc_{op}_{dtype}({vt} a, {vt} b) {{",
            f"    __typeof__(a {rel} b) m = a {rel} b;  /* lanes of -1 where a is taken, else 0 */",
            f"    return ({vt})((m & (__typeof__(m))a) | (~m & (__typeof__(m))b));",
            "}"]))

    def vector_exp_helper(self, dtype: str) -> str:
        """``exp`` of a float32 vector in vector arithmetic (no call per lane), within
        1 ulp of the correctly rounded result over the whole float range.

        exp(x) = 2^n * exp(r) with n = round(x / ln 2) and r = x - n ln 2 (ln 2 in two
        parts, so r is exact), exp(r) a degree-7 polynomial on |r| <= ln 2 / 2 (the
        Cephes coefficients).  n is rounded by adding 1.5 * 2^23 (the sum's low bits
        are then n itself).

        Two paths.  When every lane lies in [-126 ln 2, 127.49 ln 2] (where 2^n and the
        result are normal floats) 2^n is added into the exponent bits: about 17
        instructions.  Otherwise (:meth:`vector_exp_full_helper`) 2^n is two factors
        whose product overflows to +inf and rounds to denormals and 0 as libm does.
        """
        lanes = _dt.lanes(dtype)
        ft, it = self.type_name(dtype), self.type_name(f"int32x{lanes}")
        name = f"tecc_vexp_{dtype}"
        if name in self._helpers:
            return name
        full = self.vector_exp_full_helper(dtype)
        all_lanes = self.vector_all_helper(f"int32x{lanes}")
        text = "\n".join([
            f"static inline {ft} {name}({ft} x) {{",
            f"    const {ft} zero = {{0}};",
            f"    const {ft} lo = zero - 87.33654022216797f, hi = zero + 88.37f, shifter = zero + 12582912.0f;",
            f"    if (__builtin_expect(!{all_lanes}((x >= lo) & (x <= hi)), 0)) {{  /* also NaN */",
            f"        return {full}(x);",
            "    }",
            f"    {ft} fx = x * 1.44269504088896341f + shifter;  /* round(x / ln 2) + 1.5 * 2^23 */",
            f"    {ft} nf = fx - shifter;",
            f"    {ft} r = x - nf * 0.693359375f;",
            "    r = r - nf * -2.12194440e-4f;",
            *self._exp_polynomial_lines(ft),
            f"    return ({ft})(({it})p + (({it})fx << 23));  /* the low bits of fx are n */",
            "}"])
        return self.use_helper(name, text)

    def vector_sigmoid_helper(self, dtype: str) -> str:
        """``sigmoid`` of a float32 vector, ``1 / (1 + exp(-x))`` with
        :meth:`vector_exp_helper` (a lane-by-lane ``expf`` made a gated MLP's
        Swish the slowest kernel of a decoder layer): 0 below -88 (exp(-x)
        overflows to +inf), 1 above 17, NaN for NaN."""
        ft = self.type_name(dtype)
        name = f"tecc_vsigmoid_{dtype}"
        if name in self._helpers:
            return name
        exp = self.vector_exp_helper(dtype)
        text = "\n".join([
            f"static inline {ft} {name}({ft} x) {{",
            f"    const {ft} zero = {{0}};",
            f"    return (zero + 1.0f) / ((zero + 1.0f) + {exp}(-x));",
            "}"])
        return self.use_helper(name, text)

    def _odd_function_helper(self, name: str, dtype: str, split: str, small: list, large: list) -> str:
        """A float32 vector helper ``name(x)`` of an odd function: ``ax`` = |x|, both
        branches computed -- ``small`` (C lines setting ``small`` from ``ax`` and
        ``z`` = x^2) and ``large`` (lines setting ``large`` from ``ax``, NaN kept) --
        blended by ``ax < split`` (a NaN takes the large branch), the magnitude given
        x's sign (so -0 stays -0)."""
        lanes = _dt.lanes(dtype)
        ft, it = self.type_name(dtype), self.type_name(f"int32x{lanes}")
        if name in self._helpers:
            return name
        text = "\n".join([
            f"static inline {ft} {name}({ft} x) {{",
            f"    const {ft} zero = {{0}};",
            f"    {it} sign = ({it})x & (int32_t)0x80000000;",
            f"    {ft} ax = ({ft})(({it})x & 0x7fffffff);",
            f"    {ft} z = ax * ax;",
            *[f"    {line}" for line in small],
            *[f"    {line}" for line in large],
            f"    {it} m = ax < (zero + {split});",
            f"    {it} mag = ((m & ({it})small) | (~m & ({it})large)) & 0x7fffffff;",
            f"    return ({ft})(mag | sign);",
            "}"])
        return self.use_helper(name, text)

    @staticmethod
    def _horner(ft: str, var: str, t: str, coefficients) -> list:
        """C lines declaring ``var`` = the polynomial of ``coefficients`` (lowest
        degree first) at ``t``, by Horner's rule."""
        first, *rest = coefficients[::-1]
        return [f"{ft} {var} = zero + {first};"] + [f"{var} = {var} * {t} + {c};" for c in rest]

    #: tanh(x) / x - 1 over x^2 as a polynomial in x^2 for |x| < 0.625 (Cephes' tanhf)
    TANH_SMALL = ("-3.33332819422e-1f", "1.33314422036e-1f", "-5.37397155531e-2f", "2.06390887954e-2f",
                  "-5.70498872745e-3f")

    def vector_tanh_helper(self, dtype: str) -> str:
        """``tanh`` of a float32 vector in vector arithmetic (the Cephes ``tanhf``
        scheme, both branches computed and blended, :meth:`_odd_function_helper`):
        ``x + x^3 P(x^2)`` for |x| < 0.625, else ``1 - 2 / (exp(2|x|) + 1)`` with
        :meth:`vector_exp_helper` (2|x| capped at 88, where the result is 1); within
        2 ulp of the correctly rounded result, -0 and NaN kept."""
        ft = self.type_name(dtype)
        exp, vmin = self.vector_exp_helper(dtype), self.vector_minmax_helper("min", dtype)
        small = self._horner(ft, "small", "z", self.TANH_SMALL) + ["small = small * z * ax + ax;"]
        large = [f"{ft} large = (zero + 1.0f) - (zero + 2.0f) / ({exp}({vmin}(zero + 88.0f, ax + ax)) + 1.0f);"]
        return self._odd_function_helper(f"tecc_vtanh_{dtype}", dtype, "0.625f", small, large)

    #: erf(x) / x as a polynomial in x^2 for |x| < ERF_SPLIT (a least-squares fit of
    #: relative error, lowest degree first; fitted for tecc, 2026-11-28)
    ERF_SMALL = ("1.128379107e+00f", "-3.761252463e-01f", "1.128214449e-01f", "-2.677845582e-02f",
                 "5.010433029e-03f", "-6.078145234e-04f")
    #: erfc(x) * exp(x^2) as a polynomial in x on [ERF_SPLIT, 4] (the same kind of fit)
    ERF_LARGE = ("9.962510467e-01f", "-1.103577137e+00f", "9.248788953e-01f", "-6.132175922e-01f",
                 "3.224498630e-01f", "-1.327354312e-01f", "4.193469509e-02f", "-9.903877974e-03f",
                 "1.684197574e-03f", "-1.941670052e-04f", "1.355436234e-05f", "-4.318168010e-07f")
    ERF_SPLIT = "0.921875f"

    def vector_erf_helper(self, dtype: str) -> str:
        """``erf`` of a float32 vector in vector arithmetic (both branches computed
        and blended, :meth:`_odd_function_helper`): ``x P(x^2)`` for |x| <
        0.921875, else ``1 - exp(-x^2) R(|x|)`` with :meth:`vector_exp_helper` and
        |x| capped at 4 (where erf rounds to 1); within 2 ulp of the correctly
        rounded result, -0 and NaN kept.  A lane-by-lane ``erff`` made ONNX's Gelu
        8x slower than onnxruntime's."""
        ft = self.type_name(dtype)
        exp, vmin = self.vector_exp_helper(dtype), self.vector_minmax_helper("min", dtype)
        small = self._horner(ft, "small", "z", self.ERF_SMALL) + ["small = small * ax;"]
        large = ([f"{ft} xc = {vmin}(zero + 4.0f, ax);"] + self._horner(ft, "large", "xc", self.ERF_LARGE)
                 + [f"large = (zero + 1.0f) - {exp}(-(xc * xc)) * large;"])
        return self._odd_function_helper(f"tecc_verf_{dtype}", dtype, self.ERF_SPLIT, small, large)

    @staticmethod
    def _exp_polynomial_lines(ft: str) -> list:
        """C lines computing ``p = exp(r)`` for |r| <= ln 2 / 2 (1 + r + r^2 P(r))."""
        return [
            f"    {ft} p = r * 1.9875691500e-4f + 1.3981999507e-3f;",
            "    p = p * r + 8.3334519073e-3f;",
            "    p = p * r + 4.1665795894e-2f;",
            "    p = p * r + 1.6666665459e-1f;",
            "    p = p * r + 5.0000001201e-1f;",
            "    p = p * (r * r) + r + 1.0f;"]

    def vector_exp_full_helper(self, dtype: str) -> str:
        """The range-safe path of :meth:`vector_exp_helper`, with no arithmetic on
        denormals (a multiply with a denormal result takes a microcode assist per lane
        on x86: a causal softmax, whose masked scores lie far below the row's
        maximum, ran at a third of its speed).  x is clamped to [-104, 89] (where the
        result is 0 and +inf; a NaN passes the clamp and the arithmetic), n =
        round(x / ln 2) and p = exp(r) as on the fast path, then

        * n >= -126: ``p * 2^n`` as two factors 2^(n/2), each a normal float (the
          product overflows to +inf above the range);
        * n <= -127, a denormal or 0: its bits are the integer ``rint(p * 2^(n + 149))``
          (the denormal step is 2^-149), computed in normal floats.

        Both are computed for every lane, each with n moved into its own range, and
        blended.  Only exp in [2^-127, 2^-126) (x in about [-87.7, -87.3]) is a
        product that rounds to a denormal."""
        lanes = _dt.lanes(dtype)
        ft, it = self.type_name(dtype), self.type_name(f"int32x{lanes}")
        name = f"tecc_vexp_full_{dtype}"
        if name in self._helpers:
            return name
        vmax, vmin = self.vector_minmax_helper("max", dtype), self.vector_minmax_helper("min", dtype)
        text = "\n".join([
            f"static inline {ft} {name}({ft} x) {{",
            f"    const {ft} zero = {{0}};",
            f"    const {ft} lo = zero - 104.0f, hi = zero + 89.0f, shifter = zero + 12582912.0f;",
            "    /* max, then min, in the operand order of x86's maxps/minps: NaN stays; compares and",
            "       blends (a lane loop here was scalarized: a causal softmax's masked rows took it) */",
            f"    {ft} xc = {vmin}(hi, {vmax}(lo, x));",
            f"    {ft} fx = xc * 1.44269504088896341f + shifter;",
            f"    {ft} nf = fx - shifter;",
            f"    {it} n = ({it})fx - 0x4B400000;",
            f"    {ft} r = xc - nf * 0.693359375f;",
            "    r = r - nf * -2.12194440e-4f;",
            *self._exp_polynomial_lines(ft),
            f"    {it} tiny = n < -126;  /* lanes of -1 where the result is a denormal or 0 */",
            f"    {it} nb = (tiny & -100) | (~tiny & n), nb1 = nb >> 1, nb2 = nb - nb1;  /* normal: p * 2^-100 */",
            f"    {ft} big = p * ({ft})((nb1 + 127) << 23) * ({ft})((nb2 + 127) << 23);",
            f"    {it} ns = ((tiny & n) | (~tiny & -127)) + 149;  /* in [-1, 22] */",
            "    /* + 2^23 rounds the product (below 2^23) to an integer, the sum's low bits */",
            f"    {it} small = ({it})(p * ({ft})((ns + 127) << 23) + 8388608.0f) - 0x4B000000;",
            f"    {it} nan = x != x;",
            f"    return ({ft})((nan & ({it})x) | (~nan & ((tiny & small) | (~tiny & ({it})big))));",
            "}"])
        return self.use_helper(name, text)

    def vector_all_helper(self, mask_dtype: str) -> str:
        """``tecc_all_<mask>(m)``: whether every lane of a comparison mask is set; one
        ``movmskps`` where the compiler targets SSE/AVX, else the lanes ANDed."""
        vt = self.type_name(mask_dtype)
        storage = pow2_ceil(_dt.lanes(mask_dtype))
        name = f"tecc_all_{mask_dtype}"
        fast = {4: ("__SSE__", "__builtin_ia32_movmskps", 4),
                8: ("__AVX__", "__builtin_ia32_movmskps256", 8)}.get(storage)
        lines = [f"static inline int {name}({vt} m) {{"]
        if fast is not None:
            macro, builtin, n = fast
            lines += [f"#if defined({macro})",
                      f"    typedef float tecc_all_f{n} __attribute__((vector_size({4 * n})));",
                      f"    return {builtin}((tecc_all_f{n})m) == {(1 << n) - 1};",
                      "#else"]
        lines += ["    int r = -1;",
                  f"    for (int l = 0; l < {storage}; ++l) r &= m[l];",
                  "    return r != 0;"]
        if fast is not None:
            lines.append("#endif")
        lines.append("}")
        return self.use_helper(name, "\n".join(lines))

    def lane_loop_helper(self, name: str, params: str, lanes: int, lane_stmt: str, result=None,
                          init: str = "") -> str:
        """A ``static inline`` helper whose body loops ``l`` over the lanes running
        ``lane_stmt``; with ``result`` (a vector type) it builds and returns ``r``."""
        head = f"static inline {result or 'void'} {name}({params}) {{"
        lines = [head]
        if result:
            lines.append(f"    {result} r{init};")
        lines += [f"    for (int l = 0; l < {lanes}; ++l) {{", f"        {lane_stmt}", "    }"]
        if result:
            lines.append("    return r;")
        lines.append("}")
        return self.use_helper(name, "\n".join(lines))

    def broadcast_helper(self, dtype: str) -> str:
        vt = self.type_name(dtype)
        st = self.type_name(_dt.element(dtype))
        name = f"tecc_broadcast_{dtype}"
        storage_lanes = pow2_ceil(_dt.lanes(dtype))
        # an initializer list (not a loop) compiles to one broadcast instruction
        lanes = ", ".join(["x"] * storage_lanes)
        return self.use_helper(name, "\n".join([
            f"static inline {vt} {name}({st} x) {{",
            f"    {vt} r = {{{lanes}}};",
            "    return r;",
            "}"]))

    def ramp_helper(self, dtype: str) -> str:
        vt = self.type_name(dtype)
        st = self.type_name(_dt.element(dtype))
        name = f"tecc_ramp_{dtype}"
        return self.lane_loop_helper(name, f"{st} base, {st} stride", pow2_ceil(_dt.lanes(dtype)),
                                      f"r[l] = ({st})(base + l * stride);", result=vt)

    def load_helper(self, dtype: str) -> str:
        vt = self.type_name(dtype)
        et = self.storage_type(_dt.element(dtype))
        nbytes = _dt.lanes(dtype) * _dt.parse(_dt.element(dtype)).bytes
        name = f"tecc_load_{dtype}"
        return self.use_helper(name, "\n".join([
            f"static inline {vt} tecc_load_{dtype}(const {et}* p) {{",
            f"    {vt} r = {{0}};",
            f"    memcpy(&r, p, {nbytes});",
            "    return r;",
            "}"]))

    def load_stride2_helper(self, dtype: str) -> str:
        """``p[0], p[2], ..., p[2(L-1)]`` as a vector: two contiguous loads (at ``p``
        and ``p + L - 1``, so nothing past the last element is read) and one shuffle
        of their even / odd lanes, instead of L scalar loads."""
        vt = self.type_name(dtype)
        elem = _dt.parse(_dt.element(dtype))
        et = self.storage_type(_dt.element(dtype))
        lanes = _dt.lanes(dtype)
        nbytes = lanes * elem.bytes
        mt = self.type_name(f"int{elem.bits}x{lanes}")
        picks = [2 * l for l in range(lanes // 2)] + [lanes + 1 + 2 * l for l in range(lanes // 2)]
        idx = ", ".join(map(str, picks))
        name = f"tecc_load_stride2_{dtype}"
        return self.use_helper(name, "\n".join([
            f"static inline {vt} {name}(const {et}* p) {{",
            f"    {vt} a, b;",
            f"    memcpy(&a, p, {nbytes});",
            f"    memcpy(&b, p + {lanes - 1}, {nbytes});",
            "#if defined(__clang__)",
            f"    return __builtin_shufflevector(a, b, {idx});",
            "#else",
            f"    const {mt} pick = {{{idx}}};",
            "    return __builtin_shuffle(a, b, pick);",
            "#endif",
            "}"]))

    def store_helper(self, dtype: str) -> str:
        vt = self.type_name(dtype)
        et = self.storage_type(_dt.element(dtype))
        lanes = _dt.lanes(dtype)
        nbytes = lanes * _dt.parse(_dt.element(dtype)).bytes
        name = f"tecc_store_{dtype}"
        if _dt.is_bool(dtype):
            return self.lane_loop_helper(name, f"{et}* p, {vt} v", lanes, "p[l] = v[l] != 0;")
        return self.use_helper(name, "\n".join(
            [f"static inline void {name}({et}* p, {vt} v) {{", f"    memcpy(p, &v, {nbytes});", "}"]))

    def load_strided_helper(self, dtype: str, index_dtype: str) -> str:
        """``p[0], p[s], ..., p[(L-1)s]`` as a vector, lane by lane from ``p`` and the
        stride: inlined with the call's constant stride, scalar loads straight into
        the lanes.  A gather (:meth:`gather_helper`) of the same ramp first builds
        the vector of indices and then takes each lane back out of it (a rotary
        embedding's transposing kernel ran 2.2x slower so)."""
        vt = self.type_name(dtype)
        it = self.type_name(_dt.element(index_dtype))
        et = self.storage_type(_dt.element(dtype))
        name = f"tecc_load_strided_{dtype}_{_dt.element(index_dtype)}"
        return self.lane_loop_helper(name, f"const {et}* p, {it} s", _dt.lanes(dtype), "r[l] = p[l * s];",
                                      result=vt)

    @staticmethod
    def _strided(buf, index) -> bool:
        """Whether a vector access of ``buf`` at ``index`` goes lane by lane from a base
        and a stride (:meth:`load_strided_helper`): a ramp, of elements stored as
        themselves (not bools' bytes or bfloat16's bits, which the gather and
        scatter helpers convert)."""
        return isinstance(index, E.Ramp) and not _dt.is_bool(buf.dtype) and not _dt.parse(buf.dtype).is_narrow

    def gather_helper(self, dtype: str, index_dtype: str) -> str:
        vt = self.type_name(dtype)
        it = self.type_name(index_dtype)
        et = self.storage_type(_dt.element(dtype))
        name = f"tecc_gather_{dtype}_{index_dtype}"
        return self.lane_loop_helper(name, f"const {et}* p, {it} idx", _dt.lanes(dtype), "r[l] = p[idx[l]];",
                                      result=vt, init=" = {0}")

    def store_strided_helper(self, dtype: str, index_dtype: str) -> str:
        """The lanes of ``v`` to ``p[0], p[s], ..., p[(L-1)s]`` (the store's side of
        :meth:`load_strided_helper`)."""
        vt = self.type_name(dtype)
        it = self.type_name(_dt.element(index_dtype))
        et = self.storage_type(_dt.element(dtype))
        name = f"tecc_store_strided_{dtype}_{_dt.element(index_dtype)}"
        return self.lane_loop_helper(name, f"{et}* p, {it} s, {vt} v", _dt.lanes(dtype), "p[l * s] = v[l];")

    def scatter_helper(self, dtype: str, index_dtype: str) -> str:
        vt = self.type_name(dtype)
        it = self.type_name(index_dtype)
        et = self.storage_type(_dt.element(dtype))
        name = f"tecc_scatter_{dtype}_{index_dtype}"
        value = "v[l] != 0" if _dt.is_bool(dtype) else "v[l]"
        return self.lane_loop_helper(name, f"{et}* p, {it} idx, {vt} v", _dt.lanes(dtype), f"p[idx[l]] = {value};")

    # ------------------------------------------------------------------------
    # function pieces (hooks)
    # ------------------------------------------------------------------------
    def function_prefix(self) -> str:
        """Text before the return type of an exported function."""
        return '__attribute__((visibility("default"))) int32_t'

    def print_param(self, func: S.PrimFunc, p) -> str:
        buf = func.buffer_map.get(p)
        if buf is not None:
            const = "" if p in self._stored else "const "
            return f"{const}{self.storage_type(buf.dtype)}* {self.restrict_keyword} {self.name_of(p)}"
        if _dt.parse(p.dtype).is_handle:
            return f"void* {self.name_of(p)}"
        return f"{self.type_name(p.dtype)} {self.name_of(p)}"

    def print_function_end(self, func: S.PrimFunc) -> None:
        """The last statement of a function body: return 0 (success), or -1 when a
        checked integer division met a zero divisor."""
        if self._checks_division:
            self.emit("if (__atomic_exchange_n(&tecc_faults, 0, __ATOMIC_RELAXED)) {")
            with self.indented():
                self.emit("return -1;")
            self.emit("}")
        self.emit("return 0;")

    def print_function_signature(self, func: S.PrimFunc) -> str:
        params = ", ".join(self.print_param(func, p) for p in func.params) or "void"
        return f"{self.function_prefix()} {c_symbol(func.name)}({params})"

    # ------------------------------------------------------------------------
    # expressions
    # ------------------------------------------------------------------------
    def expr(self, e, prec: int = 0) -> str:
        """C text of ``e``, parenthesized if it binds looser than ``prec``."""
        text, p = self.visit(e)
        return f"({text})" if p < prec else text

    def wrap_narrow(self, dtype: str, text: str, prec: int):
        """Integer types narrower than ``int`` wrap around after arithmetic; a storage
        float's result is rounded to it."""
        d = _dt.parse(dtype)
        if d.lanes == 1 and d.is_integer and d.bits < 8:
            return self.narrow_int_cast(dtype, text, _dt.parse("int32")), P_PRIMARY
        if d.lanes == 1 and d.is_integer and d.bits < 32:
            return f"({self.type_name(dtype)})({text})", P_UNARY
        if d.lanes == 1 and d.is_storage_float:
            return self.rounded(dtype, text), P_PRIMARY
        return text, prec

    def visit_IntImm(self, e):
        v = int(e.value)
        d = e.dtype
        if d == "bool":
            return ("true" if v else "false"), P_PRIMARY
        if _dt.lanes(d) > 1:  # pragma: no cover - constants are scalar
            raise AssertionError("vector IntImm")
        if d == "int32":
            if v == -2**31:
                return "(-2147483647 - 1)", P_PRIMARY
            return str(v), (P_PRIMARY if v >= 0 else P_UNARY)
        if d == "int64":
            if v == -2**63:
                return "(-INT64_C(9223372036854775807) - 1)", P_PRIMARY
            return f"INT64_C({v})", P_PRIMARY
        if d == "uint32":
            return f"{v}u", P_PRIMARY
        if d == "uint64":
            return f"UINT64_C({v})", P_PRIMARY
        return f"({self.type_name(d)}){v}", P_UNARY

    def float_literal(self, value: float, dtype: str) -> str:
        if _rt_dtypes.storage_float(dtype) is not None:  # the value the format holds
            value = float(_rt_dtypes.decode(_rt_dtypes.encode(np.array([value]), dtype), dtype)[0])
        if math.isnan(value):
            return "NAN" if dtype != "float64" else "(double)NAN"
        if math.isinf(value):
            text = "INFINITY" if dtype != "float64" else "HUGE_VAL"
            return text if value > 0 else "-" + text
        if dtype == "float64":
            text = repr(float(value))
            return text if ("." in text or "e" in text) else text + ".0"
        text = repr(float(np.float32(value)))
        if "." not in text and "e" not in text:
            text += ".0"
        return text + "f"

    def visit_FloatImm(self, e):
        text = self.float_literal(e.value, e.dtype)
        if e.dtype == "float16":
            return f"(_Float16){text}", P_UNARY
        return text, (P_UNARY if text.startswith("-") else P_PRIMARY)

    def visit_StringImm(self, e):
        return c_string_literal(e.value), P_PRIMARY

    def visit_Var(self, v):
        return self.name_of(v), P_PRIMARY

    def is_vector(self, e) -> bool:
        return _dt.lanes(e.dtype) > 1

    def visit_Add(self, e):
        return self._arith(e, "+", P_ADD)

    def visit_Sub(self, e):
        return self._arith(e, "-", P_ADD)

    def visit_Mul(self, e):
        return self._arith(e, "*", P_MUL)

    def _arith(self, e, sym, prec):
        text = f"{self.expr(e.a, prec)} {sym} {self.expr(e.b, prec + 1)}"
        if self.is_vector(e):
            return text, prec
        return self.wrap_narrow(e.dtype, text, prec)

    def vector_int_op(self, e, key, scalar_fn):
        """An integer vector operation done lane by lane through a helper."""
        name = self.lanewise_helper(key, e.dtype, (e.a.dtype, e.b.dtype), scalar_fn)
        return f"{name}({self.expr(e.a)}, {self.expr(e.b)})", P_PRIMARY

    #: integer divisions by a value that may be 0 check it: the call fails with a message
    #: instead of the process dying (SIGFPE); GPUs do not trap, so a GPU printer skips it
    CHECK_DIVISION = True

    def guard_divisor(self, e):
        """``e`` (an integer division or modulo) with its divisor checked at run time
        when it may be 0.  A constant 0 is refused outright."""
        if not _dt.is_integer(e.dtype):
            return e
        if isinstance(e.b, E.IntImm) or (isinstance(e.b, E.Broadcast) and isinstance(e.b.value, E.IntImm)):
            value = e.b.value if isinstance(e.b, E.IntImm) else e.b.value.value
            if value == 0:
                raise CompileError(f"{self._function_name}: integer division by the constant 0 in `{to_text(e)}`")
            return e
        if not self.CHECK_DIVISION:
            return e
        what = f"integer division by zero in {self._function_name}: `{to_text(e)}`"
        return type(e)(e.a, E.Call(e.b.dtype, _CHECKED_DIVISOR, (e.b, E.StringImm(what))))

    def divisor_helper(self, dtype: str) -> str:
        """``b`` when it is not 0; else record the failure (the function returns -1 at
        its end, see :meth:`print_function_end`) and go on dividing by 1."""
        self._checks_division = True
        t = self.type_name(dtype)
        name = f"tecc_divisor_{dtype}"
        if _dt.lanes(dtype) > 1:
            scalar = self.divisor_helper(_dt.element(dtype))
            return self.lane_loop_helper(name, f"{t} b, const char* what", _dt.lanes(dtype),
                                         f"r[l] = {scalar}(b[l], what);", result=t)
        return self.use_helper(name, "\n".join([
            f"static inline {t} {name}({t} b, const char* what) {{",
            "    if (b == 0) {",
            "        tecc_set_error(what);",
            "        __atomic_store_n(&tecc_faults, 1, __ATOMIC_RELAXED);",
            "        return 1;",
            "    }",
            "    return b;",
            "}"]))

    def visit_Div(self, e):
        e = self.guard_divisor(e)
        d = _dt.parse(e.dtype)
        if d.lanes > 1 and not d.is_float:
            et = self.type_name(_dt.element(e.dtype))
            return self.vector_int_op(e, "div", lambda a: f"({et})({a[0]} / {a[1]})")
        return self._arith(e, "/", P_MUL)

    def visit_Mod(self, e):
        e = self.guard_divisor(e)
        d = _dt.parse(e.dtype)
        if d.is_float:
            return self.call_math("fmod", [e.a, e.b], e.dtype)
        if d.lanes > 1:
            et = self.type_name(_dt.element(e.dtype))
            return self.vector_int_op(e, "mod", lambda a: f"({et})({a[0]} % {a[1]})")
        return self._arith(e, "%", P_MUL)

    def pow2_shift(self, b):
        """log2 of a positive power-of-two integer constant, else None."""
        if isinstance(b, E.IntImm) and b.value > 0 and (b.value & (b.value - 1)) == 0:
            return b.value.bit_length() - 1
        return None

    def visit_FloorDiv(self, e):
        e = self.guard_divisor(e)
        d = _dt.parse(e.dtype)
        if d.is_float:
            div = E.Div(e.a, e.b)
            return self.call_math("floor", [div], e.dtype)
        if d.lanes > 1:
            helper = self.int_helper("floordiv", _dt.element(e.dtype)) if d.is_int else None
            et = self.type_name(_dt.element(e.dtype))
            if helper is None:
                return self.vector_int_op(e, "div", lambda a: f"({et})({a[0]} / {a[1]})")
            return self.vector_int_op(e, "floordiv", lambda a: f"{helper}({a[0]}, {a[1]})")
        if d.is_uint:
            return self._arith(e, "/", P_MUL)
        shift = self.pow2_shift(e.b)
        if shift is not None:
            if shift == 0:
                return self.visit(e.a)
            # arithmetic right shift (GCC semantics) is floor division by 2**shift
            return self.wrap_narrow(e.dtype, f"{self.expr(e.a, P_SHIFT)} >> {shift}", P_SHIFT)
        helper = self.int_helper("floordiv", e.dtype)
        return f"{helper}({self.expr(e.a)}, {self.expr(e.b)})", P_PRIMARY

    def visit_FloorMod(self, e):
        e = self.guard_divisor(e)
        d = _dt.parse(e.dtype)
        if d.is_float:
            a, b = e.a, e.b
            return self.visit(E.Sub(a, E.Mul(E.Call(e.dtype, "floor", (E.Div(a, b),)), b)))
        if d.lanes > 1:
            et = self.type_name(_dt.element(e.dtype))
            if not d.is_int:
                return self.vector_int_op(e, "mod", lambda a: f"({et})({a[0]} % {a[1]})")
            helper = self.int_helper("floormod", _dt.element(e.dtype))
            return self.vector_int_op(e, "floormod", lambda a: f"{helper}({a[0]}, {a[1]})")
        if d.is_uint:
            return self._arith(e, "%", P_MUL)
        shift = self.pow2_shift(e.b)
        if shift is not None:
            # two's complement: a & (2**k - 1) is the floor modulo
            mask = self.expr(E.IntImm(e.dtype, e.b.value - 1), P_BITAND + 1)
            return self.wrap_narrow(e.dtype, f"{self.expr(e.a, P_BITAND)} & {mask}", P_BITAND)
        helper = self.int_helper("floormod", e.dtype)
        return f"{helper}({self.expr(e.a)}, {self.expr(e.b)})", P_PRIMARY

    def print_minmax(self, e, op):
        if self.is_vector(e):
            if _dt.parse(e.dtype).is_bool:
                name = self.lanewise_minmax_helper(op, e.dtype)
            else:
                name = self.vector_minmax_helper(op, e.dtype)
        else:
            name = self.int_helper(op, e.dtype)
        return f"{name}({self.expr(e.a)}, {self.expr(e.b)})", P_PRIMARY

    def visit_Min(self, e):
        return self.print_minmax(e, "min")

    def visit_Max(self, e):
        return self.print_minmax(e, "max")

    def visit_CmpOp(self, e):
        sym, prec = CMP_OPS[type(e)]
        text = f"{self.expr(e.a, prec + 1)} {sym} {self.expr(e.b, prec + 1)}"
        if self.is_vector(e):
            # a vector comparison gives -1 for true; a bool vector holds 1, as a bool does
            bt = self.bool_vector_type(_dt.lanes(e.dtype))
            return f"__builtin_convertvector(-({text}), {bt})", P_PRIMARY
        return text, prec

    def visit_And(self, e):
        if self.is_vector(e):
            return f"{self.expr(e.a, P_BITAND)} & {self.expr(e.b, P_BITAND + 1)}", P_BITAND
        return f"{self.expr(e.a, P_AND)} && {self.expr(e.b, P_AND + 1)}", P_AND

    def visit_Or(self, e):
        if self.is_vector(e):
            return f"{self.expr(e.a, P_BITOR)} | {self.expr(e.b, P_BITOR + 1)}", P_BITOR
        return f"{self.expr(e.a, P_OR)} || {self.expr(e.b, P_OR + 1)}", P_OR

    def visit_Not(self, e):
        if self.is_vector(e):
            bt = self.bool_vector_type(_dt.lanes(e.dtype))
            return f"-({self.expr(e.a, P_EQ + 1)} == ({bt}){{0}})", P_UNARY
        return f"!{self.expr(e.a, P_UNARY)}", P_UNARY

    def visit_Select(self, e):
        if self.is_vector(e) and self.GCC_VECTORS and not _dt.parse(e.dtype).is_bool:
            name = self.vector_blend_helper(e.dtype)
            mask = self.select_mask(e.condition, _dt.parse(e.dtype))
            return f"{name}({mask}, {self.expr(e.true_value)}, {self.expr(e.false_value)})", P_PRIMARY
        if self.is_vector(e):
            lanes = _dt.lanes(e.dtype)
            name = self.lanewise_helper(
                "select", e.dtype, (f"boolx{lanes}", e.dtype, e.dtype),
                lambda a: f"{a[0]} ? {a[1]} : {a[2]}")
            cond = self.as_bool_vector(e.condition, lanes)
            return f"{name}({cond}, {self.expr(e.true_value)}, {self.expr(e.false_value)})", P_PRIMARY
        return (f"{self.expr(e.condition, P_OR)} ? {self.expr(e.true_value, P_OR)} : "
                f"{self.expr(e.false_value, P_COND)}"), P_COND

    def select_mask(self, cond, d) -> str:
        """The condition of a vector select of dtype ``d`` as a mask of ``d``'s lane
        width (-1 where true, 0 where false): a comparison of operands of that width
        as it is (a GCC vector comparison gives that mask), any other condition's bool
        vector converted."""
        if isinstance(cond, tuple(CMP_OPS)) and _dt.lanes(cond.a.dtype) == d.lanes \
                and _dt.parse(cond.a.dtype).bits == d.bits:
            sym, prec = CMP_OPS[type(cond)]
            return f"({self.expr(cond.a, prec + 1)} {sym} {self.expr(cond.b, prec + 1)})"
        mask = self.type_name(f"int{d.bits}x{d.lanes}")
        return f"-__builtin_convertvector({self.as_bool_vector(cond, d.lanes)}, {mask})"

    def vector_blend_helper(self, dtype: str) -> str:
        """``tecc_blend_<dtype>(m, a, b)``: lanes of ``a`` where the mask ``m`` (-1 or 0
        per lane, of ``dtype``'s lane width) is set, else of ``b``: bitwise, no lane
        loop (a lane-by-lane select made a masked softmax 2x slower)."""
        d = _dt.parse(dtype)
        vt, mt = self.type_name(dtype), self.type_name(f"int{d.bits}x{d.lanes}")
        name = f"tecc_blend_{dtype}"
        return self.use_helper(name, "\n".join([
            f"static inline {vt} {name}({mt} m, {vt} a, {vt} b) {{",
            f"    return ({vt})((m & ({mt})a) | (~m & ({mt})b));",
            "}"]))

    def as_bool_vector(self, cond, lanes) -> str:
        if _dt.lanes(cond.dtype) == 1:
            cond = E.Broadcast(cond, lanes)
        return self.expr(cond)

    def visit_Cast(self, e):
        src = _dt.parse(e.value.dtype)
        dst = _dt.parse(e.dtype)
        if dst.lanes > 1:
            if src.lanes == 1:
                return self.visit(E.Broadcast(E.Cast(str(dst.element_of()), e.value), dst.lanes))
            vt = self.type_name(e.dtype)
            if dst.is_bool:
                zero = f"({self.type_name(e.value.dtype)}){{0}}"
                return f"__builtin_convertvector(-({self.expr(e.value, P_EQ + 1)} != {zero}), {vt})", P_PRIMARY
            return f"__builtin_convertvector({self.expr(e.value)}, {vt})", P_PRIMARY
        if dst.is_bool:
            return f"({self.expr(e.value, P_EQ + 1)} != 0)", P_PRIMARY
        if dst.is_storage_float:
            return self.round_to_format(e.dtype, self.expr(e.value, P_UNARY), str(src)), P_PRIMARY
        if dst.is_narrow:
            return self.narrow_int_cast(e.dtype, self.expr(e.value), src), P_PRIMARY
        return f"({self.type_name(e.dtype)}){self.expr(e.value, P_UNARY)}", P_UNARY

    def visit_Ramp(self, e):
        name = self.ramp_helper(e.dtype)
        return f"{name}({self.expr(e.base)}, {self.expr(e.stride)})", P_PRIMARY

    def visit_Broadcast(self, e):
        if _dt.is_bool(e.dtype):
            # boolean lanes are stored as int8 0 / non-zero
            name = self.broadcast_helper(e.dtype)
            return f"{name}((int8_t){self.expr(e.value, P_UNARY)})", P_PRIMARY
        name = self.broadcast_helper(e.dtype)
        return f"{name}({self.expr(e.value)})", P_PRIMARY

    def visit_Let(self, e):
        value = self.expr(e.value)
        with self.binding(e.var, e.var.name) as name:
            body = self.expr(e.body)
        return f"({{ {self.type_name(e.var.dtype)} {name} = {value}; {body}; }})", P_PRIMARY

    def restore_name(self, var, saved):
        if saved is None:
            self._names.pop(var, None)
        else:
            self._names[var] = saved

    # calls --------------------------------------------------------------------
    def visit_Call(self, e):
        op = e.op
        args = e.args
        if op == "likely":
            return f"__builtin_expect(!!({self.expr(args[0])}), 1)", P_PRIMARY
        if op == _CHECKED_DIVISOR:
            name = self.divisor_helper(e.dtype)
            return f"{name}({self.expr(args[0])}, {c_string_literal(args[1].value)})", P_PRIMARY
        if op == "if_then_else":
            if self.is_vector(e) and _dt.lanes(args[0].dtype) > 1:
                return self.lazy_vector_select(e)
            return (f"{self.expr(args[0], P_OR)} ? {self.expr(args[1], P_OR)} : "
                    f"{self.expr(args[2], P_COND)}"), P_COND
        if op in (keys.CALL_EXTERN, keys.CALL_PURE_EXTERN):
            return self.print_extern_call(e), P_PRIMARY
        if op == keys.CALL_PACKED:
            return self.print_packed_value(e), P_PRIMARY
        if op in (keys.STACK_MAKE_ARRAY, keys.STACK_MAKE_SHAPE):
            raise CompileError(f"{self._function_name}: {op} is only an argument of {keys.CALL_PACKED} "
                               f"(in `{to_text(e)}`)")
        if op == keys.REINTERPRET:
            return self.print_reinterpret(e), P_PRIMARY
        if op == keys.ACCESS_PTR:  # (type_annotation, data, offset, extent, mask): the address data + offset
            elem = self.storage_type(args[0].dtype)
            return f"(({elem}*){self.expr(args[1])} + {self.expr(args[2], P_ADD + 1)})", P_PRIMARY
        if op in ("bitwise_and", "bitwise_or", "bitwise_xor", "shift_left", "shift_right"):
            sym, prec = {"bitwise_and": ("&", P_BITAND), "bitwise_or": ("|", P_BITOR),
                         "bitwise_xor": ("^", P_BITXOR), "shift_left": ("<<", P_SHIFT),
                         "shift_right": (">>", P_SHIFT)}[op]
            text = f"{self.expr(args[0], prec)} {sym} {self.expr(args[1], prec + 1)}"
            if self.is_vector(e):
                return text, prec
            return self.wrap_narrow(e.dtype, text, prec)
        if op == "bitwise_not":
            text = f"~{self.expr(args[0], P_UNARY)}"
            if self.is_vector(e):
                return text, P_UNARY
            return self.wrap_narrow(e.dtype, text, P_UNARY)
        if op in ("abs", "popcount") or op in self.MATH_FUNCS or op in self.PREDICATES \
                or op in ("exp10", "rsqrt", "sigmoid"):
            return self.call_math(op, list(args), e.dtype)
        return self.visit_unknown_call(e)

    # extern and packed calls, bit casts -----------------------------------------
    def print_extern_call(self, e) -> str:
        """``name(args...)`` of ``call_extern`` / ``call_pure_extern``."""
        fname = e.args[0].value if isinstance(e.args[0], E.StringImm) else None
        if fname is None or not re.match(r"^[A-Za-z_][A-Za-z0-9_]*(::[A-Za-z_][A-Za-z0-9_]*)*$", fname):
            raise CompileError(f"{self._function_name}: {e.op} needs the name of a {self.BACKEND} function "
                               f"as its first argument, got `{to_text(e.args[0])}` (in `{to_text(e)}`)")
        if self.DECLARE_EXTERNS and any(_promoted(a.dtype) for a in e.args[1:]):
            # without a prototype C promotes a float argument to double (and a char to
            # int), which a function taking a float reads as garbage: declare it from
            # the call's argument types
            params = ", ".join(self.type_name(a.dtype) for a in e.args[1:])
            self.use_helper(f"extern {fname}", f"{self.type_name(e.dtype)} {fname}({params});")
        return f"{fname}({', '.join(self.expr(a) for a in e.args[1:])})"

    def print_reinterpret(self, e) -> str:
        """The bits of the argument as ``e.dtype`` (through a helper that copies
        them, lane by lane for vectors)."""
        value = e.args[0]
        src, dst = _dt.parse(value.dtype), _dt.parse(e.dtype)
        if src.bits != dst.bits or src.lanes != dst.lanes or src.is_bool or dst.is_bool \
                or src.is_handle or dst.is_handle:
            raise CompileError(f"{self._function_name}: cannot reinterpret {value.dtype} as {e.dtype} "
                               f"(in `{to_text(e)}`): a bit cast keeps the width and the lanes")
        if src.lanes > 1:
            scalar = self.reinterpret_helper(str(src.element_of()), str(dst.element_of()))
            name = self.lanewise_helper(f"reinterpret_{src.element_of()}", e.dtype, (value.dtype,),
                                         lambda a: f"{scalar}({a[0]})")
            return f"{name}({self.expr(value)})"
        return f"{self.reinterpret_helper(str(src), str(dst))}({self.expr(value)})"

    def reinterpret_helper(self, src: str, dst: str) -> str:
        """``dst f(src v)``: copy the bits of a scalar (a storage float's values are
        computed as float and stored as its bits: the helper goes through the stored
        form; a narrow integer's bits are wrapped to its width)."""
        name = f"tecc_reinterpret_{src}_{dst}"
        if name in self._helpers:
            return name
        s, d = _dt.parse(src), _dt.parse(dst)
        nbytes = s.storage_bits().bytes
        lines = [f"static inline {self.type_name(dst)} {name}({self.type_name(src)} v) {{"]
        bits = "v"
        if s.is_storage_float:
            lines.append(f"    {self.storage_type(src)} b = {self.float_format_helpers(src)[1]}(v);")
            bits = "b"
        lines += [f"    {self.storage_type(dst)} r = 0;", f"    memcpy(&r, &{bits}, {nbytes});"]
        if d.is_storage_float:
            lines.append(f"    return {self.float_format_helpers(dst)[0]}(r);")
        elif d.is_narrow:
            lines.append(f"    return {self.narrow_int_cast(dst, 'r', _dt.parse('int32'))};")
        else:
            lines.append("    return r;")
        lines.append("}")
        return self.use_helper(name, "\n".join(lines))

    #: CPU code may call packed functions; a GPU printer refuses them
    PACKED_CALLS = True

    def packed_handle(self, name: str) -> str:
        """The C name of the cached handle of packed function ``name`` (declared once
        per translation unit, ``fake.func`` -> ``fake_func_packed``)."""
        handle = self._packed_handles.get(name)
        if handle is None:
            base = re.sub(r"[^A-Za-z0-9_]", "_", name) + "_packed"
            if base[0].isdigit() or base.startswith(("tecc_", "__")):
                base = "f_" + base
            handle, k = base, 1
            while handle in self._used or handle in self._packed_handles.values():
                handle = f"{base}_{k}"
                k += 1
            self._packed_handles[name] = handle
        self._used.add(handle)
        return handle

    def _packed_parts(self, e):
        """``(name, handle, argument initializers)`` of a ``tir.tvm_call_packed``."""
        if not e.args or not isinstance(e.args[0], E.StringImm):
            raise CompileError(f"{self._function_name}: {keys.CALL_PACKED} needs the function's name first "
                               f"(in `{to_text(e)}`)")
        name = e.args[0].value
        if not self.PACKED_CALLS:
            raise CompileError(
                f"kernel {self._function_name}: call_packed({name!r}) cannot run inside a CUDA kernel: "
                "a packed function is Python code that only CPU code can call; call it from a function built "
                "for 'llvm' or 'c' (outside the kernel)")
        inits = [self.packed_arg(a, name) for a in e.args[1:]]
        return name, self.packed_handle(name), inits

    def packed_arg(self, a, name: str) -> str:
        """The ``tecc_packed_arg_t`` initializer of one argument of a packed call."""
        if isinstance(a, E.Call) and a.op == keys.STACK_MAKE_ARRAY:
            return self._packed_array(a, name)
        if isinstance(a, E.StringImm):
            return f"{{.type_code = {_packed.ARG_STR}, .v_handle = (void*){c_string_literal(a.value)}}}"
        d = _dt.parse(a.dtype)
        if d.lanes > 1:
            raise CompileError(f"{self._function_name}: call_packed({name!r}) cannot pass the vector "
                               f"`{to_text(a)}` ({a.dtype}); pass scalars or buffers")
        text = self.expr(a)
        if d.is_handle:
            return f"{{.type_code = {_packed.ARG_HANDLE}, .v_handle = (void*)({text})}}"
        if d.is_float:
            return f"{{.type_code = {_packed.ARG_FLOAT}, .v_float64 = (double)({text}), .dtype = \"{d}\"}}"
        code = _packed.ARG_UINT if d.is_uint else _packed.ARG_INT
        return f"{{.type_code = {code}, .v_int64 = (int64_t)({text}), .dtype = \"{d}\"}}"

    def _packed_array(self, a, name: str) -> str:
        data, shape, strides, _ndim, zero, offset = a.args
        dtype = _dt.parse(zero.dtype)
        if dtype.lanes > 1 or not (isinstance(shape, E.Call) and shape.op == keys.STACK_MAKE_SHAPE):
            raise CompileError(f"{self._function_name}: call_packed({name!r}): cannot pass `{to_text(a)}`; "
                               "pass the buffer itself (tir.call_packed(name, buf, ...))")
        st = self.storage_type(str(dtype))
        ptr = self.expr(data, P_UNARY)
        if E.is_const_int(offset, 0):
            addr = f"(void*){ptr}"
        else:
            addr = f"(void*)((char*){ptr} + (int64_t)({self.expr(offset)}) * sizeof({st}))"

        def dims(call):
            if not (isinstance(call, E.Call) and call.op == keys.STACK_MAKE_SHAPE and call.args):
                return "NULL"
            return "(const int64_t[]){" + ", ".join(f"(int64_t)({self.expr(x)})" for x in call.args) + "}"

        return (f"{{.type_code = {_packed.ARG_ARRAY}, .v_handle = {addr}, .shape = {dims(shape)}, "
                f".strides = {dims(strides)}, .ndim = {len(shape.args)}, .dtype = \"{dtype}\"}}")

    def _packed_args_decl(self, inits) -> tuple:
        """``(declaration text, array name)`` of the argument array (no array for no
        arguments)."""
        if not inits:
            return "", "NULL"
        arr = self.fresh_internal("packed_args")
        return f"tecc_packed_arg_t {arr}[{len(inits)}] = {{{', '.join(inits)}}};", arr

    def print_packed_call(self, e) -> None:
        """A packed call as a statement: on failure, leave like a failed assertion
        (the runtime raises the callee's error)."""
        name, handle, inits = self._packed_parts(e)
        arr = self.fresh_internal("packed_args") if inits else "NULL"
        self.emit("{")
        with self.indented():
            if inits:
                self.emit(f"tecc_packed_arg_t {arr}[{len(inits)}] = {{")
                with self.indented():
                    for init in inits:
                        self.emit(init + ",")
                self.emit("};")
            self.emit(f"if (tecc_call_packed(&{handle}, {c_string_literal(name)}, {arr}, {len(inits)}, NULL) "
                      "!= 0) {")
            with self.indented():
                self.print_fail(None)
            self.emit("}")
        self.emit("}")

    def print_packed_value(self, e) -> str:
        """A packed call inside an expression: its value is the callee's result; a
        failure makes the function return -1 at its end."""
        name, handle, inits = self._packed_parts(e)
        decl, arr = self._packed_args_decl(inits)
        ret = self.fresh_internal("packed_ret")
        self._checks_division = True
        t = self.type_name(e.dtype)
        if _dt.is_float(e.dtype):
            value = f"({t})({ret}.type_code == {_packed.ARG_FLOAT} ? {ret}.v_float64 : (double){ret}.v_int64)"
        else:
            value = f"({t})({ret}.type_code == {_packed.ARG_FLOAT} ? (int64_t){ret}.v_float64 : {ret}.v_int64)"
        return (f"({{ {decl + ' ' if decl else ''}tecc_packed_arg_t {ret} = {{0}}; "
                f"if (tecc_call_packed(&{handle}, {c_string_literal(name)}, {arr}, {len(inits)}, &{ret}) != 0) "
                f"{{ __atomic_store_n(&tecc_faults, 1, __ATOMIC_RELAXED); }} {value}; }})")

    def print_packed_support(self) -> str:
        """What packed calls need, when the unit makes any: the argument struct (the
        runtime's ``PackedArg``), the two hooks the runtime sets when it loads the
        library, the call helper and one cached handle per function name."""
        if not self._packed_handles:
            return ""
        lines = [
            "// packed functions (tir.call_packed): tecc's runtime sets the two hooks when it loads the library",
            "typedef struct {",
            "    int64_t v_int64;",
            "    double v_float64;",
            "    void* v_handle;",
            "    const int64_t* shape;",
            "    const int64_t* strides;",
            "    int32_t ndim;",
            "    int32_t type_code;",
            "    const char* dtype;",
            "} tecc_packed_arg_t;",
            "",
            f"__attribute__((visibility(\"default\"))) int32_t (*{_packed.LOOKUP_SYMBOL})(const char*, void**) = NULL;",
            f"__attribute__((visibility(\"default\"))) int32_t (*{_packed.INVOKE_SYMBOL})(void*, tecc_packed_arg_t*, "
            "int32_t, tecc_packed_arg_t*) = NULL;",
            "",
            "static int32_t tecc_call_packed(void** handle, const char* name, tecc_packed_arg_t* args, int32_t nargs,",
            "                                tecc_packed_arg_t* ret) {",
            "    void* h = __atomic_load_n(handle, __ATOMIC_ACQUIRE);",
            f"    if ({_packed.LOOKUP_SYMBOL} == NULL || {_packed.INVOKE_SYMBOL} == NULL) {{",
            "        tecc_set_error(\"this library calls packed functions: load it with tecc.runtime.load_module\");",
            "        return -1;",
            "    }",
            "    if (h == NULL) {",
            f"        if ({_packed.LOOKUP_SYMBOL}(name, &h) != 0) {{",
            "            tecc_set_error(\"a packed function is not registered\");",
            "            return -1;",
            "        }",
            "        __atomic_store_n(handle, h, __ATOMIC_RELEASE);",
            "    }",
            f"    if ({_packed.INVOKE_SYMBOL}(h, args, nargs, ret) != 0) {{",
            "        tecc_set_error(\"a packed function raised an error\");",
            "        return -1;",
            "    }",
            "    return 0;",
            "}",
            "",
        ]
        lines += [f"static void* {h} = NULL;" for h in self._packed_handles.values()]
        return "\n".join(lines)

    def visit_unknown_call(self, e):
        """Hook for intrinsics only a subclass knows (barriers, warp shuffles...)."""
        raise CompileError(
            f"the C backend does not know the intrinsic {e.op!r} (in `{e}`); "
            "known: math functions, if_then_else, likely, bitwise_*, shift_*, popcount, abs")

    #: GCC vector extensions (the C backend); the CUDA printer's vectors are structs
    GCC_VECTORS = True

    def call_math(self, op, args, dtype):
        if op in ("exp", "sigmoid", "tanh", "erf") and self.GCC_VECTORS and _dt.lanes(dtype) > 1 \
                and _dt.element(dtype) == "float32":
            helper = {"exp": self.vector_exp_helper, "sigmoid": self.vector_sigmoid_helper,
                      "tanh": self.vector_tanh_helper, "erf": self.vector_erf_helper}[op](dtype)
            return f"{helper}({self.expr(args[0])})", P_PRIMARY
        if any(_dt.lanes(a.dtype) > 1 for a in args) or _dt.lanes(dtype) > 1:
            arg_dtypes = tuple(a.dtype for a in args)
            edtype = _dt.element(args[0].dtype)
            name = self.lanewise_helper(op, dtype, arg_dtypes,
                                         lambda a: self.intrinsic(op, a, edtype))
            return f"{name}({', '.join(self.expr(a) for a in args)})", P_PRIMARY
        text = self.intrinsic(op, [self.expr(a) for a in args], args[0].dtype)
        return text, P_PRIMARY

    def intrinsic(self, op: str, args: list, dtype: str) -> str:
        """C text of intrinsic ``op`` on scalar argument texts of ``dtype``.

        The result is a primary expression (a call or parenthesized).
        """
        d = _dt.parse(dtype)
        if op == "abs":
            if d.is_float:
                return self.intrinsic("fabs", args, dtype)
            if d.is_uint or d.is_bool:
                return f"({args[0]})"
            if d.bits == 64:
                return f"llabs({args[0]})"
            if d.bits < 8:  # abs(-8) of an int4 wraps to -8, as int8's abs(-128)
                return self.narrow_int_cast(dtype, f"abs({args[0]})", _dt.parse("int32"))
            if d.bits < 32:
                return f"(({self.type_name(dtype)})abs({args[0]}))"
            return f"abs({args[0]})"
        if op == "popcount":
            if d.bits == 64:
                return f"__builtin_popcountll((uint64_t)({args[0]}))"
            if d.bits < 8:  # the type's own bits (an int4 is held sign-extended)
                return f"__builtin_popcount((uint8_t)({args[0]}) & 0x{(1 << d.bits) - 1:x}u)"
            return f"__builtin_popcount((uint{max(d.bits, 8)}_t)({args[0]}))"
        if op in self.PREDICATES:
            return f"{self.PREDICATES[op]}({args[0]})"
        if d.code == "float" and d.bits == 16:
            # half precision: compute in float, round back
            fargs = [f"(float)({a})" for a in args]
            return f"((_Float16){self.intrinsic(op, fargs, 'float32')})"
        if d.is_storage_float:
            return self.rounded(dtype, self.intrinsic(op, args, "float32"))
        if not d.is_float:
            # integer arguments of a float function: compute in double
            return self.intrinsic(op, [f"(double)({a})" for a in args], "float64")
        suffix = "f" if d.bits == 32 else ""
        one = "1.0f" if d.bits == 32 else "1.0"
        if op == "rsqrt":
            return f"({one} / sqrt{suffix}({args[0]}))"
        if op == "sigmoid":
            return f"({one} / ({one} + exp{suffix}(-({args[0]}))))"
        if op == "exp10":
            ten = "10.0f" if d.bits == 32 else "10.0"
            return f"pow{suffix}({ten}, {args[0]})"
        base = self.MATH_FUNCS[op]
        return f"{base}{suffix}({', '.join(args)})"

    def lazy_vector_select(self, e):
        """Vector ``if_then_else``: each lane evaluates only its taken side."""
        vt = self.type_name(e.dtype)
        lanes = _dt.lanes(e.dtype)
        r = self.fresh_internal("v")
        parts = [f"{vt} {r} = {{0}};"]
        cond, tv, fv = e.args
        for lane in range(lanes):
            lane_of = LaneOf(lane)
            c = lane_of.visit(cond) if _dt.lanes(cond.dtype) > 1 else cond
            t = lane_of.visit(tv)
            f = lane_of.visit(fv)
            parts.append(f"{r}[{lane}] = {self.expr(c, P_OR)} ? {self.expr(t, P_OR)} : "
                         f"{self.expr(f, P_COND)};")
        parts.append(f"{r};")
        return "({ " + " ".join(parts) + " })", P_PRIMARY

    # memory ---------------------------------------------------------------------
    def flat_index(self, buffer: S.Buffer, indices):
        """The 1-D index of an access (see :func:`tecc.tir.analysis.flat_index`)."""
        return flat_index(buffer, indices)

    def buffer_ptr(self, buffer: S.Buffer):
        """(text, precedence) of the pointer through which ``buffer`` is accessed."""
        name = self.name_of(buffer.data)
        declared = self._ptr_dtype.get(buffer.data)
        if declared is None or declared != buffer.dtype:
            # a plain handle (a void* parameter or let) or a pointer to another type
            return f"(({self.storage_type(buffer.dtype)}*){name})", P_PRIMARY
        return name, P_PRIMARY

    def visit_BufferLoad(self, e):
        buf = e.buffer
        if buf.scope == keys.REGISTER:
            return self.name_of(buf.data), P_PRIMARY
        index = self.flat_index(buf, e.indices)
        ptr, _ = self.buffer_ptr(buf)
        lanes = _dt.lanes(index.dtype)
        if lanes == 1:
            text = f"{ptr}[{self.expr(index)}]"
            d = _dt.parse(buf.dtype)
            if d.is_storage_float:
                return self.float_value(f"{self.float_format_helpers(buf.dtype)[0]}({text})", text), P_PRIMARY
            if d.is_narrow:  # a narrow integer's value from its bits (an int4's sign-extended)
                return self.narrow_int_cast(buf.dtype, text, _dt.parse("int32")), P_PRIMARY
            return text, P_PRIMARY
        dtype = _dt.with_lanes(buf.dtype, lanes)
        if isinstance(index, E.Ramp) and E.is_const_int(index.stride, 1):
            name = self.load_helper(dtype)
            return f"{name}({ptr} + {self.expr(index.base, P_ADD + 1)})", P_PRIMARY
        if self.vector_shuffles and isinstance(index, E.Ramp) and E.is_const_int(index.stride, 2) \
                and lanes in (2, 4, 8, 16, 32, 64) and not _dt.parse(buf.dtype).is_narrow and not _dt.is_bool(buf.dtype):
            name = self.load_stride2_helper(dtype)
            return f"{name}({ptr} + {self.expr(index.base, P_ADD + 1)})", P_PRIMARY
        if self._strided(buf, index):
            name = self.load_strided_helper(dtype, index.dtype)
            return (f"{name}({ptr} + {self.expr(index.base, P_ADD + 1)}, {self.expr(index.stride)})",
                    P_PRIMARY)
        name = self.gather_helper(dtype, index.dtype)
        return f"{name}({ptr}, {self.expr(index)})", P_PRIMARY

    def visit_ProducerLoad(self, e):  # pragma: no cover - lowering bug
        raise AssertionError(f"ProducerLoad {e} reached the C backend: lower the schedule first")

    def visit_Reduce(self, e):  # pragma: no cover - lowering bug
        raise AssertionError(f"Reduce {e} reached the C backend: lower the schedule first")

    # ------------------------------------------------------------------------
    # statements
    # ------------------------------------------------------------------------
    def print_stmt(self, s) -> None:
        self.visit(s)

    def visit_SeqStmt(self, s):
        for x in s.seq:
            self.print_stmt(x)

    def visit_Evaluate(self, s):
        if isinstance(s.value, (E.IntImm, E.FloatImm)):
            return
        if isinstance(s.value, E.Call):
            if s.value.op == keys.STORAGE_SYNC:
                self.print_barrier(s.value)
                return
            if s.value.op == keys.CALL_PACKED:
                self.print_packed_call(s.value)
                return
            if s.value.op == keys.PREFETCH:
                self.print_prefetch(s.value)
                return
            self.emit(self.expr(s.value) + ";")
            return
        self.emit(f"(void)({self.expr(s.value)});")

    def print_barrier(self, call) -> None:
        """A thread barrier; C code has one thread per block, so none is needed."""
        self.emit("// barrier: nothing to do in sequential C")

    def visit_LetStmt(self, s):
        value = self.expr(s.value)
        with self.binding(s.var, s.var.name) as name:
            self.emit(f"{self.type_name(s.var.dtype)} {name} = {value};")
            self.print_stmt(s.body)

    def print_prefetch(self, call) -> None:
        """``__builtin_prefetch`` of the element a ``tir.prefetch`` names (for reading,
        kept in every cache level; inject_prefetch)."""
        (load,) = call.args
        index = self.flat_index(load.buffer, load.indices)
        if isinstance(index, E.Ramp):
            index = index.base
        ptr, _ = self.buffer_ptr(load.buffer)
        self.emit(f"__builtin_prefetch({ptr} + {self.expr(index, P_ADD + 1)}, 0, 3);")

    def visit_AttrStmt(self, s):
        node = s.node
        what = getattr(node, "name", None) or getattr(node, "thread_tag", None) or type(node).__name__
        self.emit(f"// attr [{what}] {s.attr_key} = {self.expr(s.value)}")
        self.print_stmt(s.body)

    def visit_AssertStmt(self, s):
        self.emit(f"if (!{self.expr(s.condition, P_UNARY)}) {{")
        with self.indented():
            self.print_fail(s.message)
        self.emit("}")
        self.print_stmt(s.body)

    def print_fail(self, message) -> None:
        """Report ``message`` and leave: free live heap buffers, then return -1 (or,
        inside a parallel loop, flag the failure and skip to the next iteration).
        ``message`` None: the error is already set (a failed packed call)."""
        if message is not None:
            self.emit(f"tecc_set_error({c_string_literal(message)});")
        par = self._parallel
        inline = par is not None and not par.get("outlined")
        start = par["heap_start"] if inline else 0
        for name in reversed(self._heap[start:]):
            self.emit(f"free({name});")
        if not inline:
            self.emit("return -1;")
        else:
            self.emit(f"__atomic_store_n(&{par['flag']}, 1, __ATOMIC_RELAXED);")
            self.emit(f"goto {par['label']};")

    def visit_BufferStore(self, s):
        buf = s.buffer
        if buf.scope == keys.REGISTER:
            self.emit(f"{self.name_of(buf.data)} = {self.expr(s.value)};")
            return
        copy = _narrow_vector_copy(s)
        if copy is not None:
            self.print_stmt(copy)
            return
        index = self.flat_index(buf, s.indices)
        ptr, _ = self.buffer_ptr(buf)
        lanes = _dt.lanes(index.dtype)
        if lanes == 1:
            assert _dt.lanes(s.value.dtype) == 1, f"vector value stored at a scalar index of {buf.name}"
            value = self.expr(s.value)
            d = _dt.parse(buf.dtype)
            if d.is_storage_float:
                bits = self._bits_of.get(value) if s.value.dtype == buf.dtype else None
                value = bits if bits is not None else f"{self.float_format_helpers(buf.dtype)[1]}({value})"
            elif d.is_narrow:  # a narrow integer's bits
                value = f"(uint8_t)((uint32_t)({value}) & 0x{(1 << d.bits) - 1:x}u)"
            self.emit(f"{ptr}[{self.expr(index)}] = {value};")
            return
        dtype = _dt.with_lanes(buf.dtype, lanes)
        value = s.value if _dt.lanes(s.value.dtype) == lanes else E.Broadcast(s.value, lanes)
        if isinstance(index, E.Ramp) and E.is_const_int(index.stride, 1):
            name = self.store_helper(dtype)
            self.emit(f"{name}({ptr} + {self.expr(index.base, P_ADD + 1)}, {self.expr(value)});")
            return
        if self._strided(buf, index):
            name = self.store_strided_helper(dtype, index.dtype)
            self.emit(f"{name}({ptr} + {self.expr(index.base, P_ADD + 1)}, {self.expr(index.stride)}, "
                      f"{self.expr(value)});")
            return
        name = self.scatter_helper(dtype, index.dtype)
        self.emit(f"{name}({ptr}, {self.expr(index)}, {self.expr(value)});")

    def is_stack_allocation(self, buffer: S.Buffer) -> bool:
        n = const_size(buffer)
        return n is not None and n * _dt.parse(buffer.dtype).bytes <= STACK_LIMIT_BYTES

    def visit_Allocate(self, s):
        self.print_allocate(s)

    def print_allocate(self, s: S.Allocate) -> None:
        """Small constant sizes live on the stack, others on the heap (freed at the
        end of the scope and on every failure exit)."""
        buf = s.buffer
        with self.buffer_binding(buf) as name:
            self.print_allocation(buf, name, s.body)

    def print_allocation(self, buf: S.Buffer, name: str, body) -> None:
        st = self.storage_type(buf.dtype)
        if buf.scope == keys.REGISTER:
            # one value (promote_local_registers): a C variable, kept in a register
            self.emit(f"{self.type_name(buf.dtype)} {name};")
            self.print_stmt(body)
        elif self.is_stack_allocation(buf):
            n = max(1, const_size(buf))
            self.emit(f"{st} {name}[{n}] __attribute__((aligned(64)));")
            self.print_stmt(body)
        else:
            size = None
            for extent in buf.shape:
                ext = extent if extent.dtype == "int64" else E.Cast("int64", extent)
                size = ext if size is None else E.Mul(size, ext)
            nbytes = f"(size_t)({self.expr(size)}) * sizeof({st})"
            self.emit(f"{st}* {self.restrict_keyword} {name} = ({st}*)tecc_alloc({nbytes});")
            self.emit(f"if ({name} == NULL) {{")
            with self.indented():
                self.print_fail(f"out of memory allocating {buf.name}")
            self.emit("}")
            self._heap.append(name)
            self.print_stmt(body)
            self._heap.pop()
            self.emit(f"free({name});")

    def _may_fail(self, s) -> bool:
        """True if ``s`` contains an assert, a heap allocation or a packed call (a
        failure exit)."""
        found = []

        def check(node):
            if isinstance(node, S.AssertStmt):
                found.append(node)
            elif isinstance(node, S.Evaluate) and isinstance(node.value, E.Call) \
                    and node.value.op == keys.CALL_PACKED:
                found.append(node)
            elif isinstance(node, S.Allocate) and not self.is_stack_allocation(node.buffer):
                found.append(node)

        post_order_visit(s, check)
        return bool(found)

    def visit_For(self, s):
        self.print_for(s)

    def loop_header(self, s: S.For, var: str) -> str:
        t = self.type_name(s.loop_var.dtype)
        begin = self.expr(s.min)
        if E.is_const_int(s.min, 0):
            end = self.expr(s.extent, P_REL + 1)
        else:
            end = self.expr(E.Add(s.min, s.extent), P_REL + 1)
        return f"for ({t} {var} = {begin}; {var} < {end}; ++{var}) {{"

    #: ``parallel`` loops become OpenMP loops (a GPU printer runs them serially per thread)
    PARALLEL_LOOPS = True

    #: declare the C functions ``call_extern`` calls with narrow scalar arguments (a
    #: CUDA printer calls device functions its headers declare)
    DECLARE_EXTERNS = True

    def print_for(self, s: S.For) -> None:
        """A loop: ``parallel`` -> OpenMP (outermost only), others with the pragma of
        :meth:`print_loop_pragma`."""
        with self.binding(s.loop_var, s.loop_var.name) as var:
            for key, value in s.annotations:
                if key in IMPORT_PRAGMAS:  # the code itself is compiled beside this unit (build_c)
                    self.emit(f"// {key}: code linked into this library")
                else:
                    self.emit(f"// {key} = {value}")
            if s.kind is S.ForKind.PARALLEL and self.PARALLEL_LOOPS and self._parallel is None:
                self._print_parallel_for(s, var)
                return
            self.print_loop_pragma(s)
            self.emit(self.loop_header(s, var))
            with self.indented():
                self.print_stmt(s.body)
            self.emit("}")

    def print_loop_pragma(self, s: S.For) -> None:
        """The lines before the header of a loop run serially: ``vectorized`` -> SIMD
        pragma, ``unrolled`` -> GCC unroll pragma."""
        if s.kind is S.ForKind.PARALLEL:
            self.emit("// parallel loop nested in a parallel loop: runs serially")
        elif s.kind is S.ForKind.VECTORIZED:
            self.emit("#pragma GCC ivdep" if self._may_fail(s.body) else "#pragma omp simd")
        elif s.kind is S.ForKind.UNROLLED:
            if isinstance(s.extent, E.IntImm) and 0 < s.extent.value <= 65534:
                self.emit(f"#pragma GCC unroll {s.extent.value}")
            else:
                self.emit("#pragma GCC unroll 8")
        elif s.kind is S.ForKind.THREAD_BINDING:
            tag = getattr(s.thread_binding, "thread_tag", "") or "thread"
            self.emit(f"// {tag} runs as a serial loop in C")

    def parallel_for_pragma(self, s: S.For) -> str:
        """The OpenMP pragma of the parallel loop ``s``: iterations dealt out
        ``schedule(guided)``, in chunks that halve as the loop runs down (the first
        thread free takes half of what is left divided among the threads).  Where
        OpenMP's default gives each thread one fixed block and waits for the
        slowest, a thread that another process or the hypervisor held up leaves its
        tail to the others; unlike equal small chunks (``dynamic``), the big first
        chunks keep most of a layer's rows on one core, whose cache the next layer
        finds them in.  On the project's 2-core VM (2026-11-27, one process,
        interleaved rounds of 10 runs, ms, 10th percentile / median / mean / 90th):
        ResNet-50 at batch 1 static 49.4 / 51.7 / 54.5 / 67.3, guided 49.4 / 52.1 /
        53.4 / 59.6 (calm, another time: medians 50.2 and 50.1); SqueezeNet 4.66 /
        5.74 / 5.71 / 6.01 against 4.48 / 5.42 / 5.40 / 5.88; a transformer encoder
        layer of microsecond kernels 0.158 / 0.192 against 0.162 / 0.178 (10th,
        median).  ``schedule(dynamic)`` in 16 chunks lost ResNet-50 7% when calm
        (rows computed on one core, read on the other)."""
        return "#pragma omp parallel for schedule(guided)"

    def _print_parallel_for(self, s: S.For, var: str) -> None:
        """``#pragma omp parallel for`` around the loop.  The body becomes a function
        of its own (:meth:`_outline`) when it can: OpenMP moves a loop body into a
        compiler-made function whose pointers lose ``__restrict__``, so the C compiler
        would have to reload and store values after every write (an accumulator
        through memory, say); a function with restrict parameters keeps them."""
        may_fail = self._may_fail(s.body)
        call = self._outline(s.body)
        if call is not None:
            if not may_fail:
                self.emit(self.parallel_for_pragma(s))
                self.emit(self.loop_header(s, var))
                with self.indented():
                    self.emit(f"{call};")
                self.emit("}")
                return
            flag = self.fresh_internal("failed")
            self.emit(f"int {flag} = 0;")
            self.emit(self.parallel_for_pragma(s))
            self.emit(self.loop_header(s, var))
            with self.indented():
                self.emit(f"if ({call} != 0) {{")
                with self.indented():
                    self.emit(f"__atomic_store_n(&{flag}, 1, __ATOMIC_RELAXED);")
                self.emit("}")
            self.emit("}")
            self._print_failed_parallel(flag)
            return
        if not may_fail:
            self.emit(self.parallel_for_pragma(s))
            self.emit(self.loop_header(s, var))
            self._parallel = {"flag": None, "label": None, "heap_start": len(self._heap)}
            with self.indented():
                self.print_stmt(s.body)
            self._parallel = None
            self.emit("}")
            return
        flag = self.fresh_internal("failed")
        label = self.fresh_internal("next")
        self.emit(f"int {flag} = 0;")
        self.emit(self.parallel_for_pragma(s))
        self.emit(self.loop_header(s, var))
        self._parallel = {"flag": flag, "label": label, "heap_start": len(self._heap)}
        with self.indented():
            self.print_stmt(s.body)
            self.emit(f"{label}: ;")
        self._parallel = None
        self.emit("}")
        self._print_failed_parallel(flag)

    def _print_failed_parallel(self, flag: str) -> None:
        """After a parallel loop that may fail: leave when an iteration did."""
        self.emit(f"if ({flag}) {{")
        with self.indented():
            for name in reversed(self._heap):
                self.emit(f"free({name});")
            self.emit("return -1;")
        self.emit("}")

    def _outline(self, body):
        """Print ``body`` as a function of its own (a helper of the translation unit)
        and return the C call that runs it, or None when it cannot stand alone.

        Its parameters are the buffers ``body`` accesses (restrict pointers, ``const``
        where it only reads) and the variables it reads, each under the name it has
        here, so the body prints as it would in place.  It returns 0, or -1 after a
        failed assertion.  A body that uses a register slot declared outside it stays
        in place (the slot would be one variable shared by the threads)."""
        used = uses(body)
        buffers = {}
        for data, buf in list(used.read.items()) + list(used.written.items()):
            if data not in used.allocated:
                if buf.scope == keys.REGISTER:
                    return None
                buffers.setdefault(data, buf)
        params, args = [], []
        for data, buf in buffers.items():
            name = self.name_of(data)
            const = "" if data in used.written else "const "
            dtype = self.pointer_dtype(data) or buf.dtype
            params.append(f"{const}{self.storage_type(dtype)}* {self.restrict_keyword} {name}")
            args.append(name)
        values = [v for v in used.vars if v in self._names and v not in buffers]
        for var in sorted(values, key=self.name_of):
            kind = "void*" if _dt.parse(var.dtype).is_handle else self.type_name(var.dtype)
            params.append(f"{kind} {self.name_of(var)}")
            args.append(self.name_of(var))
        fname = self.fresh_internal(f"{self._function_name}_body")
        saved = (self._lines, self._indent, self._heap, self._parallel)
        self._lines, self._indent, self._heap, self._parallel = [], 1, [], {"outlined": True}
        try:
            self.print_stmt(body)
            self.emit("return 0;")
            lines = self._lines
        finally:
            self._lines, self._indent, self._heap, self._parallel = saved
        # noinline: GCC 12 miscompiles a restrict function inlined into an OpenMP region
        # (stores lost); called once per parallel iteration, the call costs nothing
        head = f"static __attribute__((noinline)) int32_t {fname}({', '.join(params) or 'void'}) {{"
        self.use_helper(fname, "\n".join([head] + lines + ["}"]))
        return f"{fname}({', '.join(args)})"

    def visit_While(self, s):
        self.emit(f"while ({self.expr(s.condition)}) {{")
        with self.indented():
            self.print_stmt(s.body)
        self.emit("}")

    def visit_IfThenElse(self, s):
        self.emit(f"if ({self.expr(s.condition)}) {{")
        node = s
        while True:
            with self.indented():
                self.print_stmt(node.then_case)
            other = node.else_case
            if other is None:
                break
            if isinstance(other, S.IfThenElse):
                self.emit(f"}} else if ({self.expr(other.condition)}) {{")
                node = other
                continue
            self.emit("} else {")
            with self.indented():
                self.print_stmt(other)
            break
        self.emit("}")


def generate_c(func: S.PrimFunc) -> str:
    """C source of ``func`` (a flattened PrimFunc) printed by :class:`CodeGenC`."""
    return CodeGenC().generate(func)
