"""Input specifications for ``export_tvm`` (Relax's ``nn.spec``)."""
from __future__ import annotations

from ....graph.ir import GraphError, TensorType


class Tensor:
    """An input of ``shape`` and ``dtype`` (``nn.spec.Tensor((1, 784), "float32")``);
    a ``str`` dimension is symbolic."""

    def __init__(self, shape, dtype="float32"):
        try:
            self.type = TensorType(shape, dtype)
        except (GraphError, TypeError) as err:
            raise GraphError(f"nn.spec.Tensor({shape!r}, {dtype!r}): {err}") from None
        self.shape = self.type.shape
        self.dtype = self.type.dtype

    def __repr__(self):
        return f"spec.Tensor({self.shape}, {self.dtype!r})"
