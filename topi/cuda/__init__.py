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
:mod:`.layer_norm`     ``schedule_layer_norm``; ``layernorm_rows``
:mod:`.conv2d`         ``conv2d_nchw``, ``schedule_conv2d_nchw``
:mod:`.pooling`        ``schedule_pool``
:mod:`.gemm`           the tiled GEMM: ``sgemm``, ``classic_gemm_tvm``, ``matmul_bias_relu``
:mod:`.batch_matmul`   ``batch_matmul``
=====================  =============================================================
"""
from .batch_matmul import batch_matmul, schedule_batch_matmul  # noqa: F401
from .conv2d import conv2d_nchw, conv2d_nchw_workload, schedule_conv2d_direct, schedule_conv2d_nchw  # noqa: F401
from .gemm import (  # noqa: F401
    classic_gemm_tvm, matmul_bias_relu, schedule_classic_gemm, schedule_gemm, sgemm,
)
from .injective import (  # noqa: F401
    fused_elementwise, schedule_broadcast, schedule_elemwise, schedule_injective, schedule_injective_from_existing,
)
from .layer_norm import layernorm_rows, schedule_layer_norm  # noqa: F401
from .pooling import schedule_pool  # noqa: F401
from .reduction import schedule_reduce, schedule_rows  # noqa: F401
from .softmax import schedule_log_softmax, schedule_softmax, schedule_softmax_op, softmax_rows  # noqa: F401
