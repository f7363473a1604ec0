"""TVM's "save, link, load" flow: ``Module.save`` (object, C source, assembly,
library), ``tecc.contrib.cc.create_shared``, ``load_module`` of a plain shared
library, and for CUDA the host object plus the device code (``.ptx``, ``.cubin``,
``.cu``) joined again by ``import_module`` (on the emulator without a GPU)."""
import os
import subprocess
import warnings

import numpy as np
import pytest

import tecc
from tecc import te
from tecc.contrib import cc
from tecc.errors import CompileError, FunctionNotFoundError, RuntimeArgError, TeccError
from tecc.runtime import ndarray as nd
from tecc.runtime.cuda_module import CUDAModule, CUDASourceModule
from tecc.runtime.module import METADATA_SYMBOL, CModule
from irhelpers import private_cache_dir  # noqa: F401  (an autouse fixture)

on_cpu = pytest.mark.skipif(tecc.cuda(0).exist, reason="checks the no-GPU path")


def vector_add(name="myadd", parallel=False):
    n = te.var("n")
    A = te.placeholder((n,), name="A")
    B = te.placeholder((n,), name="B")
    C = te.compute(A.shape, lambda i: A[i] + B[i], name="C")
    s = te.create_schedule(C.op)
    if parallel:
        s[C].parallel(C.op.axis[0])
    return s, [A, B, C], name


@pytest.fixture(scope="module")
def fadd():
    s, args, name = vector_add()
    return tecc.build(s, args, target="llvm", name=name)


@pytest.fixture(scope="module")
def fadd_cuda():
    s, (A, B, C), name = vector_add()
    bx, tx = s[C].split(C.op.axis[0], factor=64)
    s[C].bind(bx, te.thread_axis("blockIdx.x"))
    s[C].bind(tx, te.thread_axis("threadIdx.x"))
    return tecc.build(s, [A, B, C], target="cuda", name=name)


def operands(n=100, seed=0):
    rng = np.random.default_rng(seed)
    return (rng.random(n, dtype=np.float32), rng.random(n, dtype=np.float32), np.zeros(n, np.float32))


def assert_adds(mod):
    a, b, c = operands()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # the emulator's one-time notice
        mod(a, b, c)
    np.testing.assert_allclose(c, a + b, rtol=1e-6)


def saved_library(mod, tmp_path, stem="myadd"):
    """``mod.save`` an object, link it, return the library's path."""
    obj, lib = str(tmp_path / f"{stem}.o"), str(tmp_path / f"{stem}.so")
    mod.save(obj)
    cc.create_shared(lib, [obj])
    return lib


# ---------------------------------------------------------------------------
# CPU modules
# ---------------------------------------------------------------------------

def test_object_links_into_a_library_load_module_runs(fadd, tmp_path):
    lib = saved_library(fadd, tmp_path)
    with open(tmp_path / "myadd.o", "rb") as f:
        assert f.read(4) == b"\x7fELF"
    loaded = tecc.runtime.load_module(lib)
    assert isinstance(loaded, CModule) and loaded.entry_name == "myadd" and loaded.target == "llvm"
    assert loaded.signatures == fadd.signatures and loaded.get_source() == fadd.get_source()
    assert_adds(loaded)
    a, b, _ = operands(33, seed=1)
    c = nd.array(np.zeros(33, np.float32))
    loaded["myadd"](nd.array(a), nd.array(b), c)
    np.testing.assert_allclose(c.numpy(), a + b, rtol=1e-6)


def test_contrib_names_after_a_plain_import():
    assert tecc.contrib.cc.create_shared is cc.create_shared and cc.create_shared.output_format == "so"
    assert callable(tecc.contrib.download.download_testdata)


def test_load_without_the_cache(fadd, tmp_path):
    lib = saved_library(fadd, tmp_path, "nocache")
    loaded = tecc.runtime.load_module(lib, cache=False)
    assert loaded.lib_path == lib
    assert_adds(loaded)


