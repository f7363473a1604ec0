"""``tecc bench --ops``: tecc's kernels against the libraries users compare with.

For each operator and size, every variant is built, checked against a float64
reference and timed in the same run:

* on a GPU (``--device cuda``): tecc's hand-written schedules (``topi.cuda.sgemm``,
  ``softmax_rows``, ``layernorm_rows``), topi's default CUDA schedules, and the tuned
  configs of ``--records`` (``sgemm.cuda``, ``conv2d_nchw.cuda``) against cuBLAS
  (``cupy.matmul``), CuPy array operations, and torch (cuBLAS/cuDNN, TF32 off) where
  installed; timed with CUDA events (the stream held until a sample is enqueued:
  :mod:`tecc.runtime.timing`);
* on the CPU (``--device cpu``): topi's default x86 schedules and the tuned configs of
  ``--records`` (``matmul.x86``, ``conv2d_nchw.x86``) against numpy (OpenBLAS) and
  onnxruntime where installed; timed with the wall clock;
* ``--dry-run``: the CUDA variants built for ``sm_90`` and checked on tecc's CPU
  emulation of CUDA semantics at small sizes, nothing timed.

The report (:class:`BenchReport`) is a table with GFLOP/s or GB/s, the ratio to the
best reference and the share of the device's peak; a JSON file with every figure and
the device facts (device, driver, clocks, date: :mod:`.devicefacts`); and a roofline
(PNG) whose compute ceiling comes from the device facts and whose bandwidth ceiling is
a device-to-device (or host) copy measured in the same run.
"""
from __future__ import annotations

import dataclasses
import json
import math
import re
import time

import numpy as np

from ..errors import TeccError
from . import devicefacts

#: the operators, and the unit each is judged in
OPS = {"matmul": "GFLOP/s", "conv2d": "GFLOP/s", "softmax": "GB/s", "layernorm": "GB/s"}
DTYPES = ("float32", "float16")
#: sizes when ``--sizes`` names none for an operator
DEFAULT_SIZES = {
    "cuda": {"matmul": ["1024", "2048", "4096"],
             "conv2d": ["64x56x56-64x3", "128x28x28-128x3", "256x14x14-256x3", "64x56x56-256x1"],
             "softmax": ["4096x4096", "16384x1024"], "layernorm": ["4096x4096", "16384x1024"]},
    "cpu": {"matmul": ["256", "512", "1024"], "conv2d": ["64x56x56-64x3", "256x14x14-256x3"],
            "softmax": ["128x4096", "1024x1024"], "layernorm": ["512x768", "1024x1024"]},
    "dry": {"matmul": ["128"], "conv2d": ["8x10x10-8x3"], "softmax": ["4x256"], "layernorm": ["4x256"]},
}
#: relative error a variant may have against the float64 reference
TOLERANCE = {"float32": 1e-4, "float16": 2e-2}
EPS = 1e-5
#: seconds the CPU is left idle before each variant is timed (see :func:`_measure`)
CPU_SETTLE_S = 0.3


class BenchError(TeccError, ValueError):
    """A ``tecc bench --ops`` request that cannot be run (an unknown op, a bad size)."""


# ---------------------------------------------------------------------------------------
# workloads
# ---------------------------------------------------------------------------------------
@dataclasses.dataclass
class Workload:
    """One operator at one size: its parameters, floating-point operations and the
    fewest bytes it must move (inputs read once, the output written once)."""

    op: str
    size: str
    p: dict
    dtype: str

    @property
    def itemsize(self) -> int:
        return np.dtype(self.dtype).itemsize

    @property
    def flops(self) -> float:
        p = self.p
        if self.op == "matmul":
            return 2.0 * p["m"] * p["n"] * p["k"]
        if self.op == "conv2d":
            return 2.0 * p["k"] * p["ho"] * p["wo"] * p["c"] * p["r"] * p["r"]
        return (5.0 if self.op == "softmax" else 8.0) * p["rows"] * p["cols"]  # per element: the arithmetic

    @property
    def bytes(self) -> int:
        p, b = self.p, self.itemsize
        if self.op == "matmul":
            return b * (p["m"] * p["k"] + p["k"] * p["n"] + p["m"] * p["n"])
        if self.op == "conv2d":
            return b * (p["c"] * p["h"] * p["w"] + p["k"] * p["c"] * p["r"] ** 2 + p["k"] * p["ho"] * p["wo"])
        return b * (2 * p["rows"] * p["cols"] + (2 * p["cols"] if self.op == "layernorm" else 0))

    @property
    def memory_bound(self) -> bool:
        return OPS[self.op] == "GB/s"


