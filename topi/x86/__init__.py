"""CPU schedules of topi's operators (C with OpenMP and GCC vectors).

=====================  ========================================================
module                 holds
=====================  ========================================================
:mod:`.injective`      element-wise / broadcast / injective
:mod:`.reduction`      ``schedule_reduce``, ``schedule_softmax``
:mod:`.conv2d`         ``conv2d_nchw``, ``schedule_conv2d_nchw``
:mod:`.matmul`         the packed, register-tiled matmul (``matmul_packed``)
=====================  ========================================================
"""
from .conv2d import conv2d_nchw, schedule_conv2d_nchw  # noqa: F401
from .injective import (  # noqa: F401
    schedule_broadcast, schedule_elemwise, schedule_injective, schedule_injective_from_existing,
)
from .matmul import matmul_packed, matmul_packed_compute, register_tile, schedule_matmul_packed  # noqa: F401
from .reduction import schedule_reduce, schedule_softmax  # noqa: F401
