"""CPU schedules of topi's operators (C with OpenMP and GCC vectors).

=====================  ========================================================
module                 holds
=====================  ========================================================
:mod:`.injective`      element-wise / broadcast / injective (index remaps along rows)
:mod:`.reduction`      ``schedule_reduce``, ``schedule_softmax``
:mod:`.conv2d`         ``conv2d_nchw``, ``schedule_conv2d_nchw`` (and the other direct convolutions:
                       1-D, grouped, depthwise, transposed, 3-D)
:mod:`.conv2d_flat`    the NCHW convolution as a GEMM over flattened pixels (task ``conv2d_nchw_flat.x86``)
:mod:`.conv2d_nchwc`   ``conv2d_NCHWc`` (channels in blocks, task ``conv2d_NCHWc.x86``),
                       ``schedule_conv2d_NCHWc``, ``nchwc_block``, ``nchwc_out_block``
:mod:`.conv2d_winograd` ``conv2d_NCHWc_winograd`` (F(2x2, 3x3), task ``conv2d_NCHWc_winograd.x86``),
                       ``schedule_conv2d_NCHWc_winograd``, ``use_winograd``
:mod:`.matmul`         the packed, register-tiled matmul (``matmul_packed``)
:mod:`.resize`         ``schedule_resize`` (resize1d/2d, upsampling): tables once, rows over cores
:mod:`.norm`           ``schedule_layer_norm`` (instance, group norm), ``schedule_batch_norm``,
                       ``schedule_lrn``
:mod:`.dense`          ``dense`` (``dense_pack``, ``dense_nopack``, ``dense_pack_prepacked``), ``batch_matmul``,
                       ``schedule_dense``, ``schedule_batch_matmul``, ``schedule_matmul``
=====================  ========================================================

:mod:`.depthwise_conv2d` has ``depthwise_conv2d_nhwc`` and its schedule,
:mod:`.conv2d_transpose` ``group_conv2d_transpose_nchw`` and its schedule.
"""
from .conv2d import conv2d_nchw, schedule_conv2d_nchw  # noqa: F401
from .conv2d_nchwc import conv2d_NCHWc, nchwc_block, nchwc_out_block, schedule_conv2d_NCHWc  # noqa: F401
from .conv2d_winograd import conv2d_NCHWc_winograd, schedule_conv2d_NCHWc_winograd, use_winograd  # noqa: F401
from .sort import schedule_argsort, schedule_scan, schedule_sort, schedule_topk  # noqa: F401
from .sort import schedule_scatter, schedule_scatter_elements, schedule_scatter_nd  # noqa: F401
from .sort import schedule_det  # noqa: F401
from .conv2d import (  # noqa: F401
    conv1d_ncw, conv2d_nhwc, conv2d_transpose_nchw, conv3d_ncdhw, conv3d_ndhwc, conv3d_transpose_ncdhw,
    depthwise_conv2d_nchw, group_conv2d_nchw, schedule_conv1d_ncw, schedule_conv1d_nwc, schedule_conv2d_nhwc,
    schedule_conv2d_transpose_nchw, schedule_conv3d_ncdhw, schedule_conv3d_ndhwc, schedule_conv3d_transpose_ncdhw,
    schedule_depthwise_conv2d_nchw, schedule_group_conv2d_nchw,
)
from .injective import (  # noqa: F401
    schedule_broadcast, schedule_elemwise, schedule_injective, schedule_injective_from_existing,
)
from .matmul import matmul_packed, matmul_packed_compute, register_tile, schedule_matmul_packed  # noqa: F401
from .reduction import schedule_reduce, schedule_softmax  # noqa: F401
from .resize import schedule_resize, schedule_upsampling  # noqa: F401
from .depthwise_conv2d import depthwise_conv2d_nhwc, schedule_depthwise_conv2d_nhwc  # noqa: F401
from .conv2d_transpose import group_conv2d_transpose_nchw, schedule_group_conv2d_transpose_nchw  # noqa: F401
from .reduction import reduce  # noqa: F401
from .pooling import schedule_adaptive_pool, schedule_pool  # noqa: F401
from .pooling import adaptive_pool, global_pool, pool1d, pool2d, pool3d  # noqa: F401
from .dense import (  # noqa: F401
    batch_matmul, dense, dense_nopack, dense_pack, dense_pack_prepacked, schedule_batch_matmul, schedule_dense,
    schedule_dense_nopack, schedule_dense_pack, schedule_matmul, matmul_default,
)
from .norm import (  # noqa: F401
    schedule_batch_norm, schedule_group_norm, schedule_instance_norm, schedule_layer_norm, schedule_lrn,
)
