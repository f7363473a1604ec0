"""What the device of a target can do at best: its FP32 FLOP/s and memory bandwidth.

These are the two roofs of the roofline model: a kernel that performs ``I`` flops per
byte of memory traffic can run at most ``min(flops, I * bandwidth)``.

=============  ===========================================================================
device         how the numbers are obtained
=============  ===========================================================================
CUDA GPU       FP32: SM count x FP32 lanes per SM (by compute capability) x 2 (an FMA is
               two flops) x the maximum SM clock; memory: the maximum memory clock x 2
               (double data rate) x the bus width.  Clocks from NVML (nvidia-ml-py) when
               it answers, else from the device attributes.
CPU            FP32: physical cores this process may run on x float32 lanes of the
               target's vectors (16 for AVX-512, 8 for AVX/AVX2, else 4) x 2 FMA units x 2
               flops x the maximum clock (``/sys`` cpufreq, else ``/proc/cpuinfo``);
               memory: *measured* once per process, the best of a few multi-threaded
               numpy copies of 64 MiB (bytes read + bytes written).
"cuda", no GPU both unknown: the kernels run on tecc's CPU emulator, which has no GPU roofs.
=============  ===========================================================================

Nothing here loads CuPy until a CUDA device is asked about.
"""
from __future__ import annotations

import functools
import os
import re
import time
from dataclasses import dataclass

import numpy as np

from ..errors import TargetError
from .device import CPU, CUDA, Device, cuda

#: FP32 lanes (CUDA cores) per SM by compute capability (CUDA C programming guide,
#: arithmetic instruction throughput: 32-bit floating-point add, multiply, multiply-add)
FP32_LANES_PER_SM = {"6.0": 64, "6.1": 128, "6.2": 128, "7.0": 64, "7.2": 64, "7.5": 64, "8.0": 64, "8.6": 128,
                     "8.7": 128, "8.9": 128, "9.0": 128, "10.0": 128, "10.3": 128, "12.0": 128, "12.1": 128}

#: dense float16 tensor-core FLOPs per SM per clock, float32 accumulation, by compute
#: capability (the data-center parts' rates: V100/T4 1024, A100 2048, A10/A40/L40 1024,
#: H100/H200 4096, B200 8192; GeForce parts of 8.6/8.9 accumulate in float32 at half that)
TENSOR_FP16_FLOPS_PER_SM_CLOCK = {"7.0": 1024, "7.2": 1024, "7.5": 1024, "8.0": 2048, "8.6": 1024, "8.7": 1024,
                                  "8.9": 1024, "9.0": 4096, "10.0": 8192}

#: float32 lanes of a CPU vector register, by the widest instruction set the target uses
CPU_LANES = {"avx512": 16, "avx2": 8, "sse": 4}

#: the bytes one copy of the bandwidth measurement moves from (and again to) memory
BANDWIDTH_BYTES = 64 << 20

#: target kinds that compile for the CPU (as tecc.target names them)
_CPU_KINDS = ("llvm", "c", "cpu", "stackvm")
_CUDA_KINDS = ("cuda", "gpu", "nvptx")


@dataclass(frozen=True)
class Peaks:
    """The roofs of a device.

    Attributes
    ----------
    flops : float or None
        Peak float32 FLOP/s; None when it cannot be known here (``source`` says why).
    bandwidth : float or None
        Memory bandwidth in bytes/s; None when unknown.
    source : str
        How each number was obtained, or why it is unknown.
    device : str
        The device's name.
    tensor_flops : float or None
        Peak dense float16 tensor-core FLOP/s (float32 accumulation) of a GPU; None
        on CPUs and where unknown.
    """

    flops: float | None
    bandwidth: float | None
    source: str
    device: str
    tensor_flops: float | None = None

    def tensor_cores(self) -> "Peaks":
        """These roofs with the tensor cores' FLOP/s as the compute roof (for a kernel
        whose arithmetic runs on them), or ``self`` when that rate is unknown."""
        if self.tensor_flops is None:
            return self
        return Peaks(self.tensor_flops, self.bandwidth, self.source, self.device, self.tensor_flops)

    @property
    def known(self) -> bool:
        """Both roofs are known."""
        return self.flops is not None and self.bandwidth is not None

    @property
    def ridge(self) -> float | None:
        """The arithmetic intensity (flops per byte) where the two roofs meet: below
        it a kernel is memory-bound, above it compute-bound."""
        return self.flops / self.bandwidth if self.known else None

    def attainable(self, intensity: float) -> float | None:
        """``min(flops, intensity * bandwidth)``: the most FLOP/s a kernel of this
        arithmetic intensity can reach (None when a roof is unknown)."""
        if not self.known:
            return None
        return min(self.flops, float(intensity) * self.bandwidth)

    def to_dict(self) -> dict:
        return {"flops": self.flops, "bandwidth": self.bandwidth, "source": self.source, "device": self.device,
                "tensor_flops": self.tensor_flops}


