"""Helpers for tests written against the classic TVM API (``tvm.testing``).

tecc builds and runs CUDA code on any machine (on the GPU emulator where there is no
GPU), so the CUDA target is always enabled here and the ``requires_gpu`` family of
decorators does not skip; ``tecc.cuda(0).exist`` tells whether a real GPU runs it.
"""
from __future__ import annotations

import inspect
import itertools
import sys

import numpy as np

#: targets tecc builds for (``llvm`` and ``c`` compile C for the CPU; ``cuda`` runs on
#: a GPU or, without one, on the GPU emulator)
ENABLED_TARGETS = ("llvm", "c", "cuda")


def assert_allclose(actual, desired, rtol=1e-7, atol=1e-7, verbose=True):
    """``numpy.testing.assert_allclose`` that also takes tecc arrays (ml_dtypes' arrays
    of the 8- and 4-bit floats and narrow integers compared by their values)."""
    from ..runtime import dtypes  # noqa: PLC0415

    actual = actual.numpy() if hasattr(actual, "numpy") else np.asarray(actual)
    desired = desired.numpy() if hasattr(desired, "numpy") else np.asarray(desired)
    actual, desired = (a.astype(np.float64) if dtypes.is_narrow(a.dtype.name) else a for a in (actual, desired))
    np.testing.assert_allclose(actual, desired, rtol=rtol, atol=atol, verbose=verbose)


def device_enabled(target) -> bool:
    """True if tecc can build for and run on ``target`` (a string or Target)."""
    kind = str(target).split()[0] if str(target).strip() else ""
    return kind in ENABLED_TARGETS


def enabled_targets() -> list:
    """``[(target, device)]`` for every enabled target."""
    from ..runtime.device import cpu, cuda

    return [("llvm", cpu(0)), ("cuda", cuda(0))]


def _passthrough(func=None, *args, **kwargs):
    """A decorator that runs the test as it is (used with or without arguments)."""
    if callable(func) and not args and not kwargs:
        return func
    return lambda f: f


#: CUDA tests run everywhere in tecc (the emulator stands in for a missing GPU)
requires_gpu = requires_cuda = uses_gpu = requires_llvm = _passthrough

#: tecc is never a stripped wheel build: tests that TVM skips there run
skip_if_wheel_test = _passthrough


# ---------------------------------------------------------------------------------------
# tests over targets (TVM's parametrize_targets / known_failing_targets / exclude_targets)
# ---------------------------------------------------------------------------------------
_TARGET_PARAMS = ("target", "dev")


def parametrize_targets(*args):
    """Run a test ``def test_x(target, dev)`` once per target (TVM's decorator): bare,
    over :func:`enabled_targets` (``llvm`` and ``cuda``: the GPU emulator stands in
    for a missing GPU); with arguments, over those targets -- one tecc does not build
    for (``opencl``, ``vulkan``...) is a skipped case that says so."""
    if len(args) == 1 and callable(args[0]):
        return _parametrized(args[0], None)
    return lambda func: _parametrized(func, list(args))


def known_failing_targets(*targets):
    """Mark the cases of these targets of a :func:`parametrize_targets` test as
    expected failures (TVM's decorator; it goes above ``parametrize_targets``)."""
    return lambda func: _parametrized(func, None, failing=targets)


def exclude_targets(*targets):
    """Leave these targets out of a :func:`parametrize_targets` test (TVM's decorator)."""
    return lambda func: _parametrized(func, None, excluded=targets)


# ---------------------------------------------------------------------------------------
# parameters and fixtures (TVM's tvm.testing.parameter / parameters / fixture); the pytest
# plugin that runs a test once per target is tecc.testing.plugin
# ---------------------------------------------------------------------------------------
def parameter(*values, ids=None, by_dict=None):
    """A pytest fixture taking each of ``values`` in turn (TVM's ``tvm.testing.parameter``),
    named by the variable it is assigned to: ``size = tecc.testing.parameter(1, 16)``
    runs every test that takes ``size`` twice.  ``by_dict`` gives ``{id: value}``."""
    import pytest

    if by_dict is not None:
        if values or ids is not None:
            raise TypeError("parameter: give the values, or by_dict, not both")
        ids, values = list(by_dict), list(by_dict.values())

    @pytest.fixture(params=values, ids=ids)
    def as_fixture(request):
        return request.param

    return as_fixture


_PARAMETER_GROUPS = itertools.count()


