"""tecc.testing's target decorators, as TVM's test files use them
(``@tvm.testing.parametrize_targets``, ``known_failing_targets``, ``exclude_targets``):
a case per target with ``target`` and ``dev`` filled in."""
import numpy as np

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


PLUGIN_CONFTEST = 'pytest_plugins = ["tecc.testing.plugin"]\n'

PLUGIN_TESTS = '''
import tecc
import tecc.testing

size = tecc.testing.parameter(1, 3)
shape, layout = tecc.testing.parameters(((2, 3), "NC"), ((4, 5, 6), "NCW"))
named = tecc.testing.parameter(by_dict={"small": 2, "large": 20})


@tecc.testing.fixture
def doubled(size):
    return 2 * size


@tecc.testing.fixture(cache_return_value=True)
def reference(shape):
    return tuple(reversed(shape))


def test_parameter_and_fixture(size, doubled):
    assert doubled == 2 * size


def test_parameters_go_together(shape, layout, reference):
    assert len(shape) == len(layout) and reference[::-1] == shape


def test_by_dict(named):
    assert named in (2, 20)


def test_every_target_with_its_device(target, dev):
    assert (target, dev) in (("llvm", tecc.cpu(0)), ("cuda", tecc.cuda(0)))


@tecc.testing.known_failing_targets("cuda")
def test_known_failing(target):
    assert target == "llvm"
'''


def test_the_plugin_parametrizes_targets_and_parameters_as_tvms(tmp_path):
    """TVM's test files run with ``pytest_plugins = ["tvm.testing.plugin"]``: a test
    taking ``target`` runs once per enabled target (``dev`` its device), parameters
    and joined parameters multiply the cases as TVM's do."""
    import subprocess
    import sys

    (tmp_path / "conftest.py").write_text(PLUGIN_CONFTEST)
    (tmp_path / "test_plugin.py").write_text(PLUGIN_TESTS)
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:randomly",
                           "-rxX", str(tmp_path)], capture_output=True, text=True, cwd=tmp_path, timeout=300)
    tail = done.stdout.strip().splitlines()[-1]
    # 2 (size) + 2 (joined pairs) + 2 (by_dict) + 2 (targets) + 1 llvm passing; cuda's known failure xfails
    assert "9 passed, 1 xfailed" in tail, done.stdout[-3000:] + done.stderr[-2000:]


CALLS = []


def test_tvms_small_helpers():
    from tecc.contrib import pickle_memoize
    from tecc.topi.nn.utils import get_pad_tuple3d
    from tecc.topi.utils import nchw_pack_layout, nchw_xc_layout

    assert tecc.TVMError is tecc.TeccError
    assert nchw_pack_layout("NCHW4n4c") and not nchw_pack_layout("NCHW8c")
    assert nchw_xc_layout("NCHW8c") and not nchw_xc_layout("NCHW") and not nchw_xc_layout("NCHW4n4c")
    assert get_pad_tuple3d("SAME", (3, 4, 5)) == (1, 2, 2, 1, 1, 2)
    assert get_pad_tuple3d((1, 2, 3), (3, 3, 3)) == (1, 2, 3, 1, 2, 3)
    from tecc.topi.utils import TopiError, get_shape

    assert get_shape((1, 3, 224, 224), "NCHW", "NHWC") == (1, 224, 224, 3)
    assert get_shape((3, 2, 32, 48, 16), "NCHW16c", "NC16cWH") == (3, 2, 16, 48, 32)
    assert get_shape((2, 3, 32, 32, 16, 8), "OIHW16i8o", "HWO8oI16i") == (32, 32, 2, 8, 3, 16)
    import pytest

    with pytest.raises(TopiError, match="must name the same axes once each"):
        get_shape((1, 3, 4, 4), "NCHW", "NCHW4c")
    @pickle_memoize.memoize("tecc.tests.memoize")
    def reference(n):
        CALLS.append(n)
        return [n] * n

    assert reference(3) == [3, 3, 3] and reference(3) is reference(3) and CALLS == [3]

    def case(shape):
        @pickle_memoize.memoize("tecc.tests.memoize")
        def data():
            return np.zeros(shape)

        return data()

    assert case((2, 3)).shape == (2, 3) and case((4,)).shape == (4,)  # one entry per closure


def test_tvms_target_attributes_device_names_and_comparison_helper():
    from tecc import topi
    from tecc.target import Target

    assert Target("cuda").thread_warp_size == 32 and Target("llvm").thread_warp_size == 1
    assert Target("cuda").max_num_threads == 1024 and Target("cuda -max_num_threads=256").max_num_threads == 256
    # TVM's FPGA targets name devices that do not exist here (tests skip them by device_enabled)
    assert str(tecc.device("sdaccel", 0)) == "opencl(0)" and not tecc.device("aocl_sw_emu").exist
    assert not testing.device_enabled("sdaccel")
    a = np.random.default_rng(0).random((5, 4)).astype("float32")
    topi.testing.compare_numpy_tvm([a], np.cumsum(a, axis=1), "llvm", tecc.cpu(0), lambda x: topi.cumsum(x, 1),
                                   topi.x86.schedule_scan)
    import pytest

    with pytest.raises(AssertionError):
        topi.testing.compare_numpy_tvm([a], np.cumsum(a, axis=0), "llvm", tecc.cpu(0), lambda x: topi.cumsum(x, 1),
                                       topi.x86.schedule_scan)


def test_tvms_tensor_astype_bool_predicates_of_integers_and_named_broadcast_in_einsum():
    from tecc import te, topi

    A = te.placeholder((3,), name="A")
    B = A.astype("int32")
    assert B.dtype == "int32"
    f = tecc.build(te.create_schedule(B.op), [A, B], "llvm")
    out = tecc.nd.empty((3,), "int32")
    f(tecc.nd.array(np.array([1.5, -2.7, 3.2], "float32")), out)
    np.testing.assert_array_equal(out.numpy(), [1, -2, 3])
    # isnan / isinf / isfinite of integers are constants (the C functions take floats: it failed to compile)
    I = te.placeholder((4,), "int16", name="I")
    outs = [topi.isnan(I), topi.isinf(I), topi.isfinite(I)]
    f = tecc.build(te.create_schedule([o.op for o in outs]), [I] + outs, "llvm")
    got = [tecc.nd.empty((4,), "bool") for _ in outs]
    f(tecc.nd.array(np.arange(4, dtype="int16")), *got)
    assert [g.numpy().tolist() for g in got] == [[False] * 4, [False] * 4, [True] * 4]
    # numpy's einsum broadcasts a named axis of size 1
    X, Y = te.placeholder((1, 3), name="X"), te.placeholder((2, 3), name="Y")
    Z = topi.einsum("ij, ij -> i", X, Y)
    f = tecc.build(te.create_schedule(Z.op), [X, Y, Z], "llvm")
    x, y, z = np.ones((1, 3), "float32"), np.arange(6, dtype="float32").reshape(2, 3), tecc.nd.empty((2,))
    f(tecc.nd.array(x), tecc.nd.array(y), z)
    np.testing.assert_allclose(z.numpy(), np.einsum("ij,ij->i", x, y))


def test_importing_tecc_testing_does_not_import_pytest():
    # assert_allclose users need no pytest; the plugin module is what pytest loads
    import subprocess  # noqa: PLC0415
    import sys  # noqa: PLC0415

    code = "import sys, tecc.testing; print('pytest' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"