_MATMUL = re.compile(r"^(\d+)(?:x(\d+)x(\d+))?$")
_ROWS = re.compile(r"^(\d+)x(\d+)$")
_CONV = re.compile(r"^(\d+)x(\d+)x(\d+)-(\d+)x(\d+)(?:-s(\d+))?$")


def parse_size(op: str, token: str) -> dict:
    """The parameters of ``op`` at the size ``token``: matmul ``N`` or ``MxNxK``;
    softmax and layernorm ``ROWSxCOLS``; conv2d ``CxHxW-KxR[-sS]`` (batch 1, C input
    and K output channels, an R x R kernel padded to keep the size at stride 1)."""
    t = token.strip()
    if op == "matmul":
        m = _MATMUL.match(t)
        if m:
            if m.group(2) is None:
                n = int(m.group(1))
                return {"m": n, "n": n, "k": n}
            return {"m": int(m.group(1)), "n": int(m.group(2)), "k": int(m.group(3))}
        raise BenchError(f"matmul size {token!r}: write N (square) or MxNxK, e.g. 1024 or 512x1024x256")
    if op in ("softmax", "layernorm"):
        m = _ROWS.match(t)
        if m:
            return {"rows": int(m.group(1)), "cols": int(m.group(2))}
        raise BenchError(f"{op} size {token!r}: write ROWSxCOLS, e.g. 4096x4096")
    if op == "conv2d":
        m = _CONV.match(t)
        if m:
            c, h, w, k, r = (int(m.group(i)) for i in range(1, 6))
            stride = int(m.group(6) or 1)
            pad = r // 2
            ho, wo = (h + 2 * pad - r) // stride + 1, (w + 2 * pad - r) // stride + 1
            return {"c": c, "h": h, "w": w, "k": k, "r": r, "stride": stride, "pad": pad, "ho": ho, "wo": wo}
        raise BenchError(f"conv2d size {token!r}: write CxHxW-KxR[-sS], e.g. 64x56x56-64x3 or 128x28x28-256x1-s2")
    raise BenchError(f"unknown op {op!r}; the ops are {', '.join(OPS)}")


def workloads(ops, sizes, kind: str, dtype: str) -> list:
    """The workloads of ``ops`` (names) at ``sizes`` (tokens, each ``op:size`` or a
    plain size given to every op it parses for; the defaults of ``kind`` for an op
    that none names)."""
    chosen = {}
    for token in sizes or ():
        if ":" in token:
            op, size = token.split(":", 1)
            if op not in ops:
                raise BenchError(f"--sizes {token!r} names {op!r}, which --ops does not include ({', '.join(ops)})")
            parse_size(op, size)
            chosen.setdefault(op, []).append(size)
            continue
        fits = []
        for op in ops:
            try:
                parse_size(op, token)
            except BenchError:
                continue
            fits.append(op)
            chosen.setdefault(op, []).append(token)
        if not fits:
            raise BenchError(f"--sizes {token!r} is a size of none of {', '.join(ops)}: "
                             + "; ".join(str(_example(op)) for op in ops))
    return [Workload(op, size, parse_size(op, size), dtype)
            for op in ops for size in chosen.get(op, DEFAULT_SIZES[kind][op])]


def _example(op) -> str:
    try:
        parse_size(op, "?")
    except BenchError as err:
        return str(err).split(": ", 1)[1]
    return ""


# ---------------------------------------------------------------------------------------
# variants
# ---------------------------------------------------------------------------------------
@dataclasses.dataclass
class Row:
    """One variant of one workload, as measured."""

    op: str
    size: str
    variant: str
    kind: str  # "tecc" or "reference"
    flops: float
    bytes: int
    status: str = "ok"  # "ok", "FAILED" (wrong answer), "skipped"
    rel_error: float | None = None
    ms: float | None = None
    detail: str = ""

    @property
    def gflops(self):
        return None if not self.ms else self.flops / (self.ms * 1e6)

    @property
    def gbps(self):
        return None if not self.ms else self.bytes / (self.ms * 1e6)

    @property
    def intensity(self) -> float:
        return self.flops / max(self.bytes, 1)


