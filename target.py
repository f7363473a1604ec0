"""Compilation targets, written as TVM-style strings.

>>> t = Target("llvm -mcpu=skylake-avx512 -mattr=+avx2,+fma")
>>> t.kind, t.attrs["mcpu"], t.attrs["mattr"]
('llvm', 'skylake-avx512', ['+avx2', '+fma'])
>>> t.cpu_cflags()
['-march=skylake-avx512', '-mavx2', '-mfma']

``"llvm"`` and ``"c"`` both select tecc's C backend (the spelling is kept so that TVM
code runs unchanged); ``"cuda"`` selects the CUDA backend.
"""
from __future__ import annotations

import re
import threading

from .errors import TargetError, warn_user

#: kind -> keys (the device family the kind compiles for)
_KINDS = {
    "llvm": ("cpu",),
    "c": ("cpu",),
    "cuda": ("cuda", "gpu"),
}

#: options whose value is a comma-separated list
_LIST_OPTIONS = ("mattr", "keys", "libs")

#: the -libs= lists already warned about (once a process each)
_WARNED_LIBS: set = set()

_CUDA_ARCH_RE = re.compile(r"^sm_\d+[af]?$")

_OPTION_RE = re.compile(r"^-{1,2}([A-Za-z_][A-Za-z0-9_\-]*)(?:=(.*))?$")


class TargetKind(str):
    """The kind of a target (``"llvm"``, ``"c"``, ``"cuda"``); a string with a
    ``.name`` as in TVM (``target.kind.name == "cuda"``)."""

    __slots__ = ()

    @property
    def name(self) -> str:
        return str(self)


