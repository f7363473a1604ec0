"""Shared helpers of the tests that build IR by hand and compile it."""
import os
import warnings

import pytest

from tecc import tir
from tecc.tir import expr as E
from tecc.tir import keys
from tecc.tir import stmt as S


@pytest.fixture(scope="module", autouse=True)
def private_cache_dir(tmp_path_factory):
    """Compile into a fresh cache directory for the whole test module."""
    old = os.environ.get("TECC_CACHE_DIR")
    os.environ["TECC_CACHE_DIR"] = str(tmp_path_factory.mktemp("tecc_cache"))
    yield
    if old is None:
        os.environ.pop("TECC_CACHE_DIR", None)
    else:
        os.environ["TECC_CACHE_DIR"] = old


def func_params(args):
    """``(params, buffer_map)`` for a PrimFunc over ``args``: a handle parameter per
    Buffer, scalars as they are."""
    params, bmap = [], {}
    for a in args:
        if isinstance(a, S.Buffer):
            p = E.Var(a.name, "handle")
            params.append(p)
            bmap[p] = a
        else:
            params.append(a)
    return tuple(params), bmap


def make_func(name, args, body):
    """A PrimFunc called ``name`` over ``args`` (Buffers and scalar Vars)."""
    params, bmap = func_params(args)
    return S.PrimFunc(params, body, bmap, {"global_symbol": name})


# ---------------------------------------------------------------------------
# GPU functions by hand: kernels (thread_extent attributes) and host functions
# (workspaces and tecc.launch calls), as the CUDA pipeline leaves them
# ---------------------------------------------------------------------------
CUDA_TARGET = "cuda -arch=sm_80"


def buf1d(name, size, dtype="float32", scope="global"):
    return S.decl_buffer((size,), dtype, name, scope=scope)


def sync():
    """``__syncthreads()``."""
    return S.Evaluate(E.Call("int32", keys.STORAGE_SYNC, (E.StringImm("shared"),)))


def thread_attr(var, extent, body):
    """``body`` inside ``thread_extent`` of ``var`` (named like its tag)."""
    ext = tir.convert(extent)
    iv = E.IterVar(E.Range(tir.const(0), ext), var, E.IterVarType.THREAD_INDEX, var.name)
    return S.AttrStmt(iv, keys.THREAD_EXTENT, ext, body)


def kernel(name, args, body, launch=()):
    """A device function over ``args``; ``launch`` is ``[(Var, extent)]`` (the Var
    named like its tag, blockIdx.* first), wrapped around ``body`` outermost first."""
    params, bmap = func_params(args)
    for var, ext in reversed(list(launch)):
        body = thread_attr(var, ext, body)
    return S.PrimFunc(tuple(params), body, bmap, {"global_symbol": name, keys.KERNEL: True})


def launch(name, *args):
    """``tecc.launch(name, args...)`` in a host function."""
    return S.Evaluate(E.Call("int32", keys.LAUNCH, (E.StringImm(name),) + tuple(args)))


def host(name, args, body):
    """A host function over ``args``; ``body(*params)`` builds its body."""
    params, bmap = func_params(list(args))
    return S.PrimFunc(params, body(*params), bmap, {"global_symbol": name, keys.HOST: True})


def single_launch(kname, kfunc, host_args):
    """A host function launching ``kfunc`` on its parameters in order, and
    ``{kname: kfunc}``."""
    return host(kname + "_host", host_args, lambda *params: launch(kname, *params)), {kname: kfunc}


def cuda_module(host_func, kernels, target=CUDA_TARGET):
    """The CUDAModule of a hand-built host function and its kernels."""
    from tecc.cuda_codegen import build_cuda

    return build_cuda(S.IRModule({host_func.name: host_func, **kernels}), target)


def run_kernels(host_func, kernels, args):
    """Build and run (on the GPU emulation without a GPU; warning silenced)."""
    mod = cuda_module(host_func, kernels)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        mod(*args)
    return mod


def check_kernels(host_func, kernels, args, **options):
    """The findings of ``CUDAModule.check`` on a hand-built module."""
    return cuda_module(host_func, kernels).check(*args, **options)