class _Arrays:
    """Random inputs and the float64 reference of a workload, as numpy and (on a GPU)
    as cupy arrays."""

    def __init__(self, w: Workload, xp, seed=0):
        rng = np.random.default_rng(seed)
        p, dt = w.p, w.dtype

        def rand(*shape):
            return rng.standard_normal(shape).astype(dt)

        if w.op == "matmul":
            host = [rand(p["m"], p["k"]), rand(p["k"], p["n"])]
            ref = host[0].astype("float64") @ host[1].astype("float64")
        elif w.op == "conv2d":
            host = [rand(1, p["c"], p["h"], p["w"]), rand(p["k"], p["c"], p["r"], p["r"])]
            ref = conv2d_im2col(np, host[0].astype("float64"), host[1].astype("float64"), p["stride"], p["pad"])
        elif w.op == "softmax":
            host = [rand(p["rows"], p["cols"])]
            ref = softmax_ref(np, host[0].astype("float64"))
        else:
            host = [rand(p["rows"], p["cols"]), rand(p["cols"]), rand(p["cols"])]
            ref = layer_norm_ref(np, *(a.astype("float64") for a in host))
        self.host, self.ref, self.xp = host, ref, xp
        self.dev = [xp.asarray(a) for a in host]
        self.out_shape = ref.shape

    def output(self, dtype):
        """A fresh output filled with NaN: an element nothing writes fails the check."""
        return self.xp.full(self.out_shape, np.nan, dtype=dtype)

    def error(self, out) -> float:
        if hasattr(out, "__dlpack__") and not isinstance(out, np.ndarray) and not hasattr(out, "get"):
            out = self.xp.from_dlpack(out)  # a torch tensor on the device: cupy views it without a copy
        got = out.get() if hasattr(out, "get") else np.asarray(out)
        got = got.astype("float64")
        if got.shape != self.ref.shape or not np.isfinite(got).all():
            return math.inf
        return float(np.linalg.norm(got - self.ref) / max(np.linalg.norm(self.ref), 1e-30))


# references with array operations (cupy on a GPU, numpy on the CPU); the benchmarks
# in benchmarks/ use them too
def windows(xp, x, r, stride, pad, fill):
    """The ``r*r`` strided views of NCHW ``x`` padded with ``fill``: window offset
    ``(dy, dx)`` -> ``x_pad[:, :, dy::stride, dx::stride]`` cut to the output size."""
    oh = (x.shape[2] + 2 * pad - r) // stride + 1
    ow = (x.shape[3] + 2 * pad - r) // stride + 1
    if pad:
        x = xp.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)), mode="constant", constant_values=fill)
    return [x[:, :, dy:dy + stride * (oh - 1) + 1:stride, dx:dx + stride * (ow - 1) + 1:stride]
            for dy in range(r) for dx in range(r)]


def conv2d_im2col(xp, x, w, stride, pad):
    """conv2d NCHW (OIHW weights) as im2col (one strided copy per window offset) + one
    matmul."""
    n, c = x.shape[:2]
    k, r = w.shape[0], w.shape[2]
    oh = (x.shape[2] + 2 * pad - r) // stride + 1
    ow = (x.shape[3] + 2 * pad - r) // stride + 1
    if r == 1 and stride == 1 and pad == 0:
        cols = x.reshape(n, c, oh * ow)  # a 1x1 convolution needs no copy
    else:
        cols = xp.stack(windows(xp, x, r, stride, pad, 0.0), axis=2).reshape(n, c * r * r, oh * ow)
    return xp.matmul(w.reshape(k, c * r * r), cols).reshape(n, k, oh, ow)


def softmax_ref(xp, x):
    """Row softmax with array operations (a max, a subtract+exp, a sum, a divide)."""
    e = xp.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def layer_norm_ref(xp, x, gamma, beta, eps=EPS):
    """Row layernorm with array operations (mean, variance, normalize, scale, shift)."""
    mean = x.mean(axis=-1, keepdims=True)
    var = x.var(axis=-1, keepdims=True)
    return (x - mean) / xp.sqrt(var + eps) * gamma + beta


