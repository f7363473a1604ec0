"""tecc's operator library (the seed of it): what an operator computes, apart from how.

===================  =================================================================
module               holds
===================  =================================================================
:mod:`.nn`           tensor-expression computes (matmul, batch_matmul, conv2d_nchw,
                     softmax, layer_norm, fused element-wise epilogues)
:mod:`.testing`      numpy references of those computes (float64 accumulation)
:mod:`.cuda`         CUDA schedules, and workloads that put compute and schedule
                     together (``sgemm``, ``softmax_rows``...)
:mod:`.x86`          CPU schedules (a packed, register-tiled matmul)
===================  =================================================================
"""
from . import cuda, nn, testing, x86  # noqa: F401
from .nn import batch_matmul, conv2d_nchw, layer_norm, matmul, softmax  # noqa: F401