def device_peaks(target="llvm", device=None) -> Peaks:
    """The peak FP32 FLOP/s and memory bandwidth of the device ``target`` runs on.

    Parameters
    ----------
    target : str or Target
        ``"llvm"`` (``-mcpu=...``/``-mattr=...`` decide the vector width counted) or
        ``"cuda"``.  A :class:`tecc.target.Target` is read through its
        ``vector_bytes()``; a string is parsed here (``-mattr``, ``-mcpu=native``, and
        ``-mcpu`` names that say ``avx512``/``avx2`` or are an ``x86-64-vN`` level).
    device : Device or int, optional
        For ``"cuda"``, which GPU (default ``tecc.cuda(0)``).  Ignored for CPUs.

    Returns
    -------
    Peaks
        On a CPU the bandwidth is measured the first time it is asked for in this
        process (about 0.1 s) and remembered.

    Raises
    ------
    TargetError
        For a target kind tecc does not run, or a CPU device given for ``"cuda"``.
    """
    kind = str(target).split()[0].lower() if str(target).strip() else ""
    if kind in _CUDA_KINDS:
        if device is None:
            device = cuda(0)
        elif isinstance(device, int):
            device = cuda(device)
        if not isinstance(device, Device) or device.device_type != CUDA:
            raise TargetError(f"device_peaks({str(target)!r}): device {device!r} is not a CUDA device; pass "
                              "tecc.cuda(i) or its index")
        if not device.exist:
            return Peaks(None, None, f"no CUDA GPU here ({device} does not exist, or cupy cannot reach a driver): "
                         "'cuda' kernels run on tecc's CPU emulator, which has no GPU FLOP/s or bandwidth",
                         "tecc CUDA emulator (no GPU)")
        return _gpu_peaks(device.device_id)
    if kind in _CPU_KINDS:
        is_cpu = device is None or (isinstance(device, int) and device == 0) or (
            isinstance(device, Device) and device.device_type == CPU)
        if not is_cpu:
            raise TargetError(f"device_peaks({str(target)!r}): device {device!r} is not the CPU; leave it out")
        return _cpu_peaks(*_cpu_lanes(target))
    raise TargetError(f"device_peaks: target {str(target)!r} is not one tecc runs on; use 'llvm' (the CPU) or "
                      "'cuda'")


# ---------------------------------------------------------------------------------
# CUDA GPUs
# ---------------------------------------------------------------------------------
@functools.lru_cache(maxsize=None)
def _gpu_peaks(device_id: int) -> Peaks:
    return gpu_peaks_from_facts(cuda(device_id).attributes())


def gpu_peaks_from_facts(facts: dict) -> Peaks:
    """The :class:`Peaks` of a GPU described by ``facts`` (as
    ``tecc.cuda(i).attributes()`` returns them: ``name``, ``compute_version``,
    ``MultiProcessorCount``, ``GlobalMemoryBusWidth``, and the clocks as NVML's
    ``sm_clock_max_mhz``/``memory_clock_max_mhz`` or the attributes ``ClockRate``/
    ``MemoryClockRate`` in kHz)."""
    name = str(facts.get("name", "CUDA GPU"))
    cc = str(facts.get("compute_version", ""))
    lanes = FP32_LANES_PER_SM.get(cc)
    sms = facts.get("MultiProcessorCount")
    sm_mhz, sm_from = _clock(facts, "sm_clock_max_mhz", "ClockRate")
    flops = None
    if lanes and sms and sm_mhz:
        flops = float(sms) * lanes * 2 * sm_mhz * 1e6
        flops_how = (f"FP32: {sms} SMs x {lanes} FP32 lanes (compute capability {cc}) x 2 (FMA) x {sm_mhz:.0f} MHz "
                     f"({sm_from})")
    else:
        missing = [what for what, v in (("the FP32 lanes per SM of compute capability " + (cc or "?"), lanes),
                                        ("the SM count", sms), ("the SM clock", sm_mhz)) if not v]
        flops_how = "FP32: unknown (" + ", ".join(missing) + " not known)"
    per_clock = TENSOR_FP16_FLOPS_PER_SM_CLOCK.get(cc)
    tensor = float(sms) * per_clock * sm_mhz * 1e6 if per_clock and sms and sm_mhz else None
    if tensor is not None:
        flops_how += (f"; FP16 tensor: {sms} SMs x {per_clock} FLOPs per clock (compute capability {cc}) x "
                      f"{sm_mhz:.0f} MHz")
    mem_mhz, mem_from = _clock(facts, "memory_clock_max_mhz", "MemoryClockRate")
    bus = facts.get("GlobalMemoryBusWidth")
    bandwidth = None
    if mem_mhz and bus:
        bandwidth = mem_mhz * 1e6 * 2 * float(bus) / 8
        bw_how = f"memory: {mem_mhz:.0f} MHz ({mem_from}) x 2 (double data rate) x {bus}-bit bus"
    else:
        missing = [what for what, v in (("the memory clock", mem_mhz), ("the bus width", bus)) if not v]
        bw_how = "memory: unknown (" + ", ".join(missing) + " not known)"
    return Peaks(flops, bandwidth, f"{flops_how}; {bw_how}", name, tensor)


