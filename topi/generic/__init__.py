"""Generic schedules: correct for any CPU target, the fallback of the per-target
ones (:mod:`..x86`, :mod:`..cuda`).  Each takes the operator's output tensor(s) and
returns a new schedule."""
from .default import default_schedule  # noqa: F401
from .resize import schedule_resize, schedule_upsampling  # noqa: F401
from .nn import schedule_depthwise_conv2d_nhwc, schedule_group_conv2d_transpose_nchw  # noqa: F401
from .extern import schedule_argsort, schedule_scan, schedule_sort, schedule_topk  # noqa: F401
from .extern import schedule_scatter, schedule_scatter_elements, schedule_scatter_nd  # noqa: F401
from .extern import schedule_det  # noqa: F401
from .nn import (  # noqa: F401
    schedule_conv1d_ncw, schedule_conv1d_nwc, schedule_conv2d_transpose_nchw, schedule_conv3d_ncdhw,
    schedule_conv3d_ndhwc, schedule_conv3d_transpose_ncdhw, schedule_depthwise_conv2d_nchw, schedule_group_conv2d_nchw,
)
from .injective import (  # noqa: F401
    schedule_broadcast, schedule_elemwise, schedule_injective, schedule_injective_from_existing,
)
from .nn import (  # noqa: F401
    schedule_adaptive_pool, schedule_batch_matmul, schedule_conv2d_hwcn, schedule_conv2d_nchw, schedule_conv2d_nhwc,
    schedule_dense, schedule_extern, schedule_matmul, schedule_pool, schedule_reduce, schedule_softmax,
)
from .norm import (  # noqa: F401
    schedule_batch_norm, schedule_group_norm, schedule_instance_norm, schedule_layer_norm, schedule_lrn,
)
