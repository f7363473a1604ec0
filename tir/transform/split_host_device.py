"""Split a GPU-scheduled function into a host launch plan and device kernels.

Input: a flattened function whose loops bound to ``blockIdx``/``threadIdx`` are
``For`` nodes of kind ``THREAD_BINDING`` (virtual threads already injected), or
whose GPU code is written as TVM's IR builder writes it: ``AttrStmt(IterVar,
"thread_extent", n)`` scopes, the IterVar's variable standing for the index.
Output: in place of that function,

* the host function (same name and params; ``attrs[keys.HOST]``): workspace
  ``Allocate``s for intermediate global tensors and, in order, one
  ``Evaluate(Call(keys.LAUNCH, (StringImm(kernel), *args)))`` per kernel;
* one device function per outermost bound loop nest (``attrs[keys.KERNEL]``), named
  ``<function>_kernel<i>``: ``thread_extent`` attributes for every GPU index used
  (blocks outermost), shared buffers allocated at the top, bound loops replaced by
  the hardware index (guarded where a loop is shorter than the launch extent); its
  parameters are the global buffers it touches (in host order, then workspaces),
  then the scalars it needs.

A serial loop whose body holds kernels stays on the host (each iteration launches
them: the time loop of a scan, an outer axis left unbound).  Everything else at host
level must be inside some kernel: a stage whose loops are not bound is rejected with
the name of the tensor it writes.
"""
from __future__ import annotations

from ...errors import VerifyError
from .. import expr as E
from .. import keys
from .. import stmt as S
from ..analysis.buffers import allocations, buffers_written, const_size, is_flat
from ..analysis.threads import thread_extent_lists
from ..arith import Analyzer
from ..functor import IRMutator, IRVisitor, collect_vars, post_order_visit, substitute

def _is_gpu_loop(s):
    return (isinstance(s, S.For) and s.kind is S.ForKind.THREAD_BINDING and s.thread_binding is not None
            and keys.is_gpu_tag(s.thread_binding.thread_tag))


def _is_gpu_attr(s):
    """A ``thread_extent`` scope of a GPU index (hand-written kernels)."""
    return (isinstance(s, S.AttrStmt) and s.attr_key == keys.THREAD_EXTENT and isinstance(s.node, E.IterVar)
            and keys.is_gpu_tag(s.node.thread_tag))


def _starts_kernel(s):
    return _is_gpu_loop(s) or _is_gpu_attr(s)


class _Collect(IRVisitor):
    """The variables a kernel defines and the global buffers it touches."""

    def __init__(self, known):
        self.defined = set()
        self.global_buffers = {}  # data var -> 1-D buffer
        self.known = known        # data var -> buffer, of the host's parameters and workspaces

    def visit_For(self, s):
        self.defined.add(s.loop_var)
        self.generic_visit(s)

    def visit_LetStmt(self, s):
        self.defined.add(s.var)
        self.generic_visit(s)

    def visit_Let(self, e):
        self.defined.add(e.var)
        self.generic_visit(e)

    def visit_Allocate(self, s):
        self.defined.add(s.buffer.data)
        self.generic_visit(s)

    def _access(self, node):
        b = node.buffer
        if (b.scope or keys.GLOBAL) == keys.GLOBAL and b.data not in self.global_buffers:
            self.global_buffers[b.data] = b

    def visit_BufferLoad(self, e):
        self._access(e)
        self.generic_visit(e)

    def visit_BufferStore(self, s):
        self._access(s)
        self.generic_visit(s)

    def visit_Call(self, e):
        # an address handed to an intrinsic (a tensor-core load or store) uses the buffer too
        if e.op == keys.ACCESS_PTR and e.args[1] in self.known and e.args[1] not in self.global_buffers:
            self.global_buffers[e.args[1]] = self.known[e.args[1]]
        self.generic_visit(e)


