"""Numpy references of topi's operators (float64 accumulation), the oracles of the
tests and of tuning; and which compute and schedule to use per target
(:mod:`.common`)."""
from .common import (  # noqa: F401
    dispatch, get_broadcast_schedule, get_conv2d_nchw_implement, get_elemwise_schedule,
    get_injective_schedule, get_pool_schedule, get_reduce_schedule, get_softmax_schedule,
)
from .nn import (  # noqa: F401
    batch_matmul_python, bias_relu_python, conv2d_nchw_python, dense_python, layer_norm_python,
    log_softmax_python, matmul_python, poolnd_python, relu_python, scale_bias_relu_add_python, softmax_python,
)
