"""The import rules of ARCHITECTURE.md, enforced: who may import whom, and a module
exported to a file runs in a process that cannot import the compiler."""
import ast
import os
import subprocess
import sys
import textwrap
import warnings
from pathlib import Path

import numpy as np

import tecc
from tecc import te
from tecc.topi import cuda as K

ROOT = Path(tecc.__file__).resolve().parent

#: folder -> top-level tecc parts it must not import
FORBIDDEN = {
    "runtime": {"te", "tir", "cpu_fallback", "cuda_codegen", "driver", "target", "tuner", "topi", "graph"},
    "tir": {"te", "cpu_fallback", "cuda_codegen", "driver", "target", "tuner", "topi", "graph"},
    "te": {"cpu_fallback", "cuda_codegen", "driver", "tuner", "topi", "graph"},
    "topi": {"cpu_fallback", "cuda_codegen", "driver", "tuner", "graph"},  # tuner.task (knobs, configs) allowed
    "tuner/task": {"cpu_fallback", "cuda_codegen", "driver", "topi", "tuner", "graph"},
    "tuner": {"graph"},
    "cpu_fallback": {"te", "cuda_codegen", "driver", "topi", "tuner", "graph"},
    "cuda_codegen": {"te", "driver", "topi", "tuner", "graph"},
    # the model layer builds on everything below it but not on the code generators directly
    # (it compiles through tecc.build) nor on the emulator
    "graph": {"cpu_fallback", "cuda_codegen"},
}
COMPILER = ("tecc.te", "tecc.tir", "tecc.cpu_fallback", "tecc.cuda_codegen", "tecc.driver",
            "tecc.target")


def _part(parts) -> str:
    """The part of tecc a module path names: its first folder, except that the
    tuner's ``task`` package (knobs and configs, which topi uses) is a part of its own."""
    if len(parts) > 1 and parts[0] == "tuner" and parts[1] == "task":
        return "tuner.task"
    return parts[0]


def _tecc_imports(path: Path) -> set:
    """The tecc parts (``tir``, ``runtime``...) a source file imports, relative
    imports resolved against its package."""
    package = path.relative_to(ROOT).parent.parts
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[:len(package) - (node.level - 1)] if node.level > 1 else package
                parts = list(base) + (node.module.split(".") if node.module else [])
                if not parts:  # "from .. import x" at the top: x names the part
                    found.update(alias.name for alias in node.names)
                elif len(parts) == 1:  # "from ..tuner import task": the names may be parts
                    found.update(_part(parts + [alias.name]) for alias in node.names)
                else:
                    found.add(_part(parts))
            elif node.module and node.module.startswith("tecc."):
                found.add(_part(node.module.split(".")[1:]))
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith("tecc."):
                    found.add(_part(alias.name.split(".")[1:]))
    return found


def test_folders_import_only_what_the_architecture_allows():
    broken = []
    for folder, forbidden in FORBIDDEN.items():
        for path in sorted((ROOT / folder).rglob("*.py")):
            bad = _tecc_imports(path) & forbidden
            if bad:
                broken.append(f"{path.relative_to(ROOT)} imports {sorted(bad)}")
    assert not broken, "\n".join(broken)