class Target:
    """A compilation target parsed from a TVM-style string.

    Parameters
    ----------
    target : str or Target
        ``"<kind> [-option[=value] ...]"``, e.g. ``"llvm -mcpu=native"`` or
        ``"cuda -arch=sm_90"``.
    host : str or Target, optional
        The host target of a GPU target (defaults to ``"llvm"`` for ``cuda``).

    Attributes
    ----------
    kind : TargetKind
        ``"llvm"``, ``"c"`` or ``"cuda"``.
    keys : tuple of str
        The device family: ``("cpu",)`` or ``("cuda", "gpu")``.
    attrs : dict
        Options by name without the dash; ``mattr``/``libs``/``keys`` are lists,
        options without a value are ``True``.
    """

    def __init__(self, target, host=None):
        if isinstance(target, Target):
            self.kind = target.kind
            self.attrs = dict(target.attrs)
            self._order = list(target._order)
            self.host = target.host if host is None else Target.canon(host)
            self.keys = target.keys
            return
        if not isinstance(target, str):
            raise TargetError(f"a target must be a string such as 'llvm' or 'cuda', got {target!r}")
        tokens = target.split()
        if not tokens:
            raise TargetError(f"empty target string {target!r}; supported kinds: {', '.join(self.list_kinds())}")
        kind = tokens[0]
        if kind not in _KINDS:
            raise TargetError(
                f"unknown target kind {kind!r} in target {target!r}; "
                f"supported kinds: {', '.join(self.list_kinds())}")
        self.kind = TargetKind(kind)
        self.attrs = {}
        self._order = []
        for tok in tokens[1:]:
            m = _OPTION_RE.match(tok)
            if m is None:
                raise TargetError(
                    f"cannot parse option {tok!r} of target {target!r}; options look like "
                    "'-mcpu=native' or '-arch=sm_90'")
            key, value = m.group(1), m.group(2)
            if value is None:
                parsed = True
            elif key in _LIST_OPTIONS:
                parsed = [v for v in value.split(",") if v]
            else:
                parsed = value
            if key not in self.attrs:
                self._order.append(key)
            self.attrs[key] = parsed
        keys = self.attrs.get("keys")
        self.keys = tuple(keys) if isinstance(keys, list) and keys else _KINDS[kind]
        libs = tuple(self.attrs.get("libs") or ())
        if libs and libs not in _WARNED_LIBS:
            _WARNED_LIBS.add(libs)
            warn_user(f"target {target!r}: -libs={','.join(libs)} is ignored: tecc builds call no vendor library "
                      "(cuDNN, cuBLAS, CBLAS), every kernel is generated; for a BLAS product inside a TE "
                      "graph use tecc.contrib.cblas")
        # a GPU target without an explicit host resolves to llvm in ``host_target``
        self.host = Target.canon(host) if host is not None else None

    # construction ---------------------------------------------------------------
    @staticmethod
    def canon(target) -> "Target":
        """A :class:`Target` from a Target or a string (the one way every API
        accepts targets)."""
        if isinstance(target, Target):
            return target
        return Target(target)

    @staticmethod
    def list_kinds() -> list:
        """The supported target kinds."""
        return list(_KINDS)

    # the target of a ``with`` block ---------------------------------------------
    def __enter__(self) -> "Target":
        _scope_stack().append(self)
        return self

    def __exit__(self, *exc) -> bool:
        stack = _scope_stack()
        assert stack and stack[-1] is self, "Target scopes exited out of order"
        stack.pop()
        return False

    @staticmethod
    def current(allow_none: bool = True):
        """The target of the innermost ``with Target(...)`` block, or None.

        Raises
        ------
        TargetError
            When there is none and ``allow_none`` is False.
        """
        stack = _scope_stack()
        if stack:
            return stack[-1]
        if not allow_none:
            raise TargetError("no target is set: pass target=... or enter `with tecc.target.Target(...)`")
        return None

    # queries --------------------------------------------------------------------
    @property
    def mcpu(self):
        return self.attrs.get("mcpu")

    @property
    def mattr(self) -> list:
        return list(self.attrs.get("mattr", []))

    @property
    def arch(self):
        return self.attrs.get("arch")

    @property
    def cuda_arch(self):
        """The ``-arch`` of a CUDA target (``"sm_90"``), checked, or None when absent
        (the local GPU's architecture is used then)."""
        arch = self.attrs.get("arch")
        if arch is None:
            return None
        if not isinstance(arch, str) or _CUDA_ARCH_RE.match(arch) is None:
            raise TargetError(f"unknown CUDA architecture {arch!r} in target {str(self)!r}; "
                              "write it as -arch=sm_XX, e.g. -arch=sm_80 or -arch=sm_90")
        return arch

    @property
    def thread_warp_size(self) -> int:
        """The threads of a warp (TVM's target attribute): 32 on CUDA, 1 on CPUs."""
        if self.kind != "cuda":
            return 1
        from .tir.analysis.verify_gpu import GPULimits  # noqa: PLC0415 -- the GPU's facts live there

        return GPULimits.warp_size

    @property
    def max_num_threads(self) -> int:
        """The most threads of a block (TVM's target attribute; ``-max_num_threads=``
        where given): the architecture's on CUDA, 1 on CPUs."""
        if "max_num_threads" in self.attrs:
            return int(self.attrs["max_num_threads"])
        if self.kind != "cuda":
            return 1
        from .tir.analysis.verify_gpu import GPULimits  # noqa: PLC0415

        return GPULimits.max_threads_per_block

    @property
    def host_target(self) -> "Target":
        """The host target (``llvm`` for GPU targets, the target itself for CPUs)."""
        if self.host is not None:
            return self.host
        return self if "cpu" in self.keys else Target("llvm")

    def cpu_cflags(self) -> list:
        """C compiler flags selecting the CPU of this target.

        ``-mcpu=native`` and ``-mcpu=<cpu>`` become ``-march=...``; each
        ``-mattr=+feat`` becomes ``-mfeat`` and ``-feat`` becomes ``-mno-feat``.
        """
        flags = []
        mcpu = self.attrs.get("mcpu")
        if isinstance(mcpu, str) and mcpu:
            flags.append(f"-march={mcpu}")
        for feat in self.mattr:
            if feat.startswith("+"):
                flags.append(f"-m{feat[1:]}")
            elif feat.startswith("-"):
                flags.append(f"-mno-{feat[1:]}")
            else:
                flags.append(f"-m{feat}")
        return flags

    def vector_bytes(self) -> int:
        """Width in bytes of this CPU target's SIMD registers (64 for AVX-512, 32 for
        AVX/AVX2, 16 for SSE/NEON and when no ``-mcpu`` is given)."""
        feats = {f[1:] for f in self.mattr if f.startswith("+")}
        mcpu = self.attrs.get("mcpu")
        if mcpu == "native":
            feats |= _native_cpu_flags()
        elif isinstance(mcpu, str):
            m = mcpu.lower()
            if m in _AVX512_CPUS or "avx512" in m:
                feats.add("avx512f")
            elif m in _AVX2_CPUS:
                feats.add("avx2")
        if "avx512f" in feats:
            return 64
        if feats & {"avx", "avx2"}:
            return 32
        return 16

    # printing and comparison ---------------------------------------------------
    def __str__(self) -> str:
        parts = [str(self.kind)]
        for key in self._order:
            value = self.attrs[key]
            if value is True:
                parts.append(f"-{key}")
            elif isinstance(value, list):
                parts.append(f"-{key}={','.join(value)}")
            else:
                parts.append(f"-{key}={value}")
        return " ".join(parts)

    def __repr__(self) -> str:
        return f"Target({str(self)!r})"

    def __eq__(self, other) -> bool:
        if isinstance(other, str):
            try:
                other = Target(other)
            except TargetError:
                return False
        return isinstance(other, Target) and str(self) == str(other)

    def __hash__(self) -> int:
        return hash(str(self))


