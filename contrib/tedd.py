"""TVM's ``tvm.contrib.tedd`` (Tensor Expression Debug Display): a schedule's three
graphs as Graphviz DOT text.

* :func:`viz_dataflow_graph`: the tensors and the stages that compute them;
* :func:`viz_schedule_tree`: where each stage is computed -- at the root, inside a
  loop of another stage (``compute_at``), or inlined -- with its loops in order,
  their extents, kinds and thread bindings;
* :func:`viz_itervar_relationship_graph`: per stage, how its loops derive from its
  axes (``split``, ``fuse``), the loops that remain marked.

Each writes the DOT text to ``dot_file_path`` when given, returns it with
``output_dot_string=True``, and with ``show_svg=True`` shows the rendered graph in
Jupyter (which needs Graphviz: the ``graphviz`` Python package or the ``dot``
program).
"""
from __future__ import annotations

import shutil
import subprocess

from ..errors import TeccError
from ..te.schedule import AttachType, Fuse, Singleton, Split
from ..tir import expr as E


def _q(text) -> str:
    """``text`` as a quoted DOT string."""
    return '"' + str(text).replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def _html(text) -> str:
    return str(text).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _dump(dot: str, show_svg: bool, dot_file_path, output_dot_string: bool):
    if dot_file_path:
        with open(dot_file_path, "w", encoding="utf-8") as f:
            f.write(dot)
    if show_svg:
        _show(dot)
    return dot if output_dot_string else None


def _show(dot: str) -> None:
    try:
        import graphviz  # noqa: PLC0415 -- optional
        svg = graphviz.Source(dot).pipe(format="svg").decode("utf-8")
    except ImportError:
        exe = shutil.which("dot")
        if exe is None:
            raise TeccError("tedd: show_svg needs Graphviz (pip install graphviz, and the dot program); or write "
                            "the graph with dot_file_path= and render it elsewhere") from None
        svg = subprocess.run([exe, "-Tsvg"], input=dot, capture_output=True, text=True, check=True).stdout
    from IPython.display import SVG, display  # noqa: PLC0415 -- Jupyter only

    display(SVG(svg))


def _tensor_label(t) -> str:
    shape = ", ".join(str(d) for d in t.shape)
    return f"{t.name}\n({shape})\n{t.dtype}"


def viz_dataflow_graph(sch, show_svg=False, dot_file_path="", output_dot_string=False):
    """The tensors (ellipses) and stages (boxes) of ``sch``: each stage's inputs flow
    into it and its outputs out of it."""
    lines = ['digraph "Dataflow Graph" {', "  rankdir=LR;", '  node [fontname="Courier"];']
    tensor_ids = {}

    def tensor(t):
        key = (t.op, t.value_index)
        if key not in tensor_ids:
            tensor_ids[key] = f"tensor_{len(tensor_ids)}"
            lines.append(f"  {tensor_ids[key]} [shape=ellipse, label={_q(_tensor_label(t))}];")
        return tensor_ids[key]

    for k, st in enumerate(sch.stages):
        op = st.op
        if type(op).__name__ == "PlaceholderOp":
            tensor(op.output(0))
            continue
        sid = f"stage_{k}"
        label = _q(st.name + "\n" + type(op).__name__)
        lines.append(f"  {sid} [shape=box, style=rounded, label={label}];")
        for t in op.input_tensors:
            lines.append(f"  {tensor(t)} -> {sid};")
        for i in range(op.num_outputs):
            lines.append(f"  {sid} -> {tensor(op.output(i))};")
    lines.append("}")
    return _dump("\n".join(lines) + "\n", show_svg, dot_file_path, output_dot_string)


def _loop_words(st, iv, bounds) -> str:
    words = []
    rng = bounds.get(iv)
    if rng is not None:
        words.append(f"[{rng.min}, {rng.min} + {rng.extent})" if not _is_zero(rng.min) else f"extent {rng.extent}")
    return ", ".join(words + st.loop_notes(iv))


def _is_zero(e) -> bool:
    return isinstance(e, E.IntImm) and e.value == 0


