"""How tecc's objects show themselves: plain text in a terminal, HTML in Jupyter.

Objects that have a useful picture (a lowered module, a schedule's loop tree, a built
module's kernels, a timing, a benchmark report) define ``_repr_html_`` with the helpers
here, and print the same content as text.  Like ``errors`` and ``config`` this module
imports nothing else of tecc, so every layer may use it.  Pygments (syntax
highlighting) is imported only when a notebook asks for HTML, and is optional: without
it, code shows as plain escaped text.
"""
from __future__ import annotations

import html

#: the pygments lexer of each language tecc prints (the TIR text form reads like C)
_LEXERS = {"c": "c", "cuda": "cuda", "tir": "c", "python": "python", "json": "json"}

_PRE_STYLE = "font-size: 12px; line-height: 1.3; margin: 0; padding: 6px; overflow-x: auto"


def code_html(text: str, language: str = "c") -> str:
    """``text`` as highlighted HTML (inline styles: it renders in Jupyter, VS Code and
    on GitHub without a style sheet); escaped plain text without pygments."""
    try:
        from pygments import highlight  # noqa: PLC0415 -- only when HTML is asked for
        from pygments.formatters import HtmlFormatter  # noqa: PLC0415
        from pygments.lexers import get_lexer_by_name  # noqa: PLC0415
    except ImportError:
        return pre_html(text)
    try:
        lexer = get_lexer_by_name(_LEXERS.get(language, language))
    except Exception:  # noqa: BLE001 -- an unknown language: plain text
        return pre_html(text)
    formatter = HtmlFormatter(noclasses=True, nobackground=True, style="default",
                              prestyles=_PRE_STYLE)
    return highlight(text, lexer, formatter)


def pre_html(text: str) -> str:
    """Plain text, escaped, in a ``<pre>`` (a loop tree, a report)."""
    return f'<pre style="{_PRE_STYLE}">{html.escape(text)}</pre>'


def details_html(summary: str, body_html: str, open_: bool = False) -> str:
    """A collapsible section (``<details>``) titled ``summary`` (plain text)."""
    return (f"<details{' open' if open_ else ''}><summary>{html.escape(summary)}</summary>"
            f"{body_html}</details>")


def _cell(value) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)


def table_html(columns, rows, caption: str | None = None) -> str:
    """An HTML table: ``columns`` (header strings), ``rows`` (sequences of cells; None
    shows as "-", floats with 4 significant digits)."""
    head = "".join(f"<th style='text-align:left'>{html.escape(str(c))}</th>" for c in columns)
    body = "".join("<tr>" + "".join(f"<td style='text-align:left'>{html.escape(_cell(v))}</td>" for v in row)
                   + "</tr>" for row in rows)
    cap = f"<caption style='text-align:left'>{html.escape(caption)}</caption>" if caption else ""
    return f"<table>{cap}<thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def table_text(columns, rows) -> str:
    """The same table as aligned plain text."""
    cells = [[str(c) for c in columns]] + [[_cell(v) for v in row] for row in rows]
    widths = [max(len(r[k]) for r in cells) for k in range(len(columns))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in cells]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def heading_html(text: str) -> str:
    return f"<div style='font-family: monospace; font-weight: bold; margin: 4px 0'>{html.escape(text)}</div>"


__all__ = ["code_html", "details_html", "heading_html", "pre_html", "table_html", "table_text"]