class _Rewrite(IRMutator):
    """Bound loops -> hardware indices (with guards); shared allocations removed."""

    def __init__(self, index_vars, launch, ana):
        self.index_vars = index_vars
        self.launch = launch
        self.ana = ana
        self.bound_tags = []

    def visit_For(self, s):
        if not _is_gpu_loop(s):
            return self.generic_visit(s)
        return self.bind(s.thread_binding.thread_tag, s.loop_var, s.extent, s.body, f"loop {s.loop_var.name!r}")

    def visit_AttrStmt(self, s):
        if not _is_gpu_attr(s):
            return self.generic_visit(s)
        return self.bind(s.node.thread_tag, s.node.var, s.value, s.body, f"thread_extent of {s.node.var.name!r}")

    def bind(self, tag, index, extent, body, what):
        """``body`` run by the threads (blocks) ``index < extent`` of the launch's ``tag``."""
        var = self.index_vars[tag]
        body = substitute(body, {index: var})
        nested = tag in self.bound_tags
        self.bound_tags.append(tag)
        body = self.visit(body)
        self.bound_tags.pop()
        if nested and tag.startswith("blockIdx"):
            raise VerifyError(f"{what} is bound to {tag} inside another loop bound to {tag}; "
                              "a block index can be bound once per kernel")
        if not self.ana.can_prove(E.GE(extent, self.launch[tag])):
            body = S.IfThenElse(E.LT(var, extent), body)
        return body

    def visit_Allocate(self, s):
        body = self.visit(s.body)
        if s.buffer.scope == keys.SHARED:
            return body
        return s if body is s.body else S.Allocate(s.buffer, body)


def _kernel(stmt, name, host_params, workspaces, ana, known):
    col = _Collect(known)
    col.visit(stmt)
    shared = allocations(stmt, (keys.SHARED,))
    launch = {}
    for tag, exts in thread_extent_lists(stmt).items():
        ext = exts[0]
        for e in exts[1:]:
            ext = ana.simplify(E.Max(ext, e))
        bad = [v for v in collect_vars(ext) if v in col.defined]
        if bad:
            raise VerifyError(f"kernel {name}: the extent of {tag} ({ext}) depends on loop variable "
                              f"{bad[0].name!r}; launch extents must be fixed before the kernel starts")
        launch[tag] = ext
    index_vars = {tag: E.Var(tag, "int32") for tag in launch}
    # a thread axis is one index for the whole kernel: its variable may be used
    # outside the loop bound to it (e.g. a store predicate ``threadIdx.x == 0``)
    axis_vars = {}

    def find_axes(node):
        if _is_gpu_loop(node) and node.thread_binding.thread_tag in index_vars:
            axis_vars[node.thread_binding.var] = index_vars[node.thread_binding.thread_tag]

    post_order_visit(stmt, find_axes)
    body = _Rewrite(index_vars, launch, ana).visit(substitute(stmt, axis_vars))
    for buf in reversed(shared):
        body = S.Allocate(buf, body)
    for tag in reversed([t for t in keys.GPU_TAGS if t in launch]):
        iv = E.IterVar(E.Range(E.IntImm("int32", 0), launch[tag]), index_vars[tag], E.IterVarType.THREAD_INDEX, tag)
        body = S.AttrStmt(iv, keys.THREAD_EXTENT, launch[tag], body)
    # parameters: global buffers in host order, then workspaces, then scalars
    handles = [p for p in host_params if p in col.global_buffers]
    handles += [w for w in workspaces if w in col.global_buffers and w not in handles]
    missing = [b for d, b in col.global_buffers.items() if d not in handles]
    if missing:
        raise AssertionError(f"kernel {name} uses buffer {missing[0].name} that the host does not own")
    scalars = sorted((v for v in collect_vars(body) if v not in col.defined and v.dtype != "handle"
                      and v not in index_vars.values()), key=lambda v: v.name)
    for ext in launch.values():
        for v in collect_vars(ext):
            if v not in scalars:
                scalars.append(v)
    params = tuple(handles) + tuple(scalars)
    buffer_map = {h: col.global_buffers[h] for h in handles}
    for buf in shared:
        if const_size(buf) is None:
            raise VerifyError(f"kernel {name}: shared buffer {buf.name!r} has a symbolic size {buf.shape}; "
                              "shared memory must have a constant size")
    attrs = {keys.GLOBAL_SYMBOL: name, keys.KERNEL: True}
    kernel = S.PrimFunc(params, body, buffer_map, attrs)
    launch_call = S.Evaluate(E.Call("int32", keys.LAUNCH, (E.StringImm(name),) + params))
    return kernel, launch_call