def viz_schedule_tree(sch, show_svg=False, dot_file_path="", output_dot_string=False):
    """Where each stage of ``sch`` is computed: a table per stage (its scope, and
    its loops outermost first with extent, kind and binding); an edge from ROOT, or
    from the loop of the stage it is computed at, or a dashed one for an inlined
    stage."""
    from ..te.lower import infer_bound  # noqa: PLC0415

    try:
        bounds = infer_bound(sch)
    except Exception:  # noqa: BLE001 -- an unfinished schedule still shows its loops
        bounds = {}
    ids = {st: f"stage_{k}" for k, st in enumerate(sch.stages)}
    lines = ['digraph "Schedule Tree" {', "  rankdir=TB;", '  node [shape=plaintext, fontname="Courier"];',
             '  root [shape=box, label="ROOT"];']
    for st in sch.stages:
        if type(st.op).__name__ == "PlaceholderOp":
            continue
        rows = [f'<tr><td bgcolor="lightgrey" colspan="2"><b>{_html(st.name)}</b> '
                f'scope: {_html(st.scope or "global")}</td></tr>']
        for i, iv in enumerate(st.leaf_iter_vars):
            rows.append(f'<tr><td port="iv{i}">{i}</td><td>{_html(iv.var.name)} {_html(_loop_words(st, iv, bounds))}'
                        "</td></tr>")
        lines.append(f"  {ids[st]} [label=<<table border=\"0\" cellborder=\"1\" cellspacing=\"0\">{''.join(rows)}"
                     "</table>>];")
        if st.attach_type == AttachType.SCOPE and st.attach_stage is not None:
            leaves = list(st.attach_stage.leaf_iter_vars)
            port = f":iv{leaves.index(st.attach_ivar)}" if st.attach_ivar in leaves else ""
            lines.append(f"  {ids[st.attach_stage]}{port} -> {ids[st]};")
        elif st.attach_type in (AttachType.INLINE, AttachType.INLINED_ALREADY):
            lines.append(f'  root -> {ids[st]} [style=dashed, label="inline"];')
        else:
            lines.append(f"  root -> {ids[st]};")
    lines.append("}")
    return _dump("\n".join(lines) + "\n", show_svg, dot_file_path, output_dot_string)


def viz_itervar_relationship_graph(sch, show_svg=False, dot_file_path="", output_dot_string=False):
    """Per stage of ``sch``, its loops and how they derive from its axes: a split
    node from a loop to its outer and inner loops (with the factor or the number of
    parts), a fuse node from two loops to one; the loops that remain (the leaves)
    are filled."""
    lines = ['digraph "IterVar Relationship Graph" {', "  rankdir=TB;", '  node [fontname="Courier"];']
    n = 0
    for k, st in enumerate(sch.stages):
        if type(st.op).__name__ == "PlaceholderOp":
            continue
        lines.append(f"  subgraph cluster_{k} {{")
        lines.append(f"    label={_q(st.name)};")
        ids = {}

        def node(iv, k=k, ids=ids, st=st):
            if iv not in ids:
                ids[iv] = f"s{k}_iv{len(ids)}"
                fill = ', style=filled, fillcolor="lightblue"' if iv in st.leaf_iter_vars else ""
                lines.append(f"    {ids[iv]} [shape=ellipse, label={_q(iv.var.name)}{fill}];")
            return ids[iv]

        for iv in st.all_iter_vars:
            node(iv)
        for rel in st.relations:
            n += 1
            rid = f"rel{n}"
            if isinstance(rel, Split):
                how = f"factor {rel.factor}" if rel.factor is not None else f"nparts {rel.nparts}"
                label = _q(f"split ({how})")
                lines.append(f"    {rid} [shape=box, label={label}];")
                lines.append(f"    {node(rel.parent)} -> {rid};")
                lines.append(f'    {rid} -> {node(rel.outer)} [label="outer"];')
                lines.append(f'    {rid} -> {node(rel.inner)} [label="inner"];')
            elif isinstance(rel, Fuse):
                lines.append(f"    {rid} [shape=box, label=\"fuse\"];")
                lines.append(f'    {node(rel.outer)} -> {rid} [label="outer"];')
                lines.append(f'    {node(rel.inner)} -> {rid} [label="inner"];')
                lines.append(f"    {rid} -> {node(rel.fused)};")
            elif isinstance(rel, Singleton):
                lines.append(f"    {rid} [shape=box, label=\"singleton\"];")
                lines.append(f"    {rid} -> {node(rel.iter)};")
        lines.append("  }")
    lines.append("}")
    return _dump("\n".join(lines) + "\n", show_svg, dot_file_path, output_dot_string)


__all__ = ["viz_dataflow_graph", "viz_itervar_relationship_graph", "viz_schedule_tree"]
