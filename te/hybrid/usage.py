"""Where each name of a hybrid script is assigned and read (a pass over the AST
before parsing), so that the parser knows, at a name's first assignment, what it
may become: a constant, a ``LetStmt`` variable, or a one-element buffer (a name
assigned more than once, or read where a ``LetStmt`` would not reach)."""
from __future__ import annotations

import ast
from dataclasses import dataclass, field


@dataclass
class NameUsage:
    """The assignments and reads of one local name."""

    stores: list = field(default_factory=list)   # Assign/AugAssign target Name nodes, in source order
    loads: list = field(default_factory=list)    # (Name node, statement path, scope chain)
    first_path: tuple = ()                       # statement path of the first assignment
    scope: object = None                         # innermost For / FunctionDef around the first assignment
    loop_target: bool = False                    # a ``for`` target somewhere

    def reads_after_first_store_only(self) -> bool:
        """True if every read is in a statement after the first assignment in the
        same statement list (or nested inside one): what a ``LetStmt`` covers."""
        q = self.first_path
        if not q:
            return False
        head, (block, k) = q[:-1], q[-1]
        for _, path, _ in self.loads:
            if len(path) < len(q) or path[:len(head)] != head:
                return False
            b, j = path[len(head)]
            if b != block or j <= k:
                return False
        return True


class _Usage(ast.NodeVisitor):
    def __init__(self):
        self.names = {}
        self.path = ()
        self.scopes = []

    def usage(self, name) -> NameUsage:
        u = self.names.get(name)
        if u is None:
            u = self.names[name] = NameUsage()
        return u

    def block(self, stmts):
        saved = self.path
        for k, st in enumerate(stmts):
            self.path = saved + ((id(stmts), k),)
            self.visit(st)
        self.path = saved

    def visit_FunctionDef(self, node):
        if self.scopes:  # a nested def: the parser reports it
            return
        self.scopes.append(node)
        self.block(node.body)
        self.scopes.pop()

    def visit_For(self, node):
        self.visit(node.iter)
        if isinstance(node.target, ast.Name):
            self.usage(node.target.id).loop_target = True
        self.scopes.append(node)
        self.block(node.body)
        self.scopes.pop()
        self.block(node.orelse)

    def visit_While(self, node):
        self.visit(node.test)
        self.block(node.body)
        self.block(node.orelse)

    def visit_If(self, node):
        self.visit(node.test)
        self.block(node.body)
        self.block(node.orelse)

    def visit_With(self, node):
        for item in node.items:
            self.visit(item)
        self.block(node.body)

    def visit_Assign(self, node):
        self.visit(node.value)
        for t in node.targets:
            self.visit(t)

    def visit_AugAssign(self, node):
        self.visit(node.value)
        if isinstance(node.target, ast.Name):
            self._store(node.target)
            # ``x += v`` reads x too
            self.usage(node.target.id).loads.append((node.target, self.path, tuple(self.scopes)))
        else:
            self.visit(node.target)

    def _store(self, node):
        u = self.usage(node.id)
        if not u.stores:
            u.first_path = self.path
            u.scope = self.scopes[-1] if self.scopes else None
        u.stores.append(node)

    def visit_Name(self, node):
        if isinstance(node.ctx, ast.Store):
            self._store(node)
        elif isinstance(node.ctx, ast.Load):
            self.usage(node.id).loads.append((node, self.path, tuple(self.scopes)))

    def visit_Lambda(self, node):  # the parser reports it; its names are not the script's
        return

    visit_ListComp = visit_SetComp = visit_DictComp = visit_GeneratorExp = visit_Lambda


def name_usage(func_node) -> dict:
    """``{name: NameUsage}`` for every name the function ``func_node`` assigns or reads."""
    v = _Usage()
    v.visit(func_node)
    return v.names
