"""The operator definitions: importing this package registers every operator of
the graph IR (:mod:`tecc.graph.op`).  One module per family:

==================  ==============================================================
module              operators
==================  ==============================================================
:mod:`.tensor`      element-wise math and broadcasting arithmetic, comparisons, clip
:mod:`.nn`          ``nn.*``: convolutions, dense / matmul, normalizations,
                    activations with parameters, softmax, pooling, pad, dropout,
                    depth_to_space / space_to_depth
:mod:`.transform`   reshape, transpose, concatenate, split, strided_slice, take,
                    gather, squeeze, expand_dims, broadcast_to, tile, cast, where,
                    full / zeros / ones, arange, shape_of, reverse, one_hot,
                    trilu, einsum
:mod:`.reduce`      sum, mean, max, min, prod, all, any, argmax, argmin
:mod:`.algorithm`   topk, cumsum, cumprod, scatter_elements, scatter_nd, det (extern
                    kernels: opaque)
:mod:`.image`       ``image.resize2d``
:mod:`.vision`      ``vision.roi_align`` (ONNX's RoiAlign), ``vision.non_max_suppression``
:mod:`.deformable`  ``nn.deformable_conv2d`` (ONNX's DeformConv)
:mod:`.random`      ``random.uniform``, ``random.normal``, ``random.multinomial`` (counter-based)
:mod:`.tree`        ``tree_traverse`` (decision-tree ensembles as node tables)
==================  ==============================================================

Conventions of ``lower(inputs, attrs, out_type)``: ``inputs`` holds one TE tensor
per operand, except that an operand which is a :class:`~tecc.graph.ir.Tuple`
(``concatenate``, ``einsum``) is a list of TE tensors; an operator whose type is a
:class:`~tecc.graph.ir.TupleType` (``split``, ``nn.batch_norm``, ``nn.dropout``)
returns a list of TE tensors, one per field.  A symbolic dimension of the result
(a ``str`` in ``out_type``) is the TE variable of that name in an operand's shape.
"""
from . import algorithm, image, nn, reduce, tensor, transform  # noqa: F401
from . import vision  # noqa: F401
from . import deformable  # noqa: F401
from . import random  # noqa: F401
from . import tree  # noqa: F401
