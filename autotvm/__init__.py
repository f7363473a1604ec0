"""``tecc.autotvm``: TVM's name for tecc's tuner (:mod:`tecc.tuner`).

The modules are the tuner's own, under AutoTVM's paths: ``tecc.autotvm.task.space``
*is* ``tecc.tuner.task.space`` (one module, one set of classes), so code written
for ``tvm.autotvm`` runs with only the import changed.
"""
import sys as _sys

from .. import tuner as _tuner
from ..tuner import *  # noqa: F401,F403
from ..tuner import task  # noqa: F401


def _alias(prefix, package):
    for name, module in list(_sys.modules.items()):
        if name == package.__name__ or name.startswith(package.__name__ + "."):
            _sys.modules.setdefault(prefix + name[len(package.__name__):], module)


_alias(__name__, _tuner)
