"""tecc.testing's target decorators, as TVM's test files use them
(``@tvm.testing.parametrize_targets``, ``known_failing_targets``, ``exclude_targets``):
a case per target with ``target`` and ``dev`` filled in."""
import tecc
from tecc import testing

@testing.parametrize_targets
def test_the_bare_decorator_runs_every_enabled_target(target, dev):
    assert (target, dev) in (("llvm", tecc.cpu(0)), ("cuda", tecc.cuda(0)))


@testing.parametrize_targets("llvm")
def test_a_test_may_take_the_target_alone(target):
    assert target == "llvm"


def _params(func):
    (mark,) = [m for m in func.pytestmark if m.name == "parametrize"]
    return mark.args[0], {p.id: [m.name for m in p.marks] for p in mark.args[1]}


def test_failing_excluded_and_unknown_targets_are_marked():
    @testing.known_failing_targets("cuda")
    @testing.parametrize_targets
    def failing(target, dev):
        pass

    @testing.exclude_targets("cuda")
    @testing.parametrize_targets
    def excluded(target, dev):
        pass

    @testing.parametrize_targets("llvm", "opencl -device=mali")
    def unknown(dev):
        pass

    assert _params(failing) == ("target,dev", {"llvm": [], "cuda": ["xfail"]})
    assert _params(excluded) == ("target,dev", {"llvm": []})
    assert _params(unknown) == ("dev", {"llvm": [], "opencl -device=mali": ["skip"]})
    (skip,) = [p for p in unknown.pytestmark[0].args[1] if p.id.startswith("opencl")][0].marks
    assert skip.kwargs["reason"] == "tecc builds for llvm, c, cuda, not 'opencl'"


def test_a_function_without_target_arguments_is_left_alone():
    def plain():
        pass

    assert testing.parametrize_targets(plain) is plain and not hasattr(plain, "pytestmark")
