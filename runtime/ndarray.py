"""Arrays on a device (``tecc.nd``): ``nd.array(np_array, dev)``, ``nd.empty(shape)``,
``nd.from_dlpack(tensor)`` (another library's array, shared, not copied).

A CPU :class:`NDArray` wraps a C-contiguous numpy array; a CUDA one wraps a cupy
array where a GPU and cupy are present.  Without a GPU, arrays placed on ``cuda(0)``
live in host memory (numpy) and CUDA modules run on the CPU emulation, so GPU code
runs unchanged anywhere.  ``bfloat16`` arrays hold their raw bits in ``uint16``
storage, the 8- and 4-bit floats and ``int4``/``uint4``/``int2``/``uint2`` theirs in
``uint8`` (ml_dtypes' layout: :mod:`tecc.runtime.dtypes`):
``nd.array`` takes ml_dtypes' arrays of those types, the storage itself (bits, with
``dtype="bfloat16"``...), or numbers (float values rounded to the format);
``numpy()`` gives bfloat16's bits and ml_dtypes' arrays of the others, as TVM's
NDArray does; ``bits()`` gives any of them as stored.
"""
from __future__ import annotations

import itertools

import numpy as np

from ..errors import TeccError
from . import dtypes
from .device import CPU, CUDA, Device, _cupy, cpu, cuda

_storage_dtype = dtypes.storage
_canonical = dtypes.canonical

#: host arrays are 64-byte aligned (a cache line, an AVX-512 vector)
ALIGN = 64
#: arrays of at least this many bytes start at staggered offsets modulo 4 KiB
STAGGER_MIN_BYTES = 16 * 1024
#: the step between the offsets of successive large arrays (13 cache lines)
_STAGGER_STEP = 13 * ALIGN
_stagger = itertools.count()


def host_empty(shape, dtype) -> np.ndarray:
    """A zero-filled, 64-byte aligned numpy array.

    Large arrays start at offsets modulo 4 KiB that differ from one array to the
    next.  Arrays allocated one after another otherwise begin at the same offset
    within a page, and a kernel that walks several of them in step has its loads and
    stores collide in the L1 sets and in the CPU's 4 KiB store-to-load alias check
    (a matmul measured 2x slower that way).
    """
    dtype = np.dtype(dtype)
    count = int(np.prod(shape, dtype=np.int64))
    nbytes = count * dtype.itemsize
    if nbytes >= STAGGER_MIN_BYTES:  # start at the next offset (mod 4 KiB) of the sequence
        period, offset = 4096, (next(_stagger) * _STAGGER_STEP) % 4096
    else:
        period, offset = ALIGN, 0
    raw = np.zeros(nbytes + period, dtype=np.uint8)
    start = (offset - raw.ctypes.data) % period
    return raw[start:start + nbytes].view(dtype).reshape(shape)


def _on_gpu(dev: Device) -> bool:
    """True if arrays of ``dev`` live in GPU memory (a CUDA device that exists)."""
    return dev.device_type == CUDA and dev.exist


def _require_device(dev: Device) -> None:
    if dev.device_type == CUDA and dev.device_id != 0 and not dev.exist:
        raise TeccError(f"{dev} is not available: there is no such CUDA GPU here (without a GPU, "
                        "cuda(0) is emulated in host memory); use tecc.cuda(0) or tecc.cpu(0)")
    if dev.device_type == CPU and dev.device_id != 0:
        raise TeccError(f"{dev} does not exist; the CPU is cpu(0)")


