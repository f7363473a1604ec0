"""Devices: where arrays live and kernels run (TVM's ``tvm.cpu(0)``, ``tvm.cuda(0)``)."""
from __future__ import annotations

from ..errors import TeccError

#: device type codes (DLPack's numbering, as in TVM)
CPU = 1
CUDA = 2

_TYPE_NAMES = {CPU: "cpu", CUDA: "cuda"}
_TYPE_ALIASES = {"cpu": CPU, "llvm": CPU, "c": CPU, "cuda": CUDA, "gpu": CUDA, "nvptx": CUDA}


def _cupy():
    """The cupy module, or None when it is not installed or unusable."""
    try:
        import cupy  # noqa: F401
    except Exception:  # noqa: BLE001 - any import failure means "no cupy"
        return None
    return cupy


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
                raise TeccError(f"unknown device type {device_type!r}; use 'cpu' or 'cuda'")
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
        cupy = _cupy()
        if cupy is None:
            return False
        try:
            return self.device_id < cupy.cuda.runtime.getDeviceCount()
        except Exception:  # noqa: BLE001 - no driver, no GPU: the device does not exist
            return False

    def sync(self) -> None:
        """Wait until all work queued on the device has finished."""
        if self.device_type == CUDA:
            cupy = _cupy()
            if cupy is None or not self.exist:
                raise TeccError(f"{self} is not available: no CUDA GPU or cupy is not installed")
            cupy.cuda.Device(self.device_id).synchronize()

    def __eq__(self, other) -> bool:
        return (isinstance(other, Device) and other.device_type == self.device_type
                and other.device_id == self.device_id)

    def __hash__(self) -> int:
        return hash((self.device_type, self.device_id))

    def __repr__(self) -> str:
        return f"{self.kind}({self.device_id})"

    __str__ = __repr__


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
