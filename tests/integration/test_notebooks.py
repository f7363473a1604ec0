"""The notebooks in notebooks/: committed without outputs, and each one runs top to
bottom in a fresh kernel (on this machine: the CPU, CUDA kernels on the emulator)."""
import json
from pathlib import Path

import pytest

NOTEBOOKS = sorted((Path(__file__).resolve().parents[2] / "notebooks").glob("*.ipynb"))


def test_there_are_notebooks_and_the_readme_lists_each():
    assert len(NOTEBOOKS) >= 5
    readme = (NOTEBOOKS[0].parent / "README.md").read_text()
    for nb in NOTEBOOKS:
        assert nb.name in readme, f"notebooks/README.md does not list {nb.name}"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_notebook_is_committed_without_outputs(path):
    nb = json.loads(path.read_text())
    for k, cell in enumerate(nb["cells"]):
        if cell["cell_type"] == "code":
            assert cell.get("outputs") == [] and cell.get("execution_count") is None, \
                f"{path.name}: cell {k} has outputs; strip them (jupyter nbconvert --clear-output --inplace)"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_notebook_runs_top_to_bottom(path, tmp_path):
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    pytest.importorskip("ipykernel")
    nb = nbformat.read(str(path), as_version=4)
    client = nbclient.NotebookClient(nb, timeout=900, kernel_name="python3",
                                     resources={"metadata": {"path": str(tmp_path)}})
    try:
        client.execute()
    except nbclient.exceptions.CellExecutionError as err:  # the failing cell and its traceback
        pytest.fail(f"{path.name}: {err}")
    errors = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", []) if o.output_type == "error"]
    assert not errors
    text = "".join(o.get("text", "") for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])
                   if o.output_type == "stream")
    assert "running on" in text, \
        f"{path.name} does not say which device it ran on"
