"""Malformed models never crash the importer (:mod:`onnx_mutants`): each of ONNX's
conformance models, bent one operand or attribute at a time, imports or is refused
with a :class:`~tecc.errors.TeccError` that is not an internal fault.

Every plain case (not ``*_expanded``) of an operator tecc converts is bent: about
16,000 mutants, imported in some 20 seconds on two workers. The first sweep found
293 crashes (IndexError, ValueError, ZeroDivisionError, MemoryError...) at 19 places
in the converters; and, looking at one of them, a wrong result: batchwise recurrent
layers read their initial states directions-first."""
import pytest

onnx = pytest.importorskip("onnx")

import onnx_conformance_report as conformance  # noqa: E402 -- next to this file
from onnx_mutants import faults  # noqa: E402

#: the mutants run in this many tests (the workers share them)
CHUNKS = 6


def _chosen() -> list:
    return sorted((c for c in conformance.load_cases() if not c.expanded and not conformance.missing_ops(c)),
                  key=lambda c: c.name)


@pytest.mark.parametrize("chunk", range(CHUNKS))
def test_bent_conformance_models_import_or_are_refused_naming_the_fault(chunk):
    found = []
    for case in _chosen()[chunk::CHUNKS]:
        found += [f"{case.name}: {label}: {fault}" for label, fault in faults(case)]
    assert not found, f"{len(found)} mutants crash the importer:\n" + "\n".join(found[:40])
