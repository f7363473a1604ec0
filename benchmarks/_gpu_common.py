"""Shared pieces of tecc's GPU benchmarks (``gpu_sgemm.py``, ``gpu_norms.py``,
``topi_gpu.py``).

- :func:`device_facts`: what the figures were measured on (GPU, SM count, clocks,
  memory, driver, CUDA runtime, NVRTC, library versions, date).
- :class:`TimingConfig`, :func:`time_tecc`, :func:`time_callable`, :func:`time_graph`:
  one timing method for tecc modules and for the cupy/torch references (CUDA events,
  warm-up, ``number`` runs per sample, ``repeat`` samples, median reported, optional
  L2 flush), plus CUDA-graph replay that takes the host's launch cost out.
- :func:`rel_error`: ``||out - ref|| / ||ref||`` (NaN or an unwritten output fails).
- :func:`write_results`: ``<date>_<GPU>_<bench>.json`` (every figure plus the device
  facts) and ``.md`` (the table), named for ``benchmarks/results/``.

Nothing here needs a GPU at import time; the timing functions need one when called.
"""
from __future__ import annotations

import dataclasses
import json
import os
import statistics

import numpy as np

import tecc
from tecc.runtime import timing

#: the target the dry run compiles for (the GPU box has Hopper GPUs)
DRY_RUN_TARGET = "cuda -arch=sm_90"


# ---------------------------------------------------------------------------------------
# device facts (tecc.driver.devicefacts: shared with `tecc bench`)
# ---------------------------------------------------------------------------------------
from tecc.driver.devicefacts import (  # noqa: E402,F401
    device_facts, facts_header, has_gpu, optional_torch, short_gpu_name,
)


# ---------------------------------------------------------------------------------------
# timing
# ---------------------------------------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class TimingConfig:
    """How every variant is timed (the same for tecc and for the references).

    ``warmup`` calls first (module load, cuBLAS handles, caches), then ``repeat``
    samples; a sample is the mean of ``number`` back-to-back runs between two CUDA
    events, ``number`` growing until a sample lasts ``min_repeat_ms``.  With
    ``flush_l2`` a buffer twice the L2 size is overwritten before each run (not timed).
    """

    number: int = 3
    repeat: int = 10
    min_repeat_ms: float = 20.0
    warmup: int = 2
    flush_l2: bool = False
    graph_calls: int = 20


@dataclasses.dataclass
class Timing:
    """Seconds per run, one entry per sample; ``method`` says how they were taken."""

    samples_s: list
    method: str

    @property
    def median_ms(self) -> float:
        return statistics.median(self.samples_s) * 1e3

    @property
    def spread(self) -> float:
        """(max - min) / median of the samples."""
        med = statistics.median(self.samples_s)
        return (max(self.samples_s) - min(self.samples_s)) / med if med > 0 else 0.0

    def to_json(self) -> dict:
        return {"method": self.method, "median_ms": self.median_ms,
                "min_ms": min(self.samples_s) * 1e3, "max_ms": max(self.samples_s) * 1e3,
                "samples_ms": [s * 1e3 for s in self.samples_s]}


def time_tecc(mod, args, cfg: TimingConfig) -> Timing:
    """Time a tecc CUDA module with its own ``time_evaluator`` (CUDA events)."""
    for _ in range(cfg.warmup):
        mod(*args)
    evaluator = mod.time_evaluator(mod.entry_name, tecc.cuda(0), number=cfg.number, repeat=cfg.repeat,
                                   min_repeat_ms=cfg.min_repeat_ms, flush_l2=cfg.flush_l2)
    return Timing(list(evaluator(*args).results), "tecc time_evaluator (CUDA events)")


def time_callable(fn, cfg: TimingConfig) -> Timing:
    """Time ``fn()`` (cupy or torch work queued on cupy's current stream) with CUDA
    events, the same way :func:`time_tecc` times a tecc module."""
    import cupy

    for _ in range(cfg.warmup + 1):  # time_evaluator adds one warm-up run of its own
        fn()
    cupy.cuda.get_current_stream().synchronize()
    run_n = timing.cuda_events(fn, cfg.flush_l2)
    return Timing(timing.sample(run_n, cfg.number, cfg.repeat, cfg.min_repeat_ms), "cupy CUDA events")


