"""The ONNX importer: an ONNX model to a graph :class:`~tecc.graph.ir.Module` and
its parameters (TVM's ``relay.frontend.from_onnx``).

How a model is read
-------------------
* Inputs become :class:`~tecc.graph.ir.Var` s of static shapes.  A dimension the
  model leaves symbolic (torch's ``dynamic_axes``) must be bound by ``shape``; one
  that is not is refused, naming the input and the dimension.
* Initializers become :class:`~tecc.graph.ir.Constant` s (``freeze_params=True``)
  or parameters of ``main`` listed in the returned ``params`` dict
  (``freeze_params=False``; integer and boolean initializers -- shapes, axes,
  indices -- stay constants either way: they are not weights).
* Each node converts through one table from ONNX op type to a converter function
  (:data:`.converters._CONVERTERS`); each converter handles the differences between opsets
  (axes as an attribute or an input, Softmax's axis semantics before opset 13...).
* Shape subgraphs (``Shape -> Gather -> Concat -> Reshape``...) are evaluated
  while importing: ``Shape`` is read from the inferred static types, and an
  operator all of whose operands are constants is computed with numpy
  (:data:`.importer._FOLDERS`).  Nothing computed from the model's inputs is evaluated.
* An operator without a converter that ONNX defines as a function of other
  operators (Attention, SwiGLU...) is replaced by that function's nodes first
  (:mod:`.expand`; :func:`function_ops` lists them).
* Every unsupported operator of a model -- in its subgraphs too -- is reported in
  one error, with node names and op types, before anything is converted.
* Control flow is resolved while importing (:mod:`.convert_control`): an If keeps
  the branch of a condition known when compiling or selects both branches'
  outputs with ``where``; Loop and Scan unroll, each iteration converting the
  body again in a scope of its own (:meth:`.importer._Importer.subgraph`).
* Sequences and optionals are values of the importer, not of the graph
  (:mod:`.convert_sequence`): a sequence is a tuple of the graph's tensors; a
  graph input or output of sequence type is one tensor each (``name[i]``; main's
  ``onnx_outputs`` attribute tells how the model's outputs are made of main's).

The converters emit the graph operators by Relay's names and attributes
(``nn.conv2d``, ``nn.dense``, ``reshape``...): see :func:`tecc.graph.list_ops`.

Where things are
----------------
* :mod:`.importer`: loading the file, the importer, :func:`from_onnx`;
* :mod:`.converters`: the table of every supported op type;
* ``convert_*``: the converters, one module per family (element-wise, nn, shape,
  data movement, resize, recurrent, control flow, sequences, the rest in ``misc``);
* :mod:`.opsets`: which opset a model is read with; :mod:`.expand`: operators
  imported through their ONNX function body;
* :mod:`.common`: the error, the opsets, :class:`~.common.OnnxNode`.
"""
from .common import MAX_OPSET, MIN_OPSET, OnnxImportError
from .importer import from_onnx, function_ops, supported_ops

__all__ = ["MAX_OPSET", "MIN_OPSET", "OnnxImportError", "from_onnx", "function_ops", "supported_ops"]
