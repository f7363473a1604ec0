"""The checking mode's C: the emulator's kernels with every memory access instrumented.

:class:`CodeGenCheck` prints a kernel split by :mod:`.split` as the emulator's printer
does (:class:`~.codegen.CodeGenSim`: the threads of a block in loops between the
barriers), with each load and store of a buffer turned into a call of a small static
helper first -- the approach of address and thread sanitizers.  A helper receives the
flat index, the buffer's bound, the thread number and the access's *site* (its number
in the kernel's :class:`KernelSites`), and

* checks the index against the bound (an access out of bounds is skipped: a load gives
  0, a store does nothing), and
* keeps the shadow state of the race and initialization checks: per element of a
  shared buffer the thread that wrote it and up to two threads that read it this epoch,
  and whether any thread wrote it since the allocation; per element the checked blocks
  touch of a global buffer the kernel writes, the last write and up to two reads as
  ``(block, thread, epoch)`` (a hash table).  A barrier starts a new epoch.

Each function ``tecc_check_<kernel>(params..., tecc_check_io_t*)`` runs the blocks the
caller lists, one after the other, on the caller's copies of the arguments.  A finding
is appended to the caller's record array as ``RECORD_SIZE`` int64s (kind, site, block,
thread, index and three details, see :data:`RECORD_FIELDS`) when the caller's finding
log would keep it: the function keeps the log's rules itself (at most ``limit`` findings
of each kind, one per statement) from the counts and the per-statement ``seen`` flags
the caller passes, and stops (a ``longjmp`` to its entry) once every kind is full.
The caller turns records into messages (:mod:`.check`).

The semantics are those of the checking interpreter, :class:`.check.CheckInterpreter`,
kept exactly: allocations start zeroed, operands are evaluated left to right (the C
binds any operand holding a checked load to a temporary before the next one, see
:class:`_Sequencer`) and ``Select`` and a vector ``if_then_else`` evaluate both sides.
The values are C's, as in the emulator: where a kernel's indices or branches depend on
an ``int32`` that overflows (the interpreter's integers do not) or on the last bit of a
float, the two may see different accesses.  A kernel with an access the helpers cannot follow (a buffer of vectors, a pointer into
a buffer handed to an intrinsic...) is refused by :func:`uncheckable_reason`; the
checker then interprets it.
"""
from __future__ import annotations

import ctypes
from dataclasses import dataclass, field, replace

from ...tir import dtype as _dt
from ...tir import expr as E
from ...tir import keys
from ...tir import stmt as S
from ...tir.analysis import buffer_size, const_size, flat_index, is_flat, written_data
from ...tir.functor import IRMutator, IRVisitor
from ...tir.printer import to_text
from ...runtime.symbols import c_symbol
from ..codegen_c import P_PRIMARY, P_UNARY
from .codegen import CodeGenSim
from .split import SimKernel

#: finding kinds as the C numbers them (the order of :class:`~tecc.cpu_fallback.check.FindingLog`'s kinds)
KINDS = ("race", "out_of_bounds", "uninitialized")
#: the int64 fields of one finding record; ``detail`` is the bound (out of bounds) or the other
#: thread (a race), ``other_block`` the other access's block (a race), ``what`` 0 when the other
#: access wrote the element, 1 when it read it
RECORD_FIELDS = ("kind", "site", "block", "thread", "index", "detail", "other_block", "what")
RECORD_SIZE = len(RECORD_FIELDS)
#: return codes of a check function
DONE, STOPPED, ASSERT_FAILED, FAILED = 0, 1, 2, 3

#: the state a check function shares with its caller: (field, C declaration, ctypes type)
IO_FIELDS = (
    ("blocks", "const int64_t* {}", ctypes.c_void_p),       # linear numbers of the blocks to run, in order
    ("nblocks", "int64_t {}", ctypes.c_int64),
    ("bounds", "const int64_t* {}", ctypes.c_void_p),       # per kernel parameter: elements of its buffer
    ("site_key", "const int32_t* {}", ctypes.c_void_p),     # access site -> its statement (one finding each)
    ("nkeys", "int64_t {}", ctypes.c_int64),
    ("seen", "uint8_t* {}", ctypes.c_void_p),               # [kind][statement]: already reported
    ("counts", "int64_t {}[3]", ctypes.c_int64 * 3),        # findings kept so far, per kind
    ("limit", "int64_t {}", ctypes.c_int64),                # findings kept at most, per kind
    ("records", "int64_t* {}", ctypes.c_void_p),            # [3 * limit][RECORD_SIZE]
    ("nrecords", "int64_t {}", ctypes.c_int64),
    ("out_of_bounds", "int64_t {}", ctypes.c_int64),        # an access was out of bounds, reported or not
    ("failed_assert", "int64_t {}", ctypes.c_int64),        # the assertion that failed (ASSERT_FAILED)
    ("failed_block", "int64_t {}", ctypes.c_int64),
    ("failed_thread", "int64_t {}", ctypes.c_int64),
)


class CheckIO(ctypes.Structure):
    """``tecc_check_io_t``, as Python fills and reads it."""

    _fields_ = [(name, ctype) for name, _, ctype in IO_FIELDS]


def _io_typedef() -> str:
    lines = ["typedef struct {"]
    lines += ["    " + decl.format(name) + ";" for name, decl, _ in IO_FIELDS]
    lines.append("} tecc_check_io_t;")
    return "\n".join(lines)


