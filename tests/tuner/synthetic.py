"""A builder and runner that measure nothing: each config's cost is a known
function of its knobs, so the tuners' search, resuming and records can be tested
fast and exactly (the real builder and runner are tested in test_measure.py)."""
import math
import time

from tecc import autotvm, te
from tecc.tuner.measure.measure import Builder, MeasureErrorNo, MeasureResult, Runner


def _tiled_matmul(n, multi_filter=None):
    """The synthetic templates' computation and knobs (``multi_filter``: a constraint
    across the knobs, or none)."""
    A = te.placeholder((n, n), name="A")
    B = te.placeholder((n, n), name="B")
    k = te.reduce_axis((0, n), name="k")
    C = te.compute((n, n), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")
    s = te.create_schedule(C.op)
    y, x = s[C].op.axis
    cfg = autotvm.get_config()
    cfg.define_split("tile_y", y, num_outputs=2)
    cfg.define_split("tile_x", x, num_outputs=2)
    cfg.define_knob("unroll", [0, 1, 2, 3])
    if multi_filter is not None:
        cfg.multi_filter(filter=multi_filter)
    yo, yi = cfg["tile_y"].apply(s, C, y)
    xo, xi = cfg["tile_x"].apply(s, C, x)
    s[C].reorder(yo, xo, s[C].op.reduce_axis[0], yi, xi)
    return s, [A, B, C]


@autotvm.template("test/synthetic_matmul")
def synthetic_matmul(n):
    return _tiled_matmul(n)


def landscape(config) -> float:
    """Seconds of a config: fastest at tile_y inner 8, tile_x inner 32, unroll 2;
    a config whose index is divisible by 13 "fails"."""
    ty = config["tile_y"].size[-1]
    tx = config["tile_x"].size[-1]
    u = config["unroll"].val
    return 1e-3 * (1 + abs(math.log2(ty) - 3) + 0.5 * abs(math.log2(tx) - 5) + 0.3 * abs(u - 2))


def failing(config) -> bool:
    return config.index % 13 == 0


class SyntheticBuilder(Builder):
    def __init__(self, n_parallel=8):
        super().__init__(n_parallel=n_parallel)
        self.built = []

    def build(self, measure_inputs):
        self.built.extend(inp.config.index for inp in measure_inputs)
        return [None] * len(measure_inputs)


class SyntheticRunner(Runner):
    def run(self, measure_inputs, build_results):
        out = []
        for inp in measure_inputs:
            if failing(inp.config):
                out.append(MeasureResult(["synthetic failure"], MeasureErrorNo.RUNTIME_DEVICE, 0.0, time.time()))
            else:
                t = landscape(inp.config)
                out.append(MeasureResult([t, t], MeasureErrorNo.NO_ERROR, 2 * t, time.time()))
        return out


def synthetic_option(n_parallel=8):
    builder = SyntheticBuilder(n_parallel)
    return autotvm.measure_option(builder=builder, runner=SyntheticRunner()), builder


def optimum(space) -> float:
    return min(landscape(space.get(i)) for i in range(len(space)) if not failing(space.get(i)))


def within_budget(entity) -> bool:
    """The filter of ``test/synthetic_filtered``: at most 64 "threads" per tile."""
    return entity["tile_y"].size[-1] * entity["tile_x"].size[-1] <= 64


@autotvm.template("test/synthetic_filtered")
def synthetic_filtered(n):
    """``synthetic_matmul`` with a constraint across two knobs (``multi_filter``)."""
    return _tiled_matmul(n, within_budget)