def _tecc_variants(w: Workload, target: str, on_gpu: bool, records) -> list:
    """``(name, build)`` of tecc's variants of ``w``: ``build()`` returns ``(module,
    detail)`` or raises (the row then says why it was skipped)."""
    import tecc  # noqa: PLC0415
    from tecc import autotvm, te, topi  # noqa: PLC0415

    p, dt = w.p, w.dtype
    out = []

    def build(make, apply_records=False, workload=None):
        def run():
            if not apply_records:
                with tecc.target.Target(target):
                    s, args, detail = make()
                    return tecc.build(s, args, target=target), detail
            from tecc.tuner.task.topi_integration import get_workload  # noqa: PLC0415

            ctx = autotvm.apply_history_best(records)
            with tecc.target.Target(target) as tgt, ctx:
                s, args, detail = make()
                wl = workload or get_workload([args[-1]])
                if wl is None or not ctx.has_record(tgt, wl):
                    raise BenchError(f"{records} holds no record of this workload "
                                     f"({wl[0] if wl else 'no tunable task'}): nothing tuned to show")
                return tecc.build(s, args, target=target), detail
        return run

    def topi_default(compute, tag="topi default"):
        def make():
            phs, res = compute()
            return topi.schedule([res], target), phs + [res], tag
        return make

    if w.op == "matmul":
        A = lambda: te.placeholder((p["m"], p["k"]), name="A", dtype=dt)  # noqa: E731
        B = lambda: te.placeholder((p["k"], p["n"]), name="B", dtype=dt)  # noqa: E731
        if on_gpu:
            from tecc.topi.cuda import gemm  # noqa: PLC0415

            def hand():
                for blk, tt, kt, db, km in ((128, 4, 16, 1, 1), (64, 4, 8, 1, 1), (64, 4, 8, 0, 0), (32, 2, 8, 0, 0)):
                    if not gemm.sgemm_config_errors(p["m"], p["n"], p["k"], blk, tt, kt, db):
                        s, args = gemm.sgemm(p["m"], p["n"], p["k"], block=blk, thread_tile=tt, k_tile=kt,
                                             dtype=dt, double_buffer=bool(db), a_kmajor=bool(km))
                        return s, args, f"block={blk} thread_tile={tt} k_tile={kt}" + ("+d" if db else "") + (
                            "+t" if km else "")
                raise BenchError("no sgemm config fits these sizes (blocks of 32/64/128 must divide M and N)")
            out.append(("tecc sgemm (hand)", build(hand)))
            out.append(("tecc topi", build(topi_default(lambda: _two(A(), B(), topi.nn.matmul)))))
            if dt == "float16":
                def tensor_cores():
                    a, b = A(), B()
                    # dense's weight is [N, K]: B's transpose, which the shared loads compute
                    product = topi.cuda.dense(a, topi.transpose(b, (1, 0)), out_dtype="float32")
                    if product.op.attrs.get("workload", ("",))[0] != "dense_tensorcore.cuda":
                        raise BenchError("no wmma fragment shape tiles these sizes: no tensor cores")
                    res = topi.cast(product, dt)
                    return topi.cuda.schedule_dense([res]), [a, b, res], "dense_tensorcore.cuda, fallback config"
                out.append(("tecc tensor cores", build(tensor_cores)))
            if records:
                def tuned():
                    s, args = gemm.sgemm_template(p["m"], p["n"], p["k"], dt)
                    return s, args, "sgemm.cuda, best record"
                out.append(("tecc tuned", build(tuned, apply_records=True,
                                                workload=("sgemm.cuda", p["m"], p["n"], p["k"], dt))))
        else:
            out.append(("tecc topi", build(topi_default(lambda: _two(A(), B(), topi.x86.matmul_default)))))
            if records:
                out.append(("tecc tuned", build(topi_default(lambda: _two(A(), B(), topi.x86.matmul_default),
                                                             "matmul.x86, best record"), apply_records=True)))
    elif w.op == "conv2d":
        def conv(fn):
            def compute():
                data = te.placeholder((1, p["c"], p["h"], p["w"]), name="data", dtype=dt)
                kernel = te.placeholder((p["k"], p["c"], p["r"], p["r"]), name="kernel", dtype=dt)
                return [data, kernel], fn(data, kernel, p["stride"], p["pad"], 1, dt)
            return compute
        fn = topi.cuda.conv2d_nchw if on_gpu else topi.x86.conv2d_nchw
        out.append(("tecc topi", build(topi_default(conv(fn)))))
        if records:
            name = "conv2d_nchw.cuda" if on_gpu else "conv2d_nchw.x86"
            out.append(("tecc tuned", build(topi_default(conv(fn), f"{name}, best record"), apply_records=True)))
    elif w.op == "softmax":
        if on_gpu:
            from tecc.topi import cuda as K  # noqa: PLC0415

            def hand():
                threads = _row_threads(p["cols"])
                s, args = K.softmax_rows(p["rows"], p["cols"], num_thread=threads, dtype=dt)
                return s, args, f"{threads} threads"
            out.append(("tecc softmax_rows (hand)", build(hand)))

        def sm():
            X = te.placeholder((p["rows"], p["cols"]), name="X", dtype=dt)
            return [X], topi.nn.softmax(X, axis=-1)
        out.append(("tecc topi", build(topi_default(sm))))
    else:
        if on_gpu:
            from tecc.topi import cuda as K  # noqa: PLC0415

            def hand():
                threads = _row_threads(p["cols"])
                s, args = K.layernorm_rows(p["rows"], p["cols"], num_thread=threads, eps=EPS, dtype=dt)
                return s, args, f"{threads} threads"
            out.append(("tecc layernorm_rows (hand)", build(hand)))

        def ln():
            X = te.placeholder((p["rows"], p["cols"]), name="X", dtype=dt)
            G = te.placeholder((p["cols"],), name="gamma", dtype=dt)
            Bt = te.placeholder((p["cols"],), name="beta", dtype=dt)
            return [X, G, Bt], topi.nn.layer_norm(X, G, Bt, axis=[-1], epsilon=EPS)
        out.append(("tecc topi", build(topi_default(ln))))
    return out