# The helpers every check function calls.  Names follow the interpreter's: an epoch is
# the stretch between two barriers (a block starts a new one); a pending read is a read
# of a shared element no thread of the block wrote, reported at the end of its epoch
# unless a thread writes the element before then (a race is reported instead).
_RUNTIME = r"""
enum { TECC_RACE = 0, TECC_OUT_OF_BOUNDS = 1, TECC_UNINITIALIZED = 2 };
enum { TECC_WROTE = 0, TECC_READ = 1 };
enum { TECC_DONE = 0, TECC_STOPPED = 1, TECC_ASSERT_FAILED = 2, TECC_FAILED = 3 };

typedef struct {            /* a read of a never-written shared element; site -1: written since */
    int64_t site, index, thread;
} tecc_pending_t;

typedef struct {            /* one access to a global element (thread -1: none) */
    int64_t block, epoch;
    int32_t thread;
} tecc_access_t;

typedef struct {            /* the accesses to one element of a global buffer (buffer -1: a free slot) */
    int64_t index;
    int32_t buffer, nreaders;
    tecc_access_t writer, readers[2];
} tecc_global_t;

typedef struct {            /* per element of one shared buffer */
    int32_t* writer;        /* the thread that wrote it this epoch, or -1 */
    int32_t* reader0;       /* up to two threads that read it this epoch, or -1 */
    int32_t* reader1;
    int64_t* pending;       /* its pending read (an index into the list), or -1 */
    uint8_t* written;       /* written by a thread of the block since the allocation */
    int64_t size;
} tecc_shadow_t;

typedef struct {
    tecc_check_io_t* io;
    jmp_buf* exit;
    int status;             /* why the check left through exit */
    int64_t block, epoch, block_records;
    tecc_pending_t* pending;
    int64_t npending, pending_cap;
    tecc_global_t* globals;
    int64_t nglobals, globals_cap;
    void** heap;            /* live allocations, freed when the check stops early */
    int64_t nheap, heap_cap;
} tecc_check_t;

static void tecc_chk_exit(tecc_check_t* c, int status) {
    c->status = status;
    longjmp(*c->exit, 1);
}

static void tecc_chk_out_of_memory(tecc_check_t* c) {
    tecc_set_error("out of memory in the GPU checker");
    tecc_chk_exit(c, TECC_FAILED);
}

/* a larger copy of the array p of *cap elements (64 at first), or leave on failure */
static void* tecc_chk_grow(tecc_check_t* c, void* p, int64_t* cap, size_t elem) {
    int64_t n = *cap ? 2 * *cap : 64;
    void* q = realloc(p, (size_t)n * elem);
    if (q == NULL) {
        tecc_chk_out_of_memory(c);
    }
    *cap = n;
    return q;
}

static void* tecc_chk_alloc(tecc_check_t* c, size_t nbytes) {  /* zeroed, as the interpreter's */
    if (c->nheap == c->heap_cap) {
        c->heap = (void**)tecc_chk_grow(c, c->heap, &c->heap_cap, sizeof(void*));
    }
    void* p = calloc(1, nbytes ? nbytes : 1);
    if (p == NULL) {
        tecc_chk_out_of_memory(c);
    }
    c->heap[c->nheap++] = p;
    return p;
}

static void tecc_chk_release(tecc_check_t* c, void* p) {  /* allocations end innermost first */
    int64_t k = c->nheap - 1;
    while (k > 0 && c->heap[k] != p) {
        --k;
    }
    memmove(&c->heap[k], &c->heap[k + 1], (size_t)(c->nheap - 1 - k) * sizeof(void*));
    c->nheap -= 1;
    free(p);
}

static tecc_check_t* tecc_chk_open(tecc_check_io_t* io, jmp_buf* exit) {
    tecc_check_t* c = (tecc_check_t*)calloc(1, sizeof(tecc_check_t));
    if (c != NULL) {
        c->io = io;
        c->exit = exit;
    }
    return c;
}

static void tecc_chk_close(tecc_check_t* c) {
    for (int64_t k = 0; k < c->nheap; ++k) {
        free(c->heap[k]);
    }
    free(c->heap);
    free(c->pending);
    free(c->globals);
    free(c);
}

/* keep a finding if the caller's log would: at most `limit` per kind, one per statement */
static void tecc_chk_report(tecc_check_t* c, int kind, int32_t site, int64_t index, int32_t thread,
                            int64_t detail, int64_t other_block, int64_t what) {
    tecc_check_io_t* io = c->io;
    uint8_t* seen = io->seen + (int64_t)kind * io->nkeys + io->site_key[site];
    if (io->counts[kind] >= io->limit || *seen) {
        return;
    }
    *seen = 1;
    io->counts[kind] += 1;
    int64_t* r = io->records + io->nrecords * TECC_RECORD_SIZE;
    io->nrecords += 1;
    r[0] = kind;
    r[1] = site;
    r[2] = c->block;
    r[3] = thread;
    r[4] = index;
    r[5] = detail;
    r[6] = other_block;
    r[7] = what;
    if (io->counts[0] >= io->limit && io->counts[1] >= io->limit && io->counts[2] >= io->limit) {
        tecc_chk_exit(c, TECC_STOPPED);
    }
}

static void tecc_chk_assert_failed(tecc_check_t* c, int64_t which, int32_t thread) {
    c->io->failed_assert = which;
    c->io->failed_block = c->block;
    c->io->failed_thread = thread;
    tecc_chk_exit(c, TECC_ASSERT_FAILED);
}

/* -- shared buffers ----------------------------------------------------------------- */
static void tecc_chk_shadow_reset(tecc_shadow_t* s) {  /* a barrier: a new epoch */
    size_t n = s->size > 0 ? (size_t)s->size : 1;
    memset(s->writer, 0xff, 3 * n * sizeof(int32_t));
    memset(s->pending, 0xff, n * sizeof(int64_t));
}

static void tecc_chk_shadow_open(tecc_check_t* c, tecc_shadow_t* s, int64_t size) {
    size_t n = size > 0 ? (size_t)size : 1;
    char* p = (char*)tecc_chk_alloc(c, n * (3 * sizeof(int32_t) + sizeof(int64_t) + 1));
    s->pending = (int64_t*)p;
    s->writer = (int32_t*)(p + n * sizeof(int64_t));
    s->reader0 = s->writer + n;
    s->reader1 = s->reader0 + n;
    s->written = (uint8_t*)(s->reader1 + n);
    s->size = size;
    tecc_chk_shadow_reset(s);
}

static void tecc_chk_shadow_close(tecc_check_t* c, tecc_shadow_t* s) {
    tecc_chk_release(c, s->pending);
}

static void tecc_chk_shared(tecc_check_t* c, tecc_shadow_t* s, int64_t i, int32_t t, int32_t site, int write) {
    if (write) {
        s->written[i] = 1;
        if (s->pending[i] >= 0) {  /* written later in the epoch by another thread: a race, reported below */
            c->pending[s->pending[i]].site = -1;
            s->pending[i] = -1;
        }
    } else if (!s->written[i] && s->pending[i] < 0) {
        if (c->npending == c->pending_cap) {
            c->pending = (tecc_pending_t*)tecc_chk_grow(c, c->pending, &c->pending_cap, sizeof(tecc_pending_t));
        }
        tecc_pending_t* p = &c->pending[c->npending];
        p->site = site;
        p->index = i;
        p->thread = t;
        s->pending[i] = c->npending++;
    }
    int32_t other = -1;
    int what = TECC_WROTE;
    int32_t writer = s->writer[i];
    if (writer >= 0 && writer != t) {
        other = writer;
    } else if (write) {
        int32_t r0 = s->reader0[i], r1 = s->reader1[i];
        if (r0 >= 0 && r0 != t) {
            other = r0;
            what = TECC_READ;
        } else if (r1 >= 0 && r1 != t) {
            other = r1;
            what = TECC_READ;
        }
    }
    if (write) {
        s->writer[i] = t;
    } else if (s->reader0[i] < 0) {
        s->reader0[i] = t;
    } else if (s->reader0[i] != t && s->reader1[i] < 0) {
        s->reader1[i] = t;
    }
    if (other >= 0) {
        tecc_chk_report(c, TECC_RACE, site, i, t, other, c->block, what);
    }
}

/* the pending reads of the epoch that ends, in the order they happened */
static void tecc_chk_flush(tecc_check_t* c) {
    int64_t n = c->npending;
    c->npending = 0;
    for (int64_t k = 0; k < n; ++k) {
        tecc_pending_t p = c->pending[k];
        if (p.site >= 0) {
            tecc_chk_report(c, TECC_UNINITIALIZED, (int32_t)p.site, p.index, (int32_t)p.thread, 0, c->block, 0);
        }
    }
}

static void tecc_chk_barrier(tecc_check_t* c) {
    tecc_chk_flush(c);
    c->epoch += 1;
}

/* -- global buffers the kernel writes ------------------------------------------------- */
static size_t tecc_chk_hash(int32_t buffer, int64_t i) {
    uint64_t h = (uint64_t)i * 0x9E3779B97F4A7C15ull ^ (uint64_t)(uint32_t)buffer * 0xC2B2AE3D27D4EB4Full;
    return (size_t)(h ^ (h >> 31));
}

static tecc_global_t* tecc_chk_global_slot(tecc_check_t* c, int32_t buffer, int64_t i) {
    if (2 * (c->nglobals + 1) > c->globals_cap) {  /* at most half full: rehash into twice the slots */
        int64_t cap = c->globals_cap ? 2 * c->globals_cap : 1024;
        tecc_global_t* slots = (tecc_global_t*)malloc((size_t)cap * sizeof(tecc_global_t));
        if (slots == NULL) {
            tecc_chk_out_of_memory(c);
        }
        for (int64_t k = 0; k < cap; ++k) {
            slots[k].buffer = -1;
        }
        for (int64_t k = 0; k < c->globals_cap; ++k) {
            tecc_global_t* g = &c->globals[k];
            if (g->buffer >= 0) {
                size_t j = tecc_chk_hash(g->buffer, g->index) & (size_t)(cap - 1);
                while (slots[j].buffer >= 0) {
                    j = (j + 1) & (size_t)(cap - 1);
                }
                slots[j] = *g;
            }
        }
        free(c->globals);
        c->globals = slots;
        c->globals_cap = cap;
    }
    size_t mask = (size_t)(c->globals_cap - 1);
    for (size_t j = tecc_chk_hash(buffer, i) & mask;; j = (j + 1) & mask) {
        tecc_global_t* g = &c->globals[j];
        if (g->buffer == buffer && g->index == i) {
            return g;
        }
        if (g->buffer < 0) {
            g->buffer = buffer;
            g->index = i;
            g->nreaders = 0;
            g->writer.thread = -1;
            c->nglobals += 1;
            return g;
        }
    }
}

/* not ordered: another block (blocks run in no fixed order), or another thread with no barrier between */
static int tecc_chk_unordered(const tecc_access_t* a, int64_t block, int32_t t, int64_t epoch) {
    return a->block != block || (a->thread != t && a->epoch == epoch);
}

static void tecc_chk_global(tecc_check_t* c, int32_t buffer, int64_t i, int32_t t, int32_t site, int write) {
    tecc_global_t* g = tecc_chk_global_slot(c, buffer, i);
    tecc_access_t me;
    me.block = c->block;
    me.epoch = c->epoch;
    me.thread = t;
    tecc_access_t other;
    int found = 0, what = TECC_WROTE;
    if (g->writer.thread >= 0 && tecc_chk_unordered(&g->writer, me.block, t, me.epoch)) {
        other = g->writer;
        found = 1;
    }
    if (write) {
        for (int k = 0; !found && k < g->nreaders; ++k) {
            if (tecc_chk_unordered(&g->readers[k], me.block, t, me.epoch)) {
                other = g->readers[k];
                found = 1;
                what = TECC_READ;
            }
        }
        g->writer = me;
    } else {
        int same = -1;
        for (int k = 0; k < g->nreaders; ++k) {
            if (g->readers[k].block == me.block && g->readers[k].thread == t) {
                same = k;
                break;
            }
        }
        if (same >= 0) {
            g->readers[same] = me;  /* a thread's own earlier read is ordered before */
        } else {
            if (g->nreaders == 2) {
                g->readers[0] = g->readers[1];
                g->nreaders = 1;
            }
            g->readers[g->nreaders++] = me;
        }
    }
    if (found) {
        tecc_chk_report(c, TECC_RACE, site, i, t, other.thread, other.block, what);
    }
}

/* -- one access: the bound, then the shadow of each element ------------------------------ */
static inline int tecc_chk_access(tecc_check_t* c, int64_t i, int64_t bound, int32_t t, int32_t site,
                                  tecc_shadow_t* shared, int32_t global, int write) {
    if (__builtin_expect(i < 0 || i >= bound, 0)) {
        c->io->out_of_bounds = 1;
        tecc_chk_report(c, TECC_OUT_OF_BOUNDS, site, i, t, bound, 0, 0);
        return 0;
    }
    if (t >= 0) {
        if (shared != NULL) {
            tecc_chk_shared(c, shared, i, t, site, write);
        } else if (global >= 0) {
            tecc_chk_global(c, global, i, t, site, write);
        }
    }
    return 1;
}

static int tecc_chk_lanes(tecc_check_t* c, const int64_t* idx, int lanes, int64_t bound, int32_t t,
                          int32_t site, tecc_shadow_t* shared, int32_t global, int write) {
    for (int l = 0; l < lanes; ++l) {
        if (idx[l] < 0 || idx[l] >= bound) {  /* the first lane outside: the whole access is skipped */
            c->io->out_of_bounds = 1;
            tecc_chk_report(c, TECC_OUT_OF_BOUNDS, site, idx[l], t, bound, 0, 0);
            return 0;
        }
    }
    if (t >= 0) {
        for (int l = 0; l < lanes; ++l) {
            if (shared != NULL) {
                tecc_chk_shared(c, shared, idx[l], t, site, write);
            } else if (global >= 0) {
                tecc_chk_global(c, global, idx[l], t, site, write);
            }
        }
    }
    return 1;
}

static int tecc_chk_ramp(tecc_check_t* c, int64_t base, int64_t stride, int lanes, int64_t bound, int32_t t,
                         int32_t site, tecc_shadow_t* shared, int32_t global, int write) {
    int64_t idx[64];
    for (int l = 0; l < lanes; ++l) {
        idx[l] = base + l * stride;
    }
    return tecc_chk_lanes(c, idx, lanes, bound, t, site, shared, global, write);
}

/* -- blocks ------------------------------------------------------------------------------- */
static int64_t tecc_chk_begin_block(tecc_check_t* c, int64_t k) {
    c->block = c->io->blocks[k];
    c->epoch += 1;
    c->block_records = c->io->nrecords;
    return c->block;
}

/* after the k-th block: report its pending reads; once a block had findings, only the
   last block is still checked (the middle ones would repeat them) */
static int64_t tecc_chk_next_block(tecc_check_t* c, int64_t k) {
    tecc_chk_flush(c);
    int64_t left = c->io->nblocks - k - 1;
    if (c->io->nrecords > c->block_records && left > 1) {
        return c->io->nblocks - 1;
    }
    return k + 1;
}
"""

