"""Malformed models for the importer: ONNX's node conformance models bent one way at a
time (an operand emptied, grown or made a scalar, an integer operand made negative or
huge, an attribute set to a value outside its range, an input dropped or added).

The importer must import each mutant or refuse it with a :class:`~tecc.errors.TeccError`
naming what is wrong; a refusal marked ``internal`` (a converter failed on a node ONNX
finds valid, :mod:`tecc.graph.frontend.onnx.diagnose`) counts as a fault of tecc's,
as any other exception does. Used by ``test_onnx_mutants.py``; ``python
onnx_mutants.py [name filter]`` runs every case's mutants and prints the faults."""
from __future__ import annotations

import copy
import sys
import warnings

import numpy as np

#: the values an attribute of each kind is set to (one mutant each)
_INTS = (-1, 0, 5, 1 << 40)
_FLOATS = (float("nan"), -1.0, 0.0)


def with_initializers(case):
    """``case``'s model with every graph input fed a plain array in its first data set
    made an initializer of that value (the importer reads a constant operand's value,
    and a mutant bends values)."""
    from onnx import numpy_helper  # noqa: PLC0415

    model = copy.deepcopy(case.model)
    graph = model.graph
    inputs, _ = case.data_sets[0]
    kept = []
    for info, value in zip(list(graph.input), inputs):
        if isinstance(value, np.ndarray) and value.dtype != object:
            graph.initializer.append(numpy_helper.from_array(value, info.name))
        else:
            kept.append(info)
    del graph.input[:]
    graph.input.extend(kept)
    return model


def _bent_values(arr):
    """``(label, array)`` of the values an initializer ``arr`` is replaced by."""
    yield "empty", np.zeros((0,), arr.dtype)
    if arr.ndim < 6:
        yield "grown", np.stack([arr, arr])
    if arr.size:
        yield "scalar", arr.reshape(-1)[:1].reshape(())
    if arr.dtype.kind in "iu" and arr.size:
        yield "negative", (-np.abs(arr.astype("int64")) - 3).astype(arr.dtype)
        yield "huge", np.full_like(arr, np.iinfo(arr.dtype).max // 2)


def _bent_attributes(attr):
    """The attributes ``attr`` (an AttributeProto) is replaced by."""
    from onnx import AttributeProto, helper  # noqa: PLC0415

    kind = attr.type
    if kind == AttributeProto.INT:
        return [helper.make_attribute(attr.name, v) for v in _INTS]
    if kind == AttributeProto.INTS:
        n = max(len(attr.ints), 1)
        return [helper.make_attribute(attr.name, v, attr_type=kind)
                for v in ([], [-7] * n, list(attr.ints) * 2 + [1], [0] * n)]
    if kind == AttributeProto.FLOAT:
        return [helper.make_attribute(attr.name, v) for v in _FLOATS]
    if kind == AttributeProto.FLOATS:
        return [helper.make_attribute(attr.name, v, attr_type=kind) for v in ([], [float("nan")])]
    if kind == AttributeProto.STRING:
        return [helper.make_attribute(attr.name, "bogus")]
    return []


def _text(attr):
    from onnx import helper  # noqa: PLC0415

    value = helper.get_attribute_value(attr)
    return value.decode() if isinstance(value, bytes) else value


def mutants(model):
    """``(label, model)`` of every mutant of ``model`` (copies; ``model`` is left as it is)."""
    from onnx import numpy_helper  # noqa: PLC0415

    graph = model.graph
    for i, init in enumerate(graph.initializer):
        arr = numpy_helper.to_array(init)
        for label, value in _bent_values(arr):
            bent = copy.deepcopy(model)
            bent.graph.initializer[i].CopyFrom(numpy_helper.from_array(value, init.name))
            yield f"initializer {init.name!r} {label}", bent
    for n, node in enumerate(graph.node):
        for a, attr in enumerate(node.attribute):
            for value in _bent_attributes(attr):
                bent = copy.deepcopy(model)
                bent.graph.node[n].attribute[a].CopyFrom(value)
                yield f"node {n} {attr.name}={_text(value)!r}", bent
        if len(node.input) > 1:
            bent = copy.deepcopy(model)
            del bent.graph.node[n].input[-1]
            yield f"node {n} without its last input", bent
        bent = copy.deepcopy(model)
        bent.graph.node[n].input.append(node.input[0] if node.input else "")
        yield f"node {n} with one more input", bent


def fault(model):
    """None when the importer imports ``model`` or refuses it as a user's error; else
    what went wrong (an exception other than TeccError, or an internal refusal)."""
    from tecc.errors import TeccError  # noqa: PLC0415
    from tecc.graph.frontend import from_onnx  # noqa: PLC0415

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            from_onnx(model)
    except TeccError as err:
        return f"internal: {err}" if getattr(err, "internal", False) else None
    except Exception as err:  # noqa: BLE001 -- any other exception is the fault looked for
        return f"{type(err).__name__}: {err}"
    return None


def faults(case) -> list:
    """``(mutant label, fault)`` of every faulty mutant of conformance ``case``."""
    base = with_initializers(case)
    return [(label, found) for label, bent in mutants(base) if (found := fault(bent)) is not None]


if __name__ == "__main__":
    import onnx_conformance_report as conformance  # noqa: PLC0415

    chosen = [c for c in conformance.load_cases() if not c.expanded and (len(sys.argv) < 2 or sys.argv[1] in c.name)]
    bad = 0
    for case in chosen:
        for label, found in faults(case):
            bad += 1
            print(f"{case.name}: {label}: {found}", flush=True)
    print(f"{len(chosen)} cases, {bad} faulty mutants")
