"""TVM's ``tvm.instrument``: pass instruments, called by tecc's one pass engine
around every pass run inside ``PassContext(instruments=[...])`` (defined in
:mod:`tecc.tir.transform.instrument`)."""
from .tir.transform.instrument import (  # noqa: F401
    PassInstrument, PassPrintingInstrument, PassTimingInstrument, PrintAfterAll, PrintBeforeAll, pass_instrument,
)

__all__ = ["PassInstrument", "PassPrintingInstrument", "PassTimingInstrument", "PrintAfterAll", "PrintBeforeAll",
           "pass_instrument"]
