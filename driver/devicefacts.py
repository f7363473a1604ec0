"""What a measurement ran on: the device facts every benchmark report records (GPU,
SM count, clocks, memory, driver, CUDA runtime, NVRTC and library versions, the CPU
and the date), and the peaks a roofline is drawn from.

Shared by ``tecc bench`` and the scripts in ``benchmarks/``; nothing here needs a GPU
at import time.
"""
from __future__ import annotations

import datetime as _dt
import os
import platform
import re

import numpy as np

import tecc


def has_gpu() -> bool:
    """True when tecc sees a CUDA GPU (``tecc.cuda(0).exist``)."""
    return bool(tecc.cuda(0).exist)


def optional_torch():
    """The torch module if it imports, else None."""
    try:
        import torch  # noqa: PLC0415 -- optional
    except Exception:  # noqa: BLE001 - torch is optional
        return None
    return torch


def versions() -> dict:
    out = {"python": platform.python_version(), "numpy": np.__version__,
           "tecc": getattr(tecc, "__version__", "?")}
    try:
        import cupy  # noqa: PLC0415
        out["cupy"] = cupy.__version__
    except Exception:  # noqa: BLE001 - cupy missing or broken
        out["cupy"] = None
    try:
        from tecc.cuda_codegen.nvrtc import nvrtc_version
        out["nvrtc"] = ".".join(str(v) for v in nvrtc_version())
    except Exception as err:  # noqa: BLE001 - no NVRTC: record why
        out["nvrtc"] = f"unavailable ({err})"
    torch = optional_torch()
    out["torch"] = torch.__version__ if torch is not None else None
    return out


def _cuda_version(v: int) -> str:
    return f"{v // 1000}.{(v % 1000) // 10}"


def _nvml_now(index: int = 0) -> dict:
    """Current clocks, power limit and temperature (empty where NVML is unusable)."""
    try:
        import pynvml
        pynvml.nvmlInit()
    except Exception:  # noqa: BLE001 - nvidia-ml-py missing or no driver
        return {}
    out = {}
    try:
        h = pynvml.nvmlDeviceGetHandleByIndex(index)
        queries = {
            "sm_clock_now_mhz": lambda: pynvml.nvmlDeviceGetClockInfo(h, pynvml.NVML_CLOCK_SM),
            "memory_clock_now_mhz": lambda: pynvml.nvmlDeviceGetClockInfo(h, pynvml.NVML_CLOCK_MEM),
            "sm_clock_app_mhz": lambda: pynvml.nvmlDeviceGetApplicationsClock(h, pynvml.NVML_CLOCK_SM),
            "power_limit_w": lambda: pynvml.nvmlDeviceGetPowerManagementLimit(h) / 1000.0,
            "temperature_c": lambda: pynvml.nvmlDeviceGetTemperature(h, pynvml.NVML_TEMPERATURE_GPU),
        }
        for key, query in queries.items():
            try:
                out[key] = query()
            except Exception:  # noqa: BLE001 - a query this GPU or driver does not answer
                out[key] = None
    finally:
        try:
            pynvml.nvmlShutdown()
        except Exception:  # noqa: BLE001
            pass
    return out


def device_facts(dry_run: bool, target: str) -> dict:
    """What the run measured on: GPU, clocks, memory, driver, versions and the date.

    Parameters
    ----------
    dry_run : bool
        True when nothing runs on a GPU (the facts then describe this host only).
    target : str
        The tecc target the kernels were built for.
    """
    facts = {"date": _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
             "host": platform.node(), "target": target, "dry_run": dry_run,
             "versions": versions(), "env": {k: os.environ.get(k) for k in ("CUPY_TF32", "CUDA_VISIBLE_DEVICES")}}
    if dry_run or not has_gpu():
        facts["gpu"] = None
        return facts
    import cupy

    dev = tecc.cuda(0)
    attrs = dev.attributes()
    gpu = {"name": dev.name, "arch": dev.arch, "compute_version": dev.compute_version,
           "sm_count": attrs.get("MultiProcessorCount"),
           "l2_bytes": attrs.get("L2CacheSize"),
           "memory_total_bytes": attrs.get("total_global_memory"),
           "memory_bus_bits": attrs.get("GlobalMemoryBusWidth"),
           "sm_clock_attr_khz": attrs.get("ClockRate"),
           "memory_clock_attr_khz": attrs.get("MemoryClockRate"),
           "max_shared_per_block_optin": attrs.get("max_shared_memory_per_block_optin")}
    for key in ("driver_version", "sm_clock_max_mhz", "memory_clock_max_mhz"):
        gpu[key] = attrs.get(key)
    gpu.update(_nvml_now(0))
    gpu["cuda_driver_api"] = _cuda_version(cupy.cuda.runtime.driverGetVersion())
    gpu["cuda_runtime"] = _cuda_version(cupy.cuda.runtime.runtimeGetVersion())
    facts["gpu"] = gpu
    return facts


def short_gpu_name(facts: dict) -> str:
    """``"H100"``, ``"H200"``, ``"A100"``... from the GPU name (``"dryrun-sm_90"`` in a dry run)."""
    gpu = facts.get("gpu")
    if not gpu:
        arch = re.search(r"sm_\d+[af]?", facts.get("target", "")) or None
        return "dryrun-" + (arch.group(0) if arch else "cpu")
    m = re.search(r"\b([A-Z]{1,2}\d{2,4}[A-Za-z]?)\b", gpu["name"])
    if m:
        return m.group(1)
    return re.sub(r"[^A-Za-z0-9]+", "-", gpu["name"]).strip("-") or "GPU"