def _clock(facts, nvml_key, attr_key):
    """``(MHz, where from)`` of a clock: NVML's maximum, else the attribute (kHz)."""
    if facts.get(nvml_key):
        return float(facts[nvml_key]), "NVML max clock"
    if facts.get(attr_key):
        return float(facts[attr_key]) / 1e3, f"device attribute {attr_key}"
    return None, ""


# ---------------------------------------------------------------------------------
# CPUs
# ---------------------------------------------------------------------------------
def _cpu_lanes(target):
    """``(float32 lanes, how they were decided)`` of a CPU target's vectors."""
    if hasattr(target, "vector_bytes"):  # a tecc.target.Target knows its CPU tables
        lanes = int(target.vector_bytes()) // 4
        return lanes, f"{lanes} float32 lanes ({lanes * 32}-bit vectors of target {str(target)!r})"
    text = str(target)
    feats = set()
    for m in re.finditer(r"-mattr=(\S+)", text):
        feats.update(f[1:].lower() for f in m.group(1).split(",") if f.startswith("+"))
    mcpu = re.search(r"-mcpu=(\S+)", text)
    mcpu = mcpu.group(1).lower() if mcpu else None
    note = ""
    if mcpu == "native":
        feats |= _cpuinfo_flags()
    elif mcpu:
        if "avx512" in mcpu or mcpu == "x86-64-v4":
            feats.add("avx512f")
        elif "avx2" in mcpu or mcpu == "x86-64-v3":
            feats.add("avx2")
        else:
            note = (f"; -mcpu={mcpu} is read by name here only (pass a tecc.target.Target for tecc's table of "
                    "CPU names)")
    if "avx512f" in feats:
        lanes = CPU_LANES["avx512"]
    elif feats & {"avx", "avx2"}:
        lanes = CPU_LANES["avx2"]
    else:
        lanes = CPU_LANES["sse"]
    return lanes, f"{lanes} float32 lanes ({lanes * 32}-bit vectors of target {text!r}{note})"


def _cpuinfo_flags() -> set:
    for line in _read("/proc/cpuinfo").splitlines():
        if line.startswith("flags"):
            return set(line.split(":", 1)[1].split())
    return set()


def _read(path) -> str:
    try:
        with open(path, encoding="utf-8") as f:
            return f.read()
    except OSError:
        return ""


@functools.lru_cache(maxsize=None)
def cpu_name() -> str:
    """The CPU's model name (``/proc/cpuinfo``; else what ``platform`` says)."""
    for line in _read("/proc/cpuinfo").splitlines():
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    import platform  # noqa: PLC0415

    return platform.processor() or platform.machine() or "CPU"


