"""Running launch plans (runtime/launch.py): ``run_plan`` on every call, and
``freeze_plan``, which resolves a plan once for arguments that never change (the
graph executor's buffers) so that later calls only launch."""
import numpy as np
import pytest

from tecc.errors import KernelError
from tecc.runtime.launch import Alloc, Assert, KernelSpec, Launch, LaunchPlan, Let, Loop, freeze_plan, run_plan

KERNELS = {
    "fill": KernelSpec("fill", (("buffer", "float32"), ("scalar", "int32"))),
    "step": KernelSpec("step", (("buffer", "float32"), ("buffer", "float32"), ("scalar", "int32")),
                       dynamic_shared_bytes=256, param_align={0: 16}),
}

# n = arg 0; a workspace of 2n floats, a fill, then a host loop of 3 steps, each
# launching `step` with its own scalar; the grid grows with n
PLAN = LaunchPlan("scan", (
    Assert([">", {"arg": 0}, 0], "n must be positive"),
    Alloc(0, "W", "float32", ["*", {"arg": 0}, 2]),
    Let(0, "blocks", ["floordiv", ["+", {"arg": 0}, 63], 64]),
    Launch("fill", ({"workspace": 0}, {"scalar": {"arg": 0}}), ({"let": 0}, 1, 1), (64, 1, 1)),
    Loop(1, "t", 0, 3, (
        Launch("step", ({"workspace": 0}, {"arg": 1}, {"scalar": ["*", {"let": 1}, 10]}),
               ({"let": 0}, 1, 1), (64, 2, 1)),
    )),
), ("n",))


class Recorder:
    """A launcher that records allocations and launches (arrays by identity)."""

    def __init__(self, with_prepare=True):
        self.allocs = []
        self.launches = []
        if not with_prepare:
            self.prepare = None

    def alloc(self, dtype, count):
        self.allocs.append((dtype, count))
        return np.zeros(count, dtype=dtype)

    def address(self, arr) -> int:
        return arr.ctypes.data

    def launch(self, spec, grid, block, args) -> None:
        self.launches.append((spec.name, grid, block, [a if isinstance(a, int) else id(a) for a in args]))

    def prepare(self, spec, grid, block, args):
        return lambda: self.launch(spec, grid, block, args)


def _aligned(count):
    buf = np.zeros(count + 8, dtype="float32")
    start = (-buf.ctypes.data % 16) // 4
    return buf[start:start + count]


def test_frozen_launches_are_run_plans_launches_allocating_once():
    out = _aligned(16)
    direct = Recorder()
    run_plan(PLAN, KERNELS, {1: out}, {0: 100}, direct)
    assert [(name, grid, block) for name, grid, block, _ in direct.launches] == [
        ("fill", (2, 1, 1), (64, 1, 1))] + [("step", (2, 1, 1), (64, 2, 1))] * 3
    assert [args[-1] for _, _, _, args in direct.launches] == [100, 0, 10, 20]
    for with_prepare in (True, False):
        frozen = Recorder(with_prepare)
        launches = freeze_plan(PLAN, KERNELS, {1: out}, {0: 100}, frozen)
        assert len(launches) == 4 and frozen.launches == [] and frozen.allocs == [("float32", 200)]
        for _ in range(3):
            for launch in launches:
                launch()
        assert frozen.allocs == [("float32", 200)]  # the workspace is made once, when frozen
        workspace = frozen.launches[0][3][0]
        assert all(args[0] == workspace for _, _, _, args in frozen.launches)
        strip = [(name, grid, block, args[1:]) for name, grid, block, args in frozen.launches]
        want = [(name, grid, block, args[1:]) for name, grid, block, args in direct.launches]
        assert strip == want * 3


def test_freezing_runs_the_checks():
    with pytest.raises(KernelError, match="scan failed: n must be positive"):
        freeze_plan(PLAN, KERNELS, {1: _aligned(16)}, {0: 0}, Recorder())
    misaligned = _aligned(17)[1:]
    with pytest.raises(KernelError, match="parameter 0 with 16-byte vector accesses"):
        freeze_plan(LaunchPlan("p", (Launch("step", ({"arg": 0}, {"arg": 0}, {"scalar": 1}), (1, 1, 1), (1, 1, 1)),)),
                    KERNELS, {0: misaligned}, {}, Recorder())