class NDArray:
    """An n-dimensional array on a device.

    Create one with :func:`array` or :func:`empty`; read it back with :meth:`numpy`.
    """

    __slots__ = ("_data", "_dtype", "_device")

    def __init__(self, data, dtype: str, device: Device):
        self._data = data
        self._dtype = dtype
        self._device = device

    # properties -----------------------------------------------------------------
    @property
    def shape(self) -> tuple:
        return tuple(int(s) for s in self._data.shape)

    @property
    def dtype(self) -> str:
        return self._dtype

    @property
    def device(self) -> Device:
        return self._device

    ctx = device  # TVM's old name

    @property
    def ndim(self) -> int:
        return len(self._data.shape)

    @property
    def size(self) -> int:
        return int(self._data.size)

    def leading_rows(self, n: int) -> "NDArray":
        """A view of the first ``n`` rows (axis 0), no copy: an output whose row count
        the model computes (non-maximum suppression's kept boxes)."""
        return NDArray(self._data[:n], self._dtype, self._device)

    # data movement -----------------------------------------------------------------
    def numpy(self) -> np.ndarray:
        """A copy of the contents as a numpy array: ``bfloat16`` as its ``uint16``
        bits, and the other types numpy lacks (float8_e4m3fn, float4_e2m1fn, int4...)
        as ml_dtypes' arrays of them, as TVM's NDArray gives them (ml_dtypes comes
        with onnx; without it, :meth:`bits` gives their bits)."""
        host = self.bits()
        if self._dtype == "bfloat16" or not dtypes.is_narrow(self._dtype):
            return host
        try:
            return dtypes.as_ml_dtypes(host, self._dtype)
        except TeccError as err:
            raise TeccError(f"{err}; or read the bits with arr.bits()") from None

    asnumpy = numpy

    def bits(self) -> np.ndarray:
        """A copy of the contents as stored: a type numpy lacks as its bits (``uint16``
        for bfloat16, ``uint8`` for the 8- and 4-bit floats and the narrow integers);
        any other type as :meth:`numpy` gives it."""
        if not isinstance(self._data, np.ndarray):
            return self._data.get()  # cupy: device to host
        return self._data.copy()

    def copyfrom(self, source) -> "NDArray":
        """Copy ``source`` (an NDArray or array-like of the same shape) into this array."""
        if isinstance(source, NDArray):
            source = source.bits() if source.dtype == self._dtype else source.numpy()
        src = np.asarray(source)
        if dtypes.is_narrow(self._dtype):  # its bits, or numbers rounded / range-checked
            src = dtypes.stored(src, self._dtype)
        elif src.dtype != self._data.dtype:
            src = src.astype(self._data.dtype)
        if src.shape != self.shape:
            raise TeccError(f"copyfrom: source shape {src.shape} does not match the array's shape {self.shape}")
        if not isinstance(self._data, np.ndarray):
            self._data.set(np.ascontiguousarray(src))
        else:
            np.copyto(self._data, src)
        return self

    def copyto(self, target):
        """Copy into ``target``: a :class:`Device` (returns a new array) or an NDArray."""
        if isinstance(target, NDArray):
            target.copyfrom(self)
            return target
        if isinstance(target, Device):
            return array(self.bits(), target, dtype=self._dtype)
        raise TeccError(f"copyto expects a Device or an NDArray, got {type(target).__name__}")

    # DLPack: the memory shared with other libraries (torch.from_dlpack(arr), nd.from_dlpack(t))
    def __dlpack__(self, **kwargs):
        if dtypes.is_narrow(self._dtype):
            held = dtypes.storage(self._dtype)
            raise TeccError(f"a {self._dtype} NDArray holds its elements as {held}; DLPack would hand them over as "
                            f"{held}: share tecc.runtime.dtypes.as_ml_dtypes(arr.bits(), arr.dtype) instead")
        return self._data.__dlpack__(**kwargs)

    def __dlpack_device__(self):
        return self._data.__dlpack_device__()

    def to_dlpack(self):
        """A DLPack capsule of this array's memory (TVM's ``NDArray.to_dlpack``)."""
        return self.__dlpack__()

    def __repr__(self) -> str:
        body = np.array2string(self.numpy(), separator=", ", threshold=20)
        return f"<tecc.nd.NDArray shape={self.shape}, dtype={self._dtype}, {self._device}>\n{body}"

    def __array__(self, dtype=None, copy=None):
        out = self.numpy()
        return out if dtype is None else out.astype(dtype)


def _old_keyword(what: str, dev, ctx):
    """``dev=`` or TVM's older ``ctx=`` (one of them)."""
    if dev is not None and ctx is not None:
        raise TeccError(f"nd.{what}: got both dev={dev!r} and ctx={ctx!r}; pass the device once")
    return dev if ctx is None else ctx


def _pick_device(what: str, device, dev) -> Device:
    """The device of :func:`array` / :func:`empty`: TVM's keyword ``device=`` or tecc's
    ``dev=`` (one of them), ``cpu(0)`` when neither is given."""
    if device is not None and dev is not None:
        raise TeccError(f"nd.{what}: got both device={device!r} and dev={dev!r}; pass the device once "
                        "(device= is TVM's keyword, dev= tecc's)")
    chosen = device if device is not None else dev
    if chosen is None:
        return cpu(0)
    if not isinstance(chosen, Device):
        hint = " (to give a dtype, write dtype=...)" if what == "array" and isinstance(chosen, str) else ""
        raise TeccError(f"nd.{what}: the device must be a tecc.Device such as tecc.cpu(0) or tecc.cuda(0), "
                        f"got {type(chosen).__name__} {chosen!r}{hint}")
    return chosen


def _check_mem_scope(what: str, mem_scope) -> None:
    if mem_scope not in (None, "global"):
        raise TeccError(f"nd.{what}: mem_scope={mem_scope!r} is not supported; tecc arrays live in global "
                        "memory (leave mem_scope out)")


