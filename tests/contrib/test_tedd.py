"""tecc.contrib.tedd: a schedule's dataflow graph, schedule tree and itervar
relationships as Graphviz DOT (TVM's TEDD tutorial)."""
import re
import shutil

import pytest

from tecc import te, topi
from tecc.contrib import tedd
from tecc.errors import TeccError


def _schedule():
    A = te.placeholder((16, 16), name="A")
    B = te.compute((16, 16), lambda i, j: A[i, j] + 1.0, name="B")
    C = te.compute((16, 16), lambda i, j: B[i, j] * 2.0, name="C")
    D = te.compute((16, 16), lambda i, j: C[i, j] - 1.0, name="D")
    s = te.create_schedule(D.op)
    s[B].compute_inline()
    xo, xi = s[D].split(D.op.axis[0], factor=4)
    fused = s[D].fuse(xi, D.op.axis[1])
    s[D].vectorize(fused)
    s[C].compute_at(s[D], xo)
    return s


def test_dataflow_graph(tmp_path):
    path = tmp_path / "dfg.dot"
    dot = tedd.viz_dataflow_graph(_schedule(), dot_file_path=str(path), output_dot_string=True)
    assert path.read_text() == dot and dot.startswith('digraph "Dataflow Graph" {') and dot.rstrip().endswith("}")
    for name in ("A", "B", "C", "D"):
        assert f'label="{name}\\n(16, 16)\\nfloat32"' in dot
    # A -> stage B -> B -> stage C -> C -> stage D -> D
    assert len(re.findall(r"-> stage_\d+;", dot)) == 3 and len(re.findall(r"stage_\d+ -> tensor_\d+;", dot)) == 3


def test_schedule_tree_shows_attachments_loops_and_kinds():
    dot = tedd.viz_schedule_tree(_schedule(), output_dot_string=True)
    assert re.search(r'root -> stage_\d+ \[style=dashed, label="inline"\];', dot)          # B inlined
    assert re.search(r"stage_\d+:iv0 -> stage_\d+;", dot)                                 # C at D's outer loop
    assert "i.outer extent 4" in dot and "i.inner.j.fused extent 64, vectorized" in dot
    assert tedd.viz_schedule_tree(_schedule()) is None  # no output_dot_string: nothing returned


def test_itervar_relationship_graph_shows_splits_and_fuses():
    dot = tedd.viz_itervar_relationship_graph(_schedule(), output_dot_string=True)
    assert 'label="split (factor 4)"' in dot and 'label="fuse"' in dot
    assert re.search(r'\[shape=ellipse, label="i.outer", style=filled, fillcolor="lightblue"\]', dot)
    assert re.search(r'\[shape=ellipse, label="i"\];', dot)  # not a leaf any more: not filled


def test_tvms_tedd_tutorial_schedule_renders():
    A = te.placeholder((10, 10, 8, 1), name="A")
    W = te.placeholder((3, 3, 8, 8), name="W")
    out = topi.nn.relu(topi.nn.conv2d_hwcn(A, W, 1, "SAME", 1))
    s = topi.generic.schedule_conv2d_hwcn([out])
    for viz in (tedd.viz_dataflow_graph, tedd.viz_schedule_tree, tedd.viz_itervar_relationship_graph):
        assert viz(s, output_dot_string=True).count("{") >= 1
    s = s.normalize()
    assert "Out" in tedd.viz_schedule_tree(s, output_dot_string=True)


@pytest.mark.skipif(shutil.which("dot") is not None, reason="Graphviz is installed here")
def test_show_svg_without_graphviz_says_what_to_install(monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "graphviz", None)
    with pytest.raises(TeccError, match=r"show_svg needs Graphviz \(pip install graphviz, and the dot program\)"):
        tedd.viz_dataflow_graph(_schedule(), show_svg=True)
