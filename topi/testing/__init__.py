"""Numpy references of topi's operators (float64 accumulation), the oracles of the
tests and of tuning; and which compute and schedule to use per target
(:mod:`.common`)."""
from .common import (  # noqa: F401
    dispatch, get_broadcast_schedule, get_conv2d_nchw_implement, get_elemwise_schedule,
    get_injective_schedule, get_pool_schedule, get_reduce_schedule, get_softmax_schedule,
)
from .common import (  # noqa: F401
    get_conv1d_ncw_implement, get_conv2d_nhwc_implement, get_conv2d_transpose_nchw_implement,
    get_depthwise_conv2d_nchw_implement, get_group_conv2d_nchw_implement,
)
from .conv import (  # noqa: F401
    conv1d_ncw_python, conv2d_nhwc_python, conv2d_transpose_nchw_python, depthwise_conv2d_python_nchw,
    group_conv1d_ncw_python,
)
from .conv import conv3d_ncdhw_python, conv3d_ndhwc_python, conv3d_transpose_ncdhw_python  # noqa: F401
from .conv import dilate_python  # noqa: F401
from .conv import depthwise_conv2d_python_nhwc  # noqa: F401
from .crop_and_resize_python import crop_and_resize_python  # noqa: F401
from .deformable_conv2d_python import deformable_conv2d_nchw_python  # noqa: F401
from .grid_sample_python import affine_grid_python, grid_sample_python  # noqa: F401
from .resize_python import resize1d_python, resize2d_python, resize3d_python, upsampling_python  # noqa: F401
from .roi_align_python import roi_align_nchw_python  # noqa: F401
from .tree_python import tree_traverse_python  # noqa: F401
from .nms_python import non_max_suppression_python  # noqa: F401
from .common import (  # noqa: F401
    get_depthwise_conv2d_nhwc_implement, get_group_conv2d_transpose_nchw_implement, get_resize_schedule,
)
from .nn import (  # noqa: F401
    batch_matmul_python, bias_relu_python, conv2d_nchw_python, dense_python, layer_norm_python,
    log_softmax_python, matmul_python, nll_loss, poolnd_python, relu_python, scale_bias_relu_add_python,
    softmax_python,
)
from .dense import batch_matmul, dense, matmul_broadcast_python  # noqa: F401
from .elemwise import (  # noqa: F401
    argmax_python, argmin_python, divide_python, elu_python, erf_python, gelu_python, hardsigmoid_python,
    hardswish_python, leaky_relu_python, mish_python, prelu_python, selu_python, sigmoid_python, softplus_python,
)
from .norm import batch_norm, group_norm_python, instance_norm_python, lrn_python  # noqa: F401
from .common import get_adaptive_pool_schedule  # noqa: F401
from .pooling import adaptive_pool  # noqa: F401
from .transform import (  # noqa: F401
    depth_to_space_python, gather_nd_python, gather_python, layout_transform_python, one_hot,
    space_to_depth_python, strided_slice_python,
)
from .transform import matrix_set_diag, sparse_to_dense_python, strided_set_python  # noqa: F401
from .common import (  # noqa: F401
    get_batch_matmul_implement, get_batch_norm_schedule, get_dense_implement, get_group_norm_schedule,
    get_instance_norm_schedule, get_layer_norm_schedule, get_lrn_schedule, get_matmul_schedule,
)
from .common import compare_numpy_tvm, get_extern_implement  # noqa: F401
from .sort_scan import argsort_python, cumprod_python, cumsum_python, sort_python, topk_python  # noqa: F401
from .scatter import scatter_elements_python, scatter_nd_python  # noqa: F401
from .sequence import meshgrid_python, reverse_sequence_python, sequence_mask, trilu_python  # noqa: F401
from .random_python import multinomial_python, normal_python, threefry2x64_python, uniform_python  # noqa: F401
