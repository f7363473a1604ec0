"""The C symbol of a compiled function: its name, unless the C library the generated C
includes (math.h, stdlib.h, string.h) declares that name -- a kernel built with
``name="exp"`` (TVM's tests build ``topi.exp`` so) -- then ``tecc_fn_<name>``.  The
printers emit and the runtime looks up the same symbol; users keep calling ``f["exp"]``.
A name the library declares and this list misses still fails to compile, with a
message naming the clash and the fix (:func:`tecc.cpu_fallback.compiler.describe_failure`).
"""
from __future__ import annotations

_MATH = """acos acosh asin asinh atan atan2 atanh cbrt ceil copysign cos cosh erf erfc exp exp2 expm1 fabs fdim
floor fma fmax fmin fmod frexp hypot ilogb ldexp lgamma llrint llround log log10 log1p log2 logb lrint lround modf
nan nearbyint nextafter nexttoward pow remainder remquo rint round scalbln scalbn sin sinh sqrt tan tanh tgamma
trunc""".split()
#: macros of math.h that a function of the same name would collide with
_MATH_MACROS = "isnan isinf isfinite isnormal signbit fpclassify isgreater isless".split()
_STDLIB = """abort abs atexit atof atoi atol atoll bsearch calloc div exit free getenv labs ldiv llabs lldiv malloc
qsort rand realloc srand strtod strtof strtol strtold strtoll strtoul strtoull system""".split()
_STRING = """memchr memcmp memcpy memmove memset strcat strchr strcmp strcoll strcpy strcspn strerror strlen strncat
strncmp strncpy strpbrk strrchr strspn strstr strtok strxfrm""".split()

#: the C library's names, ``float`` and ``long double`` variants of the math included
C_LIBRARY_NAMES = frozenset(_MATH + [f + "f" for f in _MATH] + [f + "l" for f in _MATH] + _MATH_MACROS + _STDLIB
                            + _STRING)

#: the prefix of a renamed function's symbol
PREFIX = "tecc_fn_"


def c_symbol(name: str) -> str:
    """The C symbol of the compiled function ``name``."""
    return PREFIX + name if name in C_LIBRARY_NAMES else name
