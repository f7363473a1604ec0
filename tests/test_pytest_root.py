"""The test suite runs from a checkout in a directory of any name: the plugin
``tecc._pytest_root`` keeps pytest from importing the repository's root
``__init__.py`` (the ``tecc`` package itself) under the directory's name."""
import os
import shutil
import subprocess
import sys


def test_a_checkout_whose_directory_name_is_not_an_identifier_runs_its_tests(tmp_path):
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    root = tmp_path / "tecc-main"  # as a zip download of the repository unpacks
    (root / "tests").mkdir(parents=True)
    for name in ("__init__.py", "pyproject.toml"):
        shutil.copy(os.path.join(here, name), root / name)
    (root / "tests" / "test_one.py").write_text("def test_one():\n    assert 1 + 1 == 2\n")
    out = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests"], cwd=root,
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-2000:]
    assert "1 passed" in out.stdout
