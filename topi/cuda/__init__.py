"""CUDA schedules of topi's operators, and workloads that put compute and schedule
together.  Everything here also runs, unchanged, on the CPU's GPU-semantics emulator
when there is no GPU.

The TVM-named schedules (``schedule_injective``, ``schedule_softmax``,
``schedule_conv2d_nchw``, ``schedule_reduce``, ``schedule_pool``) take the operator's
output tensor(s) and return a new schedule; the first three also take tecc's earlier
form ``(schedule, output, knobs...)``.

=====================  =============================================================
module                 holds
=====================  =============================================================
:mod:`.injective`      element-wise / broadcast / injective; ``fused_elementwise``
:mod:`.reduction`      ``schedule_reduce``; ``schedule_rows`` (a block per row)
:mod:`.softmax`        ``schedule_softmax``; ``softmax_rows``
:mod:`.layer_norm`     ``schedule_layer_norm`` (instance, group norm); ``layernorm_rows``
:mod:`.conv2d`         ``conv2d_nchw``, ``schedule_conv2d_nchw``
:mod:`.conv2d_direct`  the direct convolution template (tunable, shared by all below)
:mod:`.conv1d`         ``conv1d_ncw``, ``conv1d_nwc`` and their schedules
:mod:`.conv3d`         ``conv3d_ncdhw``, ``conv3d_ndhwc``, ``conv3d_transpose_ncdhw`` and their schedules
:mod:`.pooling`        ``schedule_pool``
:mod:`.resize`         ``schedule_resize`` (resize1d/2d, upsampling): a thread per element
:mod:`.gemm`           the tiled GEMM: ``sgemm``, ``classic_gemm_tvm``, ``matmul_bias_relu``
:mod:`.batch_matmul`   ``batch_matmul``, ``schedule_batch_matmul``, ``schedule_matmul``
:mod:`.dense`          ``dense_small_batch``, ``dense_large_batch`` (tunable), ``dense``,
                       ``schedule_dense``; the GEMM templates ``schedule_gemm_tiled``,
                       ``schedule_gemv``
:mod:`.norm`           ``schedule_batch_norm``, ``schedule_lrn``
:mod:`.dense_tensorcore`  ``dense_tensorcore``, ``schedule_dense_tensorcore``: float16 (bfloat16) dense
                       layers on tensor cores (wmma fragments; tunable); ``dense`` picks it
:mod:`.batch_matmul_tensorcore`  ``batch_matmul_tensorcore``, ``schedule_batch_matmul_tensorcore``:
                       the same for batched products; ``batch_matmul`` picks it
:mod:`.conv2d_tensorcore`  ``conv2d_nchw_tensorcore``, ``conv2d_nhwc_tensorcore``: NCHW and NHWC
                       convolutions as an implicit GEMM on tensor cores; ``conv2d_nchw``
                       and ``conv2d_nhwc`` pick them for float16 and bfloat16
:mod:`.tensor_intrin`  the wmma intrinsics for ``tensorize`` (``intrin_wmma_load_matrix_A``...)
=====================  =============================================================
"""
from .batch_matmul import batch_matmul, schedule_batch_matmul  # noqa: F401
from .batch_matmul import schedule_batch_matmul_blocked, schedule_matmul  # noqa: F401
from .dense import (  # noqa: F401
    dense, dense_large_batch, dense_small_batch, schedule_dense, schedule_dense_large_batch,
    schedule_dense_small_batch, schedule_gemm_tiled, schedule_gemv,
)
from .norm import schedule_batch_norm, schedule_lrn  # noqa: F401
from .dense_tensorcore import dense_tensorcore, schedule_dense_tensorcore  # noqa: F401
from .batch_matmul_tensorcore import batch_matmul_tensorcore, schedule_batch_matmul_tensorcore  # noqa: F401
from .conv2d_tensorcore import (  # noqa: F401
    conv2d_nchw_tensorcore, conv2d_nhwc_tensorcore, schedule_conv2d_nchw_tensorcore, schedule_conv2d_nhwc_tensorcore,
)
from .conv2d import conv2d_nchw, conv2d_nchw_workload, schedule_conv2d_direct, schedule_conv2d_nchw  # noqa: F401
from .conv2d import conv2d_nhwc, schedule_conv2d_nhwc  # noqa: F401
from .conv1d import conv1d_ncw, conv1d_nwc, schedule_conv1d_ncw, schedule_conv1d_nwc  # noqa: F401
from .conv3d import conv3d_ncdhw, conv3d_ndhwc, schedule_conv3d_ncdhw, schedule_conv3d_ndhwc  # noqa: F401
from .conv3d import conv3d_transpose_ncdhw, schedule_conv3d_transpose_ncdhw  # noqa: F401
from .conv2d_transpose import conv2d_transpose_nchw, schedule_conv2d_transpose_nchw  # noqa: F401
from .conv2d_transpose import group_conv2d_transpose_nchw, schedule_group_conv2d_transpose_nchw  # noqa: F401
from .depthwise_conv2d import depthwise_conv2d_nchw, schedule_depthwise_conv2d_nchw  # noqa: F401
from .depthwise_conv2d import depthwise_conv2d_nhwc, schedule_depthwise_conv2d_nhwc  # noqa: F401
from .group_conv2d_nchw import group_conv2d_nchw, schedule_group_conv2d_nchw  # noqa: F401
from .gemm import (  # noqa: F401
    classic_gemm_tvm, matmul_bias_relu, schedule_classic_gemm, schedule_gemm, sgemm,
)
from .injective import (  # noqa: F401
    fused_elementwise, schedule_broadcast, schedule_elemwise, schedule_injective, schedule_injective_from_existing,
)
from .layer_norm import layernorm_rows, schedule_layer_norm  # noqa: F401
from .layer_norm import schedule_group_norm, schedule_instance_norm  # noqa: F401
from .pooling import schedule_pool  # noqa: F401
from .pooling import schedule_adaptive_pool  # noqa: F401
from .pooling import adaptive_pool, global_pool, pool1d, pool2d, pool3d  # noqa: F401
from .reduction import schedule_reduce, schedule_rows  # noqa: F401
from .resize import schedule_resize, schedule_upsampling  # noqa: F401
from .reduction import reduce  # noqa: F401
from .softmax import schedule_log_softmax, schedule_softmax, schedule_softmax_op, softmax_rows  # noqa: F401
from .sort import argsort, schedule_argsort, schedule_sort, schedule_topk, sort, topk  # noqa: F401
from .scan import cumprod, cumsum, scanop, schedule_scan  # noqa: F401
from .linalg import det, schedule_det  # noqa: F401
from .nms import schedule_nms  # noqa: F401
from .scatter import (  # noqa: F401
    scatter_elements, scatter_nd, schedule_scatter, schedule_scatter_elements, schedule_scatter_nd,
)