def test_library_from_object_checks_arguments_like_any_module(fadd, tmp_path):
    loaded = tecc.runtime.load_module(saved_library(fadd, tmp_path))
    a, b, c = operands(8)
    with pytest.raises(RuntimeArgError, match="takes 3 arguments"):
        loaded(a, b)
    with pytest.raises(RuntimeArgError, match="must have dtype float32"):
        loaded(a, b, np.zeros(8, np.float64))
    with pytest.raises(RuntimeArgError, match="symbolic size 'n'"):
        loaded(a, b, np.zeros(9, np.float32))
    with pytest.raises(FunctionNotFoundError, match="no function 'nope'.*'myadd'"):
        loaded.get_function("nope")


def test_openmp_object_links(tmp_path):
    s, args, _ = vector_add(parallel=True)
    mod = tecc.build(s, args, target="llvm", name="padd")
    assert "omp" in mod.get_source()
    assert_adds(tecc.runtime.load_module(saved_library(mod, tmp_path, "padd")))


def test_c_source_compiles_into_a_loadable_library(fadd, tmp_path):
    for ext in ("c", "cc"):
        src, lib = tmp_path / f"myadd.{ext}", tmp_path / f"from_{ext}.so"
        fadd.save(str(src))
        text = src.read_text()
        assert text.startswith(fadd.get_source()) and METADATA_SYMBOL in text
        compiler = "cc" if ext == "c" else "c++"
        if ext == "cc":  # the file is C; a C++ compiler reads it as C when told
            subprocess.run([compiler, "-x", "c", "-shared", "-fPIC", "-fopenmp", "-o", str(lib), str(src)],
                           check=True)
        else:
            cc.create_shared(str(lib), [str(src)])
        assert_adds(tecc.runtime.load_module(str(lib)))


def test_save_library_assembly_and_fmt(fadd, tmp_path):
    fadd.save(str(tmp_path / "x.so"))
    assert_adds(tecc.runtime.load_module(str(tmp_path / "x.so")))
    fadd.save(str(tmp_path / "x.s"))
    assert "myadd" in (tmp_path / "x.s").read_text()
    fadd.save(str(tmp_path / "obj.bin"), fmt="o")  # fmt wins over the extension
    cc.create_shared(str(tmp_path / "obj.so"), str(tmp_path / "obj.bin"))
    assert_adds(tecc.runtime.load_module(str(tmp_path / "obj.so")))


def test_save_format_errors(fadd, tmp_path):
    with pytest.raises(TeccError, match=r"cannot write format 'txt'; the formats are '\.o'.*'\.so'"):
        fadd.save(str(tmp_path / "x.txt"))
    with pytest.raises(TeccError, match="no LLVM IR or bitcode"):
        fadd.save(str(tmp_path / "x.ll"))
    with pytest.raises(TeccError, match="the folder .* does not exist"):
        fadd.save(str(tmp_path / "missing" / "x.o"))


def test_loaded_module_cannot_save_an_object(fadd, tmp_path):
    loaded = tecc.runtime.load_module(saved_library(fadd, tmp_path))
    with pytest.raises(TeccError, match=r"loaded from a file.*build the module again with tecc.build"):
        loaded.save(str(tmp_path / "again.o"))
    loaded.save(str(tmp_path / "again.so"))  # a ready library needs no compiler
    assert_adds(tecc.runtime.load_module(str(tmp_path / "again.so")))
    loaded.save(str(tmp_path / "again.c"))
    assert (tmp_path / "again.c").read_text().startswith(fadd.get_source())


def test_load_module_of_an_object_file(fadd, tmp_path):
    fadd.save(str(tmp_path / "myadd.o"))
    with pytest.raises(TeccError, match=r"is an object file.*create_shared"):
        tecc.runtime.load_module(str(tmp_path / "myadd.o"))


