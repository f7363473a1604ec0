"""PyTorch eager as a reference for the model benchmarks: an ONNX graph run node by
node with torch's own operators (cuDNN convolutions, cuBLAS products), the way the
same network written as a ``torch.nn.Module`` in eval mode runs without
``torch.compile``: one call (and at least one kernel) per layer, nothing fused.

Only the operators of the benchmark models are covered (the light ResNet-50 and
SqueezeNet, the encoder and decoder layers of ``tecc.graph.testing``); any other
raises :class:`NotImplementedError` naming it, and the benchmark reports torch as not
measured for that model.  The weights are the model's initializers, moved to the
device once; shapes (Reshape targets) are read from constants, as an exported model
has them.

    runner = OnnxTorch(model, device="cuda")
    outputs = runner(feeds)            # feeds: {name: numpy array or torch tensor}
"""
from __future__ import annotations

import math

import numpy as np


def _attrs(node) -> dict:
    from onnx import helper  # noqa: PLC0415

    return {a.name: helper.get_attribute_value(a) for a in node.attribute}


class OnnxTorch:
    """An ONNX model's graph as a sequence of eager torch calls on ``device``."""

    def __init__(self, model, device: str = "cuda"):
        import torch  # noqa: PLC0415
        from onnx import numpy_helper  # noqa: PLC0415

        self.torch = torch
        self.device = torch.device(device)
        self.opset = next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), 1)
        self.nodes = list(model.graph.node)
        self.outputs = [o.name for o in model.graph.output]
        self.inputs = [i.name for i in model.graph.input]
        self.consts = {}  # name -> numpy (shapes and other values read on the host)
        self.values = {}  # name -> torch tensor on the device
        for init in model.graph.initializer:
            arr = numpy_helper.to_array(init)
            self.consts[init.name] = arr
            self.values[init.name] = torch.from_numpy(np.ascontiguousarray(arr)).to(self.device)
        unknown = sorted({n.op_type for n in self.nodes} - set(self._OPS))
        if unknown:
            raise NotImplementedError(f"the torch reference has no translation of {', '.join(unknown)}")
        # Constant nodes are values, not work: evaluate them once
        for node in self.nodes:
            if node.op_type == "Constant":
                attrs = _attrs(node)
                if "value" not in attrs:
                    raise NotImplementedError(f"Constant {node.name!r}: only the 'value' attribute is read")
                arr = numpy_helper.to_array(attrs["value"])
                self.consts[node.output[0]] = arr
                self.values[node.output[0]] = torch.from_numpy(np.ascontiguousarray(arr)).to(self.device)
        self.work = [n for n in self.nodes if n.op_type != "Constant"]
        self.node_attrs = [_attrs(n) for n in self.work]

    def __call__(self, feeds: dict) -> list:
        torch = self.torch
        env = dict(self.values)
        for name, value in feeds.items():
            env[name] = value if isinstance(value, torch.Tensor) else torch.from_numpy(value).to(self.device)
        with torch.inference_mode():
            for node, attrs in zip(self.work, self.node_attrs):
                args = [env[i] if i else None for i in node.input]
                out = self._OPS[node.op_type](self, node, attrs, args)
                if not isinstance(out, tuple):
                    out = (out,)
                for name, value in zip(node.output, out):
                    if name:
                        env[name] = value
        return [env[o] for o in self.outputs]

    # -- operators -------------------------------------------------------------------
    def _const(self, node, i):
        name = node.input[i]
        if name not in self.consts:
            raise NotImplementedError(f"{node.op_type} {node.name!r}: input {name!r} must be a constant")
        return self.consts[name]

    def _padded(self, inp, pads, fill, torch_can):
        """``(input, symmetric pads)``: ONNX's ``[begins..., ends...]`` pads applied
        with ``F.pad`` first where torch's own padding cannot take them."""
        n = len(pads) // 2
        if torch_can(pads):
            return inp, list(pads[:n])
        spec = [p for i in reversed(range(n)) for p in (pads[i], pads[i + n])]  # torch: last axis first
        return self.torch.nn.functional.pad(inp, spec, value=fill), [0] * n

    def _conv(self, node, a, x):
        w, b = x[1], (x[2] if len(x) > 2 else None)
        if a.get("auto_pad", b"NOTSET") not in (b"NOTSET", "NOTSET"):
            raise NotImplementedError(f"Conv {node.name!r}: auto_pad")
        inp, pads = self._padded(x[0], a.get("pads", [0] * (2 * (w.dim() - 2))), 0.0,
                                 lambda p: list(p[:len(p) // 2]) == list(p[len(p) // 2:]))
        return self.torch.nn.functional.conv2d(inp, w, b, stride=a.get("strides", 1), padding=pads,
                                               dilation=a.get("dilations", 1), groups=a.get("group", 1))

    def _batch_norm(self, node, a, x):
        return self.torch.nn.functional.batch_norm(x[0], x[3], x[4], x[1], x[2], False, 0.0, a.get("epsilon", 1e-5))

    def _pool(self, node, a, x, kind):
        F = self.torch.nn.functional
        k = a["kernel_shape"]
        n = len(k)
        # torch pads both sides alike and at most half a window
        inp, pads = self._padded(x[0], a.get("pads", [0] * (2 * n)), -math.inf if kind == "max" else 0.0,
                                 lambda p: list(p[:n]) == list(p[n:]) and all(q <= kk // 2 for q, kk in zip(p, k)))
        strides = a.get("strides", [1] * n)
        ceil = bool(a.get("ceil_mode", 0))
        if kind == "max":
            return F.max_pool2d(inp, k, strides, pads, ceil_mode=ceil)
        return F.avg_pool2d(inp, k, strides, pads, ceil_mode=ceil,
                            count_include_pad=bool(a.get("count_include_pad", 0)))

    def _reshape(self, node, a, x):
        shape = [int(s) for s in self._const(node, 1)]
        src = list(x[0].shape)
        shape = [src[i] if s == 0 and not a.get("allowzero", 0) else s for i, s in enumerate(shape)]
        return x[0].reshape(shape)

    def _gemm(self, node, a, x):
        A, B = x[0], x[1]
        if a.get("transA", 0):
            A = A.t()
        if not a.get("transB", 0):
            B = B.t()
        alpha, beta = a.get("alpha", 1.0), a.get("beta", 1.0)
        C = x[2] if len(x) > 2 else None
        if alpha == 1.0 and beta == 1.0 and (C is None or C.dim() == 1):
            return self.torch.nn.functional.linear(A, B, C)
        out = alpha * (A @ B.t())
        return out if C is None else out + beta * C

    def _softmax(self, node, a, x):
        t = x[0]
        if self.opset < 13:  # coerced to 2-D at the axis
            axis = a.get("axis", 1) % t.dim()
            flat = t.reshape(int(np.prod(t.shape[:axis])), -1)
            return self.torch.softmax(flat, dim=1).reshape(t.shape)
        return self.torch.softmax(t, dim=a.get("axis", -1))

    def _layer_norm(self, node, a, x):
        t = x[0]
        axis = a.get("axis", -1) % t.dim()
        return self.torch.nn.functional.layer_norm(t, t.shape[axis:], x[1], x[2] if len(x) > 2 else None,
                                                   a.get("epsilon", 1e-5))

    def _rms_norm(self, node, a, x):
        t = x[0]
        axis = a.get("axis", -1) % t.dim()
        return self.torch.nn.functional.rms_norm(t, t.shape[axis:], x[1], a.get("epsilon", 1e-5))

    def _rotary(self, node, a, x):
        torch = self.torch
        t, cos_cache, sin_cache = x[0], x[1], x[2]
        pos = x[3] if len(x) > 3 else None
        if t.dim() != 4 or a.get("num_heads", 0):
            raise NotImplementedError(f"RotaryEmbedding {node.name!r}: only 4-D (batch, heads, seq, dim) input")
        rot = a.get("rotary_embedding_dim", 0) or t.shape[-1]
        cos = cos_cache[pos] if pos is not None else cos_cache  # (batch, seq, rot/2)
        sin = sin_cache[pos] if pos is not None else sin_cache
        cos, sin = cos[..., : rot // 2].unsqueeze(1), sin[..., : rot // 2].unsqueeze(1)
        part, rest = t[..., :rot], t[..., rot:]
        if a.get("interleaved", 0):
            x1, x2 = part[..., 0::2], part[..., 1::2]
            out = torch.stack((x1 * cos - x2 * sin, x2 * cos + x1 * sin), dim=-1).flatten(-2)
        else:
            x1, x2 = part[..., : rot // 2], part[..., rot // 2:]
            out = torch.cat((x1 * cos - x2 * sin, x2 * cos + x1 * sin), dim=-1)
        return torch.cat((out, rest), dim=-1) if rest.shape[-1] else out

    def _attention(self, node, a, x):
        q, k, v = x[0], x[1], x[2]
        if len([i for i in node.input if i]) > 3 or q.dim() != 4 or len(node.output) > 1 and any(node.output[1:]):
            raise NotImplementedError(f"Attention {node.name!r}: only q, k, v of 4 dimensions and one output")
        if a.get("softcap", 0.0) or q.shape[1] != k.shape[1]:
            raise NotImplementedError(f"Attention {node.name!r}: softcap or grouped heads")
        return self.torch.nn.functional.scaled_dot_product_attention(
            q, k, v, is_causal=bool(a.get("is_causal", 0)), scale=a.get("scale", None))

    def _swish(self, node, a, x):
        alpha = a.get("alpha", 1.0)
        if alpha == 1.0:
            return self.torch.nn.functional.silu(x[0])
        return x[0] * self.torch.sigmoid(alpha * x[0])

    def _sum(self, node, a, x):
        out = x[0]
        for t in x[1:]:
            out = out + t
        return out

    _OPS = {
        "Constant": None,
        "Conv": _conv,
        "BatchNormalization": _batch_norm,
        "Relu": lambda s, n, a, x: s.torch.relu(x[0]),
        "MaxPool": lambda s, n, a, x: s._pool(n, a, x, "max"),
        "AveragePool": lambda s, n, a, x: s._pool(n, a, x, "avg"),
        "GlobalAveragePool": lambda s, n, a, x: x[0].mean(dim=tuple(range(2, x[0].dim())), keepdim=True),
        "Sum": _sum,
        "Add": lambda s, n, a, x: x[0] + x[1],
        "Mul": lambda s, n, a, x: x[0] * x[1],
        "Concat": lambda s, n, a, x: s.torch.cat(x, dim=a["axis"]),
        "Dropout": lambda s, n, a, x: x[0],
        "Reshape": _reshape,
        "Transpose": lambda s, n, a, x: x[0].permute(a.get("perm", list(reversed(range(x[0].dim()))))),
        "Gemm": _gemm,
        "MatMul": lambda s, n, a, x: x[0] @ x[1],
        "Softmax": _softmax,
        "LayerNormalization": _layer_norm,
        "RMSNormalization": _rms_norm,
        "RotaryEmbedding": _rotary,
        "Attention": _attention,
        "Swish": _swish,
    }