#: the most lanes a vector access may have (the size of tecc_chk_ramp's lane array)
MAX_LANES = 64


# ----------------------------------------------------------------------------
# what the compiled checker cannot follow
# ----------------------------------------------------------------------------
class _Refusal(IRVisitor):
    """Finds the first access :class:`CodeGenCheck` cannot check (see :func:`uncheckable_reason`)."""

    def __init__(self, declared: dict):
        self.declared = declared    # data Var -> dtype of its buffer (parameters, allocations seen)
        self.reason = None

    def refuse(self, why):
        if self.reason is None:
            self.reason = why

    def visit_Allocate(self, s):
        self.declared[s.buffer.data] = s.buffer.dtype
        self.generic_visit(s)

    def access(self, buf, indices):
        dtype = self.declared.get(buf.data)
        if dtype is None:
            self.refuse(f"it accesses buffer {buf.name!r} through a handle that is neither a parameter nor an "
                        "allocation of the kernel")
        elif _dt.lanes(buf.dtype) > 1:
            self.refuse(f"buffer {buf.name!r} holds vectors ({buf.dtype})")
        elif dtype != buf.dtype:
            self.refuse(f"it accesses buffer {buf.name!r} as {buf.dtype} elements, but the buffer holds {dtype}")
        for index in indices:
            if _dt.lanes(index.dtype) > MAX_LANES:
                self.refuse(f"an access of {buf.name!r} has {_dt.lanes(index.dtype)} lanes (at most {MAX_LANES})")

    def visit_BufferLoad(self, e):
        self.access(e.buffer, e.indices)
        self.generic_visit(e)

    def visit_BufferStore(self, s):
        self.access(s.buffer, s.indices)
        self.generic_visit(s)

    def visit_Call(self, e):
        if e.op == keys.ACCESS_PTR:
            self.refuse(f"it passes a pointer into a buffer to an intrinsic (`{to_text(e)}`)")
        self.generic_visit(e)