def test_load_module_of_a_foreign_library(tmp_path):
    src = tmp_path / "foreign.c"
    src.write_text("int answer(void) { return 42; }\n")
    lib = tmp_path / "foreign.so"
    subprocess.run(["cc", "-shared", "-fPIC", "-o", str(lib), str(src)], check=True)
    with pytest.raises(TeccError, match=f"without tecc's module metadata .*{METADATA_SYMBOL}.*not made from a tecc "
                                        r"module's save"):
        tecc.runtime.load_module(str(lib))
    (tmp_path / "junk.bin").write_bytes(b"not a module")
    with pytest.raises(TeccError, match="was not written by Module.export_library"):
        tecc.runtime.load_module(str(tmp_path / "junk.bin"))


def test_link_failures(fadd, tmp_path):
    bogus = tmp_path / "bogus.o"
    bogus.write_text("this is no object file\n")
    out = tmp_path / "bad.so"
    with pytest.raises(CompileError, match=r"create_shared\(.*bad\.so'\) failed:(.|\n)*command: "):
        cc.create_shared(str(out), [str(bogus)])
    assert not out.exists() and os.listdir(tmp_path) == ["bogus.o"]  # no output, no temporary
    with pytest.raises(CompileError, match=r"no file .*missing\.o"):
        cc.create_shared(str(out), [str(tmp_path / "missing.o")])
    with pytest.raises(CompileError, match="cannot run the C compiler 'no-such-cc'"):
        fadd.save(str(tmp_path / "myadd.o"))
        cc.create_shared(str(out), [str(tmp_path / "myadd.o")], cc="no-such-cc")


def test_two_tecc_objects_in_one_library_are_refused(fadd, tmp_path):
    s, args, _ = vector_add(name="other")
    other = tecc.build(s, args, target="llvm", name="other")
    fadd.save(str(tmp_path / "a.o"))
    other.save(str(tmp_path / "b.o"))
    with pytest.raises(CompileError, match="link one tecc module per shared library"):
        cc.create_shared(str(tmp_path / "ab.so"), [str(tmp_path / "a.o"), str(tmp_path / "b.o")])


def test_create_executable(tmp_path):
    src = tmp_path / "main.c"
    src.write_text('#include <stdio.h>\nint main(void) { printf("linked\\n"); return 0; }\n')
    exe = tmp_path / "main"
    cc.create_executable(str(exe), [str(src)])
    assert subprocess.run([str(exe)], capture_output=True, text=True, check=True).stdout == "linked\n"


# ---------------------------------------------------------------------------
# CUDA modules: the host object and the device code
# ---------------------------------------------------------------------------

def test_cuda_imported_modules_is_the_device_module(fadd_cuda):
    dev = fadd_cuda.imported_modules[0]
    assert isinstance(dev, CUDASourceModule) and "myadd_kernel0" in dev.get_source()
    assert dev.cubin == fadd_cuda.cubin


@on_cpu
def test_cuda_host_object_runs_on_the_emulator(fadd_cuda, tmp_path):
    host = tecc.runtime.load_module(saved_library(fadd_cuda, tmp_path))
    assert isinstance(host, CUDAModule) and host.imported_modules == []
    assert host.plans == fadd_cuda.plans and host.signatures == fadd_cuda.signatures
    assert_adds(host)  # the object carries the emulator's kernels
    with pytest.raises(RuntimeArgError, match="takes 3 arguments"):
        host(*operands()[:2])
    with pytest.raises(TeccError, match=r"holds no device code.*import_module\(tecc.runtime.load_module"):
        host.get_source("cuda")
    with pytest.raises(TeccError, match="export_library: 'myadd' lacks its cubin"):
        host.export_library(str(tmp_path / "x.tecc"))


