"""Pass instruments (TVM's ``tvm.instrument``): objects the pass engine calls around
every pass run inside a ``PassContext(instruments=[...])`` -- TIR passes of a build,
graph passes of a model build, or passes called by hand::

    @tecc.instrument.pass_instrument
    class ShowNames:
        def run_before_pass(self, mod, info):
            print("running", info.name)

    timing = tecc.instrument.PassTimingInstrument()
    with tecc.transform.PassContext(instruments=[ShowNames(), timing]):
        tecc.build(s, [A, B])
        print(timing.render())

An instrument may define any of ``enter_pass_ctx()`` / ``exit_pass_ctx()`` (when the
context is entered and left), ``should_run(mod, info) -> bool`` (False skips the
pass), ``run_before_pass(mod, info)`` and ``run_after_pass(mod, info)``; ``info`` is
the pass's :class:`~.passes.PassInfo` (``info.name``, ``info.opt_level``).
"""
from __future__ import annotations

import time

from ...errors import TeccTypeError

#: the methods an instrument may define
HOOKS = ("enter_pass_ctx", "exit_pass_ctx", "should_run", "run_before_pass", "run_after_pass")


class PassInstrument:
    """Base of instruments: every hook does nothing (``should_run`` says yes)."""

    def enter_pass_ctx(self):
        pass

    def exit_pass_ctx(self):
        pass

    def should_run(self, mod, info) -> bool:
        return True

    def run_before_pass(self, mod, info):
        pass

    def run_after_pass(self, mod, info):
        pass

    @property
    def name(self) -> str:
        return type(self).__name__


def pass_instrument(pi_cls=None):
    """Make an instrument class of a class defining some of the hooks (TVM's
    ``@tvm.instrument.pass_instrument``): the others do nothing."""

    def wrap(cls):
        if not isinstance(cls, type):
            raise TeccTypeError(f"pass_instrument decorates a class, got {type(cls).__name__}")
        if not any(callable(getattr(cls, h, None)) for h in HOOKS):
            raise TeccTypeError(f"pass_instrument: class {cls.__name__!r} defines none of the hooks {', '.join(HOOKS)}")
        return type(cls.__name__, (cls, PassInstrument), {"__doc__": cls.__doc__, "__module__": cls.__module__})

    return wrap(pi_cls) if pi_cls is not None else wrap


def check_instruments(instruments) -> tuple:
    """``instruments`` as a tuple, each checked to be an instrument object."""
    out = tuple(instruments or ())
    for i, inst in enumerate(out):
        if isinstance(inst, type):
            raise TeccTypeError(f"PassContext instruments[{i}] is the class {inst.__name__}; give an instance: "
                                f"{inst.__name__}()")
        if not any(callable(getattr(inst, h, None)) for h in HOOKS):
            raise TeccTypeError(f"PassContext instruments[{i}] ({type(inst).__name__}) has none of the hooks "
                                f"{', '.join(HOOKS)}; decorate its class with tecc.instrument.pass_instrument")
    return out


class TraceInstrument(PassInstrument):
    """TVM's ``PassContext(trace=fn)`` before v0.8: ``fn(mod, info, is_before)`` is
    called before (``True``) and after (``False``) every pass."""

    def __init__(self, trace):
        if not callable(trace):
            raise TeccTypeError(f"PassContext trace must be a function (mod, info, is_before), got {trace!r}")
        self.trace = trace

    def run_before_pass(self, mod, info):
        self.trace(mod, info, True)

    def run_after_pass(self, mod, info):
        self.trace(mod, info, False)


class PassTimingInstrument(PassInstrument):
    """Times every pass run while it is instrumenting; :meth:`render` gives the table
    (per pass name: runs, total ms, share), and entering a new context clears it."""

    def __init__(self):
        self.times = {}
        self._start = []

    def enter_pass_ctx(self):
        self.times = {}

    def run_before_pass(self, mod, info):
        self._start.append(time.perf_counter())

    def run_after_pass(self, mod, info):
        spent = time.perf_counter() - self._start.pop()
        runs, total = self.times.get(info.name, (0, 0.0))
        self.times[info.name] = (runs + 1, total + spent)

    def render(self) -> str:
        total = sum(t for _, t in self.times.values()) or 1e-12
        width = max([len(n) for n in self.times] + [4])
        lines = [f"{'pass'.ljust(width)}  {'runs':>5}  {'ms':>10}  {'%':>6}"]
        for name, (runs, t) in sorted(self.times.items(), key=lambda kv: -kv[1][1]):
            lines.append(f"{name.ljust(width)}  {runs:5d}  {t * 1e3:10.3f}  {100 * t / total:6.1f}")
        return "\n".join(lines)


class PassPrintingInstrument(PassInstrument):
    """Prints the module before the passes named in ``print_before_pass_names`` and
    after those in ``print_after_pass_names`` (``"all"`` for every pass)."""

    def __init__(self, print_before_pass_names=(), print_after_pass_names=()):
        self.before = set(print_before_pass_names or ())
        self.after = set(print_after_pass_names or ())

    def run_before_pass(self, mod, info):
        if "all" in self.before or info.name in self.before:
            print(f"# before {info.name}\n{_text(mod)}")

    def run_after_pass(self, mod, info):
        if "all" in self.after or info.name in self.after:
            print(f"# after {info.name}\n{_text(mod)}")


def PrintBeforeAll():  # noqa: N802 -- TVM's names
    """An instrument printing the module before every pass."""
    return PassPrintingInstrument(print_before_pass_names=("all",))


def PrintAfterAll():  # noqa: N802
    """An instrument printing the module after every pass."""
    return PassPrintingInstrument(print_after_pass_names=("all",))


def _text(mod) -> str:
    script = getattr(mod, "script", None)
    return script() if callable(script) else mod.astext()


__all__ = ["PassInstrument", "PassPrintingInstrument", "PassTimingInstrument", "PrintAfterAll", "PrintBeforeAll",
           "pass_instrument"]