def uncheckable_reason(sim: SimKernel):
    """Why :class:`CodeGenCheck` cannot instrument ``sim``, or None when it can: an
    access through a handle it cannot bound, a buffer of vectors or read as another
    type (the checker counts scalar elements of the buffer's own type), a pointer
    handed to an intrinsic (the accesses behind it are not seen)."""
    declared = {buf.data: buf.dtype for buf in sim.func.buffer_map.values()}
    refusal = _Refusal(declared)
    refusal.visit(sim.block_body)
    return None if refusal.reason is None else f"kernel {sim.name}: {refusal.reason}"


# ----------------------------------------------------------------------------
# evaluation order
# ----------------------------------------------------------------------------
def _inside(index, bound) -> bool:
    """True if every lane of ``index`` is a constant in ``[0, bound)`` (``bound`` an int)."""
    if bound is None:
        return False
    if isinstance(index, E.IntImm):
        return 0 <= index.value < bound
    if isinstance(index, E.Ramp) and isinstance(index.base, E.IntImm) and isinstance(index.stride, E.IntImm):
        last = index.base.value + (index.lanes - 1) * index.stride.value
        return 0 <= min(index.base.value, last) and max(index.base.value, last) < bound
    return False


def is_checked(sim: SimKernel, buf: S.Buffer, indices) -> bool:
    """Does checking an access of ``buf`` at ``indices`` do anything (report, or change
    shadow state)?  Not for a local buffer accessed at constant indices inside its
    constant size (a register tile, mostly); the printer leaves those plain."""
    if buf.scope != keys.LOCAL:
        return True
    if buf.data in sim.expanded:  # a per-thread copy [threads, n]: the thread's own index counts
        return not _inside(indices[1], E.const_int_value(buf.shape[1]))
    return not _inside(flat_index(buf, indices), const_size(buf))