def time_graph(fn, cfg: TimingConfig):
    """Capture ``cfg.graph_calls`` calls of ``fn()`` into one CUDA graph and time its
    replays: the kernels' own time, without the host's launch cost (tecc's host plan
    is Python; cupy's launches are too).  ``(Timing, None)``, or ``(None, reason)``
    when the work cannot be captured (an allocation or a sync inside ``fn``...)."""
    import cupy

    fn()
    cupy.cuda.get_current_stream().synchronize()
    stream = cupy.cuda.Stream(non_blocking=True)
    try:
        with stream:
            stream.begin_capture()
            try:
                for _ in range(cfg.graph_calls):
                    fn()
            finally:
                graph = stream.end_capture()
            graph.upload(stream)
            graph.launch(stream)  # warm-up replay
            stream.synchronize()
    except Exception as err:  # noqa: BLE001 - not capturable: say why, time without it
        try:
            stream.synchronize()
        except Exception:  # noqa: BLE001
            pass
        return None, f"{type(err).__name__}: {err}"
    with stream:
        per_replay = timing.sample(timing.cuda_events(lambda: graph.launch(stream), stream=stream),
                                   1, cfg.repeat, cfg.min_repeat_ms)
    return Timing([t / cfg.graph_calls for t in per_replay], "CUDA graph replay"), None


class BenchBase:
    """One benchmark run: options, the array module (cupy on a GPU, numpy in a dry run),
    the timing options, and the inputs and timings every benchmark takes the same way."""

    def __init__(self, opts):
        self.opts = opts
        self.dry = opts.dry_run
        self.target = DRY_RUN_TARGET if self.dry else opts.target
        if self.dry:
            self.xp = np
        else:
            import cupy
            self.xp = cupy
        self.timing = TimingConfig(number=opts.number, repeat=opts.repeat, min_repeat_ms=opts.min_repeat_ms,
                                   flush_l2=opts.flush_l2, graph_calls=opts.graph_calls)
        self.failures = []

    def random(self, shape, seed):
        """Standard-normal float32 inputs (never zeros), drawn on the GPU."""
        if self.dry:
            return np.random.default_rng(seed).standard_normal(shape, dtype=np.float32)
        return self.xp.random.RandomState(seed).standard_normal(shape, dtype=self.xp.float32)

    def poisoned(self, shape):
        """An output filled with NaN, so that an element nothing writes fails the check."""
        return self.xp.full(shape, np.nan, dtype=self.xp.float32)

    def time_both(self, events_fn, graph_fn):
        """``(events Timing, graph Timing or None, graph failure or None)``; all None in
        a dry run.  ``graph_fn`` None: the work cannot join a capture (torch)."""
        if self.dry:
            return None, None, None
        ev = events_fn()
        if self.opts.no_graph:
            return ev, None, "disabled (--no-graph)"
        if graph_fn is None:
            return ev, None, "not captured (torch)"
        gr, why = time_graph(graph_fn, self.timing)
        return ev, gr, why


def torch_fp32(cudnn_benchmark: bool = True):
    """``(torch, settings)``: torch set up to compare float32 with float32 (no TF32 in
    matmul or cuDNN; cuDNN's autotuner as asked) and the settings as a dict for the
    result file; ``(None, None)`` when torch does not import."""
    torch = optional_torch()
    if torch is None:
        return None, None
    tb = torch.backends
    tb.cuda.matmul.allow_tf32 = False
    tb.cudnn.allow_tf32 = False
    tb.cudnn.benchmark = bool(cudnn_benchmark)
    return torch, {"version": torch.__version__, "cuda_matmul_allow_tf32": False, "cudnn_allow_tf32": False,
                   "cudnn_benchmark": tb.cudnn.benchmark, "cudnn_version": tb.cudnn.version()}


def ratio(base, row, key):
    """``base[key] / row[key]`` (a reference's time over a variant's: above 1 the
    variant is faster), None when either is missing."""
    if base is None or base.get(key) is None or row.get(key) is None:
        return None
    return base[key] / row[key]


def timing_fields(ev, gr, why, base, flops=None) -> dict:
    """The timing columns of a result row: the event and graph timings, their medians,
    TFLOPS (with ``flops``) and the ratios to the ``base`` row (a reference's)."""
    row = {"events": ev, "graph": gr, "graph_failure": why, "ms": ev.median_ms if ev else None,
           "ms_graph": gr.median_ms if gr else None}
    if flops is not None:
        row["tflops"] = flops / (row["ms"] / 1e3) / 1e12 if row["ms"] else None
        row["tflops_graph"] = flops / (row["ms_graph"] / 1e3) / 1e12 if row["ms_graph"] else None
    row["ratio"] = ratio(base, row, "ms")
    row["ratio_graph"] = ratio(base, row, "ms_graph")
    return row


