"""What a compiled function expects of its arguments, and the one check of a call.

A :class:`Signature` lists one :class:`ArgSpec` per parameter.  C and CUDA modules
alike check every call with :meth:`Signature.bind`, which matches the arguments to
the parameters, checks ranks, shapes and dtypes, binds the symbolic sizes (``n`` in
``A: float32[n, 4]``) and fills in scalar parameters left out by the caller from the
shapes they size.  Signatures are plain data, written into exported modules as JSON.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import RuntimeArgError
from . import dtypes


@dataclass(frozen=True)
class ArgSpec:
    """What one parameter of a built function expects.

    ``kind == "buffer"``: an array of ``dtype`` whose ``shape`` entries are ints,
    names of scalar parameters (symbolic dims, bound at call time) or ``None`` (a
    composite extent that is not checked; ``shape_text`` shows it).  ``written``:
    the function stores to it.
    ``kind == "scalar"``: an integer parameter named ``name`` that the runtime binds
    from ``binding = (parameter index, dim)`` when the caller leaves it out.
    """

    kind: str
    name: str
    dtype: str
    shape: tuple = ()
    shape_text: tuple = ()
    written: bool = False
    binding: tuple | None = None

    def to_json(self) -> dict:
        return {"kind": self.kind, "name": self.name, "dtype": self.dtype, "shape": list(self.shape),
                "shape_text": list(self.shape_text), "written": self.written,
                "binding": list(self.binding) if self.binding is not None else None}

    @staticmethod
    def from_json(d: dict) -> "ArgSpec":
        return ArgSpec(d["kind"], d["name"], d["dtype"], tuple(d["shape"]), tuple(d["shape_text"]),
                       bool(d["written"]), tuple(d["binding"]) if d["binding"] is not None else None)

    def describe_shape(self) -> str:
        dims = [str(t) for t in self.shape_text] if self.shape_text else [str(s) for s in self.shape]
        return "(" + ", ".join(dims) + ("," if len(dims) == 1 else "") + ")"


@dataclass(frozen=True)
class Signature:
    """The parameters of the function ``name``, in order."""

    name: str
    args: tuple

    def to_json(self) -> dict:
        return {"name": self.name, "args": [a.to_json() for a in self.args]}

    @staticmethod
    def from_json(d: dict) -> "Signature":
        return Signature(d["name"], tuple(ArgSpec.from_json(a) for a in d["args"]))

    def user_params(self) -> list:
        """Indices of the parameters a caller passes (bound scalars may be left out)."""
        return [i for i, a in enumerate(self.args) if not (a.kind == "scalar" and a.binding is not None)]

    def text(self) -> str:
        """``"A, B, C"``: the parameters a caller passes."""
        return ", ".join(self.args[i].name for i in self.user_params())

    def written(self) -> list:
        """Indices of the buffer parameters the function writes."""
        return [i for i, a in enumerate(self.args) if a.kind == "buffer" and a.written]

    # checking a call -------------------------------------------------------------
    def bind(self, args, as_array):
        """Check ``args`` and bind the symbolic sizes.

        ``as_array(value, index, spec)`` turns one buffer argument into the array the
        module works with (it needs ``.ndim``, ``.shape`` and ``.dtype``) or raises.

        Returns
        -------
        (dict, dict)
            ``{param index: array}`` and ``{param index: int}`` (every scalar).
        """
        specs = self.args
        user = self.user_params()
        if len(args) == len(specs):
            given = dict(enumerate(args))
        elif len(args) == len(user):
            given = dict(zip(user, args))
        else:
            raise RuntimeArgError(f"{self.name}() takes {len(user)} arguments ({self.text()}), got {len(args)}")
        arrays = {}
        bound = {}  # symbolic dim name -> (value, where)
        for i, spec in enumerate(specs):
            if spec.kind == "buffer":
                arrays[i] = arr = as_array(given[i], i, spec)
                self._check_shape(arr, i, spec, bound)
        values = {}
        for i, spec in enumerate(specs):
            if spec.kind != "buffer":
                values[i] = self._scalar(given.get(i), i, spec, bound)
        return arrays, values

    def _check_shape(self, arr, i, spec, bound) -> None:
        what = f"argument {i} ({spec.name!r})"
        if arr.ndim != len(spec.shape):
            raise RuntimeArgError(
                f"{self.name}: {what} must have {len(spec.shape)} dimensions {spec.describe_shape()}, "
                f"got shape {tuple(arr.shape)}")
        for d, (want, got) in enumerate(zip(spec.shape, arr.shape)):
            if isinstance(want, int):
                if want != got:
                    raise RuntimeArgError(
                        f"{self.name}: {what} must have shape {spec.describe_shape()}, got {tuple(arr.shape)} "
                        f"(dimension {d} is {got}, expected {want})")
            elif isinstance(want, str):
                if want in bound and bound[want][0] != got:
                    raise RuntimeArgError(
                        f"{self.name}: {what} has dimension {d} = {got}, but the symbolic size {want!r} is "
                        f"{bound[want][0]} from {bound[want][1]}; every use of {want!r} must have the same size")
                bound.setdefault(want, (int(got), f"{what} dimension {d}"))

    def _scalar(self, value, i, spec, bound):
        if spec.dtype.startswith(("float", "bfloat")):  # a float parameter (te.var("s", "float32"))
            if value is None:
                raise RuntimeArgError(f"{self.name}() needs argument {i} ({spec.name!r}), a {spec.dtype} scalar")
            if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.integer, np.floating)):
                raise RuntimeArgError(
                    f"{self.name}: argument {i} ({spec.name!r}) must be a number ({spec.dtype}), got "
                    f"{type(value).__name__}")
            return float(value)
        if value is not None:
            if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
                raise RuntimeArgError(
                    f"{self.name}: argument {i} ({spec.name!r}) must be an int, got {type(value).__name__}")
            value = int(value)
            if spec.name in bound and bound[spec.name][0] != value:
                raise RuntimeArgError(
                    f"{self.name}: argument {i} ({spec.name!r}) is {value}, but {bound[spec.name][1]} says "
                    f"{bound[spec.name][0]}")
        elif spec.name in bound:
            value = bound[spec.name][0]
        else:  # pragma: no cover - every unbound scalar is a user parameter
            raise RuntimeArgError(f"{self.name}: no value for {spec.name!r}")
        if spec.dtype == "handle":  # an address, passed as it is
            lo, hi = 0, 2**64 - 1
        else:
            lo, hi = dtypes.int_range(spec.dtype)
        if not lo <= value <= hi:
            raise RuntimeArgError(f"{self.name}: {spec.name!r} = {value} does not fit {spec.dtype}")
        return value

    def check_array(self, arr, i: int, spec: ArgSpec) -> None:
        """The checks every array argument gets: dtype, C-contiguous, and writable
        where the function writes it."""
        what = f"argument {i} ({spec.name!r})"
        if arr.dtype != dtypes.storage(spec.dtype) and arr.dtype.name != spec.dtype:
            raise RuntimeArgError(
                f"{self.name}: {what} must have dtype {spec.dtype}, got {arr.dtype.name}; "
                f"convert it with .astype('{spec.dtype}')")
        if not arr.flags.c_contiguous:
            raise RuntimeArgError(
                f"{self.name}: {what} is not C-contiguous (a transposed or sliced view?); "
                "pass a contiguous copy (np.ascontiguousarray) and, for an output, copy the result back")
        if isinstance(arr, np.ndarray) and spec.written and not arr.flags.writeable:
            raise RuntimeArgError(f"{self.name}: {what} is written by the function but is read-only")
