"""Shared helpers of the tests that build IR by hand and compile it."""
import os

import pytest

from tecc.tir import expr as E
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
