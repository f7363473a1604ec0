"""Neural-network operators: tensor-expression computes (what, not how).

Every function takes tensors and returns the output tensor; intermediate stages
carry a ``tag`` (and a name) by which a schedule finds them from the output
(``out.op.input_tensors``).  Schedules live beside, per target: :mod:`..generic`,
:mod:`..cuda`, :mod:`..x86`; numpy references in :mod:`..testing`.

==================  ====================================================
module              operators
==================  ====================================================
:mod:`.dense`       matmul, dense, batch_matmul
:mod:`.conv2d`      conv2d, conv2d_nchw, conv2d_nhwc, pad_nchw
:mod:`.pad`         pad
:mod:`.pooling`     pool1d, pool2d, pool3d, global_pool
:mod:`.softmax`     softmax, log_softmax
:mod:`.elemwise`    relu, leaky_relu, prelu; tecc's fused epilogues
:mod:`.layer_norm`  layer_norm (2-D, last axis)
==================  ====================================================
"""
from .conv2d import conv2d, conv2d_nchw, conv2d_nhwc, pad_nchw  # noqa: F401
from .dense import batch_matmul, dense, matmul  # noqa: F401
from .elemwise import bias_relu, leaky_relu, prelu, relu, scale_bias_relu_add  # noqa: F401
from .layer_norm import layer_norm  # noqa: F401
from .pad import pad  # noqa: F401
from .pooling import global_pool, pool1d, pool2d, pool3d  # noqa: F401
from .softmax import log_softmax, softmax  # noqa: F401
from .utils import get_pad_tuple  # noqa: F401
