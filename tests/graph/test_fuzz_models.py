"""Fuzzing the model compiler: random ONNX models (:mod:`fuzz_models`) are imported,
built at a random ``opt_level`` (fusion, constant folding, batch-norm folding,
CSE) and run, on the C backend and on the GPU-semantics path, and must match
onnxruntime: every model the fuzzer makes is valid ONNX that onnxruntime runs, so a
refusal (a :class:`~tecc.errors.TeccError`) fails as surely as any other exception,
a crash or a wrong result.

The suite runs a fixed, derandomized set of examples (the same every run, so CI is
reproducible); ``TECC_FUZZ_EXAMPLES=N`` runs N random ones instead.
"""
import os

import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from tecc.errors import TeccError  # noqa: E402

from fuzz_models import models  # noqa: E402
from ops_run import assert_outputs_match, tecc_outputs  # noqa: E402

EXAMPLES = int(os.environ.get("TECC_FUZZ_EXAMPLES", "0"))
RTOL, ATOL = 1e-3, 1e-4


def fuzz_settings(examples):
    return settings(
        max_examples=EXAMPLES or examples,
        derandomize=not EXAMPLES,
        deadline=None,
        database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )


@fuzz_settings(60)
@given(case=models(), opt_level=st.integers(0, 3))
def test_random_models_on_the_c_backend(case, opt_level):
    _compare(case, opt_level, "llvm")


@fuzz_settings(20)
@given(case=models(), opt_level=st.integers(0, 3))
def test_random_models_on_the_gpu_semantics_path(case, opt_level):
    """Built for CUDA (NVRTC where it is installed) and run on the GPU where there is
    one, else on the CPU emulation of CUDA semantics."""
    _compare(case, opt_level, "cuda")


def _compare(case, opt_level, target):
    """Run ``case`` with onnxruntime and with tecc built for ``target``; the outputs
    must match."""
    sess = ort.InferenceSession(case.model.SerializeToString(), providers=["CPUExecutionProvider"])
    want = sess.run(None, case.inputs)
    try:
        got = tecc_outputs(case.model, case.inputs, target=target, opt_level=opt_level)
    except TeccError as err:
        raise AssertionError(f"tecc refused a model onnxruntime runs: {err}\n{case}") from err
    assert_outputs_match(got, want, RTOL, ATOL, who="onnxruntime's")
