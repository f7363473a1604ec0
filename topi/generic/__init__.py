"""Generic schedules: correct for any CPU target, the fallback of the per-target
ones (:mod:`..x86`, :mod:`..cuda`).  Each takes the operator's output tensor(s) and
returns a new schedule."""
from .default import default_schedule  # noqa: F401
from .injective import (  # noqa: F401
    schedule_broadcast, schedule_elemwise, schedule_injective, schedule_injective_from_existing,
)
from .nn import (  # noqa: F401
    schedule_adaptive_pool, schedule_batch_matmul, schedule_conv2d_nchw, schedule_conv2d_nhwc, schedule_dense,
    schedule_extern, schedule_matmul, schedule_pool, schedule_reduce, schedule_softmax,
)