def parameters(*value_sets, ids=None):
    """Fixtures that take their values together (TVM's ``tvm.testing.parameters``):
    ``a, b = tecc.testing.parameters((1, 2), (3, 4))`` runs a test taking ``a`` and ``b``
    with (1, 2), then (3, 4) -- not their cross product.  The fixtures read one hidden
    fixture, which is put into the calling module."""
    import pytest

    if not value_sets or len({len(v) for v in value_sets}) != 1:
        raise TypeError("parameters: give tuples of one length, one per case")
    group = f"_tecc_parameters_{next(_PARAMETER_GROUPS)}"

    if ids is None:  # readable case names: the values of each set
        ids = ["-".join(str(v) for v in values) for values in value_sets]

    @pytest.fixture(params=list(value_sets), ids=ids, name=group)
    def joined(request):
        return request.param

    sys._getframe(1).f_globals[group] = joined

    def member(index):
        def pick(**values):
            return values[group][index]

        # the hidden fixture as the argument pytest sees, so that it parametrizes the test
        pick.__signature__ = inspect.Signature([inspect.Parameter(group, inspect.Parameter.POSITIONAL_OR_KEYWORD)])
        return pytest.fixture(pick)

    return tuple(member(k) for k in range(len(value_sets[0])))


def fixture(func=None, *, cache_return_value=False):
    """A pytest fixture (TVM's ``tvm.testing.fixture``), with or without arguments.
    ``cache_return_value`` is accepted: tecc computes the fixture for each test (no
    state shared between tests)."""
    import pytest

    del cache_return_value
    if func is None:
        return lambda f: pytest.fixture(f)
    return pytest.fixture(func)


def device_of(target):
    """The device a test of ``target`` runs on: ``cpu(0)`` for ``llvm`` and ``c``,
    ``cuda(0)`` for ``cuda`` (the GPU, or the emulator where there is none)."""
    from ..runtime.device import device

    kind = str(target).split()[0]
    return device("cpu" if kind in ("llvm", "c") else kind, 0)


def _parametrized(func, targets, failing=(), excluded=()):
    """``func`` with one ``target``/``dev`` parameter set per target (its marks
    rebuilt when an outer decorator adds failing or excluded targets)."""
    import pytest

    plan = dict(getattr(func, "_tecc_targets", {"targets": None, "failing": (), "excluded": ()}))
    if targets is not None:
        plan["targets"] = targets
    plan["failing"] = tuple(plan["failing"]) + tuple(failing)
    plan["excluded"] = tuple(plan["excluded"]) + tuple(excluded)
    func._tecc_targets = plan
    names = [n for n in _TARGET_PARAMS if n in inspect.signature(func).parameters]
    if not names:
        return func
    chosen = plan["targets"] if plan["targets"] is not None else [t for t, _ in enabled_targets()]
    params = []
    for target in chosen:
        kind = str(target).split()[0]
        if any(kind == str(t).split()[0] for t in plan["excluded"]):
            continue
        marks = []
        if not device_enabled(target):
            marks.append(pytest.mark.skip(reason=f"tecc builds for {', '.join(ENABLED_TARGETS)}, not {kind!r}"))
            values = {"target": target, "dev": None}
        else:
            values = {"target": target, "dev": device_of(target)}
        if any(kind == str(t).split()[0] for t in plan["failing"]):
            marks.append(pytest.mark.xfail(reason=f"known to fail on {kind} (known_failing_targets)"))
        params.append(pytest.param(*[values[n] for n in names], marks=marks, id=str(target)))
    argnames = ",".join(names)
    func.pytestmark = [m for m in getattr(func, "pytestmark", [])
                       if not (m.name == "parametrize" and m.args and m.args[0] == argnames)]
    return pytest.mark.parametrize(argnames, params)(func)


def enable_span_filling():
    """A ``PassContext`` under which the model importers record each call's source
    node (TVM's ``tvm.testing.enable_span_filling``; tecc's default)."""
    from ..transform import PassContext

    return PassContext(config={"relay.frontend.fill_span": True})


def disable_span_filling():
    """A ``PassContext`` under which the model importers leave spans empty (TVM's
    ``tvm.testing.disable_span_filling``)."""
    from ..transform import PassContext

    return PassContext(config={"relay.frontend.fill_span": False})


def main():
    """Run the calling test file with pytest (``tvm.testing.main()``)."""
    import pytest

    sys.exit(pytest.main([sys.argv[0]] + sys.argv[1:]))


