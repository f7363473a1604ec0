"""A pytest plugin for tecc's own test suite (``addopts = "-p tecc._pytest_root"``).

The repository's root directory is the ``tecc`` package itself (``__init__.py`` at
the top, installed as ``tecc``).  pytest makes a *package* of every directory with an
``__init__.py`` on the way to the tests and imports that file to look for
``setup_module``: for the root it would import tecc a second time, under the name of
the directory the repository was cloned into -- and fail outright when that name is
not a Python identifier (``my-tecc``, ``tecc-main``), so every test errored before it
ran.  This plugin makes the root a plain directory of the collection tree.
"""
import pytest


@pytest.hookimpl(tryfirst=True, optionalhook=True)  # optional: pytest 7 (a GPU box's) has no such hook
def pytest_collect_directory(path, parent):
    if path == parent.config.rootpath and (path / "__init__.py").is_file() and (path / "pyproject.toml").is_file():
        return pytest.Dir.from_parent(parent, path=path)
    return None