def array(arr, device: Device = None, dtype=None, *, dev: Device = None, ctx: Device = None,
          mem_scope=None) -> NDArray:
    """An :class:`NDArray` holding a copy of ``arr`` (numpy array, list or NDArray).

    Parameters
    ----------
    arr : array-like
    device : Device, optional
        Where the array lives; defaults to ``cpu(0)``.  ``dev=`` is accepted too
        (tecc's older keyword; give one of them).
    dtype : str, optional
        Convert to this dtype (defaults to ``arr``'s dtype).
    ctx : Device, optional
        TVM's keyword before v0.8 for ``device``.
    mem_scope : None or "global"
        TVM's memory scope; tecc arrays are in global memory.
    """
    dev = _pick_device("array", device, _old_keyword("array", dev, ctx))
    _check_mem_scope("array", mem_scope)
    if isinstance(arr, NDArray):
        dtype = arr.dtype if dtype is None else dtype
        arr = arr.numpy()
    if isinstance(arr, np.ndarray) and dtypes.is_narrow(arr.dtype.name):  # ml_dtypes' (onnx's, jax's)
        if dtype is not None and _canonical(dtype) != arr.dtype.name:
            raise TeccError(f"nd.array: a {arr.dtype.name} array converts to {dtype} with numpy first "
                            f"(arr.astype('{dtype}')); tecc keeps {arr.dtype.name} arrays as stored")
        dtype = arr.dtype.name
    if dtype is None:
        src = np.asarray(arr)
        dtype = _canonical(src.dtype)
    else:
        dtype = _canonical(dtype)
        if dtypes.is_narrow(dtype):  # its bits, or numbers rounded to the format / range-checked
            src = dtypes.stored(arr, dtype)
        else:
            src = np.asarray(arr, dtype=_storage_dtype(dtype)) if not (
                isinstance(arr, np.ndarray) and arr.dtype == _storage_dtype(dtype)) else arr
    _require_device(dev)
    if _on_gpu(dev):
        cupy = _cupy()
        with cupy.cuda.Device(dev.device_id):
            data = cupy.array(src, order="C")
    else:
        data = host_empty(src.shape, src.dtype)
        data[...] = src
    return NDArray(data, dtype, dev)


def empty(shape, dtype="float32", device: Device = None, *, dev: Device = None, ctx: Device = None,
          mem_scope=None) -> NDArray:
    """An uninitialised array (zero-filled on the CPU) of ``shape`` and ``dtype``.

    ``device`` (or tecc's older keyword ``dev``, or TVM's before v0.8, ``ctx``)
    defaults to ``cpu(0)``.
    """
    dev = _pick_device("empty", device, _old_keyword("empty", dev, ctx))
    _check_mem_scope("empty", mem_scope)
    dtype = _canonical(dtype)
    if isinstance(shape, int):
        shape = (shape,)
    shape = tuple(int(s) for s in shape)
    _require_device(dev)
    if _on_gpu(dev):
        cupy = _cupy()
        with cupy.cuda.Device(dev.device_id):
            data = cupy.empty(shape, dtype=_storage_dtype(dtype))
    else:
        data = host_empty(shape, _storage_dtype(dtype))
    return NDArray(data, dtype, dev)


#: DLPack's device types tecc arrays live on
_DLPACK_CPU, _DLPACK_CUDA = 1, 2


def dlpack_data(tensor):
    """``(array, device)``: a numpy array (CPU) or a cupy array (CUDA) sharing the
    memory of ``tensor``, an object with ``__dlpack__`` and ``__dlpack_device__``.

    Raises
    ------
    TeccError
        For a device other than the CPU and CUDA, or a CUDA tensor where cupy is missing.
    """
    kind, device_id = tensor.__dlpack_device__()
    if kind == _DLPACK_CPU:
        return np.from_dlpack(tensor), cpu(0)
    if kind == _DLPACK_CUDA:
        cupy = _cupy()
        if cupy is None:
            raise TeccError("nd.from_dlpack: the tensor lives on a CUDA GPU, but cupy is not installed here "
                            "(pip install cupy-cuda13x)")
        return cupy.from_dlpack(tensor), cuda(int(device_id))
    raise TeccError(f"nd.from_dlpack: the tensor lives on DLPack device type {kind}; tecc arrays live on the "
                    "CPU (1) and CUDA GPUs (2): copy it to one first")


def from_dlpack(tensor) -> NDArray:
    """An :class:`NDArray` sharing the memory of ``tensor`` (TVM's ``nd.from_dlpack``):
    any object with ``__dlpack__`` (a torch tensor, a cupy or numpy array...), no
    copy.  A CPU tensor gives an array on ``cpu(0)``, a CUDA tensor one on its
    ``cuda(n)`` (where cupy and the GPU are present).

    Raises
    ------
    TeccError
        For an object without ``__dlpack__`` (a bare capsule included: pass the
        tensor itself), a device other than the CPU and CUDA, or a non-contiguous
        tensor (tecc's kernels read C-contiguous arrays: ``t.contiguous()``).
    """
    if not hasattr(tensor, "__dlpack__") or not hasattr(tensor, "__dlpack_device__"):
        raise TeccError(f"nd.from_dlpack: {type(tensor).__name__} has no __dlpack__; pass the tensor itself (a "
                        "torch tensor, a cupy or numpy array), not a capsule")
    if isinstance(tensor, NDArray):
        return tensor
    data, dev = dlpack_data(tensor)
    if not data.flags.c_contiguous:
        raise TeccError(f"nd.from_dlpack: the tensor of shape {tuple(data.shape)} is not C-contiguous (a transposed "
                        "or sliced view); pass a contiguous one (t.contiguous())")
    return NDArray(data, _canonical(data.dtype), dev)