def facts_header(facts: dict) -> str:
    """A few readable lines about the device and software, for the console and the .md."""
    v = facts["versions"]
    lines = [f"date {facts['date']}  host {facts['host']}  target {facts['target']!r}"]
    gpu = facts.get("gpu")
    if gpu:
        mem = gpu.get("memory_total_bytes") or 0
        l2 = gpu.get("l2_bytes") or 0
        lines.append(f"GPU {gpu['name']} ({gpu['arch']}), {gpu.get('sm_count')} SMs, "
                     f"{mem / 2**30:.1f} GiB, L2 {l2 / 2**20:.0f} MiB")
        lines.append(f"clocks: SM max {gpu.get('sm_clock_max_mhz')} MHz, now {gpu.get('sm_clock_now_mhz')} MHz; "
                     f"memory max {gpu.get('memory_clock_max_mhz')} MHz; power limit {gpu.get('power_limit_w')} W; "
                     f"{gpu.get('temperature_c')} C")
        lines.append(f"driver {gpu.get('driver_version')} (CUDA {gpu.get('cuda_driver_api')}), "
                     f"CUDA runtime {gpu.get('cuda_runtime')}")
    else:
        lines.append("DRY RUN: no GPU used; kernels ran on tecc's CPU emulation of CUDA semantics")
    lines.append(f"NVRTC {v['nvrtc']}, cupy {v['cupy']}, torch {v['torch']}, numpy {v['numpy']}, "
                 f"tecc {v['tecc']}, Python {v['python']}")
    return "\n".join(lines)


#: FP32 lanes per SM by compute capability (CUDA C programming guide, throughput table)
FP32_LANES_PER_SM = {"6.0": 64, "6.1": 128, "7.0": 64, "7.2": 64, "7.5": 64, "8.0": 64, "8.6": 128, "8.7": 128,
                     "8.9": 128, "9.0": 128, "10.0": 128, "10.3": 128, "12.0": 128, "12.1": 128}


def gpu_peaks(facts: dict) -> dict:
    """Theoretical FP32 GFLOP/s (SMs x FP32 lanes x 2 x max SM clock) and memory GB/s
    (max memory clock x 2 x bus width), each None where a fact is missing."""
    gpu = facts.get("gpu") or {}
    out = {"fp32_gflops": None, "memory_gbps": None, "how": {
        "fp32_gflops": "SM count x FP32 lanes per SM (by compute capability) x 2 (FMA) x max SM clock",
        "memory_gbps": "max memory clock x 2 (double data rate) x bus width / 8"}}
    lanes = FP32_LANES_PER_SM.get(str(gpu.get("compute_version")))
    sm_mhz = gpu.get("sm_clock_max_mhz") or ((gpu.get("sm_clock_attr_khz") or 0) / 1e3) or None
    if lanes and gpu.get("sm_count") and sm_mhz:
        out["fp32_gflops"] = gpu["sm_count"] * lanes * 2 * sm_mhz / 1e3
    mem_mhz = gpu.get("memory_clock_max_mhz") or ((gpu.get("memory_clock_attr_khz") or 0) / 1e3) or None
    if mem_mhz and gpu.get("memory_bus_bits"):
        out["memory_gbps"] = mem_mhz * 1e6 * 2 * gpu["memory_bus_bits"] / 8 / 1e9
    return out




# ---------------------------------------------------------------------------------------
# the CPU
# ---------------------------------------------------------------------------------------
def cpu_facts() -> dict:
    """The host CPU: model, cores tecc's kernels may use, maximum clock and the vector
    extensions the peak depends on (Linux's /proc/cpuinfo and cpufreq; what cannot be
    read is None)."""
    out = {"model": platform.processor() or None, "cores": os.cpu_count(), "max_mhz": None,
           "avx512f": False, "avx2": False, "fma": False}
    try:
        with open("/proc/cpuinfo") as f:
            text = f.read()
    except OSError:
        text = ""
    m = re.search(r"^model name\s*:\s*(.+)$", text, re.M)
    if m:
        out["model"] = m.group(1).strip()
    flags = set((re.search(r"^flags\s*:\s*(.+)$", text, re.M) or [None, ""])[1].split())
    for flag in ("avx512f", "avx2", "fma"):
        out[flag] = flag in flags
    try:
        with open("/sys/devices/system/cpu/cpu0/cpufreq/cpuinfo_max_freq") as f:
            out["max_mhz"] = int(f.read().strip()) / 1000.0
    except (OSError, ValueError):
        mhz = re.search(r"^cpu MHz\s*:\s*([\d.]+)$", text, re.M)
        out["max_mhz"] = float(mhz.group(1)) if mhz else None
    try:
        out["cores"] = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        pass
    return out


def cpu_peaks(cpu: dict) -> dict:
    """Theoretical FP32 GFLOP/s of the host: cores x clock x FP32 FLOPs per cycle and
    core (two FMA units of 16 lanes with AVX-512, of 8 with AVX2, else 4-lane SSE
    adds and multiplies), None where a fact is missing; no memory figure (the
    roofline uses the copy measured in the same run)."""
    per_cycle = 64 if cpu.get("avx512f") else 32 if (cpu.get("avx2") and cpu.get("fma")) else 8
    gflops = None
    if cpu.get("cores") and cpu.get("max_mhz"):
        gflops = cpu["cores"] * cpu["max_mhz"] * per_cycle / 1e3
    return {"fp32_gflops": gflops, "memory_gbps": None, "how": {
        "fp32_gflops": f"cores x max clock x {per_cycle} FP32 FLOPs per cycle (two FMA units of the widest "
                       "vector extension; theoretical)"}}