def torch_on_cupy_stream(fn):
    """Wrap a torch callable so its kernels go to cupy's current stream (the one the
    cupy events are recorded on)."""
    import cupy
    import torch

    def run():
        ptr = cupy.cuda.get_current_stream().ptr
        if ptr == 0:  # cupy's default is the legacy default stream, torch's too
            fn()
            return
        with torch.cuda.stream(torch.cuda.ExternalStream(ptr)):
            fn()

    return run


def kernel_resources(mod) -> dict:
    """Registers, spill-store bytes, stack (local memory) bytes and static shared bytes
    per kernel of a tecc CUDA module: ptxas's report, kept by the build (no GPU needed;
    ``tests/integration/test_gpu_real.py`` checks that the driver reports the same)."""
    return {name: {"regs": r.registers, "spill_bytes": r.spill_store_bytes, "local_bytes": r.stack_bytes,
                   "shared_bytes": r.static_shared_bytes}
            for name, r in mod.kernel_resources.items()}


def resource_text(resources, key="regs"):
    """One field of :func:`kernel_resources` for a table cell: its values over the
    kernels, comma-separated (None when there are none)."""
    return ",".join(str(v[key]) for v in (resources or {}).values()) or None


def launch_shape(mod) -> str:
    """``grid / block`` of every launch in a module's plans (``?`` where an extent
    depends on the arguments): :meth:`CUDAModule.launch_dims`."""
    parts = []
    for _, _, grid, block in mod.launch_dims():
        if grid is None:
            parts.append("?")
            continue
        g = "x".join(str(v) for v in grid if v > 1) or "1"
        b = "x".join(str(v) for v in block if v > 1) or "1"
        parts.append(f"{g} / {b}")
    return "; ".join(parts)


# ---------------------------------------------------------------------------------------
# checks
# ---------------------------------------------------------------------------------------
def rel_error(out, ref) -> float:
    """``||out - ref||_2 / ||ref||_2`` in float64 (numpy or cupy arrays; NaN stays NaN,
    so an output element nothing wrote, poisoned with NaN beforehand, fails)."""
    xp = _array_module(out)
    o = out.astype(xp.float64)
    r = ref.astype(xp.float64)
    den = float(xp.linalg.norm(r))
    num = float(xp.linalg.norm(o - r))
    return num / den if den > 0 else num


def _array_module(a):
    if isinstance(a, np.ndarray):
        return np
    import cupy
    return cupy.get_array_module(a)


def passes(err: float, tol: float) -> bool:
    """``err <= tol`` and not NaN."""
    return err == err and err <= tol


# ---------------------------------------------------------------------------------------
# results
# ---------------------------------------------------------------------------------------
def fmt(value, spec: str = ".3f") -> str:
    """A table cell: ``-`` for a missing figure."""
    if value is None:
        return "-"
    if isinstance(value, str):
        return value
    if isinstance(value, float) and value != value:
        return "nan"
    return format(value, spec)


def render_table(columns: list, rows: list) -> str:
    """A markdown table; ``rows`` are lists of already formatted cells."""
    widths = [max(len(str(c)), *(len(str(r[i])) for r in rows)) if rows else len(str(c))
              for i, c in enumerate(columns)]
    def line(cells):
        return "| " + " | ".join(str(c).ljust(w) for c, w in zip(cells, widths)) + " |"
    out = [line(columns), "| " + " | ".join("-" * w for w in widths) + " |"]
    out += [line(r) for r in rows]
    return "\n".join(out)


def result_name(facts: dict, bench: str) -> str:
    """``2026-11-22_H100_sgemm``: the file stem for ``benchmarks/results/``."""
    return f"{facts['date'][:10]}_{short_gpu_name(facts)}_{bench}"


