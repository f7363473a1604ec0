"""SASS (``mod.get_source("sass")``, NVIDIA's nvdisasm on the cubin; no GPU): the
instructions the tensor-core kernels' staging copies compile to, pinned.  nvdisasm is
in the test extra; the tests that read SASS skip only where it is not installed."""
import collections
import re
import warnings

import pytest

import tecc
from tecc import te
from tecc.errors import TeccError
from tecc.runtime import sass

needs_nvdisasm = pytest.mark.skipif(sass.find_nvdisasm() is None,
                                    reason="nvdisasm is not installed (pip install nvidia-cuda-nvdisasm)")


def _instructions(text):
    """Opcode (with its modifiers) -> count, of SASS text."""
    return collections.Counter(re.findall(r"/\*[0-9a-f]{4,}\*/\s+(?:@!?U?P\w+\s+)?([A-Z][A-Z0-9_.]+)", text))


def _dense_tensorcore_module(dtype, arch="sm_90"):
    A = te.placeholder((256, 256), dtype, name="A")
    W = te.placeholder((256, 256), dtype, name="W")
    with warnings.catch_warnings(), tecc.target.Target(f"cuda -arch={arch}"):
        warnings.simplefilter("ignore")  # the fallback config
        out = tecc.topi.cuda.dense(A, W, out_dtype="float32")
        s = tecc.topi.cuda.schedule_dense([out])
    return tecc.build(s, [A, W, out], f"cuda -arch={arch}")


@needs_nvdisasm
@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_tensor_core_staging_moves_16_bytes_a_thread(dtype):
    """The global -> shared copies of a tensor-core GEMM load and store 8 half-width
    elements as one 128-bit access each (LDG.E.128, STS.128), never 2 bytes at a time;
    the products are HMMA instructions."""
    ops = _instructions(_dense_tensorcore_module(dtype).get_source("sass"))
    assert any(op.startswith("HMMA.16816.F32") for op in ops), ops
    assert sum(n for op, n in ops.items() if op.startswith("LDG.E.128")) >= 2, ops
    assert ops["STS.128"] >= 2, ops
    assert not [op for op in ops if op.startswith("LDG") and ".U16" in op], ops


@needs_nvdisasm
@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_tensor_core_fragments_load_from_shared_with_ldmatrix(dtype):
    """The matrix_a/matrix_b fragments come from shared memory through LDSM (ldmatrix),
    for bfloat16 as for float16: NVVM leaves a bfloat16 wmma.load generic, which
    became 32-bit generic loads (LD.E, 128 of them in this kernel)."""
    ops = _instructions(_dense_tensorcore_module(dtype).get_source("sass"))
    ldsm = sum(n for op, n in ops.items() if op.startswith("LDSM"))
    hmma = sum(n for op, n in ops.items() if op.startswith("HMMA"))
    assert ldsm == hmma == 32, ops
    assert not [op for op in ops if op.startswith("LD.")], ops


@needs_nvdisasm
def test_sass_of_a_module_and_of_its_device_module():
    mod = _dense_tensorcore_module("float16", "sm_80")
    text = mod.get_source("sass")
    assert ".target\tsm_80" in text and "default_function_kernel0:" in text
    assert mod.imported_modules[0].get_source("sass") == text


def test_sass_without_nvdisasm_says_what_to_install(monkeypatch):
    mod = _dense_tensorcore_module("float16")
    monkeypatch.setattr(sass, "find_nvdisasm", lambda: None)
    with pytest.raises(TeccError, match=r"get_source\('sass'\): SASS needs NVIDIA's nvdisasm, which is not "
                                        r"installed; pip install nvidia-cuda-nvdisasm"):
        mod.get_source("sass")
