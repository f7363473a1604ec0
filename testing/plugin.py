"""The pytest plugin of :mod:`tecc.testing` (TVM's ``tvm.testing.plugin``): a test file
that says ``pytest_plugins = ["tecc.testing.plugin"]`` has each test taking ``target``
run once per enabled target (:func:`tecc.testing.enabled_targets`), and gets the
``dev`` fixture, the device of that target.

pytest loads this module; importing :mod:`tecc.testing` alone does not import pytest.
"""
from __future__ import annotations

import pytest

from . import device_of, enabled_targets


def pytest_generate_tests(metafunc):
    """A test that takes ``target`` and has no target parameters of its own runs once
    per enabled target, with ``known_failing_targets`` and ``exclude_targets``
    applied."""
    if "target" not in metafunc.fixturenames or _has_target_params(metafunc):
        return
    plan = getattr(metafunc.function, "_tecc_targets", {"failing": (), "excluded": ()})
    params = []
    for target, _ in enabled_targets():
        if target in plan["excluded"]:
            continue
        marks = [pytest.mark.xfail(reason=f"known to fail on {target} (known_failing_targets)")] \
            if target in plan["failing"] else []
        params.append(pytest.param(target, marks=marks, id=target))
    metafunc.parametrize("target", params)


def _has_target_params(metafunc) -> bool:
    for mark in metafunc.definition.iter_markers("parametrize"):
        names = mark.args[0] if mark.args else ""
        names = names.split(",") if isinstance(names, str) else list(names)
        if "target" in [n.strip() for n in names]:
            return True
    return False


@pytest.fixture(name="dev")
def dev(target):
    """The device of the test's ``target`` (:func:`tecc.testing.device_of`)."""
    return device_of(target)
