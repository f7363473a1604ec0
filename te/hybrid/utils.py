"""Errors, source text and small helpers shared by the hybrid-script modules."""
from __future__ import annotations

import inspect

from ...errors import TeccError


class HybridScriptError(TeccError, ValueError):
    """A hybrid script uses Python that tecc cannot turn into TIR, or is called
    with arguments it cannot take.  The message names the script, the file and
    line, and what to write instead."""


class Source:
    """The text of one hybrid function, with where it came from (for errors)."""

    def __init__(self, text, func_name, filename="<hybrid script>", first_line=1):
        self.text = text
        self.func_name = func_name
        self.filename = filename
        self.first_line = first_line  # the file line of the text's line 1
        self.lines = text.split("\n")

    @classmethod
    def of_function(cls, func):
        """The dedented source of ``func`` (a decorated Python function)."""
        try:
            lines, first = inspect.getsourcelines(func)
        except (OSError, TypeError) as err:
            raise HybridScriptError(
                f"hybrid script {func.__name__!r}: cannot read its source code ({err}); a hybrid script must be "
                "defined in a file (or a notebook cell), not built with exec() or typed at an interactive "
                "prompt") from None
        text = "".join(lines)
        indent = len(lines[0]) - len(lines[0].lstrip(" \t"))
        if indent:
            text = "\n".join(line[indent:] if line[:indent].strip() == "" else line.lstrip()
                             for line in text.split("\n"))
        filename = inspect.getsourcefile(func) or "<unknown file>"
        return cls(text, func.__name__, filename, first)

    def where(self, node) -> str:
        """``file, line N`` of an AST node."""
        line = getattr(node, "lineno", None)
        if line is None:
            return self.filename
        return f"{self.filename}, line {self.first_line + line - 1}"

    def line_text(self, node) -> str:
        line = getattr(node, "lineno", None)
        if line is None or not 1 <= line <= len(self.lines):
            return ""
        return self.lines[line - 1].strip()

    def error(self, node, message) -> HybridScriptError:
        """The error to raise for ``node``: the script, file, line and source line,
        then ``message`` (what is wrong and what to do)."""
        text = self.line_text(node)
        shown = f"\n    {text}" if text else ""
        return HybridScriptError(f"hybrid script {self.func_name!r} ({self.where(node)}): {message}{shown}")


#: names of the loop iterators a ``for`` statement takes
LOOP_FUNCS = ("range", "const_range", "unroll", "parallel", "vectorize", "bind")