def usable_cpus() -> list:
    """The logical CPUs this process may run on (its affinity; every CPU where the
    system does not say)."""
    try:
        return sorted(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return list(range(os.cpu_count() or 1))


def _physical_cores(cpus) -> tuple:
    """``(cores, how counted)``: the distinct physical cores among logical CPUs
    ``cpus`` (SMT siblings count once), from /sys topology when it is there."""
    cores = set()
    for c in cpus:
        core = _read(f"/sys/devices/system/cpu/cpu{c}/topology/core_id").strip()
        package = _read(f"/sys/devices/system/cpu/cpu{c}/topology/physical_package_id").strip()
        if not core:
            return len(cpus), f"{len(cpus)} CPUs this process may use (os.sched_getaffinity)"
        cores.add((package, core))
    if len(cores) == len(cpus):
        return len(cpus), f"{len(cpus)} cores this process may use (os.sched_getaffinity)"
    return len(cores), f"{len(cores)} physical cores under the {len(cpus)} CPUs this process may use"


def _max_clock_mhz(cpus) -> tuple:
    """``(MHz or None, where from)``: the highest maximum clock of ``cpus``."""
    best = 0.0
    for c in cpus:
        khz = _read(f"/sys/devices/system/cpu/cpu{c}/cpufreq/cpuinfo_max_freq").strip()
        if khz.isdigit():
            best = max(best, int(khz) / 1e3)
    if best:
        return best, "max clock from /sys cpufreq"
    info = _read("/proc/cpuinfo")
    nominal = re.search(r"model name\s*:.*@\s*([\d.]+)\s*GHz", info)
    if nominal:
        return float(nominal.group(1)) * 1e3, "nominal clock of the model name in /proc/cpuinfo"
    current = [float(m) for m in re.findall(r"^cpu MHz\s*:\s*([\d.]+)", info, re.M)]
    if current:
        return max(current), "clock reported by /proc/cpuinfo (no maximum exposed; a boost clock may be higher)"
    return None, ""


@functools.lru_cache(maxsize=None)
def _cpu_peaks(lanes: int, lanes_how: str) -> Peaks:
    cpus = usable_cpus()
    cores, cores_how = _physical_cores(cpus)
    mhz, mhz_how = _max_clock_mhz(cpus)
    if mhz:
        flops = cores * lanes * 2 * 2 * mhz * 1e6
        flops_how = (f"FP32: {cores_how} x {lanes_how} x 2 FMA units x 2 flops x {mhz:.0f} MHz ({mhz_how})")
    else:
        flops = None
        flops_how = "FP32: unknown (no CPU clock in /sys or /proc/cpuinfo)"
    bandwidth, bw_how = _cpu_bandwidth()
    return Peaks(flops, bandwidth, f"{flops_how}; memory: {bw_how}", cpu_name())


@functools.lru_cache(maxsize=None)
def _cpu_bandwidth() -> tuple:
    """``(bytes/s, how)``, measured once per process."""
    threads = len(usable_cpus())
    bandwidth = measure_cpu_bandwidth(BANDWIDTH_BYTES, threads=threads)
    return bandwidth, (f"measured: best of 5 copies of {BANDWIDTH_BYTES >> 20} MiB with numpy on {threads} "
                       "thread(s), bytes read + bytes written")


def measure_cpu_bandwidth(nbytes=BANDWIDTH_BYTES, threads=1, repeat=5) -> float:
    """The memory bandwidth (bytes/s) one copy of ``nbytes`` reaches on ``threads``
    threads, each copying its share with numpy: the best of ``repeat`` copies,
    counting the bytes read and the bytes written."""
    from concurrent.futures import ThreadPoolExecutor  # noqa: PLC0415

    n = max(int(nbytes) // 8, 1)
    src = np.ones(n, dtype=np.float64)
    dst = np.empty_like(src)
    threads = max(1, min(int(threads), n))
    edges = np.linspace(0, n, threads + 1).astype(int)
    parts = [(int(a), int(b)) for a, b in zip(edges[:-1], edges[1:])]

    def copy(part):
        a, b = part
        np.copyto(dst[a:b], src[a:b])  # numpy lets go of the GIL for the copy

    with ThreadPoolExecutor(threads) as pool:
        list(pool.map(copy, parts))  # first touch of the destination's pages
        best = float("inf")
        for _ in range(max(int(repeat), 1)):
            start = time.perf_counter()
            list(pool.map(copy, parts))
            best = min(best, time.perf_counter() - start)
    return 2.0 * n * 8 / best


def clear_cache() -> None:
    """Forget the peaks found so far (the CPU bandwidth is measured again)."""
    _gpu_peaks.cache_clear()
    _cpu_peaks.cache_clear()
    _cpu_bandwidth.cache_clear()


__all__ = ["BANDWIDTH_BYTES", "CPU_LANES", "FP32_LANES_PER_SM", "Peaks", "clear_cache", "device_peaks",
           "gpu_peaks_from_facts", "measure_cpu_bandwidth"]
