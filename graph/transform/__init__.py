"""Passes over the graph IR (TVM's ``relay.transform``).

Functions mapping a :class:`tecc.graph.Module` to a module (the same object when
nothing changed): :func:`infer_type`, :func:`simplify_inference`,
:func:`fold_constant`, :func:`fold_scale_axis`, :func:`dead_code_elimination`,
:func:`eliminate_common_subexpr`, :func:`combine_parallel_dense`, :func:`alter_op_layout`, :func:`fuse_ops`,
:func:`to_mixed_precision`; and the same as pass objects of
tecc's pass engine (:mod:`.passes`): ``InferType()``, ``FoldConstant()`` ...,
``Sequential([...])``, gated by ``PassContext(opt_level=...)``.
:data:`~.passes.GRAPH_PIPELINE` is what building a model runs.
"""
from .alter_op_layout import alter_op_layout  # noqa: F401
from .combine_parallel_dense import combine_parallel_dense  # noqa: F401
from .common_subexpr import eliminate_common_subexpr  # noqa: F401
from .convert_layout import convert_layout  # noqa: F401
from .dead_code import dead_code_elimination  # noqa: F401
from .fold_constant import fold_constant  # noqa: F401
from .fold_scale_axis import fold_scale_axis  # noqa: F401
from .fuse_ops import MAX_FUSED_OPS, fuse_ops, fused_groups  # noqa: F401
from .infer_type import infer_type  # noqa: F401
from .passes import (  # noqa: F401
    GRAPH_PIPELINE, AlterOpLayout, CombineParallelDense, ConvertLayout, DeadCodeElimination, EliminateCommonSubexpr,
    FoldConstant, FoldScaleAxis, FuseOps, GraphPass, GraphPassOptions, InferType, Sequential, SimplifyInference, SinkReshape,
    ToMixedPrecision, function_pass, graph_pass_options, optimize,
)
from .mixed_precision import to_mixed_precision  # noqa: F401
from .simplify_inference import simplify_inference  # noqa: F401
from .sink_reshape import sink_reshape  # noqa: F401
