"""JSON for IR and tensor-expression objects (TVM's ``tvm.ir.save_json`` /
``load_json``).

``save_json(obj)`` writes the graph of objects reachable from ``obj`` -- expressions,
statements, buffers, functions, tensors and their operations, schedules -- as JSON: a
table of objects, each with its class and fields, and references between them, so
an object shared in memory (a loop variable, a tensor) is shared after loading too.
``load_json`` rebuilds it, instantiating only tecc's own IR and tensor-expression
classes: a JSON document cannot make it run anything else.
"""
from __future__ import annotations

import dataclasses
import enum
import importlib
import json
import math

from ..errors import TeccError
from ..runtime.container import Array, Map

_FORMAT = "tecc.json/1"
#: the packages whose classes a document may name
_ALLOWED = ("tecc.tir.", "tecc.te.", "tecc.runtime.container")


class SerializeError(TeccError, ValueError):
    """An object that cannot be written as JSON, or a document that is not tecc's."""


def _class_name(cls):
    return f"{cls.__module__}:{cls.__qualname__}"


def _fields(obj):
    """The state of ``obj``: a dataclass' fields, else its ``__dict__`` and slots."""
    if dataclasses.is_dataclass(obj):
        return {f.name: getattr(obj, f.name) for f in dataclasses.fields(obj)}
    state = dict(getattr(obj, "__dict__", {}))
    for cls in type(obj).__mro__:
        for name in getattr(cls, "__slots__", ()):
            if name not in state and hasattr(obj, name):
                state[name] = getattr(obj, name)
    return state


def save_json(obj) -> str:
    """``obj`` (and everything it refers to) as a JSON string."""
    nodes, memo = [], {}

    def value(v):
        if v is None or isinstance(v, (bool, str)):
            return v
        if isinstance(v, enum.Enum):
            return {"enum": _class_name(type(v)), "name": v.name}
        if isinstance(v, int):
            return v
        if isinstance(v, float):
            return v if math.isfinite(v) else {"float": repr(v)}
        if isinstance(v, Map):
            return {"map": [[value(k), value(x)] for k, x in v.items()]}
        if isinstance(v, Array):
            return {"array": [value(x) for x in v]}
        if isinstance(v, tuple):
            return {"tuple": [value(x) for x in v]}
        if isinstance(v, list):
            return {"list": [value(x) for x in v]}
        if isinstance(v, dict):
            return {"dict": [[value(k), value(x)] for k, x in v.items()]}
        return {"ref": node(v)}

    def node(v):
        key = id(v)
        if key in memo:
            return memo[key]
        cls = type(v)
        if not cls.__module__.startswith(_ALLOWED):
            raise SerializeError(f"save_json: cannot write a {cls.__module__}.{cls.__qualname__} ({v!r}); "
                                 "only tecc's IR and tensor-expression objects can be saved")
        k = memo[key] = len(nodes)
        nodes.append(None)
        nodes[k] = {"type": _class_name(cls), "fields": {name: value(x) for name, x in _fields(v).items()}}
        return k

    root = value(obj)
    return json.dumps({"format": _FORMAT, "root": root, "nodes": nodes})


def load_json(text: str):
    """The object :func:`save_json` wrote."""
    try:
        doc = json.loads(text)
    except (TypeError, ValueError) as err:
        raise SerializeError(f"load_json: not JSON ({err})") from None
    if not isinstance(doc, dict) or doc.get("format") != _FORMAT:
        raise SerializeError("load_json: not a document written by tecc's save_json")
    entries = doc["nodes"]
    objs = [None] * len(entries)

    def resolve(name):
        module, _, qual = name.partition(":")
        if not (module + ".").startswith(_ALLOWED) and not module.startswith(_ALLOWED):
            raise SerializeError(f"load_json: the document names {module}.{qual}, which is not a tecc IR class")
        obj = importlib.import_module(module)
        for part in qual.split("."):
            obj = getattr(obj, part)
        return obj

    def value(v):
        if isinstance(v, dict):
            if "ref" in v:
                return build(v["ref"])
            if "tuple" in v:
                return tuple(value(x) for x in v["tuple"])
            if "list" in v:
                return [value(x) for x in v["list"]]
            if "dict" in v:
                return {value(k): value(x) for k, x in v["dict"]}
            if "map" in v:
                return Map((value(k), value(x)) for k, x in v["map"])
            if "array" in v:
                return Array(value(x) for x in v["array"])
            if "enum" in v:
                return resolve(v["enum"])[v["name"]]
            if "float" in v:
                return float(v["float"])
            raise SerializeError(f"load_json: unknown value {v!r}")
        return v

    def build(k):
        if objs[k] is not None:
            return objs[k]
        entry = entries[k]
        cls = resolve(entry["type"])
        if not isinstance(cls, type):
            raise SerializeError(f"load_json: {entry['type']} is not a class")
        obj = objs[k] = cls.__new__(cls)
        for name, v in entry["fields"].items():
            object.__setattr__(obj, name, value(v))
        return obj

    return value(doc["root"])
