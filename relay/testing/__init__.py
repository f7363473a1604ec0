"""Test networks with initial parameters (TVM's ``relay.testing``)::

    from tecc import relay
    mod, params = relay.testing.resnet.get_workload(num_layers=18, batch_size=1)
    with tecc.transform.PassContext(opt_level=3):
        lib = relay.build(mod, "llvm", params=params)

Each network module -- :mod:`.resnet`, :mod:`.mobilenet`, :mod:`.vgg`,
:mod:`.squeezenet`, :mod:`.inception_v3`, :mod:`.mlp` -- has TVM's
``get_workload(...)``, which returns ``(mod, params)``: a type-inferred
:class:`tecc.graph.Module` whose ``main`` takes the input ``data`` and every
parameter, and a value for each parameter (:func:`create_workload`, the
initializers of :mod:`.init`).  ``get_net(...)`` gives the network alone.  The
layers they are made of are in :mod:`.layers`.

Importing this package costs what ``import tecc.relay`` does (numpy and the graph
IR); type inference and the passes load when a network is built.
"""
from . import init, layers  # noqa: F401
from . import inception_v3, mlp, mobilenet, resnet, squeezenet, vgg  # noqa: F401
from .init import create_workload  # noqa: F401

__all__ = ["create_workload", "inception_v3", "init", "layers", "mlp", "mobilenet", "resnet", "squeezenet", "vgg"]