def check_numerical_grads(function, input_values, grad_values, function_value=None, delta=1e-3, atol=1e-2,
                          rtol=0.1):
    """Check gradients computed some other way (e.g. by ``te.gradient``) against finite
    differences of ``function`` (TVM's ``tvm.testing.check_numerical_grads``).

    Each partial derivative is first estimated with a forward difference; where that
    disagrees with the given gradient, with a central difference, and then with a
    five-point formula (so a function is evaluated only as often as needed).

    Parameters
    ----------
    function : callable
        Takes the inputs positionally (``input_values`` a list) or by keyword
        (``input_values`` a dict) as numpy arrays; returns a scalar.
    input_values : list or dict of numpy.ndarray
        The point at which the gradients are checked.
    grad_values : list or dict of numpy.ndarray
        The gradients to check, in the order (or under the names) of ``input_values``.
    function_value : float, optional
        ``function`` at ``input_values`` (computed when not given).
    delta : float
        The finite-difference step (1e-3 suits float32).
    atol : float
        Absolute tolerance; scaled by ``sqrt(n)`` for a gradient of ``n`` elements when
        comparing whole gradients.
    rtol : float
        Relative tolerance.

    Raises
    ------
    AssertionError
        If a gradient has the wrong shape, or differs from the numerical one by more
        than ``atol * sqrt(n) + rtol * |numerical|`` (the message lists wrong positions).
    ValueError
        If the numerical gradient or the distance is not finite.
    """
    if isinstance(input_values, dict):
        names = list(input_values)
        values = dict(input_values)
        grads = dict(grad_values)

        def call(vals):
            return function(**vals)
    else:
        names = [str(i) for i in range(len(input_values))]
        values = dict(zip(names, input_values))
        grads = dict(zip(names, grad_values))

        def call(vals):
            return function(*(vals[n] for n in names))

    base = call(values) if function_value is None else function_value

    def partial(name, pos, step):
        """(f(x + step * e_pos) - f(x)) / step."""
        moved = np.array(values[name], copy=True)
        flat = moved.reshape(-1)
        flat[pos] = flat[pos] + step
        return (call({**values, name: moved}) - base) / step

    def close(estimate, expected):
        return abs(estimate - expected) < atol + rtol * abs(estimate)

    for name, grad in grads.items():
        grad = np.asarray(grad)
        if grad.shape != np.shape(values[name]):
            raise AssertionError(f"Gradient wrt '{name}' has shape {grad.shape}, expected "
                                 f"{np.shape(values[name])}")
        numeric = np.zeros(grad.shape, dtype=np.float64)
        flat_grad = grad.reshape(-1)
        wrong = []
        for pos in range(flat_grad.size):
            expected = flat_grad[pos]
            est = partial(name, pos, delta)
            if not close(est, expected):
                est = (est + partial(name, pos, -delta)) / 2          # central difference
                if not close(est, expected):
                    half = (partial(name, pos, delta / 2) + partial(name, pos, -delta / 2)) / 2
                    est = (4 * half - est) / 3                          # five-point formula
            if not close(est, expected):
                wrong.append(np.unravel_index(pos, grad.shape))
            numeric.reshape(-1)[pos] = est
        dist = float(np.sqrt(np.sum((numeric - grad) ** 2)))
        norm = float(np.sqrt(np.sum(numeric ** 2)))
        if not (np.isfinite(dist) and np.isfinite(norm)):
            raise ValueError(f"NaN or infinity in the numerical gradient wrt '{name}'\n"
                             f"analytical grad = {grad}\nnumerical grad = {numeric}")
        limit = atol * np.sqrt(float(max(grad.size, 1))) + rtol * norm
        if dist > limit:
            share = int(100 * len(wrong) / max(grad.size, 1))
            raise AssertionError(
                f"Analytical and numerical grads wrt '{name}' differ too much\n"
                f"analytical grad = {grad}\nnumerical grad = {numeric}\n"
                f"{share}% of elements differ; first wrong positions: {wrong[:10]}\n"
                f"distance {dist} > atol*sqrt(n) + rtol*|numerical| = {atol}*{np.sqrt(float(grad.size))} + "
                f"{rtol}*{norm}")


def assert_prim_expr_equal(lhs, rhs):
    """Assert that two integer expressions are equal (TVM's helper): equal after
    simplification, which proves ``lhs - rhs == 0``."""
    from ..tir.arith import Analyzer
    from ..tir.op import convert

    ana = Analyzer()
    diff = ana.simplify(convert(lhs) - convert(rhs))
    if not (hasattr(diff, "value") and diff.value == 0):
        raise AssertionError(f"expressions are not equal: {lhs} vs {rhs} (difference {diff})")
