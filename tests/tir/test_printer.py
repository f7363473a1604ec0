"""The printed IR: readable, and the same for the same IR (no object addresses)."""
import tecc
from tecc import tir
from tecc.topi import cuda as topi_cuda


def _softmax_ir():
    s, args = topi_cuda.softmax_rows(4, 64, num_thread=32)
    return tecc.lower(s, args, name="softmax")["softmax"]


def test_a_reducer_prints_as_its_combiner_and_hashing_agrees_with_equality():
    a, b = _softmax_ir(), _softmax_ir()
    line = next(ln for ln in str(a).splitlines() if "tecc.thread_allreduce" in ln)
    assert "comm_reducer(result=['max(x, y)']" in line and " object at 0x" not in line
    assert str(a) == str(b)
    assert tir.structural_equal(a, b, map_free_vars=True)
    assert tir.structural_hash(a) == tir.structural_hash(b)