def test_importing_tecc_loads_no_compiler():
    code = "import sys, tecc; print(sorted(m for m in sys.modules if m.startswith(('tecc.te', 'tecc.tir'))))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_exported_modules_run_where_the_compiler_cannot_be_imported(tmp_path):
    n = 64
    A = te.placeholder((n,), name="A")
    B = te.compute((n,), lambda i: A[i] * 2.0 + 1.0, name="B")
    s = te.create_schedule(B.op)
    tecc.build(s, [A, B], target="llvm").export_library(str(tmp_path / "cpu.so"))
    s2, args = K.softmax_rows(4, 256, num_thread=64)
    tecc.build(s2, args, target="cuda -arch=sm_80").export_library(str(tmp_path / "softmax.tecc"))
    script = textwrap.dedent(f"""
        import sys, warnings
        import numpy as np

        class Refuse:
            def find_spec(self, name, path=None, target=None):
                if name.startswith({COMPILER!r}):
                    raise ImportError("the compiler must not be imported here: " + name)

        sys.meta_path.insert(0, Refuse())
        import tecc
        from tecc import runtime
        cpu = runtime.load_module({str(tmp_path / "cpu.so")!r})
        a = np.arange({n}, dtype="float32")
        b = np.zeros({n}, "float32")
        cpu(a, b)
        assert np.allclose(b, a * 2 + 1)
        warnings.simplefilter("ignore")
        gpu = runtime.load_module({str(tmp_path / "softmax.tecc")!r})
        x = np.random.default_rng(0).standard_normal((4, 256)).astype("float32")
        y = np.zeros((4, 256), "float32")
        gpu(x, y)
        e = np.exp(x - x.max(axis=1, keepdims=True))
        assert np.allclose(y, e / e.sum(axis=1, keepdims=True), rtol=1e-5, atol=1e-6)
        print("ok", sorted(m for m in sys.modules if m.startswith("tecc.")))
    """)
    env = dict(os.environ, TECC_CACHE_DIR=str(tmp_path / "cache"))
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env)
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("ok")
    assert not any(m.startswith(COMPILER) for m in eval(out.stdout[3:]))


def test_one_plan_executor_serves_the_gpu_emulation_and_the_checker(monkeypatch):
    # calling and checking a CUDA module both run its plan through runtime.launch.run_plan
    import tecc.cpu_fallback.gpu_emu as emu
    import tecc.runtime.cuda_module as cm
    from tecc.runtime.launch import run_plan

    s, args = K.softmax_rows(2, 64, num_thread=32)
    mod = tecc.build(s, args, target="cuda -arch=sm_80")
    calls = []

    def counting(plan, *rest):
        calls.append(plan.name)
        return run_plan(plan, *rest)

    monkeypatch.setattr(cm, "run_plan", counting)
    monkeypatch.setattr(emu, "run_plan", counting)
    x = np.ones((2, 64), "float32")
    y = np.zeros((2, 64), "float32")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        mod(x, y)
    assert mod.check(x, y) == []
    assert calls == ["default_function", "default_function"]


def test_the_leaf_modules_import_nothing_else_of_tecc():
    for leaf in ("errors.py", "config.py", "display.py"):
        assert _tecc_imports(ROOT / leaf) <= {"errors", "config", "display"}, leaf


def test_tvm_style_attribute_paths_after_a_plain_import():
    # classic code writes tvm.contrib.graph_executor.GraphModule(...) after `import tvm`
    code = ("import sys, tecc; m = tecc.contrib.graph_executor; print(m.__name__, "
            "'tecc.tir' in sys.modules); tecc.contrib.no_such_module")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.stdout.split() == ["tecc.contrib.graph_executor", "False"]
    assert "module 'tecc.contrib' has no attribute 'no_such_module'" in out.stderr


def test_every_package_folder_is_installed():
    # a folder of modules missing from pyproject's list works in a checkout and is
    # absent from a user's (non-editable) install
    import pytest

    tomllib = pytest.importorskip("tomllib")  # Python 3.11+
    listed = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    skip = {"tests", "benchmarks", "notebooks", ".venv", "build", "tecc.egg-info"}
    folders = {"tecc." + ".".join(p.parent.relative_to(ROOT).parts) if p.parent != ROOT else "tecc"
               for p in ROOT.rglob("__init__.py")
               if not (set(p.relative_to(ROOT).parts) & skip)
               and not any(s.startswith(".") for s in p.relative_to(ROOT).parts)}
    assert folders - listed == set(), f"add to [tool.setuptools] packages: {sorted(folders - listed)}"
    assert listed - folders == set(), f"listed but not a package folder: {sorted(listed - folders)}"