class _Sequencer(IRMutator):
    """Bind operands to ``Let`` temporaries so that the C evaluates the checked loads in
    the interpreter's order (C leaves the order of operands unspecified).

    Where two or more operands of an expression hold a checked load, every such operand
    but the last is bound, in order, to a ``Let`` around the expression; a scalar
    ``Select`` (the C ternary evaluates one side) with a load on a side gets all of
    them bound, as the interpreter evaluates both sides.  The short-circuit ``&&``, ``||``
    and scalar ``if_then_else`` already agree with the interpreter.  A loop whose start
    or extent loads memory gets both bound to a ``LetStmt`` (C evaluates a loop's
    condition at every iteration, the interpreter once).  Rewritten accesses are mapped
    to the ones they replace in :attr:`origin`.
    """

    def __init__(self, sim: SimKernel):
        self.sim = sim
        self.origin = {}            # rewritten BufferLoad/BufferStore -> the node it replaces
        self._memo = {}             # id(expr) -> (expr, holds a checked load)

    def holds_load(self, e) -> bool:
        hit = self._memo.get(id(e))
        if hit is not None and hit[0] is e:
            return hit[1]
        if isinstance(e, E.BufferLoad) and is_checked(self.sim, e.buffer, e.indices):
            found = True
        else:
            found = False
            for name in type(e)._children:
                value = getattr(e, name)
                items = value if isinstance(value, tuple) else (value,)
                if any(isinstance(v, E.PrimExpr) and self.holds_load(v) for v in items):
                    found = True
                    break
        self._memo[id(e)] = (e, found)
        return found

    def _renamed(self, old, new):
        if new is not old:
            self.origin[new] = self.origin.get(old, old)
        return new

    def _bind(self, node, names, all_loaded=False):
        operands = []   # (field, position in a tuple field or None, value), in evaluation order
        for name in names:
            value = getattr(node, name)
            if isinstance(value, tuple):
                operands += [(name, k, v) for k, v in enumerate(value)]
            else:
                operands.append((name, None, value))
        loaded = [k for k, (_, _, v) in enumerate(operands) if isinstance(v, E.PrimExpr) and self.holds_load(v)]
        bound = loaded if all_loaded else loaded[:-1]
        if not bound:
            return node
        lets, changes = [], {}
        for k in bound:
            name, pos, value = operands[k]
            var = E.Var("operand", value.dtype)
            lets.append((var, value))
            if pos is None:
                changes[name] = var
            else:
                items = list(changes.get(name, getattr(node, name)))
                items[pos] = var
                changes[name] = tuple(items)
        new = replace(node, **changes)
        if isinstance(node, E.BufferLoad):
            self._renamed(node, new)
        for var, value in reversed(lets):
            new = E.Let(var, value, new)
        return new

    def visit_BinaryOp(self, e):
        return self._bind(self.generic_visit(e), ("a", "b"))

    def visit_CmpOp(self, e):
        return self._bind(self.generic_visit(e), ("a", "b"))

    def visit_And(self, e):
        e = self.generic_visit(e)
        return self._bind(e, ("a", "b")) if _dt.lanes(e.dtype) > 1 else e

    def visit_Or(self, e):
        e = self.generic_visit(e)
        return self._bind(e, ("a", "b")) if _dt.lanes(e.dtype) > 1 else e

    def visit_Select(self, e):
        e = self.generic_visit(e)
        names = ("condition", "true_value", "false_value")
        if _dt.lanes(e.dtype) > 1:
            return self._bind(e, names)
        return self._bind(e, names, all_loaded=self.holds_load(e.true_value) or self.holds_load(e.false_value))

    def visit_Ramp(self, e):
        return self._bind(self.generic_visit(e), ("base", "stride"))

    def visit_Call(self, e):
        e = self.generic_visit(e)
        if e.op == "if_then_else" and _dt.lanes(e.args[0].dtype) == 1:
            return e    # one side runs, in C as in the interpreter
        return self._bind(e, ("args",))

    def visit_BufferLoad(self, e):
        new = self._renamed(e, self.generic_visit(e))
        return self._bind(new, ("indices",))

    def visit_BufferStore(self, s):
        return self._renamed(s, self.generic_visit(s))

    def visit_For(self, s):
        s = self.generic_visit(s)
        if not (self.holds_load(s.min) or self.holds_load(s.extent)):
            return s
        start, extent = E.Var("start", s.min.dtype), E.Var("extent", s.extent.dtype)
        return S.LetStmt(start, s.min, S.LetStmt(extent, s.extent, replace(s, min=start, extent=extent)))