@pytest.mark.parametrize("ext", ["ptx", "cubin", "cu"])
def test_cuda_device_code_saves_loads_and_imports(fadd_cuda, tmp_path, ext):
    lib = saved_library(fadd_cuda, tmp_path)
    dev_path = str(tmp_path / f"myadd.{ext}")
    fadd_cuda.imported_modules[0].save(dev_path)
    dev = tecc.runtime.load_module(dev_path)
    assert isinstance(dev, CUDASourceModule)
    if ext == "ptx":
        assert dev.get_source("ptx") == fadd_cuda.imported_modules[0].get_source("ptx")
        assert dev.arch == fadd_cuda.arch and dev.cubin is None
    elif ext == "cubin":
        assert dev.cubin == fadd_cuda.cubin and dev.arch == fadd_cuda.arch
    else:
        assert dev.get_source() == fadd_cuda.imported_modules[0].get_source()
    host = tecc.runtime.load_module(lib)
    host.import_module(dev)
    assert host.imported_modules == [dev]
    if not tecc.cuda(0).exist:
        assert_adds(host)
    if ext == "cu":
        assert host.get_source("cuda") == fadd_cuda.get_source("cuda")


def test_cuda_import_module_errors(fadd_cuda, fadd, tmp_path):
    s, (A, B, C), _ = vector_add()
    bx, tx = s[C].split(C.op.axis[0], factor=32)
    s[C].bind(bx, te.thread_axis("blockIdx.x"))
    s[C].bind(tx, te.thread_axis("threadIdx.x"))
    other = tecc.build(s, [A, B, C], target="cuda", name="other")
    host = tecc.runtime.load_module(saved_library(fadd_cuda, tmp_path))
    with pytest.raises(TeccError, match="has no kernel 'myadd_kernel0'.*same build"):
        host.import_module(other.imported_modules[0])
    with pytest.raises(TeccError, match="imports a CUDA device module.*got CModule"):
        host.import_module(fadd)


def test_cuda_save_format_errors(fadd_cuda, tmp_path):
    with pytest.raises(TeccError, match=r"cannot write format 'ptx'.*imported_modules\[0\]\.save\('x\.ptx'\)"):
        fadd_cuda.save(str(tmp_path / "x.ptx"))
    dev = fadd_cuda.imported_modules[0]
    with pytest.raises(TeccError, match=r"device module cannot write format 'o'.*host module's save\('x\.o'\)"):
        dev.save(str(tmp_path / "x.o"))
    dev.save(str(tmp_path / "x.ptx"))
    from_ptx = tecc.runtime.load_module(str(tmp_path / "x.ptx"))
    with pytest.raises(TeccError, match="has no cubin"):
        from_ptx.save(str(tmp_path / "y.cubin"))
    with pytest.raises(TeccError, match="has no CUDA source"):
        from_ptx.get_source("cuda")
    (tmp_path / "bad.cubin").write_bytes(b"nope")
    with pytest.raises(TeccError, match="is not a cubin"):
        tecc.runtime.load_module(str(tmp_path / "bad.cubin"))


def test_cuda_save_library_and_loaded_object_error(fadd_cuda, tmp_path):
    fadd_cuda.save(str(tmp_path / "whole.so"))
    whole = tecc.runtime.load_module(str(tmp_path / "whole.so"))
    assert whole.cubin == fadd_cuda.cubin
    if not tecc.cuda(0).exist:
        assert_adds(whole)
    with pytest.raises(TeccError, match="loaded from a file.*tecc.build"):
        whole.save(str(tmp_path / "again.o"))


@pytest.mark.gpu
def test_cuda_host_needs_device_code_on_a_gpu(fadd_cuda, tmp_path):
    host = tecc.runtime.load_module(saved_library(fadd_cuda, tmp_path))
    with pytest.raises(TeccError, match="holds no device code"):
        host(*operands())
    for ext in ("cubin", "ptx"):
        fadd_cuda.imported_modules[0].save(str(tmp_path / f"myadd.{ext}"))
        host = tecc.runtime.load_module(saved_library(fadd_cuda, tmp_path))
        host.import_module(tecc.runtime.load_module(str(tmp_path / f"myadd.{ext}")))
        try:
            assert_adds(host)
        except TeccError as err:  # PTX of an NVRTC newer than the driver: the error names the fix
            assert ext == "ptx" and "import the '.cubin' instead" in str(err)
