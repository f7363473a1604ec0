"""Check a CUDA kernel against the limits of the GPU before it is compiled.

:func:`verify_gpu` raises :class:`~tecc.errors.VerifyError` -- a user-facing
error: the schedule asks for more than the hardware has -- naming the kernel,
the thread axis or the buffer (buffers are named after their stage, e.g.
``A.shared``) and what to change.  :func:`gpu_limits` gives the limits of one
compute capability.

Checked:

* the kernel binds at least one axis to a thread index;
* each ``threadIdx`` extent and the threads per block (their product), when
  constant;
* the ``blockIdx`` extents (grid size), when constant;
* the shared memory per block (the sum of the ``shared`` allocations) against
  the opt-in limit -- above ``max_shared_bytes`` the kernel is launched with
  dynamic shared memory, which the launcher opts into;
* the local memory per thread (the sum of the ``local`` allocations);
* shared and local allocations have constant sizes.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass

from ...errors import TargetError, VerifyError
from ...runtime.launch import MAX_BLOCK_DIMS, MAX_GRID_DIMS, MAX_THREADS_PER_BLOCK  # what any launch allows
from .. import dtype as _dt
from .. import expr as E
from .. import stmt as S
from .. import keys
from .buffers import allocations, buffer_size, buffers_written
from .threads import thread_extent_lists

KIB = 1024
MAX_LOCAL_BYTES = 64 * KIB


@dataclass(frozen=True)
class GPULimits:
    """Hardware limits of one CUDA compute capability (per block unless noted).

    Attributes
    ----------
    arch : str
        ``"sm_80"``, ``"sm_90"``, ...
    max_threads_per_block, max_thread_x, max_thread_y, max_thread_z : int
        Threads per block, and per ``threadIdx`` dimension.
    max_grid_x, max_grid_y_z : int
        Blocks per grid along x, and along y or z.
    max_shared_bytes : int
        Static shared memory per block (48 KiB); more needs the dynamic opt-in.
    max_shared_bytes_optin : int
        Shared memory per block with the opt-in.
    max_local_bytes : int
        Local memory per thread that tecc accepts.
    warp_size : int
        Threads per warp.
    """

    arch: str
    max_shared_bytes_optin: int
    max_threads_per_block: int = MAX_THREADS_PER_BLOCK
    max_thread_x: int = MAX_BLOCK_DIMS[0]
    max_thread_y: int = MAX_BLOCK_DIMS[1]
    max_thread_z: int = MAX_BLOCK_DIMS[2]
    max_grid_x: int = MAX_GRID_DIMS[0]
    max_grid_y_z: int = MAX_GRID_DIMS[1]
    max_shared_bytes: int = 48 * KIB
    max_local_bytes: int = MAX_LOCAL_BYTES
    warp_size: int = 32

    def verify_kwargs(self) -> dict:
        """The keyword arguments of :func:`verify_gpu` for these limits."""
        d = asdict(self)
        del d["warp_size"]
        return d


# shared memory per block with the opt-in, from the CUDA programming guide's
# table of compute capabilities
_SHARED_OPTIN_KIB = {
    75: 64,
    80: 163,
    86: 99,
    87: 163,
    89: 99,
    90: 227,
    100: 227,
    120: 99,
}


def arch_number(arch) -> int | None:
    """``"sm_90"`` (or ``"sm_90a"``, ``"9.0"``, ``90``) -> ``90``; None when it is not an architecture."""
    if isinstance(arch, int) and not isinstance(arch, bool):
        return arch
    if not isinstance(arch, str):
        return None
    text = arch.strip().lower()
    for prefix in ("sm_", "sm", "compute_"):
        if text.startswith(prefix):
            text = text[len(prefix):]
            break
    text = text.rstrip("af")  # sm_90a, sm_100f: same limits
    if "." in text:  # "8.0"
        major, _, minor = text.partition(".")
        text = major + minor
    return int(text) if text.isdigit() else None


def gpu_limits(arch) -> GPULimits:
    """The limits of the GPU architecture ``arch``.

    Parameters
    ----------
    arch : str or int
        ``"sm_80"``, ``"sm_86"``, ``"sm_89"``, ``"sm_90"`` (also ``"sm_75"``,
        ``"sm_87"``, ``"sm_100"``, ``"sm_120"``); ``"80"``, ``"8.0"`` and ``80`` work too.

    Returns
    -------
    GPULimits

    Raises
    ------
    TargetError
        If ``arch`` is not a known compute capability.
    """
    number = arch_number(arch)
    if number not in _SHARED_OPTIN_KIB:
        known = ", ".join(f"sm_{k}" for k in _SHARED_OPTIN_KIB)
        raise TargetError(f"unknown GPU architecture {arch!r}; known: {known}")
    return GPULimits(arch=f"sm_{number}", max_shared_bytes_optin=_SHARED_OPTIN_KIB[number] * KIB)


# ----------------------------------------------------------------------------
# what the kernel uses
# ----------------------------------------------------------------------------

def _const(e):
    return e.value if isinstance(e, E.IntImm) else None


def _kib(nbytes) -> str:
    return f"{nbytes / KIB:g} KiB"


def _buffer_bytes(label, buf, what, fix):
    size = _const(buffer_size(buf))
    if size is None:
        raise VerifyError(
            f"{label}: the {what} buffer {buf.name!r} has the non-constant size "
            f"{buffer_size(buf)}; {fix}")
    return size * _dt.parse(buf.dtype).bytes


def verify_gpu(kernel: S.PrimFunc, max_threads_per_block: int = MAX_THREADS_PER_BLOCK,
               max_shared_bytes: int = 48 * 1024, max_shared_bytes_optin: int = 227 * 1024,
               max_thread_x: int = MAX_BLOCK_DIMS[0], max_thread_y: int = MAX_BLOCK_DIMS[1],
               max_thread_z: int = MAX_BLOCK_DIMS[2], max_grid_y_z: int = MAX_GRID_DIMS[1], *,
               max_local_bytes: int = MAX_LOCAL_BYTES, max_grid_x: int = MAX_GRID_DIMS[0],
               arch: str | None = None) -> None:
    """Raise :class:`~tecc.errors.VerifyError` if ``kernel`` exceeds the GPU's limits.

    Parameters
    ----------
    kernel : PrimFunc
        A device function (``thread_extent`` attributes) or a function before
        host/device splitting (``THREAD_BINDING`` loops).
    max_threads_per_block : int
        Limit of the product of the ``threadIdx`` extents.
    max_shared_bytes : int
        Static shared memory per block; more is allowed up to
        ``max_shared_bytes_optin`` (the launcher opts into dynamic shared memory).
    max_shared_bytes_optin : int
        Shared memory per block with the opt-in.
    max_thread_x, max_thread_y, max_thread_z : int
        Limits of each ``threadIdx`` extent.
    max_grid_y_z : int
        Limit of the ``blockIdx.y`` and ``blockIdx.z`` extents.
    max_local_bytes : int
        Local memory per thread.
    max_grid_x : int
        Limit of the ``blockIdx.x`` extent.
    arch : str, optional
        Named in the messages (``"sm_80"``); :meth:`GPULimits.verify_kwargs` passes it.

    Raises
    ------
    VerifyError
        Naming the kernel and the axis or buffer over the limit.
    """
    # name the kernel and what it computes: the stages are what the user scheduled
    stages = [b.name for b in buffers_written(kernel.body, (keys.GLOBAL,))]
    label = f"kernel {kernel.name!r}" + (f" (computing {', '.join(stages)})" if stages else "")
    on = f" of {arch}" if arch else ""
    extents = thread_extent_lists(kernel)
    if not extents:
        raise VerifyError(
            f"{label} binds no axis to a GPU thread index, so it would run as one thread; "
            "bind its outer axes with s[T].bind(axis, te.thread_axis('blockIdx.x')) and an inner one "
            "to te.thread_axis('threadIdx.x')")

    # threads per block ----------------------------------------------------------
    per_dim = {"threadIdx.x": max_thread_x, "threadIdx.y": max_thread_y, "threadIdx.z": max_thread_z,
               "blockIdx.x": max_grid_x, "blockIdx.y": max_grid_y_z, "blockIdx.z": max_grid_y_z}
    block = {}  # threadIdx tag -> constant extent, or None when symbolic
    for tag, exts in extents.items():
        consts = [_const(e) for e in exts]
        known = [c for c in consts if c is not None]
        if tag.startswith("threadIdx"):
            block[tag] = max(known) if len(known) == len(consts) else None
        limit = per_dim.get(tag)
        if not known or limit is None or max(known) <= limit:
            continue
        if tag.startswith("threadIdx"):
            fix = f"split the axis bound to {tag} by a smaller factor"
        else:
            fix = f"bind a different axis to {tag} or move work from the grid into each block"
        raise VerifyError(f"{label}: {tag} has extent {max(known)}, over the limit of {limit}{on}; {fix}")
    if block and all(v is not None for v in block.values()):
        threads = 1
        for v in block.values():
            threads *= v
        if threads > max_threads_per_block:
            dims = " x ".join(f"{tag}={v}" for tag, v in sorted(block.items()))
            raise VerifyError(
                f"{label} uses {threads} threads per block ({dims}), over the limit of "
                f"{max_threads_per_block}{on}; use smaller split factors for the axes bound to threadIdx")

    # shared memory per block ----------------------------------------------------
    fix = "split the axes its stage covers by constant factors so its tile has a constant size"
    shared = [(buf, _buffer_bytes(label, buf, "shared", fix)) for buf in allocations(kernel.body, (keys.SHARED,))]
    total = sum(n for _, n in shared)
    limit = max(max_shared_bytes, max_shared_bytes_optin)
    if total > limit:
        parts = ", ".join(f"{buf.name} {_kib(n)}" for buf, n in sorted(shared, key=lambda x: -x[1]))
        raise VerifyError(
            f"{label} uses {_kib(total)} of shared memory per block ({parts}), over the limit of "
            f"{_kib(limit)}{on}; use smaller tiles for the shared stages (smaller split factors "
            "of the axes they are computed at)")

    # local memory per thread ----------------------------------------------------
    fix = "make the extents of the loops its stage is computed under constant"
    per_thread = allocations(kernel.body, (keys.LOCAL, keys.REGISTER))
    local = [(buf, _buffer_bytes(label, buf, "local", fix)) for buf in per_thread]
    total = sum(n for _, n in local)
    if total > max_local_bytes:
        parts = ", ".join(f"{buf.name} {_kib(n)}" for buf, n in sorted(local, key=lambda x: -x[1]))
        raise VerifyError(
            f"{label} uses {_kib(total)} of local memory per thread ({parts}), over the limit of "
            f"{_kib(max_local_bytes)}; compute the local stages at a deeper loop so each thread holds "
            "a smaller tile")


__all__ = ["GPULimits", "arch_number", "gpu_limits", "verify_gpu"]
