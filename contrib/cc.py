"""Linking with the system C compiler (TVM's ``tvm.contrib.cc``).

Link the object a module's ``save("x.o")`` wrote into a shared library that
``tecc.runtime.load_module`` loads::

    fadd.save("myadd.o")
    cc.create_shared("myadd.so", ["myadd.o"])
    fadd1 = tecc.runtime.load_module("myadd.so")

The link uses the flags of tecc's own libraries (``-shared -fPIC -fopenmp ... -lm``);
the compiler is the ``CC`` environment variable (``cc`` when unset) unless ``cc=``
names one.  A failed link raises :class:`~tecc.errors.CompileError` with the
compiler's message and leaves no output file.
"""
from __future__ import annotations


def create_shared(output, objects, options=None, cc=None) -> None:
    """Link ``objects`` into the shared library ``output``.

    Parameters
    ----------
    output : str
        The library to write (its folder must exist).
    objects : str or list of str
        Object files (``.o``), archives or C sources, in link order.
    options : list of str, optional
        Extra options, after the inputs (``["-L/opt/lib", "-lfoo"]``).
    cc : str, optional
        The compiler command (``"gcc"``, ``"clang"``); ``$CC`` or ``cc`` by default.

    Raises
    ------
    CompileError
        When an input is missing or the link fails (with the compiler's message).
    """
    from ..cpu_fallback.compiler import link  # noqa: PLC0415 -- the compiler loads on first use

    link(output, objects, options, cc, shared=True)


#: the extension ``export_library``-style callers give the output of :func:`create_shared`
create_shared.output_format = "so"


def create_executable(output, objects, options=None, cc=None) -> None:
    """Link ``objects`` (one with a ``main``) into the executable ``output``; the
    parameters are those of :func:`create_shared`."""
    from ..cpu_fallback.compiler import link  # noqa: PLC0415

    link(output, objects, options, cc, shared=False)


create_executable.output_format = ""