def _row_threads(cols: int) -> int:
    """Threads per row of the hand-written row kernels: about 16 elements each, a
    power of two from 32 to 1024 (gpu_norms.py's best on the H100: 256 at 4096
    columns, 1024 at 65536)."""
    return min(1024, max(32, 1 << (max(cols // 16, 1).bit_length() - 1)))


def _two(a, b, fn):
    return [a, b], fn(a, b)


def _reference_variants(w: Workload, arrays: _Arrays, on_gpu: bool, torch) -> list:
    """``(name, fn)`` of the references of ``w``: ``fn()`` returns the output."""
    xp, p = arrays.xp, w.p
    ins = arrays.dev
    out = []
    if w.op == "matmul":
        c = xp.empty(arrays.out_shape, dtype=w.dtype)
        out.append(("cuBLAS (cupy.matmul)" if on_gpu else "numpy (OpenBLAS)", lambda: xp.matmul(*ins, out=c)))
    elif w.op == "conv2d":
        out.append(("cupy im2col + cuBLAS" if on_gpu else "numpy im2col + OpenBLAS",
                    lambda: conv2d_im2col(xp, ins[0], ins[1], p["stride"], p["pad"])))
    elif w.op == "softmax":
        out.append(("cupy ops" if on_gpu else "numpy ops", lambda: softmax_ref(xp, ins[0])))
    else:
        out.append(("cupy ops" if on_gpu else "numpy ops", lambda: layer_norm_ref(xp, *ins)))
    if on_gpu and torch is not None:
        F = torch.nn.functional
        ts = [torch.from_dlpack(a) for a in ins]
        calls = {"matmul": lambda: torch.matmul(ts[0], ts[1]),
                 "conv2d": lambda: F.conv2d(ts[0], ts[1], stride=p["stride"], padding=p["pad"]),
                 "softmax": lambda: torch.softmax(ts[0], dim=-1),
                 "layernorm": lambda: F.layer_norm(ts[0], (p["cols"],), ts[1], ts[2], EPS)}
        lib = {"matmul": "cuBLAS", "conv2d": "cuDNN"}.get(w.op)
        out.append((f"torch {torch.__version__}" + (f" ({lib})" if lib else ""), calls[w.op]))
    if not on_gpu:
        ort = _onnxruntime_fn(w, arrays.host)
        if ort is not None:
            out.append(ort)
    return out


def ort_quiet_options(ort):
    """onnxruntime session options whose idle threads sleep: by default they spin
    between runs and steal the cores from whatever tecc times next (seen making tecc
    look 1.7x slower in an interleaved comparison)."""
    options = ort.SessionOptions()
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    options.add_session_config_entry("session.inter_op.allow_spinning", "0")
    return options


def _onnxruntime_fn(w: Workload, host):
    try:
        import onnxruntime as ort  # noqa: PLC0415
        from onnx import TensorProto, helper  # noqa: PLC0415
    except ImportError:
        return None
    p = w.p
    elem = TensorProto.FLOAT if w.dtype == "float32" else TensorProto.FLOAT16
    names = ["A", "B", "C"][:len(host)]
    inputs = [helper.make_tensor_value_info(n, elem, list(a.shape)) for n, a in zip(names, host)]
    if w.op == "matmul":
        node = helper.make_node("MatMul", names, ["Y"])
    elif w.op == "conv2d":
        node = helper.make_node("Conv", names, ["Y"], pads=[p["pad"]] * 4, strides=[p["stride"]] * 2)
    elif w.op == "softmax":
        node = helper.make_node("Softmax", names, ["Y"], axis=-1)
    else:
        node = helper.make_node("LayerNormalization", names, ["Y"], axis=-1, epsilon=EPS)
    graph = helper.make_graph([node], "bench", inputs, [helper.make_tensor_value_info("Y", elem, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = min(model.ir_version, 8)
    try:
        session = ort.InferenceSession(model.SerializeToString(), sess_options=ort_quiet_options(ort),
                                       providers=["CPUExecutionProvider"])
    except Exception:  # noqa: BLE001 -- an onnxruntime without this op/dtype: no such reference
        return None
    feed = dict(zip(names, host))
    return f"onnxruntime {ort.__version__}", lambda: session.run(None, feed)[0]


# ---------------------------------------------------------------------------------------
# the run
# ---------------------------------------------------------------------------------------
@dataclasses.dataclass
class BenchOptions:
    ops: tuple = tuple(OPS)
    sizes: tuple = ()
    dtype: str = "float32"
    device: str = "cpu"  # "cpu" or "cuda"
    dry_run: bool = False
    records: str | None = None
    repeat: int = 10
    min_repeat_ms: float = 20.0
    target: str | None = None


def run(opts: BenchOptions, log=print) -> "BenchReport":
    """Build, check and time every variant of every workload (see the module's text)."""
    for op in opts.ops:
        if op not in OPS:
            raise BenchError(f"unknown op {op!r} in --ops; the ops are {', '.join(OPS)}")
    if opts.dtype not in DTYPES:
        raise BenchError(f"--dtype {opts.dtype!r}: tecc bench measures {' or '.join(DTYPES)}")
    if opts.device not in ("cpu", "cuda"):
        raise BenchError(f"--device {opts.device!r}: use cpu or cuda")
    on_gpu = opts.device == "cuda"
    if on_gpu and not opts.dry_run and not devicefacts.has_gpu():
        raise BenchError("--device cuda: there is no CUDA GPU here; use --device cpu, or --dry-run to build the "
                         "CUDA kernels and check them on tecc's CPU emulation (nothing is timed)")
    kind = "dry" if opts.dry_run else ("cuda" if on_gpu else "cpu")
    # the CPU kernels use the host's vector extensions, as numpy's OpenBLAS does
    target = opts.target or ("cuda -arch=sm_90" if opts.dry_run else "cuda" if on_gpu else "llvm -mcpu=native")
    works = workloads(opts.ops, opts.sizes, kind, opts.dtype)
    real_gpu = on_gpu and not opts.dry_run
    if real_gpu:
        import cupy as xp  # noqa: PLC0415
    else:
        xp = np
    torch = _torch_fp32() if real_gpu else None
    facts = devicefacts.device_facts(not real_gpu, target)
    facts["dry_run"] = opts.dry_run  # (device_facts says "no GPU used"; here: nothing timed)
    if not on_gpu:
        facts["cpu"] = devicefacts.cpu_facts()
    peaks = devicefacts.gpu_peaks(facts) if real_gpu else devicefacts.cpu_peaks(facts.get("cpu") or {})
    report = BenchReport(facts=facts, options=dataclasses.asdict(opts), peaks=peaks)
    if not opts.dry_run:
        report.copy_gbps = _copy_bandwidth(xp, real_gpu, opts)
    for w in works:
        log(f"{w.op} {w.size} ({w.dtype})")
        arrays = _Arrays(w, xp)
        tol = TOLERANCE[w.dtype]
        for name, build in _tecc_variants(w, target, on_gpu, opts.records):
            row = Row(w.op, w.size, name, "tecc", w.flops, w.bytes)
            try:
                mod, row.detail = build()
            except Exception as err:  # noqa: BLE001 -- a variant that does not build is reported, not fatal
                row.status, row.detail = "skipped", _first_line(err)
                report.rows.append(row)
                continue
            args = list(arrays.dev) + [arrays.output(w.dtype)]
            _measure(row, lambda m=mod, a=args: m(*a), lambda a=args: a[-1], arrays, tol, real_gpu, opts)
            report.rows.append(row)
        for name, fn in _reference_variants(w, arrays, on_gpu and not opts.dry_run, torch):
            row = Row(w.op, w.size, name, "reference", w.flops, w.bytes)
            holder = {}

            def call(f=fn, h=holder):
                h["out"] = f()
            _measure(row, call, lambda h=holder: h["out"], arrays, tol, real_gpu, opts)
            report.rows.append(row)
    return report


def _first_line(err) -> str:
    text = str(err).strip().splitlines()
    return f"{type(err).__name__}: {text[0] if text else ''}"


def _measure(row, call, result, arrays, tol, real_gpu, opts):
    from ..runtime import timing  # noqa: PLC0415

    try:
        call()
        if real_gpu:
            import cupy  # noqa: PLC0415
            cupy.cuda.Device().synchronize()
        row.rel_error = arrays.error(result())
    except Exception as err:  # noqa: BLE001 -- a variant that fails to run is reported
        row.status, row.detail = "skipped", _first_line(err)
        return
    if not row.rel_error <= tol:
        row.status = "FAILED"
        row.detail = (row.detail + "; " if row.detail else "") + f"relative error {row.rel_error:.3g} > {tol:g}"
        return
    if opts.dry_run:
        return
    if not real_gpu:
        # the libraries timed before (OpenBLAS, onnxruntime) keep their threads spinning for
        # a while after a call: they would steal the cores from an OpenMP kernel timed next
        time.sleep(CPU_SETTLE_S)
    runner = timing.cuda_events(call) if real_gpu else timing.wall_clock(call)
    samples = timing.sample(runner, 1, opts.repeat, opts.min_repeat_ms)
    row.ms = float(np.median(samples)) * 1e3


def _torch_fp32():
    torch = devicefacts.optional_torch()
    if torch is None or not torch.cuda.is_available():
        return None
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cudnn.benchmark = True
    return torch


def _copy_bandwidth(xp, real_gpu, opts) -> float:
    """GB/s of a large copy (bytes read + written), the roofline's memory ceiling."""
    from ..runtime import timing  # noqa: PLC0415

    n = (256 << 20) // 4 if real_gpu else (64 << 20) // 4
    src = xp.ones(n, dtype="float32")
    dst = xp.empty_like(src)

    def copy():
        xp.copyto(dst, src)
    runner = timing.cuda_events(copy) if real_gpu else timing.wall_clock(copy)
    samples = timing.sample(runner, 1, max(opts.repeat, 5), opts.min_repeat_ms)
    return 2 * src.nbytes / float(np.median(samples)) / 1e9


# ---------------------------------------------------------------------------------------
# the report
# ---------------------------------------------------------------------------------------
@dataclasses.dataclass
class BenchReport:
    facts: dict
    options: dict
    peaks: dict
    rows: list = dataclasses.field(default_factory=list)
    copy_gbps: float | None = None

    def __repr__(self) -> str:
        return f"<tecc bench report: {len(self.rows)} rows; {self.header()}>"

    COLUMNS = ("op", "size", "variant", "ok", "rel err", "ms", "GFLOP/s", "GB/s", "x ref", "% peak", "detail")

    def best_reference(self, op, size):
        refs = [r for r in self.rows if r.op == op and r.size == size and r.kind == "reference" and r.ms]
        return min(refs, key=lambda r: r.ms) if refs else None

    def ratio(self, row):
        """t(fastest reference) / t(row): above 1, the row is faster."""
        ref = self.best_reference(row.op, row.size)
        return None if ref is None or not row.ms or row.kind == "reference" else ref.ms / row.ms

    def share_of_peak(self, row):
        if not row.ms:
            return None
        if OPS[row.op] == "GB/s":
            ceiling = self.copy_gbps or self.peaks.get("memory_gbps")
            return None if not ceiling else row.gbps / ceiling
        return None if not self.peaks.get("fp32_gflops") else row.gflops / self.peaks["fp32_gflops"]

    def table(self) -> list:
        out = []
        for r in self.rows:
            share = self.share_of_peak(r)
            unit = OPS[r.op]
            out.append([r.op, r.size, r.variant, r.status, r.rel_error, r.ms,
                        r.gflops if unit == "GFLOP/s" else None, r.gbps if unit == "GB/s" else None,
                        self.ratio(r), None if share is None else 100 * share, r.detail])
        return out

    def summary(self) -> list:
        """One line per workload: the best tecc variant against the fastest reference."""
        lines = []
        seen = []
        for r in self.rows:
            if (r.op, r.size) not in seen:
                seen.append((r.op, r.size))
        for op, size in seen:
            mine = [r for r in self.rows if r.op == op and r.size == size and r.kind == "tecc" and r.ms]
            ref = self.best_reference(op, size)
            if not mine:
                checked = [r for r in self.rows if r.op == op and r.size == size and r.kind == "tecc"
                           and r.status == "ok"]
                if self.options.get("dry_run") and checked:
                    lines.append(f"{op} {size}: {len(checked)} tecc variant(s) correct on the CUDA emulation "
                                 "(dry run: nothing timed)")
                else:
                    lines.append(f"{op} {size}: no tecc variant timed")
                continue
            best = min(mine, key=lambda r: r.ms)
            rate = f"{best.gflops:.1f} GFLOP/s" if OPS[op] == "GFLOP/s" else f"{best.gbps:.1f} GB/s"
            vs = f", {ref.ms / best.ms:.2f}x {ref.variant}" if ref else ""
            share = self.share_of_peak(best)
            peak = f", {100 * share:.1f}% of peak" if share is not None else ""
            lines.append(f"{op} {size}: fastest tecc variant \"{best.variant}\" {best.ms:.4f} ms, {rate}{peak}{vs}")
        failed = [r for r in self.rows if r.status == "FAILED"]
        if failed:
            lines.append("FAILED: " + "; ".join(f"{r.op} {r.size} {r.variant} ({r.detail})" for r in failed))
        return lines

    def header(self) -> str:
        gpu = self.facts.get("gpu")
        cpu = self.facts.get("cpu")
        if gpu:
            dev = (f"{gpu.get('name')} ({gpu.get('arch')}), driver {gpu.get('driver_version')}, SM clock "
                   f"{gpu.get('sm_clock_now_mhz')}/{gpu.get('sm_clock_max_mhz')} MHz")
        elif cpu:
            dev = f"CPU {cpu.get('model')} ({cpu.get('cores')} cores)"
        else:
            dev = "DRY RUN: CUDA kernels checked on tecc's CPU emulation, nothing timed"
        peak = self.peaks.get("fp32_gflops")
        ceil = [f"FP32 peak {peak:.0f} GFLOP/s (theoretical)" if peak else None,
                f"copy {self.copy_gbps:.0f} GB/s" if self.copy_gbps else None]
        return (f"tecc bench {self.facts.get('date')}: {dev}; target {self.facts.get('target')!r}"
                + (f"; {', '.join(c for c in ceil if c)}" if any(ceil) else ""))

    def __str__(self) -> str:
        from .. import display  # noqa: PLC0415

        return "\n".join([self.header(), "", display.table_text(self.COLUMNS, self.table()), ""] + self.summary())

    def _repr_html_(self) -> str:
        from .. import display  # noqa: PLC0415

        return (display.heading_html(self.header()) + display.table_html(self.COLUMNS, self.table())
                + display.pre_html("\n".join(self.summary())))

    def to_json(self) -> dict:
        return {"facts": self.facts, "options": self.options, "peaks": self.peaks, "copy_gbps": self.copy_gbps,
                "rows": [dict(dataclasses.asdict(r), gflops=r.gflops, gbps=r.gbps, intensity=r.intensity,
                              x_ref=self.ratio(r), share_of_peak=self.share_of_peak(r)) for r in self.rows],
                "summary": self.summary()}

    def write_json(self, path) -> None:
        with open(path, "w") as f:
            json.dump(self.to_json(), f, indent=1, default=_json_default)

    def plot(self, path=None):
        """The roofline: achieved GFLOP/s of every timed row against its arithmetic
        intensity, under the compute ceiling and the measured copy bandwidth.
        Returns the matplotlib figure; writes a PNG when ``path`` is given."""
        import matplotlib  # noqa: PLC0415

        if path is not None:
            matplotlib.use("Agg", force=False)
        import matplotlib.pyplot as plt  # noqa: PLC0415

        timed = [r for r in self.rows if r.ms]
        fig, ax = plt.subplots(figsize=(8, 5.5))
        xs = [r.intensity for r in timed] or [1.0]
        lo, hi = min(xs) / 4, max(xs) * 4
        grid = np.logspace(math.log10(lo), math.log10(hi), 200)
        peak, bw = self.peaks.get("fp32_gflops"), self.copy_gbps or self.peaks.get("memory_gbps")
        if bw:
            roof = grid * bw if not peak else np.minimum(grid * bw, peak)
            ax.plot(grid, roof, "k-", lw=1.5, label=f"roofline ({bw:.0f} GB/s copy"
                    + (f", {peak:.0f} GFLOP/s FP32)" if peak else ")"))
        elif peak:
            ax.axhline(peak, color="k", lw=1.5, label=f"FP32 peak {peak:.0f} GFLOP/s")
        markers = {"tecc": "o", "reference": "x"}
        colors = dict(zip(OPS, ("tab:blue", "tab:orange", "tab:green", "tab:red")))
        for r in timed:
            ax.scatter([r.intensity], [r.gflops], marker=markers[r.kind], s=40, color=colors[r.op])
            ax.annotate(f"{r.size} {r.variant}", (r.intensity, r.gflops), fontsize=6,
                        xytext=(3, 3), textcoords="offset points")
        for op in dict.fromkeys(r.op for r in timed):
            ax.scatter([], [], color=colors[op], marker="s", label=op)
        ax.scatter([], [], color="gray", marker="o", label="tecc")
        ax.scatter([], [], color="gray", marker="x", label="reference")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("arithmetic intensity (FLOP per byte moved, each input read once)")
        ax.set_ylabel("GFLOP/s")
        import textwrap  # noqa: PLC0415

        ax.set_title("\n".join(textwrap.wrap(self.header(), 120)), fontsize=7)
        ax.grid(True, which="both", alpha=0.3)
        if ax.get_legend_handles_labels()[0]:
            ax.legend(fontsize=7, loc="lower right")
        fig.tight_layout()
        if path is not None:
            fig.savefig(path, dpi=130)
            plt.close(fig)
        return fig


def _json_default(obj):
    if isinstance(obj, (np.integer,)):
        return int(obj)
    if isinstance(obj, (np.floating,)):
        return float(obj)
    return str(obj)


__all__ = ["OPS", "BenchError", "conv2d_im2col", "layer_norm_ref", "softmax_ref", "windows", "BenchOptions", "BenchReport", "Row", "Workload", "parse_size", "run", "workloads"]
