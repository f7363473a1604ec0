"""Devices: where arrays live and kernels run (TVM's ``tvm.cpu(0)``, ``tvm.cuda(0)``)."""
from __future__ import annotations

from ..errors import TeccError

#: device type codes (DLPack's numbering, as in TVM)
CPU = 1
CUDA = 2

#: every device kind TVM names (tecc runs code on cpu and cuda; the others can be named,
#: and their devices do not exist here)
_TYPE_NAMES = {CPU: "cpu", CUDA: "cuda", 4: "opencl", 5: "aocl", 7: "vulkan", 8: "metal", 9: "vpi", 10: "rocm",
               12: "ext_dev", 14: "oneapi", 15: "webgpu", 16: "hexagon"}
_TYPE_ALIASES = {"cpu": CPU, "llvm": CPU, "c": CPU, "stackvm": CPU, "cuda": CUDA, "gpu": CUDA, "nvptx": CUDA,
                 "cl": 4, "sdaccel": 4, "aocl": 5, "aocl_sw_emu": 5, "vpi": 9,  # TVM's FPGA targets' devices
                 **{name: code for code, name in _TYPE_NAMES.items() if code not in (CPU, CUDA)}}


def _cupy():
    """The cupy module, or None when it is not installed or unusable."""
    try:
        import cupy  # noqa: F401
    except Exception:  # noqa: BLE001 - any import failure means "no cupy"
        return None
    return cupy


_DEVICE_COUNT = []


def cuda_device_count() -> int:
    """The CUDA GPUs this process sees (0 without cupy or a driver), asked of the CUDA
    runtime once: the runtime enumerates the devices when it initializes, so the
    answer does not change while the process runs, and without a driver each question
    cost 2.5 ms (every CUDA template instantiation asked, through ``cuda(0).exist``)."""
    if not _DEVICE_COUNT:
        cupy = _cupy()
        try:
            count = int(cupy.cuda.runtime.getDeviceCount()) if cupy is not None else 0
        except Exception:  # noqa: BLE001 - no driver, no GPU: no device
            count = 0
        _DEVICE_COUNT.append(count)
    return _DEVICE_COUNT[0]


class Device:
    """A device: a type (``"cpu"`` or ``"cuda"``) and an index.

    Parameters
    ----------
    device_type : int or str
        ``1``/``"cpu"`` (also ``"llvm"``, ``"c"``) or ``2``/``"cuda"`` (also ``"gpu"``).
    device_id : int
        The index among devices of that type.
    """

    __slots__ = ("device_type", "device_id")

    def __init__(self, device_type, device_id: int = 0):
        if isinstance(device_type, str):
            key = device_type.split()[0].lower() if device_type.strip() else ""
            if key not in _TYPE_ALIASES:
                raise TeccError(f"unknown device type {device_type!r}; use 'cpu' or 'cuda' (or one of TVM's "
                                f"names: {', '.join(sorted(_TYPE_ALIASES))})")
            device_type = _TYPE_ALIASES[key]
        if device_type not in _TYPE_NAMES:
            raise TeccError(f"unknown device type code {device_type!r}; use 1 (cpu) or 2 (cuda)")
        self.device_type = int(device_type)
        self.device_id = int(device_id)

    @property
    def kind(self) -> str:
        """``"cpu"`` or ``"cuda"``."""
        return _TYPE_NAMES[self.device_type]

    @property
    def exist(self) -> bool:
        """True if this device is present (a real check for CUDA: cupy and a GPU)."""
        if self.device_type == CPU:
            return self.device_id == 0
        if self.device_type != CUDA:
            return False  # tecc runs code on CPUs and CUDA GPUs only
        return 0 <= self.device_id < cuda_device_count()

    def sync(self) -> None:
        """Wait until all work queued on the device has finished (without a GPU,
        ``cuda(0)`` is emulated on the CPU and there is nothing to wait for)."""
        if self.device_type == CUDA:
            if not self.exist:
                if self.device_id == 0:
                    return
                raise TeccError(f"{self} is not available: no such CUDA GPU")
            _cupy().cuda.Device(self.device_id).synchronize()

    # facts about a CUDA GPU (TVM's dev.name, dev.multi_processor_count, ...) --------
    def _require_gpu(self, what: str) -> None:
        if self.device_type != CUDA:
            raise TeccError(f"{what} is a property of CUDA devices, not of {self}")
        if not self.exist:
            raise TeccError(f"{what}: {self} is not present (no CUDA GPU here, or cupy is missing); "
                            "check tecc.cuda(0).exist first")

    def _props(self) -> dict:
        self._require_gpu("device properties")
        return _cupy().cuda.runtime.getDeviceProperties(self.device_id)

    def _attr(self, name: str) -> int:
        self._require_gpu(name)
        cupy = _cupy()
        return int(cupy.cuda.Device(self.device_id).attributes[name])

    @property
    def name(self) -> str:
        """The GPU's product name."""
        name = self._props()["name"]
        return name.decode() if isinstance(name, bytes) else str(name)

    @property
    def compute_version(self) -> str:
        """The compute capability as ``"9.0"``."""
        p = self._props()
        return f"{p['major']}.{p['minor']}"

    @property
    def arch(self) -> str:
        """The architecture NVRTC compiles for, ``"sm_90"``."""
        p = self._props()
        return f"sm_{p['major']}{p['minor']}"

    @property
    def multi_processor_count(self) -> int:
        return self._attr("MultiProcessorCount")

    @property
    def max_threads_per_block(self) -> int:
        return self._attr("MaxThreadsPerBlock")

    @property
    def warp_size(self) -> int:
        return self._attr("WarpSize")

    @property
    def max_shared_memory_per_block(self) -> int:
        """Static shared memory per block (48 KiB); see ``attributes()`` for the opt-in maximum."""
        return self._attr("MaxSharedMemoryPerBlock")

    @property
    def total_global_memory(self) -> int:
        return int(self._props()["totalGlobalMem"])

    def attributes(self) -> dict:
        """Everything known about this CUDA GPU: cupy's device properties plus, where
        nvidia-ml-py works, clocks, memory and the driver version from NVML."""
        self._require_gpu("attributes()")
        cupy = _cupy()
        out = {"name": self.name, "compute_version": self.compute_version, "arch": self.arch}
        for key, value in cupy.cuda.Device(self.device_id).attributes.items():
            out[key] = value
        out["max_shared_memory_per_block_optin"] = int(self._props().get("sharedMemPerBlockOptin", 0))
        out["total_global_memory"] = self.total_global_memory
        out.update(_nvml_facts(self.device_id))
        return out

    def __eq__(self, other) -> bool:
        return (isinstance(other, Device) and other.device_type == self.device_type
                and other.device_id == self.device_id)

    def __hash__(self) -> int:
        return hash((self.device_type, self.device_id))

    def __repr__(self) -> str:
        return f"{self.kind}({self.device_id})"

    __str__ = __repr__


