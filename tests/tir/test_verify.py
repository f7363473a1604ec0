"""``verify_well_formed`` (tir/analysis/verify.py): what the pipeline's debug switch
checks after every pass, one test per kind of ill-formed IR."""
import pytest

from tecc import tir
from tecc.tir.analysis import verify_well_formed
from tecc.tir.stmt import BufferStore
from tecc.tir.transform import flatten
from irhelpers import buf, loop, lowered_func, matmul_func, var

c = tir.const


def test_verify_accepts_lowered_function():
    verify_well_formed(matmul_func())


def test_verify_undefined_variable():
    A = buf("A", (8,))
    i, j = var("i"), var("j")
    f = lowered_func("f", [A], loop(i, 8, BufferStore(A, c(1.0), (j,))))
    with pytest.raises(AssertionError, match="'j' is used but not defined") as err:
        verify_well_formed(f)
    assert "A[j] = 1f" in str(err.value)  # the IR around the bad node


def test_verify_double_binding_and_dtype_and_flatness():
    A = buf("A", (8, 8))
    i = var("i")
    f = lowered_func("f", [A], loop(i, 8, loop(i, 8, BufferStore(A, c(1.0), (i, i)))))
    with pytest.raises(AssertionError, match="bound again"):
        verify_well_formed(f)
    j = var("j")
    g = lowered_func("f", [A], loop(i, 8, loop(j, 8, BufferStore(A, c(1), (i, j)))))
    with pytest.raises(AssertionError, match="dtype int32"):
        verify_well_formed(g)
    h = lowered_func("f", [A], loop(i, 8, loop(j, 8, BufferStore(A, c(1.0), (i, j)))))
    verify_well_formed(h)
    with pytest.raises(AssertionError, match="dimensions after flattening"):
        verify_well_formed(h, require_flat=True)
    verify_well_formed(flatten(h), require_flat=True)
    bad_ext = lowered_func("f", [A], loop(i, c(8.0), BufferStore(A, c(1.0), (i, i))))
    with pytest.raises(AssertionError, match="not a scalar integer"):
        verify_well_formed(bad_ext)
