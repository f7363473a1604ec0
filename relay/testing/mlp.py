"""A multilayer perceptron: the flattened image through fully connected layers of
128 and 64 units with relu, one of ``num_classes`` units and a softmax.
Parameters: ``fc1_weight``, ``fc1_bias`` ... ``fc3_bias``.
"""
from __future__ import annotations

from ...graph.ir import Function, TensorType, Var, free_vars
from .. import nn
from . import layers
from .init import create_workload

#: units of the hidden layers
HIDDEN = (128, 64)


def get_net(batch_size, num_classes=10, image_shape=(1, 28, 28), dtype="float32"):
    """The MLP as a graph Function.

    Parameters
    ----------
    batch_size : int
    num_classes : int
    image_shape : tuple of int
        One input, flattened by the network.
    dtype : str

    Returns
    -------
    tecc.graph.Function
    """
    data_shape = layers.input_shape("mlp", batch_size, image_shape, num_classes)
    body = nn.batch_flatten(Var("data", TensorType(data_shape, dtype)))
    for k, units in enumerate(HIDDEN, 1):
        body = nn.relu(layers.dense_add_bias(body, units=units, name=f"fc{k}"))
    body = layers.dense_add_bias(body, units=num_classes, name=f"fc{len(HIDDEN) + 1}")
    body = nn.softmax(body)
    return Function(free_vars(body), body)


def get_workload(batch_size, num_classes=10, image_shape=(1, 28, 28), dtype="float32"):
    """The MLP and its initial parameters (TVM's ``relay.testing.mlp.get_workload``).

    Parameters
    ----------
    batch_size : int
    num_classes : int
    image_shape : tuple of int
    dtype : str

    Returns
    -------
    mod : tecc.graph.Module
    params : dict of str to tecc.nd.NDArray
    """
    return create_workload(get_net(batch_size, num_classes, image_shape, dtype))