def sequence_accesses(sim: SimKernel) -> tuple:
    """``sim``'s block body with its operands bound in evaluation order (see
    :class:`_Sequencer`), and the map from each rewritten access to the access of
    ``sim.block_body`` it replaces."""
    seq = _Sequencer(sim)
    return seq.visit(sim.block_body), seq.origin


# ----------------------------------------------------------------------------
# the printer
# ----------------------------------------------------------------------------
@dataclass(frozen=True)
class Site:
    """One instrumented access: ``node`` (a BufferLoad or BufferStore of the split
    kernel, :attr:`SimKernel.block_body`), the buffer findings name (the original local
    buffer for a per-thread copy) and whether it writes."""

    node: object
    buffer: S.Buffer
    write: bool


@dataclass
class KernelSites:
    """What the check function of one kernel reports by number: its access sites and
    the messages of its assertions."""

    name: str
    sites: list = field(default_factory=list)
    asserts: list = field(default_factory=list)


class CodeGenCheck(CodeGenSim):
    """The emulator's printer with every access instrumented (see the module docs).

    Use :meth:`add_kernel` for each kernel (it returns the kernel's
    :class:`KernelSites`), then :meth:`finish`.
    """

    INCLUDES = CodeGenSim.INCLUDES + ("setjmp.h",)
    BANNER = "generated by tecc: the GPU emulator's checking mode"
    #: the blocks run one after the other, in the order the caller lists them
    PARALLEL_LOOPS = False

    def __init__(self):
        super().__init__()
        self._sim = None
        self._sites = None
        self._tracked = {}          # data Var of a global buffer the kernel writes -> parameter number
        self._bounds = {}           # data Var -> C name of its bound (elements; a per-thread copy's row)
        self._shadows = {}          # data Var of a live shared buffer -> C name of its shadow
        self._tid = None            # C name of the thread number inside a thread loop
        self._seq_origin = {}       # access of the sequenced body -> access of the split kernel

    # -- translation unit -----------------------------------------------------------------
    def print_runtime_support(self) -> str:
        return "\n".join([super().print_runtime_support(), "", _io_typedef(),
                          f"#define TECC_RECORD_SIZE {RECORD_SIZE}", _RUNTIME])

    def function_prefix(self) -> str:
        return "static __attribute__((noinline)) int32_t"

    def print_function_signature(self, func: S.PrimFunc) -> str:
        params = [self.print_param(func, p) for p in func.params] + ["tecc_check_t* tecc_chk"]
        return f"{self.function_prefix()} {c_symbol(func.name)}({', '.join(params)})"

    def add_kernel(self, sim: SimKernel, body: S.Stmt, origin: dict) -> KernelSites:
        """Print ``sim``'s check function ``tecc_check_<name>`` running ``body``, its
        block body as :func:`sequence_accesses` leaves it (``origin`` maps rewritten
        accesses to those of ``sim``); ``sim`` must pass :func:`uncheckable_reason`."""
        self._sim = sim
        self._sites = KernelSites(sim.name)
        written = written_data(sim.block_body)
        self._tracked = {}
        for k, p in enumerate(sim.func.params):
            buf = sim.func.buffer_map.get(p)
            if buf is not None and buf.data in written:
                self._tracked[buf.data] = k
        self._seq_origin = origin
        blocks = sim.sim_func().body
        func = S.PrimFunc(sim.func.params, S.For(sim.bid, blocks.min, blocks.extent, S.ForKind.SERIAL, body),
                          dict(sim.func.buffer_map), {keys.GLOBAL_SYMBOL: sim.name})
        try:
            self.add_function(func)
            self._print_entry(func)
        finally:
            self._sim = None
        return self._sites

    def _print_entry(self, func: S.PrimFunc) -> None:
        """The exported function: runs the kernel's check function under a ``setjmp``
        (the helpers leave through it when the findings are enough, or an assertion
        fails) and frees the checker's state."""
        # the locals use the reserved prefix: no parameter can be named so
        params = [self.print_param(func, p) for p in func.params] + ["tecc_check_io_t* tecc_io"]
        args = [self.name_of(p) for p in func.params] + ["tecc_state"]
        self.append_function("\n".join([
            f'__attribute__((visibility("default"))) int32_t tecc_check_{func.name}({", ".join(params)}) {{',
            "    jmp_buf tecc_exit;",
            "    tecc_check_t* tecc_state = tecc_chk_open(tecc_io, &tecc_exit);",
            "    if (tecc_state == NULL) {",
            '        tecc_set_error("out of memory in the GPU checker");',
            "        return TECC_FAILED;",
            "    }",
            "    int32_t tecc_code;",
            "    if (setjmp(tecc_exit) == 0) {",
            f"        tecc_code = {c_symbol(func.name)}({', '.join(args)}) == 0 ? TECC_DONE : TECC_FAILED;",
            "    } else {",
            "        tecc_code = tecc_state->status;",
            "    }",
            "    tecc_chk_close(tecc_state);",
            "    return tecc_code;",
            "}"]))

    # -- blocks, threads, barriers --------------------------------------------------------
    def visit_For(self, s):
        sim = self._sim
        if s.loop_var is sim.bid:
            self._print_block_loop(s)
        elif s.loop_var is sim.tid:
            with self.binding(s.loop_var, s.loop_var.name) as tid:
                self.emit(self.loop_header(s, tid))
                self._tid = tid
                with self.indented():
                    self.print_stmt(s.body)
                self._tid = None
                self.emit("}")
        else:
            self.print_for(s)

    def _print_block_loop(self, s):
        """The loop over the caller's list of blocks (the loop's extent, the grid, is not
        used) with the bounds of the buffer parameters read once."""
        for k, p in enumerate(self._sim.func.params):
            buf = self._sim.func.buffer_map.get(p)
            if buf is not None:
                name = self.fresh_internal("bound")
                self.emit(f"const int64_t {name} = tecc_chk->io->bounds[{k}];")
                self._bounds[buf.data] = name
        k = self.fresh_internal("k")
        with self.binding(s.loop_var, s.loop_var.name) as bid:
            self.emit(f"for (int64_t {k} = 0; {k} < tecc_chk->io->nblocks; {k} = tecc_chk_next_block(tecc_chk, {k})) {{")
            with self.indented():
                self.emit(f"const int64_t {bid} = tecc_chk_begin_block(tecc_chk, {k});")
                self.print_stmt(s.body)
            self.emit("}")

    def print_loop_pragma(self, s: S.For) -> None:
        if s.kind is S.ForKind.VECTORIZED:
            # no `omp simd`: the lanes' checks must run in order
            self.emit("// vectorized loop: runs lane by lane, every access checked in order")
            return
        super().print_loop_pragma(s)

    def print_barrier(self, call) -> None:
        self.emit("// __syncthreads(): a new epoch")
        for shadow in self._shadows.values():
            self.emit(f"tecc_chk_shadow_reset(&{shadow});")
        self.emit("tecc_chk_barrier(tecc_chk);")

    def visit_AssertStmt(self, s):
        which = len(self._sites.asserts)
        self._sites.asserts.append(s.message)
        self.emit(f"if (!{self.expr(s.condition, P_UNARY)}) {{")
        with self.indented():
            self.emit(f"tecc_chk_assert_failed(tecc_chk, {which}, {self._thread()});")
        self.emit("}")
        self.print_stmt(s.body)

    def _thread(self) -> str:
        return self._tid if self._tid is not None else "-1"

    # -- allocations ------------------------------------------------------------------------
    def print_allocation(self, buf: S.Buffer, name: str, body) -> None:
        """Zeroed storage (the interpreter's), its bound, and for a shared buffer its shadow."""
        assert buf.scope != keys.REGISTER, "the split demotes register slots to local arrays"
        st = self.storage_type(buf.dtype)
        size = self.fresh_internal("size")
        self.emit(f"const int64_t {size} = {self.expr(E.Cast('int64', buffer_size(buf)))};")
        on_stack = self.is_stack_allocation(buf)
        if on_stack:
            self.emit(f"{st} {name}[{max(1, const_size(buf))}] __attribute__((aligned(64))) = {{0}};")
        else:
            self.emit(f"{st}* {self.restrict_keyword} {name} = ({st}*)tecc_chk_alloc(tecc_chk, "
                      f"(size_t){size} * sizeof({st}));")
        saved_bound = self._bounds.get(buf.data)
        local = self._sim.expanded.get(buf.data)
        if local is not None:   # a per-thread copy [threads, n]: each thread's index is checked against n
            row = self.fresh_internal("row")
            self.emit(f"const int64_t {row} = {self.expr(E.Cast('int64', buf.shape[1]))};")
            self._bounds[buf.data] = row
        else:
            self._bounds[buf.data] = size
        shadow = None
        if buf.scope == keys.SHARED:
            shadow = self.fresh_internal("shadow")
            self.emit(f"tecc_shadow_t {shadow};")
            self.emit(f"tecc_chk_shadow_open(tecc_chk, &{shadow}, {size});")
            self._shadows[buf.data] = shadow
        self.print_stmt(body)
        if shadow is not None:
            self.emit(f"tecc_chk_shadow_close(tecc_chk, &{shadow});")
            del self._shadows[buf.data]
        if not on_stack:
            self.emit(f"tecc_chk_release(tecc_chk, {name});")
        if saved_bound is None:
            self._bounds.pop(buf.data, None)
        else:
            self._bounds[buf.data] = saved_bound

    # -- accesses ---------------------------------------------------------------------------
    def _checked_index(self, buf, indices):
        """(the index checked against the bound, the indices of the raw access with that
        index replaced, the buffer of the raw access) -- a per-thread copy ``[threads, n]``
        checks its thread's own index, any other buffer its flat index."""
        if buf.data in self._sim.expanded:
            return indices[1], lambda new: (indices[0], new), buf
        index = flat_index(buf, indices)
        if is_flat(buf):
            return index, lambda new: (new,), buf
        flat = S.Buffer(buf.name, buf.dtype, (buffer_size(buf),), buf.data, buf.scope)
        return index, lambda new: (new,), flat

    def _plan(self, node, buf, indices, write: bool):
        """How to print a checked access: (C declarations evaluating its index once, the C
        condition that checks it, the raw access's buffer and indices), or None when the
        access needs no check (see :func:`is_checked`)."""
        if not is_checked(self._sim, buf, indices):
            return None
        index, raw_indices, raw_buf = self._checked_index(buf, indices)
        shadow = self._shadows.get(buf.data)
        tracked = self._tracked.get(buf.data, -1)
        bound_text = self._bounds[buf.data]
        reported = self._sim.expanded.get(buf.data, buf)
        site = len(self._sites.sites)
        self._sites.sites.append(Site(self._seq_origin.get(node, node), reported, write))
        tail = (f"{bound_text}, {self._thread()}, {site}, {'&' + shadow if shadow else 'NULL'}, {tracked}, "
                f"{int(write)}")
        lanes = _dt.lanes(index.dtype)
        if lanes == 1:
            decl, var = self._temporary(index, "i")
            cond = f"tecc_chk_access(tecc_chk, (int64_t){self.name_of(var)}, {tail})"
            return [decl], cond, raw_buf, raw_indices(var)
        if isinstance(index, E.Ramp):
            decls = []
            base_decl, base = self._temporary(index.base, "base")
            decls.append(base_decl)
            stride = index.stride
            if not isinstance(stride, E.IntImm):
                stride_decl, stride = self._temporary(stride, "stride")
                decls.append(stride_decl)
            stride_text = self.expr(stride)
            cond = (f"tecc_chk_ramp(tecc_chk, (int64_t){self.name_of(base)}, (int64_t)({stride_text}), "
                    f"{lanes}, {tail})")
            return decls, cond, raw_buf, raw_indices(E.Ramp(base, stride, index.lanes))
        decl, var = self._temporary(index, "lanes")
        v = self.name_of(var)
        cond = (f"({{ int64_t tecc_lane[{lanes}]; for (int tecc_l = 0; tecc_l < {lanes}; ++tecc_l) {{ tecc_lane[tecc_l] = "
                f"(int64_t){v}[tecc_l]; }} tecc_chk_lanes(tecc_chk, tecc_lane, {lanes}, {tail}); }})")
        return [decl], cond, raw_buf, raw_indices(var)

    def _temporary(self, value, hint: str):
        """(``T name = value;``, a Var printed as ``name``)."""
        var = E.Var(hint, value.dtype)
        name = self.bind_name(var, "chk_" + hint)
        return f"{self.type_name(value.dtype)} {name} = {self.expr(value)};", var

    def visit_BufferLoad(self, e):
        plan = self._plan(e, e.buffer, e.indices, write=False)
        if plan is None:
            return super().visit_BufferLoad(e)
        decls, cond, raw_buf, raw_indices = plan
        raw, _ = super().visit_BufferLoad(E.BufferLoad(raw_buf, raw_indices))
        zero = f"({self.type_name(e.dtype)}){{0}}" if _dt.lanes(e.dtype) > 1 else f"({self.type_name(e.dtype)})0"
        return f"({{ {' '.join(decls)} {cond} ? {raw} : {zero}; }})", P_PRIMARY

    def visit_BufferStore(self, s):
        plan = self._plan(s, s.buffer, s.indices, write=True)
        if plan is None:
            return super().visit_BufferStore(s)
        self.emit("{")
        with self.indented():
            # the interpreter evaluates the value, then the index
            value_decl, value = self._temporary(s.value, "value")
            self.emit(value_decl)
            decls, cond, raw_buf, raw_indices = plan
            for decl in decls:
                self.emit(decl)
            self.emit(f"if ({cond}) {{")
            with self.indented():
                super().visit_BufferStore(S.BufferStore(raw_buf, value, raw_indices))
            self.emit("}")
        self.emit("}")

    def visit_Call(self, e):
        if e.op == "if_then_else" and _dt.lanes(e.args[0].dtype) > 1:
            # both sides evaluated, as the interpreter does (the C printer's select is lazy per lane)
            return self.visit_Select(E.Select(*e.args))
        return super().visit_Call(e)


def check_source(sims) -> tuple:
    """The checking library of ``sims``: ``(C source, {kernel: KernelSites},
    {kernel: why it is not in the library})``; a kernel :func:`uncheckable_reason`
    refuses is left out (the checker interprets it)."""
    gen = CodeGenCheck()
    tables, refused = {}, {}
    for sim in sims:
        reason = uncheckable_reason(sim)
        if reason is not None:
            refused[sim.name] = reason
            continue
        body, origin = sequence_accesses(sim)
        tables[sim.name] = gen.add_kernel(sim, body, origin)
    return gen.finish(), tables, refused
