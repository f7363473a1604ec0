"""tecc's operator library (TVM's TOPI): what an operator computes, and how to
schedule it per target.

Importing it also makes arithmetic on whole tensors work (``A + B`` broadcasts,
``A * 2`` is element-wise; :mod:`.generic_op_impl`).

========================  ==============================================================
module                    holds
========================  ==============================================================
:mod:`.broadcast`         ``add``, ``subtract``, ``multiply``, ... with numpy broadcasting
:mod:`.math`              element-wise math: ``exp``, ``tanh``, ``sigmoid``, ``clip``, ...
:mod:`.tensor`            ``full``, ``full_like``, ``elemwise_sum``
:mod:`.transform`         ``reshape``, ``concatenate``, ``split``, ``take``, ``tensordot``...
:mod:`.einsum`            ``einsum("ij,jk->ik", A, B)``
:mod:`.sort`              ``sort``, ``argsort``, ``topk`` (stable; extern statements, CPU and CUDA)
:mod:`.scan`              ``cumsum``, ``cumprod``, ``scanop``
:mod:`.scatter`           ``scatter_elements``, ``scatter_nd``, ``scatter``
:mod:`.linalg`            ``det`` (determinants; an extern statement, CPU and CUDA)
:mod:`.random`            ``uniform``, ``normal``, ``multinomial`` (counter-based: Threefry-2x64-20)
:mod:`.tree`              ``tree_traverse`` (decision trees as tables: ONNX-ML's tree ensembles)
:mod:`.reduction`         ``sum``, ``max``, ``min``, ``prod``, ``argmax``, ``mean``, ``variance``...
:mod:`.nn`                neural-network computes (conv2d, dense, softmax, pool2d, ...)
:mod:`.image`             ``resize1d``/``2d``/``3d``, ``grid_sample``, ``affine_grid``, ``crop_and_resize``
:mod:`.vision`            ``roi_align_nchw`` (ONNX's RoiAlign)
:mod:`.generic`           default (CPU) schedules
:mod:`.x86`               CPU schedules
:mod:`.cuda`              CUDA schedules and workloads (``sgemm``, ``softmax_rows``...)
:mod:`.testing`           numpy references, and the compute/schedule to use per target
:mod:`.schedule_registry` ``schedule(outs, target)``: the schedule for an output's tag and target;
                          ``register_schedule(tag_prefix, target_key)`` adds one
:mod:`.tag`, :mod:`.utils`  operator tags; shapes, constants, ``traverse_inline``
========================  ==============================================================
"""
from . import tag, utils  # noqa: F401
from .broadcast import (  # noqa: F401
    add, bitwise_and, bitwise_not, bitwise_or, bitwise_xor, broadcast_to, divide, equal, floor_divide,
    floor_mod, greater, greater_equal, left_shift, less, less_equal, logical_and, logical_not, logical_or,
    logical_xor, maximum, minimum, mod, multiply, not_equal, power, right_shift, subtract, trunc_divide,
    trunc_mod,
)
from .math import (  # noqa: F401
    abs, acos, asin, atan, cast, ceil, clip, cos, cosh, erf, exp, fast_erf, fast_exp, fast_tanh, floor,
    identity, isfinite, isinf, isnan, log, log10, log2, negative, reinterpret, round, rsqrt, sigmoid, sign,
    sin, sinh, sqrt, tan, tanh, trunc,
)
from .reduction import all, any, argmax, argmin, max, min, prod, sum  # noqa: F401
from .reduction import mean, std, variance  # noqa: F401
from .broadcast import fmod, pow, where  # noqa: F401
from .math import acosh, asinh, atanh, reciprocal  # noqa: F401
from .tensor import elemwise_sum, full, full_like  # noqa: F401
from .transform import (  # noqa: F401
    concatenate, expand_dims, reshape, split, squeeze, stack, take, tensordot, transpose,
)
from .transform import (  # noqa: F401
    arange, flip, gather, gather_elements, gather_nd, layout_transform, layout_transform_shape, one_hot, repeat,
    strided_slice, tile,
)
from .einsum import einsum  # noqa: F401
from .sort import argsort, sort, topk  # noqa: F401
from .scan import cumprod, cumsum, scanop  # noqa: F401
from .linalg import det  # noqa: F401
from .scatter import scatter, scatter_elements, scatter_nd  # noqa: F401
from .transform import meshgrid, reverse_sequence, sequence_mask, trilu  # noqa: F401
from .transform import collapse_sum, expand_like, ndarray_size, shape, unravel_index  # noqa: F401
from .transform import adv_index, matrix_set_diag, sparse_to_dense, strided_set  # noqa: F401
from . import nn  # noqa: F401,E402
from . import image  # noqa: F401,E402
from . import generic, x86, cuda, testing  # noqa: F401,E402
from . import vision  # noqa: F401,E402
from . import random  # noqa: F401,E402
from . import tree  # noqa: F401,E402
from .nn import batch_matmul, conv2d_nchw, layer_norm, matmul, softmax  # noqa: F401,E402
from .nn import matmul_broadcast  # noqa: F401,E402
from . import schedule_registry  # noqa: F401,E402
from .schedule_registry import register_schedule, schedule  # noqa: F401,E402
from . import generic_op_impl  # noqa: E402

generic_op_impl.install()