def _launches_inside(stmt) -> bool:
    """True if ``stmt`` holds a GPU-bound loop (so it is host code around kernels)."""
    found = []
    post_order_visit(stmt, lambda n: found.append(n) if not found and _starts_kernel(n) else None)
    return bool(found)


def split_host_device(func: S.PrimFunc) -> S.IRModule:
    """Split ``func`` into a host launch plan and its kernels (see the module docs)."""
    name = func.name
    kernels = []
    ana = Analyzer()
    for p in func.params:
        if p.dtype != "handle":
            ana.bind(p, E.Range(E.IntImm(p.dtype, 0), E.IntImm(p.dtype, 2**31 - 1)), allow_override=True)
    host_params = [p for p in func.params if p.dtype == "handle"]
    # (the flattened forms: buffer_map keeps the parameters' shapes)
    known = {b.data: b if is_flat(b) else b.get_flattened_buffer() for b in func.buffer_map.values()}
    known.update((b.data, b) for b in allocations(func.body, (keys.GLOBAL,)))

    def host(stmt, workspaces):
        if _starts_kernel(stmt):
            kname = f"{name}_kernel{len(kernels)}"
            kernel, call = _kernel(stmt, kname, host_params, workspaces, ana, known)
            kernels.append(kernel)
            return call
        if isinstance(stmt, S.SeqStmt):
            return S.seq(*[host(x, workspaces) for x in stmt.seq])
        if isinstance(stmt, S.Allocate):
            if (stmt.buffer.scope or keys.GLOBAL) != keys.GLOBAL:
                raise VerifyError(f"buffer {stmt.buffer.name!r} in {stmt.buffer.scope!r} memory is allocated "
                                  "outside any kernel; compute_at its stage inside a loop bound to "
                                  "blockIdx/threadIdx")
            return S.Allocate(stmt.buffer, host(stmt.body, workspaces + [stmt.buffer.data]))
        if isinstance(stmt, S.LetStmt):
            return S.LetStmt(stmt.var, stmt.value, host(stmt.body, workspaces))
        if isinstance(stmt, S.For) and stmt.kind in (S.ForKind.SERIAL, S.ForKind.UNROLLED) \
                and _launches_inside(stmt.body):
            # a serial loop around kernels (a scan's time loop, an unbound outer
            # axis): the loop stays on the host and each iteration launches them
            return S.For(stmt.loop_var, stmt.min, stmt.extent, S.ForKind.SERIAL, host(stmt.body, workspaces),
                         None, stmt.annotations)
        if isinstance(stmt, S.AssertStmt):
            return S.AssertStmt(stmt.condition, stmt.message, host(stmt.body, workspaces))
        if isinstance(stmt, S.Evaluate) and isinstance(stmt.value, (E.IntImm, E.FloatImm)):
            return stmt
        written = [b.name for b in buffers_written(stmt)]
        what = f"the stage writing {', '.join(repr(w) for w in written)}" if written else "a statement"
        raise VerifyError(
            f"{what} runs outside any GPU kernel: no loop around it is bound to blockIdx/threadIdx. "
            "Bind its outer loops, e.g. bx, tx = s[T].split(s[T].op.axis[0], factor=64); "
            "s[T].bind(bx, te.thread_axis('blockIdx.x')); s[T].bind(tx, te.thread_axis('threadIdx.x'))")

    body = host(func.body, [])
    attrs = dict(func.attrs)
    attrs[keys.HOST] = True
    funcs = {name: S.PrimFunc(func.params, body, func.buffer_map, attrs)}
    funcs.update((k.name, k) for k in kernels)
    return S.IRModule(funcs)


def split_host_device_module(mod: S.IRModule) -> S.IRModule:
    """:func:`split_host_device` applied to every function of ``mod`` that is not
    split yet (neither a host nor a kernel function)."""
    funcs = {}
    changed = False
    for name, func in mod.items():
        if func.attrs.get(keys.HOST) or func.attrs.get(keys.KERNEL):
            funcs[name] = func
            continue
        changed = True
        for sub_name, sub in split_host_device(func).items():
            if sub_name in funcs or (sub_name != name and sub_name in mod.functions):
                raise VerifyError(f"splitting {name!r} makes a kernel {sub_name!r}, but the module already "
                                  "has a function of that name; rename one of them")
            funcs[sub_name] = sub
    return mod.with_functions(funcs) if changed else mod