_scopes = threading.local()


def _scope_stack() -> list:
    stack = getattr(_scopes, "stack", None)
    if stack is None:
        stack = _scopes.stack = []
    return stack


def cuda(model: str = "unknown", arch: str | None = None, options=None) -> Target:
    """A CUDA target (TVM's ``tvm.target.cuda()``), usable as a context manager.

    Parameters
    ----------
    model : str
        The GPU model (``-model=``), kept as an attribute; "unknown" adds nothing.
    arch : str, optional
        ``"sm_90"`` and the like (``-arch=``); without it, builds pick the device's.
    options : str or list of str, optional
        More options, e.g. ``["-max_num_threads=1024"]``.
    """
    parts = ["cuda"]
    if model != "unknown":
        parts.append(f"-model={model}")
    if arch is not None:
        parts.append(f"-arch={arch}")
    if isinstance(options, str):
        options = options.split()
    parts += list(options or [])
    return Target(" ".join(parts))


def create(target) -> Target:
    """``Target(target)``: TVM's older spelling (``tvm.target.create``), which its
    0.x tests and tutorials still call."""
    return Target(target)


def is_cpu(target) -> bool:
    """True if ``target`` (a Target or a string) compiles for the CPU."""
    return "cpu" in Target.canon(target).keys


def is_cuda(target) -> bool:
    """True if ``target`` (a Target or a string) compiles for CUDA GPUs."""
    return Target.canon(target).kind == "cuda"


_AVX512_CPUS = {
    "skylake-avx512", "cascadelake", "cooperlake", "icelake-server", "icelake-client", "tigerlake",
    "sapphirerapids", "emeraldrapids", "graniterapids", "znver4", "znver5", "x86-64-v4",
}
_AVX2_CPUS = {
    "haswell", "broadwell", "skylake", "alderlake", "raptorlake", "meteorlake", "znver1", "znver2",
    "znver3", "x86-64-v3", "sandybridge", "ivybridge", "core-avx2", "core-avx-i", "corei7-avx", "bdver4",
    "arrowlake", "lunarlake",
}


def _native_cpu_flags() -> set:
    """CPU feature flags of this machine (empty where they cannot be read)."""
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                if line.startswith("flags"):
                    return set(line.split(":", 1)[1].split())
    except OSError:
        pass
    return set()