def write_results(out_dir: str, bench: str, facts: dict, payload: dict, markdown: str) -> tuple:
    """Write ``<stem>.json`` (``payload`` plus the device facts) and ``<stem>.md``
    (the header and ``markdown``) into ``out_dir``; return both paths."""
    os.makedirs(out_dir, exist_ok=True)
    stem = result_name(facts, bench)
    json_path = os.path.join(out_dir, stem + ".json")
    md_path = os.path.join(out_dir, stem + ".md")
    with open(json_path, "w") as fh:
        json.dump({"benchmark": bench, "device": facts, **payload}, fh, indent=1, default=_json_default)
    with open(md_path, "w") as fh:
        fh.write(f"# tecc {bench} benchmark\n\n```\n{facts_header(facts)}\n```\n\n{markdown}\n")
    return json_path, md_path


def _json_default(obj):
    if isinstance(obj, (np.integer,)):
        return int(obj)
    if isinstance(obj, (np.floating,)):
        return float(obj)
    if isinstance(obj, Timing):
        return obj.to_json()
    return str(obj)


def parse_pairs(text: str, option: str, names: str) -> list:
    """``"4096x4096,256x65536"`` -> ``[(4096, 4096), (256, 65536)]``; ``option`` and
    ``names`` (``"MxN"``) word the error of a malformed entry."""
    out = []
    for item in text.split(","):
        parts = item.strip().lower().split("x")
        if len(parts) != 2 or not all(p.isdigit() for p in parts):
            raise SystemExit(f"{option}: {item!r} is not {names} (e.g. 4096x4096)")
        out.append((int(parts[0]), int(parts[1])))
    return out


def parse_int_list(text: str) -> list:
    """``"1024,2048"`` -> ``[1024, 2048]``."""
    return [int(t) for t in text.split(",") if t.strip()]


def add_common_args(ap, bench: str, number: int, graph_calls: int, tol: float) -> None:
    """The options every GPU benchmark takes (dry run, output, target, timing, tolerance)."""
    ap.add_argument("--dry-run", action="store_true", help="no GPU: build for sm_90, check on the CPU emulation")
    ap.add_argument("--out", help=f"write <date>_<GPU>_{bench}.json and .md into this directory")
    ap.add_argument("--target", default="cuda", help="tecc target on a GPU (default: 'cuda', the local arch)")
    ap.add_argument("--number", type=int, default=number)
    ap.add_argument("--repeat", type=int, default=10)
    ap.add_argument("--min-repeat-ms", type=float, default=20.0)
    ap.add_argument("--graph-calls", type=int, default=graph_calls, help="calls captured per CUDA graph")
    ap.add_argument("--flush-l2", action="store_true", help="overwrite 2x L2 before every timed run")
    ap.add_argument("--no-graph", action="store_true", help="skip the CUDA-graph timings")
    ap.add_argument("--tol", type=float, default=tol, help=f"relative error bound (default {tol:g})")


def run_and_report(name, opts, bench, items, run_item, label, payload, stem=None) -> int:
    """The body every GPU benchmark shares: the device header, ``run_item`` for each of
    ``items``, the tables and summary, and (with ``--out``) the result files.

    ``payload(summary)`` gives the benchmark's own JSON fields; ``opts``, the timing
    and the summary are added.  The result files are named for ``stem`` (by default
    ``name`` after its first ``_``: ``gpu_sgemm`` -> ``sgemm``).  Returns the exit code (2 without a GPU unless
    ``--dry-run``, 1 when a variant failed its correctness check).
    """
    import dataclasses
    import sys
    import warnings

    if not opts.dry_run and not has_gpu():
        print(f"{name}: no CUDA GPU here (tecc.cuda(0).exist is False); use --dry-run", file=sys.stderr)
        return 2
    facts = device_facts(opts.dry_run, bench.target)
    print(facts_header(facts), flush=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # "running on the CPU emulation" in a dry run
        for item in items:
            run_item(item)
            print(f"{label(item)} done", flush=True)
    table = bench.tables()
    summary = bench.summary() + [f"FAILED {f}" for f in bench.failures]
    print(table)
    print("\n".join(summary))
    if opts.out:
        md = table + ("\n\n" + "\n".join(f"- {s}" for s in summary) if summary else "")
        data = {"options": vars(opts), "timing": dataclasses.asdict(bench.timing)}
        data.update(payload(summary))
        data["summary"] = summary
        paths = write_results(opts.out, stem or name.split("_", 1)[1], facts, data, md)
        print("wrote " + ", ".join(paths))
    return 1 if bench.failures else 0
