"""User-facing errors.

Every mistake a user can make raises a subclass of :class:`TeccError` whose message
names the tensor, stage or axis involved and says what to do instead.  Compiler bugs
are plain assertions, never a ``TeccError``.

``TeccError`` is a ``RuntimeError``, as TVM's ``TVMError`` is, and is also exported
under TVM's names (``tecc.error.TVMError``, ``InternalError``), so code written for
TVM catches tecc's errors.
"""


class TeccError(RuntimeError):
    """Base class of every user-facing tecc error."""


class TeccTypeError(TeccError, TypeError):
    """An operand has the wrong type or dtype."""


class ScheduleError(TeccError):
    """A schedule primitive was used illegally."""


class LoweringError(TeccError):
    """The schedule cannot be lowered (e.g. an impossible attachment)."""


class VerifyError(LoweringError):
    """Lowered IR breaks a target constraint (thread limits, shared memory, ...)."""


class CompileError(TeccError):
    """The generated C or CUDA source failed to compile."""


class RuntimeArgError(TeccError, ValueError):
    """A built function was called with wrong arguments."""


class TargetError(TeccError, ValueError):
    """An unknown or unsupported target string."""


class KernelError(TeccError):
    """A compiled function reported a failure at run time (an assertion inside the
    kernel, a launch the GPU would refuse, an integer division by zero)."""


class FunctionNotFoundError(TeccError, AttributeError):
    """A module has no function of the requested name."""


#: TVM's names (``tvm.error``)
TVMError = TeccError


class InternalError(TeccError):
    """TVM's name for an error inside the compiler (tecc raises assertions instead)."""


def warn_user(message: str, category=UserWarning) -> None:
    """``warnings.warn`` attributed to the first caller outside tecc (the user's
    line), however deep inside tecc the warning is raised."""
    import sys  # noqa: PLC0415 -- only when warning
    import warnings  # noqa: PLC0415

    package = __name__.rpartition(".")[0]  # "tecc"
    frame, level = sys._getframe(1), 2  # stacklevel 1 is this function, 2 its caller
    while frame is not None:
        module = frame.f_globals.get("__name__", "")
        if module != package and not module.startswith(package + "."):
            break
        frame, level = frame.f_back, level + 1
    warnings.warn(message, category, stacklevel=level)