def _nvml_facts(index: int) -> dict:
    """Clocks, memory and driver version from NVML (empty where NVML is unusable)."""
    try:
        import pynvml
    except Exception:  # noqa: BLE001 - nvidia-ml-py is optional
        return {}
    facts = {}
    try:
        pynvml.nvmlInit()
    except Exception:  # noqa: BLE001 - no driver
        return {}
    try:
        handle = pynvml.nvmlDeviceGetHandleByIndex(index)
        driver = pynvml.nvmlSystemGetDriverVersion()
        facts["driver_version"] = driver.decode() if isinstance(driver, bytes) else str(driver)
        facts["sm_clock_max_mhz"] = int(pynvml.nvmlDeviceGetMaxClockInfo(handle, pynvml.NVML_CLOCK_SM))
        facts["memory_clock_max_mhz"] = int(pynvml.nvmlDeviceGetMaxClockInfo(handle, pynvml.NVML_CLOCK_MEM))
        mem = pynvml.nvmlDeviceGetMemoryInfo(handle)
        facts["memory_total_bytes"] = int(mem.total)
        facts["memory_free_bytes"] = int(mem.free)
    except Exception:  # noqa: BLE001 - a query this GPU does not support
        pass
    finally:
        try:
            pynvml.nvmlShutdown()
        except Exception:  # noqa: BLE001
            pass
    return facts


def cpu(dev_id: int = 0) -> Device:
    """The CPU device."""
    return Device(CPU, dev_id)


def cuda(dev_id: int = 0) -> Device:
    """CUDA GPU number ``dev_id``."""
    return Device(CUDA, dev_id)


gpu = cuda


def device(dev_type, dev_id: int = 0) -> Device:
    """A device by type name or code (``device("cuda", 0)``)."""
    return Device(dev_type, dev_id)


def enabled(target) -> bool:
    """True if tecc can build for and run on ``target`` (TVM's ``runtime.enabled``):
    the CPU (``llvm``, ``c``) and ``cuda`` -- a GPU where there is one, the GPU
    emulator otherwise."""
    kind = str(target).split()[0].lower() if str(target).strip() else ""
    return kind in ("llvm", "c", "cpu", "stackvm", "cuda", "gpu", "nvptx")
